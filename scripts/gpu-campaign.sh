#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root: unpacks the Vulkan loader and
# the binaries, then runs the measurement campaign named by $1, writing under $OUT/results.tgz.
#   demo      blazec demo at the reference shape + overhead benchmark (stock vs patched, ABAB)
#   tune      blazec tune for attention-d257/-d258 x training/forward, A/A, fault injection
#   bench     blazec bench over every workload (default vs fusion off)
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in blazec blaze-overhead-patched blaze-overhead-stock; do
  [ -f .gpu/$b.xz ] && xz -dc .gpu/$b.xz > /tmp/$b && chmod +x /tmp/$b
done
R=/tmp/res; mkdir -p $R; cd /tmp
# Pack after every stage: a command killed at its time limit still returns what it finished.
pack() { tar czf $OUT/results.tgz -C $R . ; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
date -u +%FT%TZ > $R/date.txt
case "${1:-demo}" in
  demo)
    /tmp/blazec demo --steps 20 --out $R/demo > $R/demo.txt 2>&1; pack
    for rep in 1 2 3; do for v in stock patched; do
      /tmp/blaze-overhead-$v 257 16 256 10 60 > $R/overhead-$v-$rep.txt 2>&1; pack
    done; done ;;
  tune)
    for m in ${MODELS:-attention-d257}; do for g in ${REGIMES:-training forward}; do
      s=$(date +%s%N)
      timeout ${TUNE_TIMEOUT:-200} /tmp/blazec tune $m --regime $g --device vulkan --budget ${BUDGET:-16} --rounds ${ROUNDS:-15} -v -o $R/plans/$m.$g.ron > $R/$m.$g.tune.txt 2> $R/$m.$g.progress.txt
      rc=$?; echo "exit $rc wall_ms $(( ($(date +%s%N) - s) / 1000000 ))" > $R/$m.$g.time; pack
    done; done
    [ -n "${NOEXTRA:-}" ] && { pack; exit 0; }
    /tmp/blazec trace attention-d257 -o $R/attention-d257.training.trace.ron > $R/trace.txt 2>&1
    /tmp/blazec verify --trace $R/attention-d257.training.trace.ron --every-live 4 --inject-fault > $R/fault.txt 2>&1
    /tmp/blazec verify --trace $R/attention-d257.training.trace.ron --every-live 4 >> $R/fault.txt 2>&1
    pack; /tmp/blazec tune attention-d257 --device vulkan --aa-rounds ${AA_ROUNDS:-100} -o $R/aa/plan.ron > $R/aa.txt 2>&1 ;;
  bench)
    /tmp/blazec bench --steps 10 -o $R/bench.results.ron > $R/bench.txt 2>&1 ;;
esac
tar czf $OUT/results.tgz -C $R .
tail -c 3000 $R/*.txt
