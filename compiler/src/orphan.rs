//! A child process of blazec (tune's worker, a `run` spawned by `bench` or tune's fusion-off arm)
//! must not outlive its parent: killed or interrupted, the parent would leave an orphan that
//! keeps the device busy and, for a tune worker, later writes a plan nobody asked for any more.
//! The parent sets [`ENV`]; the child watches its parent id and exits when it changes (the
//! orphan is re-parented). Polling keeps this free of platform calls.
use std::time::Duration;

/// Set by a blazec parent in its child's environment.
pub(crate) const ENV: &str = "BLAZE_EXIT_WITH_PARENT";

/// Exit code of a child whose parent went away (as for SIGINT).
pub(crate) const ORPHANED_EXIT: i32 = 130;

/// Starts the watch when [`ENV`] is set; does nothing otherwise.
pub fn exit_with_parent_if_asked() {
    #[cfg(unix)]
    if std::env::var_os(ENV).is_some() {
        let parent = std::os::unix::process::parent_id();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(250));
                if std::os::unix::process::parent_id() != parent {
                    eprintln!("blazec: parent process went away; stopping without writing anything");
                    std::process::exit(ORPHANED_EXIT);
                }
            }
        });
    }
}
