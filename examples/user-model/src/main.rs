//! A user's own Burn model, driven by blazec's commands through the harness.
//!
//! A user describes their network, its batches and its loss as a `blaze_burn::Tunable` (a
//! `blaze_runtime::ModelFactory`), lists their models in a `Catalog`, and hands it to
//! `blazec::main_with`. Their binary then has every
//! blazec command: `user-model trace tiny-mlp-lm -o t.ron`, `user-model tune …`, `… run --plan`.
//! `user-model train --bundle model.blaze` is the user's own training program, started with
//! the one call `blaze_burn::init` (serve.rs).
use blaze_runtime::ModelFactory;
use blazec::{Catalog, main_with};

mod model;
mod serve;

struct MyModels;

impl Catalog for MyModels {
    fn find(&self, name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>> {
        (name == model::NAME || name.starts_with(&format!("{}-b", model::NAME)))
            .then(|| Box::new(model::tiny_mlp_lm(batch.unwrap_or(8), seq.unwrap_or(32))) as Box<dyn ModelFactory>)
    }

    fn names(&self) -> Vec<String> {
        vec![model::NAME.into()]
    }
}

fn main() {
    // The user's own program (`train`), and every blazec command for their model.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("train") {
        let done = serve::options(&args[2..]).and_then(|opts| serve::train_then_evaluate(&opts));
        if let Err(e) = done {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        return;
    }
    std::process::exit(main_with(&MyModels));
}
