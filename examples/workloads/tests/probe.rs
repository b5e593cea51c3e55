use blaze_ir::plan::Regime;
use blaze_workloads::{ShapeOverride, find};
use std::time::Instant;

#[test]
fn probe() {
    let spec = std::env::var("PROBE").unwrap();
    for item in spec.split(',') {
        let mut parts = item.split(':');
        let name = parts.next().unwrap();
        let steps: usize = parts.next().unwrap().parse().unwrap();
        let f = find(name, ShapeOverride::default()).unwrap();
        let t = Instant::now();
        let mut m = f.build(Regime::Training).unwrap();
        println!("{name}: build {:.2?}", t.elapsed());
        let mut losses = vec![];
        for i in 0..steps {
            let t = Instant::now();
            let l = m.step(false).loss;
            losses.push(l);
            if i < 3 || i % 25 == 0 || i + 1 == steps {
                println!("{name} step {i}: loss {l:.4} in {:.2?}", t.elapsed());
            }
        }
    }
}
