//! `blazec stats`: the median of numbers read on stdin with its sign-test interval and p-value,
//! by the rules every race uses (`blaze_compiler::stats`). The campaign scripts call it rather
//! than keep a copy of the rule.
use blaze_compiler::catalog::Resolver;
use blaze_compiler::stats::{median, median_interval, quantile, sign_test_p};
use clap::Args;
use std::io::Read;

/// The arguments of `blazec stats` (its help is on the command).
#[derive(Args)]
pub struct StatsArgs {
    /// Confidence level of the interval.
    #[arg(long, default_value_t = 0.95)]
    level: f64,
    /// Also print this quantile (linear interpolation) as `q<Q>=…`; may be given more than once.
    #[arg(long, value_name = "Q")]
    quantile: Vec<f64>,
}

pub fn run(_resolve: &Resolver, args: StatsArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.level > 0.0 && args.level < 1.0, "--level must be between 0 and 1");
    anyhow::ensure!(args.quantile.iter().all(|q| (0.0..=1.0).contains(q)), "--quantile must be between 0 and 1");
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let d = parse(&text)?;
    println!("{}", line(&d, args.level, &args.quantile));
    Ok(())
}

/// The numbers of `text`, separated by white space or commas.
fn parse(text: &str) -> anyhow::Result<Vec<f64>> {
    let numbers = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| anyhow::anyhow!("`{w}`: not a finite number"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!numbers.is_empty(), "no numbers on stdin");
    Ok(numbers)
}

/// `n=… median=… lo=… hi=… p=…` (an unbounded end is `-inf` / `inf`), then `q<Q>=…` for each
/// of `quantiles`.
fn line(d: &[f64], level: f64, quantiles: &[f64]) -> String {
    let (lo, hi) = median_interval(d, 1.0 - level);
    let mut sorted = d.to_vec();
    sorted.sort_by(f64::total_cmp);
    let qs: String = quantiles.iter().map(|&q| format!(" q{q}={}", quantile(&sorted, q))).collect();
    format!("n={} median={} lo={lo} hi={hi} p={}{qs}", d.len(), median(d), sign_test_p(d))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_holds_the_order_statistic_interval() {
        let d: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(super::line(&d, 0.95, &[]), "n=10 median=5.5 lo=2 hi=9 p=0.001953125");
        assert_eq!(super::line(&d[..5], 0.95, &[]), "n=5 median=3 lo=-inf hi=inf p=0.0625");
        assert!(
            super::line(&d, 0.95, &[0.1, 0.5]).ends_with(" q0.1=1.9 q0.5=5.5"),
            "{}",
            super::line(&d, 0.95, &[0.1])
        );
        assert!(super::parse("1, 2\n3").is_ok_and(|d| d == [1.0, 2.0, 3.0]));
        assert!(super::parse("1 x").unwrap_err().to_string().contains("`x`"));
        assert!(super::parse("  ").is_err());
    }
}
