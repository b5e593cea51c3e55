//! The commands (argument parsing, printing, exit codes) are one layer over the
//! pipeline's stage modules: no stage module imports a command module, and the modules import
//! each other without cycles. Read from the sources (`crate::<module>` paths), so a new import
//! that breaks the layering fails here.
use std::collections::{BTreeMap, BTreeSet};

/// Command modules: they parse arguments and print; everything else is a stage or a helper.
const COMMANDS: [&str; 9] =
    ["cli", "run", "serve", "demo", "bench", "race_check", "tune_cli", "check", "live::command"];

/// Module name of a source file: `tune/race.rs` -> `tune`, `live/command.rs` -> `live::command`.
fn node_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    if rel == "live/command" {
        return "live::command".into();
    }
    rel.split('/').next().unwrap().trim_end_matches("/mod").to_string()
}

fn sources() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

/// Module -> the modules it names as `crate::<module>` (other than itself).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in sources() {
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
                let name: String = path.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let to = if name == "live" && path.starts_with("live::command") {
                    "live::command".to_string()
                } else {
                    name
                };
                if !to.is_empty() && to != from {
                    edges.insert(to);
                }
            }
        }
    }
    graph
}

#[test]
fn no_stage_module_imports_a_command_module() {
    let graph = imports();
    let offenders: Vec<String> = graph
        .iter()
        .filter(|(from, _)| !COMMANDS.contains(&from.as_str()) && from.as_str() != "main" && from.as_str() != "lib")
        .flat_map(|(from, to)| {
            to.iter().filter(|t| COMMANDS.contains(&t.as_str())).map(move |t| format!("{from} -> {t}"))
        })
        .collect();
    assert!(offenders.is_empty(), "stage modules importing commands: {offenders:?}");
}

#[test]
fn modules_import_each_other_without_cycles() {
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
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(n, &graph, &mut state, &mut Vec::new()) {
                panic!("import cycle: {}", cycle.join(" -> "));
            }
        }
    }
    // The test can fail: the graph it checks is the real one, with the commands in it.
    assert!(
        graph.get("cli").is_some_and(|e| e.contains("tune_cli") && e.contains("catalog") && e.contains("run")),
        "{graph:?}"
    );
}
