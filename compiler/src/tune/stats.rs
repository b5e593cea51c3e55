//! Reducing samples (docs/measurement.md rule 3) and the protocol's name. The decision rule is
//! in `paired` and `race`.
use serde::{Deserialize, Serialize};

/// The protocol every result records; change it only with a new version.
/// Version 2 added the settling time after warm-up; version 3 replaced "beats the median by
/// more than the wider IQR" by paired racing. Older results files are read as they are.
pub const PROTOCOL: &str = "blaze-measure/3: whole steps, device synced at the ends of each timed block; warm-up untimed, then 1 s of untimed settling; \
a visit = 1 untimed step (plan switch) + a block of consecutive steps lasting >= 50 ms (sized from Burn's step time), sample = ms per step; \
Burn's plan and every candidate (fusion off included, in-process) visited in each round, start rotating; \
per candidate the median of per-round ln(candidate / Burn) with a sign-test interval; \
looks at rounds min*1.5^k, alpha 0.05 split over the looks, Holm across candidates; \
slower with confidence: dropped; interval within 1 +- min effect: equivalent, dropped; \
faster with confidence by >= min effect (default 1 %): winner, verified before it is kept; otherwise not separated";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let sm = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!((sm.median, sm.p25, sm.p75), (3.0, 2.0, 4.0));
    }
}
