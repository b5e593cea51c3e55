#!/usr/bin/env bash
# gpt-small-device-dropout on lavapipe: op and block counts against gpt-small (training, batch 2,
# sequence 16), the captured gate on a captured plan of Burn's fusion, and a tune that races the
# captured arm. (The gate's refusal of a baked-in seed needs the test-only fault switches, which
# the default build lacks: blazec/tests/captured_dropout.rs.) Run from the repository
# root after `cargo build --release -p blazec` (CARGO_TARGET_DIR as ./blaze sets it).
set -euo pipefail
out="$(dirname "$0")"
B="${CARGO_TARGET_DIR:-/var/tmp/blaze-target}/release/blazec"
S=(--batch 2 --seq 16)
tmp="$(mktemp -d)"
git rev-parse --short HEAD > "$out/commit.txt"
for m in gpt-small gpt-small-device-dropout; do
  "$B" trace "$m" "${S[@]}" --regime training -o "$tmp/$m.trace.ron" 2>&1 | tail -1
done | tee "$out/traces.txt"
"$B" plan --trace "$tmp/gpt-small-device-dropout.trace.ron" --captured -o "$out/captured.plan.ron"
"$B" verify --plan "$out/captured.plan.ron" 2>&1 | tee "$out/verify.txt"
"$B" tune gpt-small-device-dropout "${S[@]}" --regime training --device vulkan --captured --budget 1 \
  --race-budget 20 --max-blocks 3 --no-fusion-off -o "$out/tune.plan.ron" 2>&1 | tee "$out/tune.txt"
