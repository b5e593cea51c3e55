#!/usr/bin/env bash
# Made results/h200/2026-11-30/call3-final; tools/campaign/gpu-campaign.sh supersedes it.
# One GPU call made when device time was short: attention-d257 training tune cold then
# warm, the tuned plan loaded by the runtime, overhead stock vs patched (ABAB), fusion off, demo.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in blazec blaze-overhead-patched blaze-overhead-stock; do for d in .gpu .gpu-overhead; do [ -f $d/$b.xz ] && xz -dc $d/$b.xz > /tmp/$b && chmod +x /tmp/$b; done; done
R=/tmp/res; mkdir -p $R/plans; cd /tmp
pack() { tar czf $OUT/results.tgz -C $R .; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1; date -u +%FT%TZ > $R/date.txt
t() { local name=$1; shift; local s=$(date +%s%N); timeout "$@"; local rc=$?
  echo "$name exit $rc wall_ms $(( ($(date +%s%N) - s) / 1000000 ))" >> $R/times.txt; pack; }
T="/tmp/blazec tune attention-d257 --regime training --device vulkan --budget 8 --rounds 15 --no-fusion-off -v"
t tune-cold 180 $T -o $R/plans/cold.ron > $R/tune-cold.txt 2> $R/tune-cold.progress.txt
t tune-warm 100 $T -o $R/plans/attention-d257.training.ron > $R/tune-warm.txt 2> $R/tune-warm.progress.txt
t shipped 30 /tmp/blazec run attention-d257 --plan $R/plans/attention-d257.training.ron --steps 5 > $R/shipped-run.txt 2>&1
for rep in 1 2 3; do for v in stock patched; do
  t overhead-$v-$rep 20 /tmp/blaze-overhead-$v 257 16 256 10 60 > $R/overhead-$v-$rep.txt 2>&1
done; done
t fusion-off 60 env BURN_FUSION_MAX_EXPLORATIONS=0 /tmp/blazec run attention-d257 --warmup 3 --steps 15 --report $R/fusion-off.training.ron > $R/fusion-off.txt 2>&1
t demo 100 /tmp/blazec demo --steps 10 --out $R/demo > $R/demo.txt 2>&1
cat $R/times.txt
