//! A plan's settings at load (plan format version 2): the beam width goes into the cut policy
//! (it applies to the plans explored under this plan only), the submission batch into
//! `CUBECL_WGPU_MAX_TASKS`, which CubeCL reads once, when the device starts.
use blaze_ir::plan::Settings;

/// CubeCL's submission batch variable (kernels per queue submission, default 32).
pub const MAX_TASKS_ENV: &str = "CUBECL_WGPU_MAX_TASKS";

/// Applies the per-process part of `settings` and says, one line each, which value is in force
/// wherever the program had set its own. Nothing to say: an empty list.
pub fn apply(settings: &Settings) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(n) = settings.max_blocks {
        let configured = burn_fusion::cut::configured_max_blocks();
        if configured != DEFAULT_MAX_BLOCKS && configured != n as usize {
            notes.push(format!(
                "note: blaze: the plan's beam width max_blocks = {n} applies to the fusion it plans; this program's burn.toml value {configured} is not used while the plan is installed"
            ));
        }
    }
    if let Some(n) = settings.max_tasks {
        notes.extend(apply_max_tasks(n, std::env::var(MAX_TASKS_ENV).ok()));
    }
    notes
}

/// Burn's default beam width (burn-std `default_max_blocks`).
const DEFAULT_MAX_BLOCKS: usize = 5;

/// The program's own `CUBECL_WGPU_MAX_TASKS` wins (it is an explicit choice, and the device may
/// already have read it); otherwise the plan's value is set for CubeCL to read at device start.
fn apply_max_tasks(planned: u32, program: Option<String>) -> Option<String> {
    match program {
        Some(v) if v.trim() == planned.to_string() => None,
        Some(v) => Some(format!(
            "note: blaze: {MAX_TASKS_ENV}={v} set by this program wins over the plan's max_tasks = {planned} (the plan was measured with {planned}); unset it to use the plan's"
        )),
        None => {
            set_max_tasks_unless_set(planned);
            // A device's fusion server starts with its first tensor (building a model makes
            // some, without syncing); a tensor made from data starts CubeCL's device there and
            // then, a lazy one (zeros) at its first execution, so "may".
            if burn_fusion::cut::servers_started() > 0 {
                return Some(format!(
                    "warning: blaze: the plan's max_tasks = {planned} was loaded after the program's first tensor, so the device may have started and read its submission batch already; load the plan before the first tensor is made for it to apply"
                ));
            }
            None
        }
    }
}

/// Sets `CUBECL_WGPU_MAX_TASKS` to `planned` unless the program has set it; true if it did.
pub(crate) fn set_max_tasks_unless_set(planned: u32) -> bool {
    if std::env::var_os(MAX_TASKS_ENV).is_some() {
        return false;
    }
    // SAFETY: called from the start-up calls (`load_plan`, `load_bundle`,
    // `preset_submission_batch`), documented as made before the program starts threads that read
    // the environment; CubeCL reads the variable only when the device starts, which must come
    // after this call for the setting to apply.
    unsafe { std::env::set_var(MAX_TASKS_ENV, planned.to_string()) };
    true
}

/// Said (besides the fallback warning) when a submission batch set at start-up by [`crate::preset_submission_batch`] stays in
/// force although the plan it came from did not load.
pub fn preset_kept_note(planned: u32) -> String {
    format!(
        "note: blaze: the plan's max_tasks = {planned} was set at start-up, before the plan could be checked against the model, and stays in force in this process (CubeCL read it when the device started); the rest of the plan did not load"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_own_submission_batch_wins_and_is_named() {
        assert_eq!(apply_max_tasks(16, Some("16".into())), None);
        let note = apply_max_tasks(16, Some("8".into())).unwrap();
        assert!(
            note.contains("CUBECL_WGPU_MAX_TASKS=8 set by this program wins over the plan's max_tasks = 16"),
            "{note}"
        );
    }
}
