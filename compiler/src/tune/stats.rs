//! Reducing samples and the selection rule (docs/measurement.md rules 3–5).
use serde::{Deserialize, Serialize};

/// The protocol every result records; change it only with a new version.
/// Version 2 added the settling time after warm-up (version 1 results are read the same way;
/// their first timed steps may include the device's slow stretch after compilation).
pub const PROTOCOL: &str = "blaze-measure/2: whole steps, device synced at both ends; warm-up untimed, then 1 s of untimed settling steps; \
candidates interleaved in rounds (rotating start), 1 settle step per visit; median and IQR (p25-p75); \
win = beats the incumbent's median by more than the wider IQR";

/// Median and spread of one candidate's samples (milliseconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    pub n: usize,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Self {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        Self { median: quantile(&v, 0.5), p25: quantile(&v, 0.25), p75: quantile(&v, 0.75), n: v.len() }
    }

    /// Inter-quartile range.
    pub fn spread(&self) -> f64 {
        self.p75 - self.p25
    }
}

/// Linear-interpolated quantile of sorted data.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Outcome of comparing a challenger with the incumbent. There is no tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Separation {
    /// Faster by more than the wider spread.
    Wins,
    /// Slower by more than the wider spread.
    Loses,
    /// The difference is inside the band: no result.
    NotSeparated,
}

/// Rule 4: a challenger wins only by beating the incumbent by more than the wider spread.
pub fn separate(incumbent: &Summary, challenger: &Summary) -> Separation {
    let band = incumbent.spread().max(challenger.spread());
    let gain = incumbent.median - challenger.median;
    if gain > band {
        Separation::Wins
    } else if -gain > band {
        Separation::Loses
    } else {
        Separation::NotSeparated
    }
}

/// A/A: the same plan's samples split into `trials` pairs of interleaved halves; the share of
/// trials where the rule declares either half the winner is the false-win rate.
pub fn false_win_rate(a: &[f64], b: &[f64], trials: usize) -> (usize, usize) {
    let per = a.len().min(b.len()) / trials.max(1);
    if per < 2 {
        return (0, 0);
    }
    let wins = (0..trials)
        .filter(|t| {
            let (sa, sb) = (Summary::of(&a[t * per..(t + 1) * per]), Summary::of(&b[t * per..(t + 1) * per]));
            separate(&sa, &sb) != Separation::NotSeparated
        })
        .count();
    (wins, trials)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64, spread: f64) -> Summary {
        Summary { median, p25: median - spread / 2.0, p75: median + spread / 2.0, n: 9 }
    }

    #[test]
    fn wins_only_beyond_the_wider_band() {
        assert_eq!(separate(&s(10.0, 0.2), &s(9.5, 0.2)), Separation::Wins);
        // 0.5 faster, but the challenger's own band is 0.6 wide: no result.
        assert_eq!(separate(&s(10.0, 0.2), &s(9.5, 0.6)), Separation::NotSeparated);
        assert_eq!(separate(&s(10.0, 0.6), &s(9.5, 0.2)), Separation::NotSeparated);
        assert_eq!(separate(&s(10.0, 0.2), &s(10.5, 0.2)), Separation::Loses);
    }

    #[test]
    fn identical_medians_are_never_a_tie_or_a_win() {
        assert_eq!(separate(&s(10.0, 0.0), &s(10.0, 0.0)), Separation::NotSeparated);
    }

    #[test]
    fn quantiles_interpolate() {
        let sm = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!((sm.median, sm.p25, sm.p75), (3.0, 2.0, 4.0));
    }

    #[test]
    fn aa_rate_counts_declared_winners() {
        let a: Vec<f64> = (0..40).map(|i| 10.0 + (i % 4) as f64 * 0.1).collect();
        assert_eq!(false_win_rate(&a, &a, 4), (0, 4));
        let b: Vec<f64> = a.iter().map(|x| x - 5.0).collect();
        assert_eq!(false_win_rate(&a, &b, 4), (4, 4));
    }
}
