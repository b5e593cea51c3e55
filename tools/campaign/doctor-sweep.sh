#!/usr/bin/env bash
# blazec doctor on every reference workload, forward and training, at the default tolerance.
# Usage: tools/campaign/doctor-sweep.sh <blazec> <out dir> [small]
#   small: the named lavapipe test shapes (sequence models batch 2 seq 32, mlp 256 rows,
#   cnn 32 images, chain 256x256); otherwise the reference shapes.
# Writes <out>/<model>-<regime>.{txt,doctor.md,doctor.ron,ron} and <out>/summary.txt
# (model, regime, exit, wall s, largest relative difference, verdict).
set -uo pipefail
B=$1; OUT=$2; SMALL=${3:-}
mkdir -p "$OUT"
shape() {
  [ -z "$SMALL" ] && return
  case $1 in
    mlp-*) echo "--batch 256" ;;
    cnn-*) echo "--batch 32" ;;
    chain-*) echo "--batch 256 --seq 256" ;;
    *) echo "--batch 2 --seq 32" ;;
  esac
}
for m in attention-d256 attention-d257 attention-d258 mlp-w1024 mlp-w1025 lstm-h256 cnn-mnist moe-e8k2 gpt-small chain-32; do
  for r in forward training; do
    s=$(date +%s)
    # shellcheck disable=SC2046
    "$B" doctor $m $(shape $m) --regime $r --max-probes ${MAX_PROBES:-40} -o "$OUT/$m-$r.ron" > "$OUT/$m-$r.txt" 2>&1
    code=$?
    rel=$(awk -F'|' '/^\| (loss|logits|output)/ { if ($3+0 > m) m = $3+0 } END { printf "%.2e", m }' "$OUT/$m-$r.txt")
    verdict=$(grep -v -e '^\[blazec' -e '^#' -e '^$' "$OUT/$m-$r.txt" | head -1)
    [ $code -ne 0 ] && verdict=$(grep -m1 '^error:' "$OUT/$m-$r.txt")
    echo "$m $r exit=$code wall_s=$(( $(date +%s) - s )) max_rel=$rel | $verdict" | tee -a "$OUT/summary.txt"
  done
done
