#!/usr/bin/env bash
# Builds a user's crate outside the workspace for Burn's CUDA backend, as docs/building.md
# ("Using Blaze from your own crate") tells a user to: the example model's sources and the
# README's contract program (as examples/user-model/tests/outside_crate.rs writes them for the
# wgpu build in CI), blaze-burn's `cuda` feature, Burn's `cuda` feature, the cubecl-llvm stand-in
# in the patch table. Run after `GPU_BACKEND=cuda tools/campaign/gpu-build.sh` (same target
# directory, so Burn is reused): packs its two programs as .gpu-cuda-outside/bins.tar.xz; the
# `outside` stage of gpu-campaign.sh runs them on the GPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$(pwd)
./vendor/setup.sh >/dev/null
export CARGO_TARGET_DIR="${GPU_TARGET_DIR:-/var/tmp/blaze-target-cuda}"
dir=${OUTSIDE_DIR:-/var/tmp/blaze-outside-cuda}/my-model
rm -rf "$dir"; mkdir -p "$dir/src/bin"
cat > "$dir/Cargo.toml" <<TOML
[package]
name = "my-model"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
burn = { version = "=0.22.1", features = ["wgpu", "autodiff", "fusion", "autotune", "cuda"] }
blaze-ir = { path = "$repo/ir" }
blaze-runtime = { path = "$repo/runtime" }
blaze-burn = { path = "$repo/runtime/burn", features = ["cuda"] }
blaze-compiler = { path = "$repo/compiler" }
blazec = { path = "$repo/blazec" }

# Burn's fuser with Blaze's patch and the LLVM-free stand-in cubecl-cuda needs, through links to
# Blaze's vendor/ and patches/ (so builds in Blaze's target directory are reused).
[patch.crates-io]
burn-fusion = { path = "vendor/burn-fusion" }
cubecl-llvm = { path = "patches/cubecl-llvm" }

[profile.release]
debug = false
incremental = false
codegen-units = 16

[workspace]
TOML
cp Cargo.lock "$dir/"
ln -s "$repo/vendor" "$dir/vendor"
ln -s "$repo/patches" "$dir/patches"
cp examples/user-model/src/{main,model,serve}.rs "$dir/src/"
cp examples/user-model/tests/outside/contract.rs "$dir/src/bin/contract.rs"
(cd "$dir" && cargo build --release --offline)
# Its two programs together (one xz dictionary for the code they share: about 21 MiB), in a
# folder of their own: with the campaign's .gpu-cuda (23 MiB) and the checkout they would outgrow
# the device tool's 64 MiB, so the `outside` stage runs in a call that carries this folder alone
# (my-model has blazec's commands itself).
for b in my-model contract; do strip -o "/tmp/$b" "$CARGO_TARGET_DIR/release/$b"; done
mkdir -p .gpu-cuda-outside
tar cf - -C /tmp my-model contract | xz -T1 --lzma2=preset=6,dict=256MiB > .gpu-cuda-outside/.bins.tar.xz.part
mv .gpu-cuda-outside/.bins.tar.xz.part .gpu-cuda-outside/bins.tar.xz
ls -la .gpu-cuda-outside
