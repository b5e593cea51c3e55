#!/bin/bash
# The op-stream check's cost as `blazec run --plan` reports it (CPU time of the program's
# threads), three runs per workload, on this machine's lavapipe. Plans: every 4th live cut
# point of a trace of the same shape. Usage: measure.sh OUT_FILE (blazec built at the commit
# to measure, in $CARGO_TARGET_DIR or /var/tmp/blaze-target).
set -euo pipefail
B="${CARGO_TARGET_DIR:-/var/tmp/blaze-target}/release/blazec"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
tmp=$(mktemp -d)
out="$1"
: > "$out"
for spec in "attention-d257 --batch 2 --seq 32 --regime training" "attention-d257 --batch 2 --seq 32 --regime forward" "lstm-h256 --batch 4 --seq 16 --regime training"; do
  $B trace $spec -o "$tmp/t.ron" >/dev/null 2>&1
  $B plan --trace "$tmp/t.ron" --every-live 4 -o "$tmp/p.ron" >/dev/null
  for i in 1 2 3; do
    line=$($B run $spec --plan "$tmp/p.ron" 2>&1 | grep "automatic op-stream check")
    echo "$spec | run $i | $line" | tee -a "$out"
  done
done
rm -rf "$tmp"
