//! The models a binary offers and how a trace or plan names one: the catalog (built-in
//! workloads or a user's own) and the name of a traced model with its recorded test shape.
//! Nothing here parses a command line (blazec's `model_args` does).
use blaze_runtime::ModelFactory;

/// The models a binary offers: the built-in workloads for `blazec`, a user's own models for
/// a user binary that calls `blazec::main_with`.
pub trait Catalog {
    /// The model `name`, with optional test-size overrides.
    fn find(&self, name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>>;
    /// Every model name at its reference shape.
    fn names(&self) -> Vec<String>;
    /// Models found by name that are not among [`Catalog::names`] (variants of a model,
    /// reproductions of a report): listed apart, never in a run over every model.
    fn others(&self) -> Vec<String> {
        Vec::new()
    }
}

pub type Resolver = dyn Catalog;

pub fn read_trace(path: &std::path::Path) -> anyhow::Result<blaze_ir::Trace> {
    let text =
        blaze_ir::file::read_text(path).map_err(|e| anyhow::anyhow!("cannot read trace {}: {e}", path.display()))?;
    blaze_ir::Trace::from_ron(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The factory that rebuilds the model a trace was made from (its name records test shapes).
pub fn factory_of_trace(resolve: &Resolver, trace: &blaze_ir::Trace) -> anyhow::Result<Box<dyn ModelFactory>> {
    factory_named(resolve, &trace.model)
}

/// The factory of the model a trace or plan names (the name records any test shapes).
pub fn factory_named(resolve: &Resolver, model: &str) -> anyhow::Result<Box<dyn ModelFactory>> {
    let named = |f: Box<dyn ModelFactory>| (f.name() == model).then_some(f);
    // A name with a recorded test shape (`attention-d257-b2s32`) first, then the name as it is,
    // so a model whose own name contains `-b` (`tiny-bert`) is found too.
    split_shape_suffix(model)
        .and_then(|(base, batch, seq)| resolve.find(base, Some(batch), seq).and_then(named))
        .or_else(|| resolve.find(model, None, None).and_then(named))
        .ok_or_else(|| anyhow::anyhow!("the model `{model}` is not known to this binary (see `list`)"))
}

/// `attention-d257-b2s32` -> ("attention-d257", 2, Some(32)); `mlp-w1025-b64` -> (.., 64, None);
/// None unless the name ends in such a suffix (`tiny-bert` has none).
pub fn split_shape_suffix(name: &str) -> Option<(&str, usize, Option<usize>)> {
    let (base, tail) = name.rsplit_once("-b")?;
    let (b, s) = match tail.split_once('s') {
        Some((b, s)) => (b, Some(s)),
        None => (tail, None),
    };
    let seq = match s {
        Some(s) => Some(s.parse().ok()?),
        None => None,
    };
    Some((base, b.parse().ok()?, seq))
}

#[cfg(test)]
mod tests {
    use super::split_shape_suffix;

    #[test]
    fn only_a_trailing_shape_suffix_is_split_off() {
        assert_eq!(split_shape_suffix("attention-d257-b2s32"), Some(("attention-d257", 2, Some(32))));
        assert_eq!(split_shape_suffix("mlp-w1025-b64"), Some(("mlp-w1025", 64, None)));
        assert_eq!(split_shape_suffix("tiny-bert"), None);
        assert_eq!(split_shape_suffix("tiny-bert-b2s32"), Some(("tiny-bert", 2, Some(32))));
        assert_eq!(split_shape_suffix("my-big-model"), None);
    }
}
