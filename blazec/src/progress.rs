//! Progress lines of long commands (stages with elapsed time; a bar for counted stages).
use std::io::IsTerminal;

/// Prints a stage: one line each with `-v`, a rewritten line on a terminal; when piped (a log
/// file, CI), one line each time the kind of stage changes (`trace`, `confirm`, `round`, ...),
/// so a long run is never silent yet a log does not get a line per round.
pub fn progress_printer(command: &'static str, verbose: bool) -> impl FnMut(&str) {
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut last_kind = String::new();
    move |stage: &str| {
        let at = started.elapsed().as_secs_f64();
        if verbose {
            eprintln!("[blazec {command} {at:7.1} s] {stage}");
        } else if tty {
            eprint!("\r\x1b[2K[blazec {command} {at:5.0} s] {stage} {}", bar(stage));
        } else {
            let kind = stage.split_whitespace().next().unwrap_or("").to_string();
            if kind != last_kind {
                eprintln!("[blazec {command} {at:7.1} s] {stage}");
                last_kind = kind;
            }
        }
    }
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
    fn bar_fills_with_the_count_and_ignores_other_stages() {
        assert_eq!(super::bar("confirm 5/20"), format!("[{}{}]", "#".repeat(5), "-".repeat(15)));
        assert_eq!(super::bar("round 15/15"), format!("[{}]", "#".repeat(20)));
        assert_eq!(super::bar("trace"), "");
        assert_eq!(super::bar("3 survivors of 4 requested; measuring"), "");
    }
}
