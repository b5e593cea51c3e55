#!/usr/bin/env bash
# Build the GPU binaries (SPIR-V, feature `vulkan`) and pack them for the device tool:
# blazec, and the overhead benchmark against patched and stock burn-fusion.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./vendor/setup.sh >/dev/null
export CARGO_TARGET_DIR="${GPU_TARGET_DIR:-/var/tmp/blaze-target-vk}"
cargo build --release -p blaze-compiler --features vulkan
for v in patched stock; do
  cargo build --release --manifest-path examples/overhead/$v/Cargo.toml --features vulkan
done
mkdir -p .gpu
for b in blazec blaze-overhead-patched blaze-overhead-stock; do
  strip -o /tmp/$b.stripped "$CARGO_TARGET_DIR/release/$b"
  xz -T2 -6 -c /tmp/$b.stripped > .gpu/$b.xz
done
ls -la .gpu
