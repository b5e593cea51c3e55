//! The layering of the workspace, read from the crate graph (`cargo metadata`) and the sources,
//! never from a list kept by hand:
//! * ARCHITECTURE.md's crate map names every workspace crate once, each after the crates it
//!   depends on (processing order);
//! * only `blazec` parses a command line (clap), and no library crate depends on it;
//! * the library crates print nothing but the documented `warning: blaze:` and `note: blaze:`
//!   lines, live mode's event lines in a user's program, and the one line of a child whose
//!   parent went away;
//! * blaze-compiler's modules import each other without cycles.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Workspace crate -> (its directory, the workspace crates and all crates it depends on, normal
/// dependencies only).
struct Crate {
    dir: PathBuf,
    deps: BTreeSet<String>,
}

fn workspace() -> BTreeMap<String, Crate> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut crates = BTreeMap::new();
    for package in meta["packages"].as_array().unwrap() {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let deps = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        crates.insert(
            package["name"].as_str().unwrap().to_string(),
            Crate { dir: manifest.parent().unwrap().into(), deps },
        );
    }
    assert!(crates.len() >= 7, "cargo metadata read: {:?}", crates.keys().collect::<Vec<_>>());
    crates
}

/// The crates ARCHITECTURE.md's crate map names, in its order (first column, in backticks).
fn documented_order() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let map = text.split("## Crates").nth(1).expect("ARCHITECTURE.md has a `## Crates` section");
    let map = map.split("\n## ").next().unwrap();
    map.lines().filter_map(|l| l.strip_prefix("| `")).map(|l| l.split('`').next().unwrap().to_string()).collect()
}

#[test]
fn the_crate_map_names_every_crate_after_its_dependencies() {
    let crates = workspace();
    let order = documented_order();
    let named: BTreeSet<&String> = order.iter().collect();
    assert_eq!(named.len(), order.len(), "a crate named twice: {order:?}");
    let all: BTreeSet<&String> = crates.keys().collect();
    assert_eq!(named, all, "ARCHITECTURE.md's crate map against the workspace");
    for (i, name) in order.iter().enumerate() {
        for dep in crates[name].deps.iter().filter(|d| crates.contains_key(*d)) {
            let at = order.iter().position(|n| n == dep).unwrap();
            assert!(at < i, "{name} depends on {dep}, which the crate map lists after it");
        }
    }
}

#[test]
fn only_blazec_parses_arguments_and_no_library_depends_on_it() {
    let crates = workspace();
    let users: Vec<&String> = crates.iter().filter(|(_, c)| c.deps.contains("clap")).map(|(n, _)| n).collect();
    assert_eq!(users, ["blazec"], "crates depending on clap");
    let libraries = ["blaze-ir", "blaze-runtime", "blaze-burn", "blaze-workloads", "blaze-compiler"];
    for lib in libraries {
        assert!(!crates[lib].deps.contains("blazec"), "{lib} depends on blazec");
    }
    // The test can fail: the graph it reads is the real one.
    assert!(crates["blazec"].deps.contains("blaze-compiler"));
}

/// `(file, call)` of every print in `dir`'s sources outside tests.
fn prints_in(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests.rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                let lines: Vec<&str> = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
                for (i, line) in lines.iter().enumerate() {
                    if ["println!(", "print!(", "eprintln!(", "eprint!("].iter().any(|m| line.contains(m)) {
                        // The macro and the two lines after it: where a long format string is.
                        let call: Vec<&str> = lines[i..(i + 3).min(lines.len())].iter().map(|l| l.trim()).collect();
                        out.push((p.display().to_string(), call.join(" ")));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn library_crates_print_only_their_documented_lines() {
    let crates = workspace();
    for lib in ["blaze-ir", "blaze-runtime", "blaze-burn", "blaze-compiler"] {
        let src = crates[lib].dir.join("src");
        let stray: Vec<_> = prints_in(&src)
            .into_iter()
            // The fuzzer is a binary of its own.
            .filter(|(file, _)| !file.contains("/src/bin/"))
            .filter(|(_, line)| {
                let documented = [
                    // A user's program hears of Blaze only through `warning: blaze:` (one per
                    // cause) and `note: blaze:` lines (the settings a plan applied).
                    "warning: blaze:",
                    "note: blaze:",
                    "fallback_warning(",
                    "side_file_warning(",
                    "eprintln!(\"{note}\")",
                    "eprintln!(\"{line}\")",
                    "eprintln!(\"{warning}\")",
                    // Live mode's decisions, in a user's program that turned it on.
                    "[blaze live step",
                    // A child of blazec whose parent went away ends with one line.
                    "parent process went away",
                    // Test-only fault hooks say when they fire.
                    "test only",
                ];
                !documented.iter().any(|d| line.contains(d))
            })
            .collect();
        assert!(stray.is_empty(), "{lib} prints: {stray:#?}");
    }
    // The test can fail: blazec's commands do print.
    assert!(!prints_in(&crates["blazec"].dir.join("src")).is_empty());
}

/// Module name of a source file: `tune/processes.rs` -> `tune`.
fn node_of(rel: &str) -> String {
    rel.trim_end_matches(".rs").split('/').next().unwrap().to_string()
}

/// blaze-compiler's module -> the modules it names as `crate::<module>` (other than itself).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = workspace()["blaze-compiler"].dir.join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&p).unwrap();
            let from = node_of(&rel);
            let edges = graph.entry(from.clone()).or_default();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                // `crate::{a, b::c}` names several modules; `crate::a::b` one.
                let named: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or("").split(',').map(str::trim).collect(),
                    None => vec![rest],
                };
                for path in named {
                    let to: String = path.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !to.is_empty() && to != from {
                        edges.insert(to);
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn compiler_modules_import_each_other_without_cycles() {
    let graph = imports();
    // Depth-first search for a back edge; report the cycle.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == m).unwrap();
                    return Some(path[start..].iter().cloned().chain([m.clone()]).collect());
                }
                0 => {
                    if let Some(c) = visit(m, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(cycle) = visit(n, &graph, &mut state, &mut Vec::new())
        {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
    // The test can fail: the graph it checks is the real one.
    assert!(graph.get("tune").is_some_and(|e| e.contains("confirm") && e.contains("stats")), "{graph:?}");
}

/// `cargo tree` of blazec's normal build (no dev-dependencies), with `extra` cargo arguments.
fn tree_of_blazec(extra: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "-p", "blazec", "-e", "no-dev", "--offline", "-f", "{p} [{f}]"])
        .args(extra)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_default_build_of_blazec_has_no_fault_switches() {
    let default = tree_of_blazec(&[]);
    let ours = |tree: &str| -> Vec<String> {
        tree.lines().filter(|l| l.contains("blaze-runtime v") || l.contains("blazec v")).map(str::to_string).collect()
    };
    assert!(ours(&default).iter().all(|l| !l.contains("faults")), "{default}");
    // The test can fail: with the feature, the switches are there.
    let with = tree_of_blazec(&["--features", "faults"]);
    assert!(ours(&with).iter().any(|l| l.contains("blaze-runtime v") && l.contains("[faults]")), "{with}");
}

/// The `.rs` files of the workspace's own crates (not vendor/, results/ or a target directory).
fn workspace_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.')
                    && !["vendor", "results", "target", "patches", "plans"].contains(&name.as_str())
                {
                    walk(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo(), &mut out);
    out.sort();
    out
}

/// The test function an attribute at line `at` of `lines` belongs to: the first `fn` after it.
fn test_fn_after(lines: &[&str], at: usize) -> Option<String> {
    lines[at..].iter().find_map(|l| {
        let rest = l.trim_start().strip_prefix("fn ")?;
        Some(rest.split(['(', '<']).next()?.to_string())
    })
}

/// The long tier (`./blaze test --long`) is the tests marked `#[ignore = "long tier: ..."]`; each
/// names, after `fast: `, the test of the fast tier (`./blaze test`, what CI runs) that checks
/// its behaviour in a smaller form, as `<file from the repository root>::<test>`. That test
/// exists, is a test, and is not itself in the long tier. No test is ignored for another reason,
/// and the long tier is not empty (so this check can fail).
#[test]
fn every_long_tier_test_names_the_fast_test_that_covers_it() {
    let root = repo();
    let mut long = Vec::new();
    for file in workspace_sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let line = line.trim();
            if !line.starts_with("#[ignore") {
                continue;
            }
            let rel = file.strip_prefix(&root).unwrap().display().to_string();
            let test = test_fn_after(&lines, at).unwrap_or_default();
            let reason = line.strip_prefix("#[ignore = \"").and_then(|r| r.strip_suffix("\"]"));
            let reason = reason.unwrap_or_else(|| panic!("{rel}::{test}: an ignored test says why: {line}"));
            assert!(
                reason.starts_with("long tier: "),
                "{rel}::{test}: ignored for another reason than the long tier: {line}"
            );
            let fast =
                reason.split("fast: ").nth(1).unwrap_or_else(|| panic!("{rel}::{test} names no fast test: {line}"));
            let (fast_file, fast_test) = fast.split_once("::").unwrap_or_else(|| panic!("{rel}::{test}: `{fast}`"));
            let fast_text = std::fs::read_to_string(root.join(fast_file))
                .unwrap_or_else(|e| panic!("{rel}::{test}: the fast test's file {fast_file}: {e}"));
            let fast_lines: Vec<&str> = fast_text.lines().collect();
            let def = fast_lines
                .iter()
                .position(|l| l.trim_start().starts_with(&format!("fn {fast_test}(")))
                .unwrap_or_else(|| panic!("{rel}::{test}: no test `{fast_test}` in {fast_file}"));
            // The attributes above the definition, up to the previous item.
            let attrs: Vec<&str> = fast_lines[..def]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("#[") || l.starts_with("///"))
                .collect();
            assert!(attrs.contains(&"#[test]"), "{rel}::{test}: {fast_file}::{fast_test} is not a test");
            assert!(
                !attrs.iter().any(|a| a.starts_with("#[ignore")),
                "{rel}::{test}: {fast_file}::{fast_test} is in the long tier itself"
            );
            long.push(format!("{rel}::{test}"));
        }
    }
    // This file names the attribute in its own sources, in strings only (never at a line's start).
    assert!(!long.is_empty(), "the long tier holds tests");
    println!("long tier: {long:#?}");
}
