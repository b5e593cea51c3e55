//! The Burn patch is counted and checked: vendor/burn-fusion is exactly the published crate
//! (vendor/burn-fusion-stock) plus patches/burn-fusion.patch, and setup refuses an edited stock.
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn sh(cmd: &str, dir: &Path) -> std::process::Output {
    Command::new("bash").arg("-c").arg(cmd).current_dir(dir).output().unwrap()
}

#[test]
fn patched_copy_is_stock_plus_patch() {
    let tmp = std::env::temp_dir().join(format!("blaze-patch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let root = root();
    let out = sh(
        &format!(
            "cp -a '{0}/vendor/burn-fusion-stock' '{1}' && cd '{1}' && patch -p1 --quiet < '{0}/patches/burn-fusion.patch' && diff -r -x '.blaze-*' . '{0}/vendor/burn-fusion'",
            root.display(),
            tmp.display()
        ),
        &root,
    );
    assert!(
        out.status.success(),
        "patched copy differs from stock + patch:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn setup_refuses_an_edited_stock_copy_and_counts_the_patch() {
    let root = root();
    let tmp = std::env::temp_dir().join(format!("blaze-setup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("vendor")).unwrap();
    let prep = sh(
        &format!(
            "cp -a '{0}/patches' '{1}/' && cp '{0}/vendor/setup.sh' '{1}/vendor/' && cp -a '{0}/vendor/burn-fusion-stock' '{1}/vendor/'",
            root.display(),
            tmp.display()
        ),
        &root,
    );
    assert!(prep.status.success());
    let ok = sh("./vendor/setup.sh", &tmp);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(stdout.contains("files changed") && stdout.contains("insertions(+)"), "patch size not printed: {stdout}");
    std::fs::write(tmp.join("vendor/burn-fusion-stock/src/lib.rs"), "// edited\n").unwrap();
    let refused = sh("./vendor/setup.sh", &tmp);
    assert_eq!(refused.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refusing to run"));
    let _ = std::fs::remove_dir_all(&tmp);
}
