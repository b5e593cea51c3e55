//! Progress lines of long commands (stages with elapsed time; a bar for counted stages).
use std::io::IsTerminal;

/// Prints a stage: one line each with `-v`, a rewritten line on a terminal; when piped (a log
/// file, CI), one line each time the kind of stage changes (`trace`, `confirm`, `round`, ...)
/// and otherwise one every [`HEARTBEAT`] ([`piped_line_due`]), so a log does not get a line per
/// round yet a long stage is never silent.
pub fn progress_printer(command: &'static str, verbose: bool) -> impl FnMut(&str) {
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let (mut last_kind, mut last_line) = (String::new(), started);
    move |stage: &str| {
        let at = started.elapsed().as_secs_f64();
        if verbose {
            eprintln!("[blazec {command} {at:7.1} s] {stage}");
        } else if tty {
            eprint!("\r\x1b[2K[blazec {command} {at:5.0} s] {stage} {}", bar(stage));
        } else {
            let kind = stage.split_whitespace().next().unwrap_or("").to_string();
            if piped_line_due(kind != last_kind, last_line.elapsed()) {
                eprintln!("[blazec {command} {at:7.1} s] {stage}");
                (last_kind, last_line) = (kind, std::time::Instant::now());
            }
        }
    }
}

/// Within one kind of stage, a piped log still gets a line this often: on a GPU machine with
/// empty caches a race's first rounds compile and autotune every candidate's kernels, and a
/// demo's log once showed nothing for 140 s after `round 1/300`.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(20);

/// Whether a piped log gets this stage's line.
fn piped_line_due(kind_changed: bool, since_last_line: std::time::Duration) -> bool {
    kind_changed || since_last_line >= HEARTBEAT
}

/// A 20-character bar for stages that count (`confirm 3/16`, `round 4/15`); empty otherwise.
fn bar(stage: &str) -> String {
    let counted = stage.split_whitespace().find_map(|w| {
        let (k, n) = w.split_once('/')?;
        Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?))
    });
    match counted {
        Some((k, n)) if n > 0 && k <= n => {
            let full = 20 * k / n;
            format!("[{}{}]", "#".repeat(full), "-".repeat(20 - full))
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_piped_log_gets_a_line_per_kind_of_stage_and_a_heartbeat_within_one() {
        use std::time::Duration;
        assert!(super::piped_line_due(true, Duration::ZERO));
        assert!(!super::piped_line_due(false, Duration::from_secs(19)));
        assert!(super::piped_line_due(false, super::HEARTBEAT));
    }

    #[test]
    fn bar_fills_with_the_count_and_ignores_other_stages() {
        assert_eq!(super::bar("confirm 5/20"), format!("[{}{}]", "#".repeat(5), "-".repeat(15)));
        assert_eq!(super::bar("round 15/15"), format!("[{}]", "#".repeat(20)));
        assert_eq!(super::bar("trace"), "");
        assert_eq!(super::bar("3 survivors of 4 requested; measuring"), "");
    }
}
