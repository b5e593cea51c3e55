#!/usr/bin/env bash
# Made results/h200/2026-11-30/call4-overhead; the overhead stage of
# tools/campaign/gpu-campaign.sh supersedes it.
# Overhead benchmark on the GPU: one untimed process fills the autotune cache, then stock and
# patched burn-fusion alternate (ABAB), each timing attention-d257 training steps.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in blaze-overhead-patched blaze-overhead-stock; do for d in .gpu .gpu-overhead; do [ -f $d/$b.xz ] && xz -dc $d/$b.xz > /tmp/$b && chmod +x /tmp/$b; done; done
R=/tmp/res; mkdir -p $R; cd /tmp
pack() { tar czf $OUT/results.tgz -C $R .; }
date -u +%FT%TZ > $R/date.txt
timeout 100 /tmp/blaze-overhead-patched 257 16 256 3 3 > $R/overhead-fill-cache.txt 2>&1; pack
for rep in 1 2; do for v in stock patched; do
  s=$(date +%s%N); timeout 45 /tmp/blaze-overhead-$v 257 16 256 5 40 > $R/overhead-$v-$rep.txt 2>&1
  echo "$v-$rep exit $? wall_ms $(( ($(date +%s%N) - s) / 1000000 ))" >> $R/times.txt; pack
done; done
cat $R/times.txt
