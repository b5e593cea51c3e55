//! `blazec check <bundle>`: does each entry still fit this machine and this build? Device and
//! Burn version from the contract; for entries of this device, the model is traced again and
//! its op-stream fingerprint and cut points are compared with the entry's. Usable in a user's
//! CI: exit 0 when an entry for this machine fits, 1 otherwise.
use blaze_compiler::catalog::{Resolver, factory_named};
use blaze_compiler::tracer::{TraceOptions, trace};
use blaze_ir::{Bundle, PlanFile, bundle::EntryKey, plan::DeviceInfo};
use clap::Args;
use std::path::PathBuf;

/// One row of the table.
pub struct Row {
    pub entry: String,
    pub verdict: Result<(), String>,
}

/// Checks every entry (only those of `model`, when given). `this_device` is the machine's.
pub fn check(
    bundle: &Bundle,
    model: Option<&str>,
    this_device: &DeviceInfo,
    resolve: &Resolver,
    progress: &mut dyn FnMut(&str),
) -> Vec<Row> {
    let chosen = bundle.entries.iter().filter(|p| {
        model.is_none_or(|m| {
            p.contract.model == m
                || blaze_compiler::catalog::split_shape_suffix(&p.contract.model).is_some_and(|(base, _, _)| base == m)
        })
    });
    chosen
        .map(|plan| {
            let entry = EntryKey::of(&plan.contract).to_string();
            progress(&format!("check {entry}"));
            Row { entry, verdict: check_entry(plan, this_device, resolve) }
        })
        .collect()
}

fn check_entry(plan: &PlanFile, this_device: &DeviceInfo, resolve: &Resolver) -> Result<(), String> {
    let c = &plan.contract;
    if c.device.adapter != this_device.adapter || c.device.compiler != this_device.compiler {
        return Err(format!(
            "another device: made on `{}` ({}), this machine has `{}` ({})",
            c.device.adapter, c.device.compiler, this_device.adapter, this_device.compiler
        ));
    }
    if c.burn_version != blaze_runtime::BURN_VERSION {
        return Err(format!("made with Burn {}, this build has Burn {}", c.burn_version, blaze_runtime::BURN_VERSION));
    }
    let factory = factory_named(resolve, &c.model).map_err(|e| e.to_string())?;
    let traced =
        trace(factory.as_ref(), &TraceOptions::new(c.regime, 3)).map_err(|e| format!("cannot trace the model: {e}"))?;
    plan.check_contract(&traced.contract()).map_err(|e| e.to_string())?;
    let present = traced.cut_points();
    let gone: Vec<String> = plan.cuts.iter().filter(|b| !present.contains(b)).map(|b| b.to_string()).collect();
    if !gone.is_empty() {
        return Err(format!("cuts no longer at cut points of the model: {}", gone.join(", ")));
    }
    Ok(())
}

/// The table, Markdown.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from("| entry | fits this machine and build |\n|---|---|\n");
    for r in rows {
        let verdict = match &r.verdict {
            Ok(()) => "yes".to_string(),
            Err(why) => format!("no: {why}"),
        };
        out.push_str(&format!("| {} | {verdict} |\n", r.entry));
    }
    out
}

/// The arguments of `blazec check` (its help is on the command).
#[derive(Args)]
pub struct CheckArgs {
    bundle: PathBuf,
    /// Check only the entries of this model.
    #[arg(long)]
    model: Option<String>,
}

pub fn run(resolve: &Resolver, args: CheckArgs) -> anyhow::Result<()> {
    let CheckArgs { bundle, model } = args;
    let bundle = blaze_ir::Bundle::read(&bundle)?;
    let device = blaze_workloads::device::device_info();
    let mut progress = crate::progress::progress_printer("check", false);
    let rows = crate::commands::check::check(&bundle, model.as_deref(), &device, resolve, &mut progress);
    print!("{}", crate::commands::check::table(&rows));
    anyhow::ensure!(
        !rows.is_empty(),
        "the bundle holds no entry{}",
        model.map_or(String::new(), |m| format!(" of model `{m}`"))
    );
    anyhow::ensure!(
        rows.iter().any(|r| r.verdict.is_ok()),
        "no entry fits this machine ({}) and build",
        device.adapter
    );
    Ok(())
}
