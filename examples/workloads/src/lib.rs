//! blaze-workloads: the reference workloads of docs/workloads.md as Burn 0.22.1 models with
//! real data, each usable by blazec through `blaze_runtime::ModelFactory`.
pub mod attention;
pub mod device;
pub mod text;
pub mod trainer;

use blaze_runtime::ModelFactory;

/// Every built-in workload at its reference shape.
pub fn all() -> Vec<Box<dyn ModelFactory>> {
    vec![
        Box::new(attention::AttentionSpec::attention(256)),
        Box::new(attention::AttentionSpec::attention(257)),
        Box::new(attention::AttentionSpec::attention(258)),
        Box::new(attention::AttentionSpec::gpt_small()),
    ]
}

/// Shape overrides for small test runs; the name records them (`attention-d257-b2s32`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ShapeOverride {
    pub batch: Option<usize>,
    pub seq: Option<usize>,
}

/// The built-in workload `name`, with shapes overridden.
pub fn find(name: &str, shapes: ShapeOverride) -> Option<Box<dyn ModelFactory>> {
    let base = name.split("-b").next().unwrap_or(name);
    let known = all().into_iter().any(|w| w.name() == base);
    if !known {
        return None;
    }
    if let Some(d) = base.strip_prefix("attention-d").and_then(|d| d.parse().ok()) {
        return Some(Box::new(attention_with(attention::AttentionSpec::attention(d), shapes)));
    }
    if base == "gpt-small" {
        return Some(Box::new(attention_with(attention::AttentionSpec::gpt_small(), shapes)));
    }
    None
}

fn attention_with(mut spec: attention::AttentionSpec, shapes: ShapeOverride) -> attention::AttentionSpec {
    if shapes == ShapeOverride::default() {
        return spec;
    }
    spec.batch = shapes.batch.unwrap_or(spec.batch);
    spec.seq = shapes.seq.unwrap_or(spec.seq);
    spec.name = format!("{}-b{}s{}", spec.name, spec.batch, spec.seq);
    spec
}

/// Resolver for `blaze_compiler::cli::main_with`.
pub fn find_factory(name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>> {
    find(name, ShapeOverride { batch, seq })
}

/// `(name, summary)` of every built-in workload.
pub fn list() -> Vec<(String, String)> {
    all().iter().map(|w| (w.name(), w.summary())).collect()
}
