//! The cut policy installed into the patched burn-fusion.
use blaze_ir::plan::Settings;
use blaze_ir::{BoundaryId, PlanFile};
use burn_fusion::cut::{CutPolicy, ExploredOp};
use std::collections::BTreeSet;
use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};

/// Refuses Burn's merge before each operation in `cuts`; remembers every operation Burn asked
/// about (the live set) and how often it was asked.
#[derive(Debug, Default)]
pub struct CutSet {
    cuts: BTreeSet<u64>,
    /// Beam width of Burn's search under this policy (`None`: Burn's configured one).
    max_blocks: Option<usize>,
    /// Plans replay only at the step position they were explored at (see
    /// `burn_fusion::cut::CutPolicy::tags_plans`): set where a cut is asked by position (a cut
    /// set, the explore probe) or the plan asks for it (`store: ByPosition`); a beam width
    /// alone otherwise aliases plans as Burn does.
    tags_plans: bool,
    explored: Mutex<BTreeSet<u64>>,
    calls: AtomicU64,
}

impl CutSet {
    pub fn new(cuts: &[BoundaryId]) -> Self {
        Self { cuts: cuts.iter().map(|c| c.0).collect(), tags_plans: !cuts.is_empty(), ..Default::default() }
    }

    /// Operations (step-relative index) Burn explored while this policy was installed.
    pub fn explored(&self) -> BTreeSet<u64> {
        self.explored.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many times Burn consulted the policy.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl CutPolicy for CutSet {
    fn cut_before(&self, op: &ExploredOp<'_>) -> bool {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.explored.lock().unwrap_or_else(|e| e.into_inner()).insert(op.index);
        self.cuts.contains(&op.index)
    }

    fn max_blocks(&self) -> Option<usize> {
        self.max_blocks
    }

    fn tags_plans(&self) -> bool {
        self.tags_plans
    }
}

/// Installs `cuts` (plans cached under their own store key) and returns the policy, so the
/// caller can read the live set. Takes effect at the next sync with no pending work.
pub fn activate(cuts: &[BoundaryId]) -> Arc<CutSet> {
    activate_with(cuts, &Settings::default())
}

/// [`activate`] with a plan's in-process settings: the beam width of Burn's fusion search
/// under this policy and how its plans are cached (each combination in a store of its own, so
/// they race in one process). The submission batch is per process and not applied here.
pub fn activate_with(cuts: &[BoundaryId], settings: &Settings) -> Arc<CutSet> {
    let tags_plans = settings.caches_by_position(!cuts.is_empty());
    let policy =
        Arc::new(CutSet { max_blocks: settings.max_blocks.map(|n| n as usize), tags_plans, ..CutSet::new(cuts) });
    burn_fusion::cut::install(Some(policy.clone()), PlanFile::store_key_of(cuts, settings));
    policy
}

/// No cuts, but in a position-tagged store of its own, as a cut plan runs: the operations Burn
/// explores under it are the ones where a cut would take effect (the live set).
pub fn activate_explore_probe() -> Arc<CutSet> {
    activate_explore_probe_with(None)
}

/// [`activate_explore_probe`] under a beam width: the live set of the partition Burn's search
/// makes at that width (each width its own even store key, never a cut set's or the
/// fusion-off arm's).
pub fn activate_explore_probe_with(max_blocks: Option<u32>) -> Arc<CutSet> {
    // The probe must see every position Burn explores, as under a cut plan: tagged.
    let policy = Arc::new(CutSet { max_blocks: max_blocks.map(|n| n as usize), tags_plans: true, ..CutSet::new(&[]) });
    burn_fusion::cut::install(Some(policy.clone()), blaze_ir::store_key::explore_probe(max_blocks));
    policy
}

/// Fusion off, in this process: every segment explored under it runs operation by operation
/// through Burn's unfused path and nothing is cached, exactly as under
/// `BURN_FUSION_MAX_EXPLORATIONS=0`. Plans cached in other stores are kept, so switching back
/// replays them. Takes effect at the next sync with no pending work.
#[derive(Debug, Default)]
pub struct Unfused {
    calls: AtomicU64,
}

impl CutPolicy for Unfused {
    fn cut_before(&self, _op: &ExploredOp<'_>) -> bool {
        // Never reached while the policy is active (unfused segments are not explored op by
        // op), but a cut would be the same as no fusion anyway.
        self.calls.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn unfused(&self) -> bool {
        true
    }
}

pub fn activate_unfused() {
    burn_fusion::cut::install(Some(Arc::new(Unfused::default())), blaze_ir::store_key::UNFUSED);
}

/// Burn's own plan, but still observing which operations Burn explores.
pub fn activate_burn_default() -> Arc<CutSet> {
    activate(&[])
}
