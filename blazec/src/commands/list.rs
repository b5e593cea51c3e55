//! `blazec list`: the catalog's models with their parameter counts, then the other models it
//! finds by name.
use blaze_compiler::catalog::Resolver;
use blaze_ir::plan::Regime;

pub fn run(resolve: &Resolver) -> anyhow::Result<()> {
    let (names, others) = (resolve.names(), resolve.others());
    let width = names.iter().chain(&others).map(String::len).max().unwrap_or(0);
    for name in &names {
        print_row(resolve, name, width);
    }
    if !others.is_empty() {
        println!("\nalso found by name (not reference workloads):");
        for name in &others {
            print_row(resolve, name, width);
        }
    }
    Ok(())
}

fn print_row(resolve: &Resolver, name: &str, width: usize) {
    let Some(factory) = resolve.find(name, None, None) else { return };
    // Parameters are counted on a built (forward) instance.
    let params = factory.build(Regime::Forward).map(|m| m.describe().num_params).unwrap_or(0);
    println!("{name:<width$} {params:>10} params  {}", factory.summary());
}
