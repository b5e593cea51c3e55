//! blaze-workloads: the reference workloads of docs/workloads.md as Burn 0.22.1 models with
//! real data, each usable by blazec through `blaze_runtime::ModelFactory`.
pub mod attention;
pub mod attention_dropout;
pub mod attention_model;
pub mod chain;
pub mod cnn;
pub mod lstm;
pub mod mlp;
pub mod moe;
pub mod narrow;
pub mod task;
pub mod text;
pub mod trainer;

/// The device and its description live in the library a user links (blaze-burn).
pub use blaze_burn::device;

use blaze_runtime::ModelFactory;

/// Every built-in workload at its reference shape, in the order of docs/workloads.md.
pub fn all() -> Vec<Box<dyn ModelFactory>> {
    vec![
        Box::new(attention::AttentionSpec::attention(256)),
        Box::new(attention::AttentionSpec::attention(257)),
        Box::new(attention::AttentionSpec::attention(258)),
        Box::new(mlp::MlpSpec::mlp(1024)),
        Box::new(mlp::MlpSpec::mlp(1025)),
        Box::new(lstm::LstmSpec::lstm()),
        Box::new(cnn::CnnSpec::cnn()),
        Box::new(moe::MoeSpec::moe()),
        Box::new(attention::AttentionSpec::gpt_small()),
        Box::new(chain::ChainSpec::chain()),
    ]
}

/// Shape overrides for small test runs; the name records them (`attention-d257-b2s32`).
/// Sequence models take both; mlp and cnn read `batch` as rows / images and have no sequence
/// (`mlp-w1025-b64`, `cnn-mnist-b64`); chain reads them as rows and columns (`chain-32-b64s512`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ShapeOverride {
    pub batch: Option<usize>,
    pub seq: Option<usize>,
}

/// Splits a name with a recorded override (`lstm-h256-b8s32`, `mlp-w1025-b64`) into the base
/// name and its shapes; names without one come back unchanged.
fn split_override(name: &str) -> (&str, ShapeOverride) {
    if let Some((base, suffix)) = name.rsplit_once("-b") {
        let (b, s) = match suffix.split_once('s') {
            Some((b, s)) => (b, Some(s)),
            None => (suffix, None),
        };
        if let (Ok(batch), Ok(seq)) = (b.parse(), s.map(str::parse).transpose()) {
            return (base, ShapeOverride { batch: Some(batch), seq });
        }
    }
    (name, ShapeOverride::default())
}

/// The built-in workload `name`, with shapes overridden. `name` may carry an override itself
/// (as plans record it); explicit `shapes` take precedence over it.
pub fn find(name: &str, shapes: ShapeOverride) -> Option<Box<dyn ModelFactory>> {
    let (base, recorded) = split_override(name);
    let shapes = ShapeOverride { batch: shapes.batch.or(recorded.batch), seq: shapes.seq.or(recorded.seq) };
    // Not a reference workload (so not in `all()`): a reported defect's reproduction attempt.
    if base == narrow::NAME {
        return Some(Box::new(narrow::NarrowSpec::with_rows(shapes.batch)));
    }
    // Not a reference workload: gpt-small with dropout masks a recording can redraw.
    if base == attention::DEVICE_DROPOUT_NAME {
        return Some(Box::new(attention_with(attention::AttentionSpec::gpt_small_device_dropout(), shapes)));
    }
    if !all().iter().any(|w| w.name() == base) {
        return None;
    }
    if let Some(d) = base.strip_prefix("attention-d").and_then(|d| d.parse().ok()) {
        return Some(Box::new(attention_with(attention::AttentionSpec::attention(d), shapes)));
    }
    if let Some(w) = base.strip_prefix("mlp-w").and_then(|w| w.parse().ok()) {
        let spec = mlp::MlpSpec::mlp(w);
        return Some(Box::new(match shapes.batch {
            Some(rows) => spec.with_rows(rows),
            None => spec,
        }));
    }
    match base {
        "gpt-small" => Some(Box::new(attention_with(attention::AttentionSpec::gpt_small(), shapes))),
        "lstm-h256" => {
            let spec = lstm::LstmSpec::lstm();
            let (batch, seq, name) = overridden(&spec.name, spec.batch, spec.seq, shapes);
            Some(Box::new(lstm::LstmSpec { name, batch, seq, ..spec }))
        }
        "moe-e8k2" => {
            let spec = moe::MoeSpec::moe();
            let (batch, seq, name) = overridden(&spec.name, spec.batch, spec.seq, shapes);
            Some(Box::new(moe::MoeSpec { name, batch, seq, ..spec }))
        }
        "cnn-mnist" => Some(Box::new(match shapes.batch {
            Some(b) => cnn::CnnSpec::with_batch(b),
            None => cnn::CnnSpec::cnn(),
        })),
        "chain-32" => Some(Box::new(match shapes {
            ShapeOverride { batch: None, seq: None } => chain::ChainSpec::chain(),
            _ => {
                let reference = chain::ChainSpec::chain();
                chain::ChainSpec::with_shape(
                    shapes.batch.unwrap_or(reference.rows),
                    shapes.seq.unwrap_or(reference.cols),
                )
            }
        })),
        _ => None,
    }
}

/// `(batch, seq, name)` of a sequence workload after `shapes`; the name records any override.
fn overridden(name: &str, batch: usize, seq: usize, shapes: ShapeOverride) -> (usize, usize, String) {
    if shapes == ShapeOverride::default() {
        return (batch, seq, name.into());
    }
    let (batch, seq) = (shapes.batch.unwrap_or(batch), shapes.seq.unwrap_or(seq));
    (batch, seq, format!("{name}-b{batch}s{seq}"))
}

fn attention_with(mut spec: attention::AttentionSpec, shapes: ShapeOverride) -> attention::AttentionSpec {
    (spec.batch, spec.seq, spec.name) = overridden(&spec.name, spec.batch, spec.seq, shapes);
    spec
}

/// Resolver for `blazec::main_with`.
pub fn find_factory(name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>> {
    find(name, ShapeOverride { batch, seq })
}

/// The models [`find`] knows by name besides the reference workloads.
pub fn others() -> Vec<String> {
    vec![attention::DEVICE_DROPOUT_NAME.into(), narrow::NAME.into()]
}

/// `(name, summary)` of every built-in workload.
pub fn list() -> Vec<(String, String)> {
    all().iter().map(|w| (w.name(), w.summary())).collect()
}
