//! The one key space of Burn's plan stores under Blaze (`burn_fusion::cut::install(policy,
//! key)`): every key Blaze installs is made here, so two policies never share a store by
//! accident. Burn's own store is 0. A plan's store ([`of_plan`]) is odd; the runtime's own
//! policies have even keys: the explore probe ([`EXPLORE_PROBE`], and one per beam width from
//! [`explore_probe`]) and fusion off ([`UNFUSED`]).
use crate::BoundaryId;
use crate::plan::Settings;

/// Burn's own plan store: what runs with no policy installed.
pub const BURN: u64 = 0;
/// The explore probe at Burn's configured width (no cuts, tagged by position).
pub const EXPLORE_PROBE: u64 = 2;
/// Fusion off in-process (nothing cached in it).
pub const UNFUSED: u64 = 4;

/// The explore probe's store at beam width `max_blocks` (Burn's configured width for `None`):
/// even, above [`UNFUSED`], one per width.
pub fn explore_probe(max_blocks: Option<u32>) -> u64 {
    max_blocks.map_or(EXPLORE_PROBE, |n| UNFUSED + 2 * u64::from(n))
}

/// The store of a plan with `cuts` and `settings`: [`BURN`] for Burn's own plan, else an odd
/// hash of the cut set, beam width and (for a width alone) caching by position. The submission
/// batch and the execution setting do not change what is cached, so they are not part of it.
pub fn of_plan(cuts: &[BoundaryId], settings: &Settings) -> u64 {
    let max_blocks = settings.max_blocks;
    let by_position = cuts.is_empty() && settings.caches_by_position(false);
    if cuts.is_empty() && max_blocks.is_none() && !by_position {
        return BURN;
    }
    let text: Vec<String> = cuts.iter().map(|c| c.0.to_string()).collect();
    let mut text = text.join(",");
    if let Some(n) = max_blocks {
        text.push_str(&format!(";blocks={n}"));
    }
    if by_position {
        text.push_str(";position");
    }
    crate::hash::stable_u64(text.as_bytes()) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_the_runtimes_own_policies_never_share_a_store() {
        let own: Vec<u64> =
            [EXPLORE_PROBE, UNFUSED].into_iter().chain((1..=64).map(|n| explore_probe(Some(n)))).collect();
        let distinct: std::collections::BTreeSet<_> = own.iter().collect();
        assert_eq!(distinct.len(), own.len(), "two of the runtime's policies share a store");
        assert!(own.iter().all(|k| k % 2 == 0 && *k != BURN));
        let plan = of_plan(&[BoundaryId(3)], &Settings::beam_width(Some(2)));
        assert_eq!(plan % 2, 1);
        assert_eq!(of_plan(&[], &Settings::default()), BURN);
        assert_eq!(of_plan(&[], &Settings::default().captured()), BURN, "execution is not part of the key");
    }
}
