//! The child process of `tests/side_files.rs`: seeding prints its line and may hang, so each case
//! runs it here, in a process of its own, whose stderr the test reads and which it kills if it
//! hangs. A binary of its own (no test harness): it is not a test and is never counted as one.
//! The mode (`seed`, `seed-shipped`, `init`, `warm`, `export`) and the case's directory come
//! from the environment; the result goes to `<dir>/result.txt`.
#[path = "side_files_common.rs"]
mod side_files_common;
use side_files_common::*;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mode = std::env::var(MODE).expect("run by side_files.rs, which sets the mode");
    let dir = PathBuf::from(std::env::var_os(DIR).expect("the case's directory"));
    let bundle = dir.join("model.blaze");
    let result = match mode.as_str() {
        "seed" => {
            use_scratch_cache(&dir.join("cache"));
            let start = Instant::now();
            let seeded = blaze_burn::seed_autotune(&bundle, &test_device());
            format!("{seeded:?}\n{}", start.elapsed().as_millis())
        }
        "seed-shipped" => {
            use_scratch_cache(&dir.join("cache"));
            let start = Instant::now();
            let seeded = blaze_burn::seed_shipped(&dir.join("shipped"), &test_device());
            format!("{seeded:?}\n{}", start.elapsed().as_millis())
        }
        "init" => {
            let device = blaze_burn::default_device();
            write_bundle(&dir, SIDE, &blaze_burn::device_info(), RECORDED);
            use_scratch_cache(&dir.join("cache"));
            let start = Instant::now();
            let handle = blaze_burn::init(&device, &bundle);
            let took = start.elapsed().as_millis();
            drop(handle);
            format!("-\n{took}")
        }
        "warm" => {
            use_scratch_cache(&dir.join("cache"));
            let flat = cubecl::bundle::EmbeddedBundle::open(cubecl::bytes::Bytes::from_bytes_vec(flat_decisions()))
                .expect("valid flat bundle");
            let report = cubecl::bundle::import(&flat);
            assert_eq!(report.imported, RECORDED, "{report:?}");
            String::new()
        }
        "export" => {
            // What blazec's `add_to_bundle` asks of CubeCL.
            let options = cubecl::bundle::ExportOptions {
                name: "blaze side-file test".into(),
                namespaces: vec!["autotune".into()],
                format: cubecl::bundle::BundleFormat::Sqlite,
                ..Default::default()
            };
            cubecl::bundle::export(&[dir.join("cache")], dir.join("real.cubecl"), &options).expect("export");
            String::new()
        }
        other => panic!("unknown mode {other}"),
    };
    std::fs::write(dir.join("result.txt"), result).unwrap();
}
