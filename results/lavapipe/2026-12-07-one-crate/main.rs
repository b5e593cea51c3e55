//! A program that runs a bundle with Blaze's one crate: `BlazeConfig`, the decision the bundle
//! makes for the loop's op stream, a captured forward loop and a captured training loop.
use blaze_burn::{BlazeConfig, Captures, CapturedForward, CapturedTraining, DeviceAdam, Regime};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Tensor};

#[derive(Module, Debug)]
struct Net {
    a: Linear,
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "model.blaze".into());
    let device: Device = blaze_burn::default_device();
    let blaze = BlazeConfig::new(path).init(&device);
    let net = Net { a: LinearConfig::new(4, 2).init(&device) };
    let mut eval = CapturedForward::from_bundle(&blaze, &device, |x: &Tensor<2>| net.a.forward(x.clone()));
    for _ in 0..8 {
        let y = eval.run(Tensor::<2>::ones([3, 4], &device));
        let _ = y.into_data();
    }
    println!("forward: {}", eval.execution());
    if let Captures::Yes(entry) = blaze.captures(Regime::Forward) {
        println!("captured entry: {entry}");
    }
    let autodiff = device.clone().autodiff();
    let step = |net: Net, adam: &mut DeviceAdam, x: &Tensor<2>| {
        let loss = net.a.forward(x.clone()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        (adam.update(net, grads), loss.inner())
    };
    let adam = DeviceAdam::from_config(&AdamConfig::new()).expect("Adam without weight decay");
    let net = Net { a: LinearConfig::new(4, 2).init(&autodiff) };
    let mut train = CapturedTraining::from_bundle(&blaze, &device, net, adam, step);
    for _ in 0..8 {
        let _ = train.run(1e-3, Tensor::<2>::ones([3, 4], &autodiff)).into_data();
    }
    println!("training: {}", train.execution());
}
