//! blazec: thin binary over blaze-compiler with the built-in workloads.
use blaze_runtime::ModelFactory;
use blazec::{Catalog, main_with};

struct BuiltIn;

impl Catalog for BuiltIn {
    fn find(&self, name: &str, batch: Option<usize>, seq: Option<usize>) -> Option<Box<dyn ModelFactory>> {
        blaze_workloads::find_factory(name, batch, seq)
    }
    fn names(&self) -> Vec<String> {
        blaze_workloads::list().into_iter().map(|(n, _)| n).collect()
    }
    fn others(&self) -> Vec<String> {
        blaze_workloads::others()
    }
}

fn main() {
    std::process::exit(main_with(&BuiltIn));
}
