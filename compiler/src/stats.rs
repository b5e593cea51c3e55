//! Every statistic Blaze reports, in one place: quantiles and the one median (linear
//! interpolation, so the median of an even count is the mean of the middle two), the summary of
//! a candidate's samples, and the paired statistics of protocol blaze-measure/3 (docs:
//! docs/measurement.md, rule 4). `blazec stats` prints the sign-test interval for numbers on
//! stdin, so the campaign scripts use these rules rather than a copy of them.
//!
//! Paired statistics. In every round each candidate's visit is paired with Burn's plan's visit of the same round:
//! `d = ln(candidate / burn)`. Drift of the machine moves both visits of a round alike, so the
//! pairs cancel it where per-candidate medians do not.
//!
//! Estimate: the median of `d` (reported as the ratio `exp(median)`). Interval and test: the
//! sign test and its order-statistic interval for the median. Why this one:
//! * distribution-free and assumption-light: it needs the pairs to be independent across
//!   rounds, not symmetric (a signed-rank interval assumes symmetry) nor normal (a t interval);
//!   visits include occasional 2-3x slow steps (measurement.md) that would dominate a mean;
//! * exact at every n (no bootstrap resampling, so a race is deterministic given its samples);
//! * the test and the interval agree by construction: the interval at level `1 - a` excludes 0
//!   exactly when the two-sided p-value is `<= a` (ties count against a difference).
//!   It costs some power against a signed-rank test (asymptotic efficiency 0.64 vs 0.95 under
//!   normal noise); the race buys it back with rounds.
use serde::{Deserialize, Serialize};
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

/// Two-sided sign-test p-value for "the median of `d` is 0". Zeros count against rejection
/// (each side's count includes them), so the p-value matches [`median_interval`].
pub fn sign_test_p(d: &[f64]) -> f64 {
    let n = d.len();
    if n == 0 {
        return 1.0;
    }
    let at_least_zero = d.iter().filter(|x| **x >= 0.0).count();
    let at_most_zero = d.iter().filter(|x| **x <= 0.0).count();
    (2.0 * binomial_half_cdf(at_least_zero.min(at_most_zero), n)).min(1.0)
}

/// Interval for the median of `d` at confidence `1 - alpha`: `[d_(l), d_(n+1-l)]` with the
/// largest `l` such that `2 P(B <= l-1) <= alpha`, `B ~ Bin(n, 1/2)`. Unbounded (infinite
/// ends) when `n` is too small for that level.
pub fn median_interval(d: &[f64], alpha: f64) -> (f64, f64) {
    let n = d.len();
    let mut sorted = d.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut l = 0;
    while l < n / 2 && 2.0 * binomial_half_cdf(l, n) <= alpha {
        l += 1;
    }
    if l == 0 {
        return (f64::NEG_INFINITY, f64::INFINITY);
    }
    (sorted[l - 1], sorted[n - l])
}

/// Median of unsorted data (NaN when empty).
pub fn median(d: &[f64]) -> f64 {
    let mut v = d.to_vec();
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

/// `P(B <= k)` for `B ~ Bin(n, 1/2)`, summed in log space so large `n` does not underflow.
pub(crate) fn binomial_half_cdf(k: usize, n: usize) -> f64 {
    if k >= n {
        return 1.0;
    }
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64;
    let mut total = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + ln_half_n).exp();
    }
    total.min(1.0)
}

/// Holm's step-down over `p` at family-wise level `alpha`, for a family of `family` hypotheses
/// (at least `p.len()`; hypotheses already rejected earlier are not counted). Returns, per
/// hypothesis, the level it was tested at if rejected, `None` otherwise.
pub(crate) fn holm(p: &[f64], alpha: f64, family: usize) -> Vec<Option<f64>> {
    let family = family.max(p.len());
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![None; p.len()];
    for (rank, &i) in order.iter().enumerate() {
        let level = alpha / (family - rank) as f64;
        if p[i] > level {
            break;
        }
        out[i] = Some(level);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let sm = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!((sm.median, sm.p25, sm.p75), (3.0, 2.0, 4.0));
    }

    #[test]
    fn binomial_cdf_matches_small_exact_values() {
        // Bin(4, 1/2): 1, 4, 6, 4, 1 over 16.
        assert!((binomial_half_cdf(0, 4) - 1.0 / 16.0).abs() < 1e-12);
        assert!((binomial_half_cdf(1, 4) - 5.0 / 16.0).abs() < 1e-12);
        assert!((binomial_half_cdf(2, 4) - 11.0 / 16.0).abs() < 1e-12);
        assert_eq!(binomial_half_cdf(4, 4), 1.0);
        // Large n neither underflows nor exceeds 1.
        let c = binomial_half_cdf(1000, 2000);
        assert!(c > 0.5 && c < 0.51, "{c}");
    }

    #[test]
    fn sign_test_rejects_only_consistent_shifts() {
        let all_slower = vec![0.01; 10];
        assert!((sign_test_p(&all_slower) - 2.0 / 1024.0).abs() < 1e-12);
        let mixed: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 0.01 } else { -0.01 }).collect();
        assert_eq!(sign_test_p(&mixed), 1.0);
        // Zeros count against a difference.
        assert_eq!(sign_test_p(&[0.0; 10]), 1.0);
        assert_eq!(sign_test_p(&[]), 1.0);
    }

    #[test]
    fn interval_excludes_zero_exactly_when_the_test_rejects() {
        let cases: [&[f64]; 4] = [
            &[0.02, 0.03, 0.01, 0.02, 0.04, 0.02, -0.01, 0.02, 0.03, 0.02, 0.01, 0.02],
            &[0.02, -0.03, 0.01, 0.02, -0.04, 0.02, -0.01, 0.02],
            &[-0.01; 6],
            &[0.0, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],
        ];
        for d in cases {
            for alpha in [0.001, 0.01, 0.05, 0.2] {
                let (lo, hi) = median_interval(d, alpha);
                assert_eq!(lo > 0.0 || hi < 0.0, sign_test_p(d) <= alpha, "{d:?} at {alpha}");
            }
        }
    }

    #[test]
    fn interval_uses_order_statistics_and_is_unbounded_when_n_is_too_small() {
        // n = 10 at 95 %: 2 P(B <= 1) = 0.0215 <= 0.05, 2 P(B <= 2) = 0.109 > 0.05, so l = 2.
        let d: Vec<f64> = (1..=10).map(|i| i as f64).collect();
        assert_eq!(median_interval(&d, 0.05), (2.0, 9.0));
        // n = 5: 2 P(B <= 0) = 0.0625 > 0.05: no interval at 95 %.
        assert_eq!(median_interval(&d[..5], 0.05), (f64::NEG_INFINITY, f64::INFINITY));
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_acceptance() {
        // Family of 3 at 0.05: thresholds 0.0167, 0.025, 0.05.
        assert_eq!(holm(&[0.01, 0.02, 0.04], 0.05, 3), vec![Some(0.05 / 3.0), Some(0.025), Some(0.05)]);
        // 0.03 fails the second threshold, so 0.04 is not tested either.
        assert_eq!(holm(&[0.01, 0.03, 0.04], 0.05, 3), vec![Some(0.05 / 3.0), None, None]);
        // A larger family (earlier looks' undecided members) makes every threshold stricter.
        assert_eq!(holm(&[0.03], 0.05, 2), vec![None]);
        assert_eq!(holm(&[0.03], 0.05, 1), vec![Some(0.05)]);
    }
}
