#!/usr/bin/env bash
# Builds the GPU binaries (SPIR-V, feature `vulkan`) and packs them for the device tool:
#   .gpu/blazec.xz                          blazec
#   .gpu-overhead/blaze-overhead-{patched,stock}.xz   (skipped with BLAZEC_ONLY=1)
#                                           the overhead benchmark against patched and stock
#                                           burn-fusion (same source and lock file)
# Both builds use the same package set in one target directory: building another set there
# rebuilds most of Burn. The stock build swaps burn-fusion for vendor/burn-fusion-stock, so
# blaze-runtime (which needs the patch) fails in it by design; --keep-going still produces the
# overhead binary, which is all that build is for.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
./vendor/setup.sh >/dev/null
# Packed beside and renamed into place: a device call carrying .gpu meanwhile takes the old
# binary or the new one, never half of one.
pack() { strip -o "/tmp/$2.stripped" "$CARGO_TARGET_DIR/release/$1"; xz -T2 -6 -c "/tmp/$2.stripped" > "$3/.$2.xz.part"; mv "$3/.$2.xz.part" "$3/$2.xz"; }
# GPU_BACKEND=cuda: blazec with Burn's CUDA backend (feature `cuda`) and the output-copy timing
# (examples/output-copies), in one build (one feature set) in its own target directory (the one
# `./blaze` uses for CUDA), packed together as .gpu-cuda/bins.tar.xz.
if [ "${GPU_BACKEND:-vulkan}" = cuda ]; then
  export CARGO_TARGET_DIR="${GPU_TARGET_DIR:-/var/tmp/blaze-target-cuda}"
  cargo build --release -p blazec -p blaze-output-copies \
    --features blazec/cuda,blazec/faults,blaze-output-copies/cuda
  "$CARGO_TARGET_DIR/release/blazec" --version | grep -q "shader compiler cuda" \
    || { echo "blazec was built without CUDA: $("$CARGO_TARGET_DIR/release/blazec" --version)" >&2; exit 1; }
  # Packed one by one the two are 33 MiB, which with the checkout outgrows the device tool's
  # 64 MiB; together, with one dictionary for the Burn and CubeCL code they share, 23 MiB
  # (2 minutes). gpu-campaign.sh unpacks .gpu-cuda/bins.tar.xz.
  mkdir -p .gpu-cuda
  for b in blazec blaze-output-copies; do strip -o "/tmp/$b" "$CARGO_TARGET_DIR/release/$b"; done
  tar cf - -C /tmp blazec blaze-output-copies | xz -T1 --lzma2=preset=6,dict=256MiB > .gpu-cuda/.bins.tar.xz.part
  rm -f .gpu-cuda/*.xz; mv .gpu-cuda/.bins.tar.xz.part .gpu-cuda/bins.tar.xz
  ls -la .gpu-cuda; exit 0
fi
export CARGO_TARGET_DIR="${GPU_TARGET_DIR:-/var/tmp/blaze-target-vk}"
pkgs=(-p blazec -p blaze-overhead --features blazec/vulkan,blazec/faults,blaze-overhead/vulkan)
mkdir -p .gpu .gpu-overhead

cargo build --release "${pkgs[@]}"
# A plan records its shader compiler: a GPU binary without SPIR-V makes plans no shipped one
# matches (every run falls back). Refuse to pack one.
"$CARGO_TARGET_DIR/release/blazec" --version | grep -q "shader compiler spirv" \
  || { echo "blazec was built without SPIR-V: $("$CARGO_TARGET_DIR/release/blazec" --version)" >&2; exit 1; }
pack blazec blazec .gpu
# BLAZEC_ONLY=1: the overhead binaries are not needed (they cost a second build of most of Burn).
if [ "${BLAZEC_ONLY:-0}" = 1 ]; then ls -la .gpu; exit 0; fi
pack blaze-overhead blaze-overhead-patched .gpu-overhead
cp "$CARGO_TARGET_DIR/release/blaze-overhead" /tmp/blaze-overhead-patched.stripped.src

cargo build --release "${pkgs[@]}" --keep-going \
  --config 'patch.crates-io.burn-fusion.path="vendor/burn-fusion-stock"' || true
cp "$CARGO_TARGET_DIR/release/blaze-overhead" /tmp/blaze-overhead-stock.unstripped
if cmp -s /tmp/blaze-overhead-stock.unstripped /tmp/blaze-overhead-patched.stripped.src 2>/dev/null; then
  echo "the stock build did not relink blaze-overhead" >&2; exit 1
fi
pack blaze-overhead blaze-overhead-stock .gpu-overhead
# Leave the target directory on the patched build for the next run.
cargo build --release "${pkgs[@]}"
ls -la .gpu .gpu-overhead
