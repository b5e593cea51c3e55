//! A user's own Burn model, driven by blazec's commands through the harness.
//!
//! A user implements `blaze_runtime::Model` (one step, describe, sync) and
//! `blaze_runtime::ModelFactory` (build a fresh seeded instance), lists their models in a
//! `Catalog`, and hands it to `blaze_compiler::cli::main_with`. Their binary then has every
//! blazec command: `user-model trace tiny-mlp-lm -o t.ron`, `user-model tune …`, `… run --plan`.
use blaze_compiler::cli::{Catalog, main_with};
use blaze_runtime::ModelFactory;

mod model;

struct MyModels;

impl Catalog for MyModels {
    fn find(&self, name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>> {
        (name == model::NAME || name.starts_with(&format!("{}-b", model::NAME)))
            .then(|| Box::new(model::TinyMlpLm::new(batch.unwrap_or(8), seq.unwrap_or(32))) as Box<dyn ModelFactory>)
    }

    fn names(&self) -> Vec<String> {
        vec![model::NAME.into()]
    }
}

fn main() {
    std::process::exit(main_with(&MyModels));
}
