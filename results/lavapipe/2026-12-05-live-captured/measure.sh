#!/bin/bash
# Live runs with and without the captured arm on this machine's lavapipe: each writes its
# report (RON, with every step's loss and every timed visit) and the markdown table beside it.
# Usage: [CHAIN_ONLY=1] measure.sh OUT_DIR (CHAIN_ONLY: the two chain-32 runs only; blazec built at the commit to measure, in $CARGO_TARGET_DIR or
# /var/tmp/blaze-target).
set -euo pipefail
B="${CARGO_TARGET_DIR:-/var/tmp/blaze-target}/release/blazec"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
out="$1"
mkdir -p "$out"
common=(--max-blocks 2 --cut-arms 0 --no-fusion-off --first-check 100)
$B live chain-32 --batch 4 --steps 400 "${common[@]}" -o "$out/chain-32-b4-captured.ron" 2> "$out/chain-32-b4-captured.log"
$B live chain-32 --batch 4 --steps 400 "${common[@]}" --no-captured -o "$out/chain-32-b4-eager.ron" 2> "$out/chain-32-b4-eager.log"
[ -n "${CHAIN_ONLY:-}" ] && exit 0
$B live attention-d257 --batch 2 --seq 32 --steps 600 "${common[@]}" -o "$out/attention-d257-b2s32-captured.ron" 2> "$out/attention-d257-b2s32-captured.log"
