//! One line for a failure whose whole text is a panic report: a child's stderr, or the payload
//! of a panic caught in this process. CubeCL and Burn put the cause of a failed step at the end
//! of a chain of `Caused by:` paragraphs; the line names the panic's first line and that cause,
//! and says what it means when the cause is a known device condition (memory, device lost).

/// The panic's first line and its innermost cause, or the last meaningful line when the text
/// holds no panic.
pub fn summarize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let headline = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => lines.get(i + 1).map(|l| l.trim()).filter(|l| !l.is_empty()).unwrap_or("panicked"),
        None => "",
    };
    let cause = innermost_cause(&lines);
    let mut line = match (headline.is_empty(), cause) {
        (true, None) => last_meaningful(&lines).unwrap_or("no message").to_string(),
        (_, Some(cause)) if !headline.contains(cause) => format!("{}; cause: {cause}", shorten(headline)),
        _ => shorten(headline).to_string(),
    };
    if let Some(meaning) = meaning(text) {
        line.push_str(&format!(" ({meaning})"));
    }
    line
}

/// The first line after the last `Caused by:`.
fn innermost_cause<'a>(lines: &[&'a str]) -> Option<&'a str> {
    let at = lines.iter().rposition(|l| l.trim() == "Caused by:")?;
    lines[at + 1..].iter().map(|l| l.trim()).find(|l| !l.is_empty())
}

fn last_meaningful<'a>(lines: &[&'a str]) -> Option<&'a str> {
    lines.iter().rev().map(|l| l.trim()).find(|l| {
        !l.is_empty()
            && !l.starts_with("note:")
            && !l.starts_with(|c: char| c.is_ascii_digit())
            && !l.starts_with("at ")
            && *l != "stack backtrace:"
    })
}

/// A panic message can run to pages (an error's whole chain on one line).
fn shorten(s: &str) -> &str {
    let cut = s.find(": use `try_into_data`").unwrap_or(s.len()).min(240);
    let mut end = cut;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn meaning(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    if t.contains("can't allocate")
        || t.contains("out of memory")
        || t.contains("outofmemory")
        || t.contains("out_of_device_memory")
    {
        Some("the device ran out of memory: try a smaller batch or shape")
    } else if t.contains("device lost") || t.contains("devicelost") || t.contains("error_device_lost") {
        Some("the device was lost: the driver reset it or it stopped answering")
    } else {
        None
    }
}

/// The text of a caught panic's payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::summarize;

    // What a training step on lavapipe printed when an allocation failed (ulimit -v).
    const OOM: &str = "\nthread 'main' (18920) panicked at examples/workloads/src/trainer.rs:98:21:\nError while reading data: use `try_into_data` instead to catch the error at runtime: An error happened during execution\nCaused by:\n  Several failures at once\nCaused by:\n  The bytes were never written (failure #129, still claiming 1 buffer(s))\n  skipped `ReduceKernel`: it needed memory\nCaused by:\n  An IO error happened\nCaused by:\n  can't allocate buffer of size: 819200000\nNo backtrace available\nstack backtrace:\n   0: __rustc::rust_begin_unwind\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";

    #[test]
    fn an_allocation_failure_names_its_cause_and_what_it_means() {
        assert_eq!(
            summarize(OOM),
            "Error while reading data; cause: can't allocate buffer of size: 819200000 (the device ran out of memory: try a smaller batch or shape)"
        );
    }

    #[test]
    fn a_device_loss_is_named() {
        let text = "thread 'main' panicked at x.rs:1:1:\nsubmission failed\nCaused by:\n  Device lost\n";
        assert_eq!(
            summarize(text),
            "submission failed; cause: Device lost (the device was lost: the driver reset it or it stopped answering)"
        );
    }

    #[test]
    fn text_without_a_panic_gives_its_last_meaningful_line() {
        assert_eq!(summarize("\nerror: no such model `x`\nnote: see --help\n"), "error: no such model `x`");
        assert_eq!(summarize(""), "no message");
    }
}
