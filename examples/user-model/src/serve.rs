//! `user-model train --bundle model.blaze`: the user's own training program, as it would use
//! Blaze outside blazec: one call at start-up, a step boundary (one device sync) at the start
//! of every step, then train, then evaluate. Nothing else in the program knows about plans; the bundle's training entry is installed during training and its
//! forward entry during evaluation, chosen by the op stream the program runs.
use blaze_ir::plan::Regime;
use blaze_runtime::{Model, ModelFactory, StepRecorder};

pub struct Options {
    pub bundle: std::path::PathBuf,
    pub steps: usize,
    pub eval_steps: usize,
    /// Leave out the per-step sync (to show what the runtime says then).
    pub no_step_boundary: bool,
}

/// Parses `--bundle F [--steps N] [--eval-steps M]`; None (with a message) on bad input.
pub fn options(args: &[String]) -> Result<Options, String> {
    let mut opts = Options { bundle: Default::default(), steps: 6, eval_steps: 4, no_step_boundary: false };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--no-step-boundary" {
            opts.no_step_boundary = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--bundle" => opts.bundle = value.into(),
            "--steps" => opts.steps = value.parse().map_err(|_| format!("--steps: not a number: {value}"))?,
            "--eval-steps" => {
                opts.eval_steps = value.parse().map_err(|_| format!("--eval-steps: not a number: {value}"))?
            }
            _ => {
                return Err(format!(
                    "unknown option {flag} (usage: user-model train --bundle F [--steps N] [--eval-steps M] [--no-step-boundary])"
                ));
            }
        }
    }
    if opts.bundle.as_os_str().is_empty() {
        return Err("--bundle is required (usage: user-model train --bundle F [--steps N] [--eval-steps M] [--no-step-boundary])".into());
    }
    Ok(opts)
}

pub fn train_then_evaluate(opts: &Options) -> Result<(), String> {
    let factory = crate::model::tiny_mlp_lm(8, 32);
    // The one line a user adds, before the first tensor operation.
    let blaze = blaze_burn::init(&blaze_burn::default_device(), &opts.bundle);
    let mut train = factory.build(Regime::Training)?;
    let partition = run(train.as_mut(), opts.steps, !opts.no_step_boundary);
    report("training", &blaze, &partition);
    let mut eval = factory.build(Regime::Forward)?;
    let partition = run(eval.as_mut(), opts.eval_steps, !opts.no_step_boundary);
    report("evaluation", &blaze, &partition);
    fine_tune(&blaze, opts.eval_steps.max(8));
    infer(&blaze, opts.eval_steps.max(8));
    for event in blaze.events() {
        println!("blaze: {event}");
    }
    println!(
        "blaze costs: load {:.3} ms, watch {:.3} ms",
        blaze.load_time.as_secs_f64() * 1e3,
        blaze.watch_time().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Runs `steps` steps, the last one recorded; the executed partition's fingerprint.
fn run(model: &mut dyn Model, steps: usize, boundary: bool) -> String {
    for _ in 1..steps {
        // The step boundary a plan needs (`blaze_burn::step_boundary(&device)` in a program
        // that holds its device; the Model trait's sync is the same device sync).
        if boundary {
            model.sync();
        }
        model.step(false);
    }
    model.sync();
    let recorder = StepRecorder::start();
    model.step(false);
    model.sync();
    recorder.finish().partition.fingerprint()
}

/// The user's fine-tuning loop, written directly against Burn: a training step with Adam held
/// in place (`blaze_burn::DeviceAdam`) handed to `blaze_burn::CapturedTraining`, which records
/// it when the bundle's training entry asks for captured execution (checking the recorded step
/// and its first replays against the same steps run eagerly on a copy) and runs it eagerly
/// otherwise. The learning rate decays every step; replays take it from the device.
fn fine_tune(blaze: &blaze_runtime::BundleHandle, calls: usize) {
    use burn::optim::GradientsParams;
    let device = blaze_burn::default_device();
    let autodiff = device.clone().autodiff();
    let net = crate::model::Net::seeded(&autodiff);
    // The step blazec tunes (model.rs), with Adam held in place.
    let step = |net: crate::model::Net, adam: &mut blaze_burn::DeviceAdam, batch: &crate::model::Batch| {
        let (_, loss) = net.logits_loss(batch.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    let adam = blaze_burn::DeviceAdam::from_config(&burn::optim::AdamConfig::new());
    // Recorded when the bundle's entry for this step's op stream asks for it, eager otherwise.
    let mut train = blaze_burn::CapturedTraining::from_bundle(blaze, &device, net, adam, step);
    let mut losses = Vec::new();
    for call in 0..calls {
        let lr = 1e-3 * 0.97f64.powi(call as i32);
        let loss = train.run(lr, crate::model::batch(call, 8, 32, &autodiff));
        losses.push(loss.into_data().iter::<f32>().next().unwrap_or(f32::NAN));
    }
    let sum: f64 = losses.iter().map(|&l| f64::from(l)).sum();
    println!("fine-tuning: {calls} calls, {}; loss sum {sum:.6}", train.execution());
}

/// The user's inference loop, written directly against Burn: a forward step handed to
/// `blaze_burn::CapturedForward`, which records it when the bundle's forward entry asks for
/// captured execution (checking its first replays against eager execution) and runs it
/// eagerly otherwise. Each call's batch is made from data as usual; Blaze writes it in place.
fn infer(blaze: &blaze_runtime::BundleHandle, calls: usize) {
    use burn::tensor::{Int, Tensor};
    let device = blaze_burn::default_device();
    let net = crate::model::Net::seeded(&device);
    let step = |x: &Tensor<2, Int>| net.forward(x.clone());
    let mut eval = blaze_burn::CapturedForward::from_bundle(blaze, &device, step);
    let mut checksum = 0.0f64;
    for call in 0..calls {
        let (x, _) = crate::model::batch(call, 8, 32, &device);
        let logits = eval.run(x);
        checksum += logits.into_data().iter::<f32>().map(f64::from).sum::<f64>();
    }
    let memory = eval.memory().map_or(String::new(), |m| {
        format!(
            "; pools reserve {:.1} MiB with the recording live",
            m.reserved_live.unwrap_or(0) as f64 / (1u64 << 20) as f64
        )
    });
    println!("inference: {} calls, {}{memory}; logits sum {checksum:.6}", calls, eval.execution());
}

fn report(phase: &str, blaze: &blaze_runtime::BundleHandle, partition: &str) {
    let installed =
        blaze.installed().map_or("none".to_string(), |p| blaze_ir::bundle::EntryKey::of(&p.contract).to_string());
    println!("after {phase}: installed {installed}; partition {partition}");
}
