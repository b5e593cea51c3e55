//! `blazec list`: the catalog's models with their parameter counts.
use blaze_compiler::catalog::Resolver;
use blaze_ir::plan::Regime;

pub fn run(resolve: &Resolver) -> anyhow::Result<()> {
    for name in resolve.names() {
        let Some(factory) = resolve.find(&name, None, None) else { continue };
        // Parameters are counted on a built (forward) instance.
        let params = factory.build(Regime::Forward).map(|m| m.describe().num_params).unwrap_or(0);
        println!("{:<16} {:>10} params  {}", name, params, factory.summary());
    }
    Ok(())
}
