#!/usr/bin/env bash
# Runs on the GPU machine (device tool) from the repository root. Unpacks the Vulkan loader, the
# binaries and the carried warm caches, then runs the stages named in $STAGES in order, packing
# $OUT/results.tgz and $OUT/cache.tgz after each, so a command killed at its limit still returns
# what it finished and the next call starts warm.
#
# Stages (space separated in $STAGES):
#   tune:<model>:<regime>[:<batch>]
#                              blazec tune (budget $BUDGET, race budget $RACE_BUDGET s, extra $TUNE_ARGS), wall time
#                              recorded; with <batch> at that batch size (files named <model>.<regime>.b<batch>).
#                              Fusion off is raced in the tune's process; its separate cross-check process
#                              (15-64 s a tune on a fresh H100, 2026-12-05) runs only with CROSS_CHECK=1
#   profile:<model>:<regime>[:<batch>]
#                              blazec profile (host and device time per block) of Burn's plan and of the plan the
#                              tune stage of the same name wrote, when there is one
#   aa:<model>:<trials>        blazec race-check, A/A: Burn's plan against itself ($AA_ROUNDS rounds at most)
#   power:<model>:<trials>     blazec race-check with slowdowns $SLOWDOWNS (calibrated, $POWER_ROUNDS rounds)
#   bench:<model>[,<model>..]  blazec bench (default vs fusion off), one process per row
#   doctor:<model>:<regime>    blazec doctor at the default tolerance (at most $MAX_PROBES probes)
#   fault:<model>:<op>         blazec doctor (training) with the test-only fault at <op> (BLAZE_INJECT_FUSED_FAULT),
#                              then blazec verify of a plan (every 4th live cut) faulted at <op>:plans
#   widths:<model>:<regime>:<reps>[:<batch>]
#                              one process per beam width (burn.toml max_blocks in $WIDTHS, default
#                              "5 1 2 3 8"), order rotated each rep, blazec run with $WIDTH_STEPS timed steps
#   planrun:<model>:<regime>:<pairs>[:<batch>]
#                              blazec run without and with the plan $PLAN (default: the plan this call's
#                              tune stage wrote for <model>.<regime>[.b<batch>], else that file under
#                              $PLAN_DIR, else plans/{captured,withdrawn}/<model>[-b<batch>[s<seq>]].<regime>.<dev>.ron,
#                              <dev> h200 or h100 as this machine's GPU)
#                              (order alternating), a
#                              fresh process each, $WIDTH_STEPS timed steps: is the plan applied, does
#                              its advantage hold in a process of its own
#   live:<model>:<steps>[:<at>:<batch>]
#                              blazec live (training) for <steps> steps, extra $LIVE_ARGS; with <at>:<batch>
#                              the batch switches at step <at>, or <N> steps after the first settle when
#                              <at> is s<N> (drift for the checks to find)
#   coldstart:<model>:<regime>:<reps>
#                              the cold-start table: a warm cache is exported into a bundle (a plan
#                              cutting every 4th live cut point), then fresh processes, each with an empty
#                              CubeCL cache and an empty NVIDIA shader cache, alternate without and with
#                              the bundle's autotune decisions: warm-up step times, steady steps, losses
#   ship:<model>[:<reps>]      bundle of <dir>/<model>.{training,forward}.<dev>.ron (dirs $SHIP_DIRS) + this machine's autotune
#                              decisions; blazec check; Burn vs bundle in fresh processes (fresh seeded cache)
#   oom:<model>[:<small>]      a run and a tune at a shape exhausting device memory, then a tune of <small>
#   lost:<model>               a tune whose candidate c2 destroys the wgpu device on install (test-only
#                              --inject-device-lost 2, hang limit 60 s), then the same tune again
#   overhead:<pairs>           stock vs patched burn-fusion, order AB then BA, attention-d$OVERHEAD_D (257) training
#   interleave:<pairs>[:<rounds>]
#                              stock vs patched burn-fusion, two co-resident `blaze-overhead --serve`
#                              processes taking turns block by block (tools/campaign/overhead-interleave.py),
#                              attention-d$OVERHEAD_D (257) training, blocks of $BLOCK (8) steps
#   demo                       blazec demo at the reference shape (limit $DEMO_TIMEOUT s, default 200)
#   seed                       the plan the demo stage wrote, bundled with this machine's autotune decisions
#                              ($R/seed/demo.blaze: what plans/autotune/ ships for a device, entries removed)
#   cutcap:<model>:<every>     a plan with cuts captured: trace (forward), a plan cutting every <every>-th live
#                              cut point, eager and --captured; fresh processes alternate Burn's plan, the
#                              eager cut plan and the captured one ($CUTCAP_REPS reps, 2), $WIDTH_STEPS steps
#   loadcheck:<plan>[,<plan>..]
#                              plan load and the automatic op-stream check per plan file (paths in the
#                              checkout; a plan's name says its model, batch and regime): one
#                              `blazec run --plan` each, 3 warm-up and 5 timed steps
#   tracecheck:<model>[,<model>..]:<regime>
#                              plan load and the op-stream check on this device without a shipped plan:
#                              per model, blazec trace, a plan of Burn's own partition captured
#                              (`blazec plan --captured`), then that plan's `blazec run` as loadcheck's
#                              ($R/tracecheck/<model>.<regime>.{trace.ron,ron,txt})
#   copies:<regime>            what a captured step's output copies cost (blaze-output-copies, CUDA
#                              builds): forward, training or both
#   outside                    a user's crate outside the workspace on CUDA (tools/campaign/outside-cuda-build.sh):
#                              trace, plan and bundle its model, train with the bundle, the contract program
#   decisions                  this machine's CubeCL autotune decisions as a bundle with no plan
#                              ($R/decisions/workloads.<h100|h200>.blaze), for plans/autotune/
#   torch:<models>:<regime>[:<batch>]
#                              PyTorch eager and torch.compile on the same model definitions
#                              (tools/torch-reference/workloads.py; models comma separated or
#                              `all`), $TORCH_STEPS (100) timed steps, modes $TORCH_MODES;
#                              files $R/torch-<regime>[-b<batch>]-<models, + between>.{txt,json}
#
# Caches: every fresh machine starts with an empty CubeCL autotune cache (~/.cache/cubecl) and an
# empty NVIDIA shader cache (~/.cache/nvidia); cold, one attention training tune spends minutes in
# autotune. .gpu-cache/cache.txz.* (carried) restores the caches a previous call saved; without
# them, `blazec seed` imports the decisions plans/autotune/ ships for this device (NO_SEED=1:
# none). Whether a stage ran warm is written beside its results (cache-state.txt).
#
# $DEADLINE (seconds, default 540): no stage starts a process that could run past it.
#
# $GPU_BACKEND: vulkan (default: Burn's wgpu backend, SPIR-V; binary .gpu/blazec.xz) or cuda
# (Burn's CUDA backend; binary .gpu-cuda/blazec.xz, from `GPU_BACKEND=cuda
# tools/campaign/gpu-build.sh`). With cuda, tunes run `--device cuda` and shipped plans are
# looked up as <model>.<regime>.<dev>-cuda.ron.
set -uo pipefail
GPU_BACKEND=${GPU_BACKEND:-vulkan}
case $GPU_BACKEND in
  vulkan) BIN_DIR=.gpu; DEVICE_FLAG=vulkan ;;
  cuda) BIN_DIR=.gpu-cuda; DEVICE_FLAG=cuda; export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda} ;;
  *) echo "GPU_BACKEND must be vulkan or cuda, not $GPU_BACKEND" >&2; exit 2 ;;
esac
T0=$(date +%s); REPO=$(pwd)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 __GL_SHADER_DISK_CACHE_SIZE=4000000000
# The CUDA binaries travel packed together (bins.tar.xz): blazec and blaze-output-copies in
# .gpu-cuda (gpu-build.sh), the outside crate's my-model and contract in .gpu-cuda-outside
# (outside-cuda-build.sh; a call of its own: both folders with the checkout outgrow 64 MiB).
for d in $BIN_DIR .gpu-cuda-outside; do [ -f $d/bins.tar.xz ] && xz -dc $d/bins.tar.xz | tar xf - -C /tmp; done
for b in blazec blaze-overhead-patched blaze-overhead-stock; do
  for dir in $BIN_DIR .gpu-overhead; do
    [ -f $dir/$b.xz ] && xz -dc $dir/$b.xz > /tmp/$b && chmod +x /tmp/$b
  done
done
# A machine kept warm between calls keeps /tmp/res too: each call's results.tgz then holds every
# earlier call's results as well (a later stage of the same name overwrites its files).
R=/tmp/res; mkdir -p $R; cd /tmp
if [ -d ~/.cache/cubecl ]; then
  # A machine kept warm from the previous call: its own caches are newer than the carried ones.
  echo "warm machine: kept its own $(du -sh ~/.cache | cut -f1) of caches" > $R/cache-state.txt
elif ls "$OLDPWD"/.gpu-cache/cache.txz.* > /dev/null 2>&1; then
  mkdir -p ~/.cache && cat "$OLDPWD"/.gpu-cache/cache.txz.* | xz -dc | tar xf - -C ~/.cache
  echo "restored $(du -sh ~/.cache | cut -f1) of caches at start" > $R/cache-state.txt
else
  echo "cold: no carried caches" > $R/cache-state.txt
  # The autotune decisions shipped for this device (plans/autotune/), unless NO_SEED=1: a
  # fresh machine then skips autotuning the kernels they cover.
  [ "${NO_SEED:-0}" = 1 ] || /tmp/blazec seed "$REPO/plans/autotune" >> $R/cache-state.txt 2>&1
fi
pack() {
  tar czf $OUT/results.tgz -C $R .
  # Files come back at most 16 MiB each: the shader cache travels in parts.
  [ -n "${NO_CACHE_OUT:-}" ] && return
  rm -f $OUT/cache.t*
  tar cf - -C ~/.cache $(cd ~/.cache && ls -d cubecl nvidia 2>/dev/null) | xz -T0 -6 | split -b 15M - $OUT/cache.txz.
}
left() { echo $(( ${DEADLINE:-540} - ($(date +%s) - T0) )); }
# Runs "$@" with a limit of min($1, time left - 15 s); records exit and wall time under $name.
timed() {
  local limit=$1; shift
  local l=$(( $(left) - 15 )); [ $l -lt $limit ] && limit=$l
  if [ $limit -lt 10 ]; then echo "$name skipped: $(left) s left" >> $R/times.txt; return; fi
  local s=$(date +%s%N)
  timeout $limit "$@"
  echo "$name exit $? wall_ms $(( ($(date +%s%N) - s) / 1000000 )) limit_s $limit" >> $R/times.txt
}
# Plan load and the op-stream check of plan $1 (what `blazec run` prints of them) into $2: a run of
# the model named by the rest of the arguments, 3 warm-up and 5 timed steps (loadcheck, tracecheck).
plancheck() {
  local plan=$1 out=$2; shift 2
  timed 120 /tmp/blazec run "$@" --warmup 3 --steps 5 --plan $plan > $out 2>&1
}
# Splits a stage's "<count>[:<batch>]" field: sets $count, $batch ("--batch B" or empty) and
# $bsuffix ("-bB" or empty, for file names).
count_and_batch() {
  count=${1%%:*}; batch=""; bsuffix=""
  [ -n "$1" ] && [ "$1" != "$count" ] && { batch="--batch ${1#*:}"; bsuffix="-b${1#*:}"; }
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
# The suffix of this machine's shipped plans and autotune decisions.
DEV=h100; nvidia-smi -L | grep -q H200 && DEV=h200
[ $GPU_BACKEND = cuda ] && DEV=$DEV-cuda
# The host: the op-stream check's cost per operation is CPU time, and its span clock reads the
# monotonic clock (cheap only with a vDSO clock source such as tsc).
{ echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>&1)"; lscpu | grep -E 'Model name|^CPU\(s\)'; echo "cpus with sha_ni: $(grep -c -w sha_ni /proc/cpuinfo)"; } >> $R/gpu.txt 2>&1
date -u +%FT%TZ > $R/date.txt
for stage in ${STAGES:-}; do
  IFS=: read -r kind a b c <<< "$stage"
  name=$(echo "$stage" | tr ':,' '__')
  # Past the deadline nothing starts, and nothing is packed again (packing the caches takes
  # seconds per stage: a list of skipped stages once ran a call past its limit).
  if [ $(left) -lt 20 ]; then echo "$name skipped: $(left) s left" >> $R/times.txt; continue; fi
  echo "[$(( $(date +%s) - T0 )) s] $stage" >> $R/stages.txt
  case $kind in
    tune)
      mkdir -p $R/plans; id=$a.$b; batch=""; [ -n "$c" ] && { id=$a.$b.b$c; batch="--batch $c"; }
      cross=--no-fusion-off; [ "${CROSS_CHECK:-0}" = 1 ] && cross=""
      timed ${TUNE_TIMEOUT:-400} /tmp/blazec tune $a --regime $b $batch --device $DEVICE_FLAG --budget ${BUDGET:-16} \
        --race-budget ${RACE_BUDGET:-120} $cross ${TUNE_ARGS:-} -v -o $R/plans/$id.ron > $R/$id.tune.txt 2> $R/$id.progress.txt ;;
    profile)
      id=$a.$b; batch=""; [ -n "$c" ] && { id=$a.$b.b$c; batch="--batch $c"; }
      plan=""; [ -f $R/plans/$id.ron ] && plan="--plan $R/plans/$id.ron"
      timed ${PROFILE_TIMEOUT:-150} /tmp/blazec profile $a --regime $b $batch --steps ${PROFILE_STEPS:-20} --top 8 $plan \
        -o $R/profile-$id.ron > $R/profile-$id.txt 2>&1 ;;
    aa)
      timed ${CHECK_TIMEOUT:-560} /tmp/blazec race-check $a --trials $b --slowdown 0 --rounds ${AA_ROUNDS:-60} \
        --race-budget ${CHECK_RACE_BUDGET:-15} -o $R/aa-$a.ron > $R/aa-$a.txt 2> $R/aa-$a.progress.txt ;;
    power)
      timed ${CHECK_TIMEOUT:-560} /tmp/blazec race-check $a --trials $b --slowdown ${SLOWDOWNS:-0.01,0.02,0.05} \
        --calibrate-rounds ${CALIBRATE_ROUNDS:-200} --rounds ${POWER_ROUNDS:-80} --race-budget ${CHECK_RACE_BUDGET:-15} \
        -o $R/power-$a.ron > $R/power-$a.txt 2> $R/power-$a.progress.txt ;;
    bench)
      timed ${BENCH_TIMEOUT:-500} /tmp/blazec bench ${a//,/ } --warmup 3 --steps ${STEPS:-20} \
        --timeout ${CHILD_TIMEOUT:-200} -o $R/$name.results.ron > $R/$name.txt 2>&1 ;;
    doctor)
      timed ${DOCTOR_TIMEOUT:-300} /tmp/blazec doctor $a --regime $b --max-probes ${MAX_PROBES:-40} \
        -o $R/doctor-$a-$b.ron > $R/doctor-$a-$b.txt 2>&1 ;;
    fault)
      name=fault-doctor; timed ${DOCTOR_TIMEOUT:-300} env BLAZE_INJECT_FUSED_FAULT=$b /tmp/blazec doctor $a --regime training \
        -o $R/fault-$a-op$b.ron > $R/fault-$a-op$b.txt 2>&1
      name=fault-trace; timed 200 /tmp/blazec trace $a --regime training -o $R/trace-$a.ron > $R/trace-$a.txt 2>&1
      name=fault-verify; timed 200 env BLAZE_INJECT_FUSED_FAULT=$b:plans /tmp/blazec verify --trace $R/trace-$a.ron \
        --every-live 4 > $R/verify-fault-$a-op$b.txt 2>&1
      name=sound-verify; timed 200 /tmp/blazec verify --trace $R/trace-$a.ron --every-live 4 > $R/verify-sound-$a.txt 2>&1 ;;
    widths)
      # c = <reps>[:<batch>]; with a batch, files are named width-<model>-b<batch>-w<W>-<rep>.txt
      ws=(${WIDTHS:-5 1 2 3 8}); count_and_batch "$c"; tag=$a$bsuffix
      for rep in $(seq 1 ${count:-3}); do
        for i in $(seq 0 $(( ${#ws[@]} - 1 ))); do
          w=${ws[$(( (i + rep - 1) % ${#ws[@]} ))]}
          mkdir -p /tmp/width-$w && printf '[fusion.beam_search]\nmax_blocks = %s\n' $w > /tmp/width-$w/burn.toml
          name=width-$w-$rep
          (cd /tmp/width-$w && timed 120 /tmp/blazec run $a --regime $b $batch --warmup 3 --steps ${WIDTH_STEPS:-200} \
            > $R/width-$tag-w$w-$rep.txt 2>&1)
        done
        pack
      done ;;
    planrun)
      # c = <pairs>[:<batch>]; with a batch, files are named <model>-<regime>-b<batch>-...
      count_and_batch "$c"; id=$a.$b${bsuffix/-/.}; tag=$a-$b$bsuffix
      plan_file=${PLAN:+$REPO/$PLAN}; [ -z "$plan_file" ] && plan_file=$R/plans/$id.ron
      # A fresh machine has no earlier call's plans: $PLAN_DIR (in the checkout) holds them.
      [ -z "${PLAN:-}" ] && [ ! -f "$plan_file" ] && [ -n "${PLAN_DIR:-}" ] && plan_file=$REPO/$PLAN_DIR/$id.ron
      # Shipped plans at a batch of their own are named <model>-b<batch>[s<seq>].<regime>.<dev>.ron.
      # Shipped (plans/captured) first, then withdrawn ones (plans/withdrawn: re-checks).
      for d in plans/captured plans/withdrawn; do
        [ -z "${PLAN:-}" ] && [ ! -f "$plan_file" ] || break
        if [ -n "$bsuffix" ]; then
          plan_file=$(ls $REPO/$d/$a$bsuffix.$b.$DEV.ron $REPO/$d/$a${bsuffix}s*.$b.$DEV.ron 2>/dev/null | head -1)
        else
          plan_file=$REPO/$d/$a.$b.$DEV.ron
        fi
      done
      [ -f "$plan_file" ] || { echo "planrun: no plan $plan_file" >> $R/stages.txt; continue; }
      echo "planrun $id: plan ${plan_file#$REPO/}" >> $R/stages.txt
      for rep in $(seq 1 ${count:-3}); do
        order="burn plan"; [ $((rep % 2)) -eq 0 ] && order="plan burn"
        for v in $order; do
          name=planrun-$tag-$v-$rep; extra=""; [ $v = plan ] && extra="--plan $plan_file"
          timed 120 /tmp/blazec run $a --regime $b $batch --warmup 3 --steps ${WIDTH_STEPS:-200} $extra > $R/planrun-$tag-$v-$rep.txt 2>&1
        done
      done ;;
    overhead)
      for rep in $(seq 1 $a); do
        order="stock patched"; [ $((rep % 2)) -eq 0 ] && order="patched stock"
        for v in $order; do
          name=overhead-$v-$rep
          timed 90 /tmp/blaze-overhead-$v ${OVERHEAD_D:-257} 16 256 5 ${OVERHEAD_STEPS:-100} > $R/$name.txt 2>&1
        done
        [ $((rep % 4)) -eq 0 ] && pack
      done ;;
    interleave)
      name=interleave; budget=$(( $(left) - 30 ))
      timed 600 python3 $REPO/tools/campaign/overhead-interleave.py run /tmp/blaze-overhead-stock /tmp/blaze-overhead-patched \
        $R/interleave.tsv --pairs $a --rounds ${b:-100} --block ${BLOCK:-8} --model ${OVERHEAD_D:-257},16,256,5 \
        --deadline $budget > $R/interleave.run.txt 2>&1
      python3 $REPO/tools/campaign/overhead-interleave.py summary $R/interleave.tsv > $R/interleave.summary.md 2>&1 ;;
    live)
      # <at> = s<N>: switch N steps after the first settle (drift checks then run under
      # conditions the selection never saw).
      extra=""; at=${c%%:*}
      if [ -n "$c" ]; then
        case $at in s*) extra="--switch-after-settle ${at#s} --switch-batch ${c##*:}" ;; *) extra="--switch-at $at --switch-batch ${c##*:}" ;; esac
      fi
      name=live-$a; timed ${LIVE_TIMEOUT:-560} /tmp/blazec live $a --steps $b $extra ${LIVE_ARGS:-} \
        -o $R/live-$a.ron > $R/live-$a.txt 2> $R/live-$a.progress.txt ;;
    coldstart)
      cs=$R/coldstart-$a-$b; mkdir -p $cs
      # The warm cache starts from this machine's default cache root (what earlier calls tuned).
      rm -rf /tmp/cs-warm; mkdir -p /tmp/cs-warm; cp ~/.cache/cubecl/default.db* /tmp/cs-warm/ 2>/dev/null
      name=cs-warm; timed 300 env BLAZE_AUTOTUNE_CACHE=/tmp/cs-warm /tmp/blazec run $a --regime $b --steps 5 > $cs/warm.txt 2>&1
      name=cs-trace; timed 200 env BLAZE_AUTOTUNE_CACHE=/tmp/cs-warm /tmp/blazec trace $a --regime $b -o $cs/t.ron > $cs/trace.txt 2>&1
      rm -f $cs/model.blaze*
      /tmp/blazec plan --trace $cs/t.ron --every-live 4 -o $cs/p.ron --bundle $cs/model.blaze --autotune-cache /tmp/cs-warm > $cs/bundle.txt 2>&1
      for rep in $(seq 1 ${c:-2}); do
        order="without with"; [ $((rep % 2)) -eq 0 ] && order="with without"
        for v in $order; do
          name=cs-$v-$rep; extra="--plan $cs/model.blaze"; [ $v = with ] && extra="--bundle $cs/model.blaze"
          rm -rf /tmp/cs-fresh /tmp/cs-nv; mkdir -p /tmp/cs-nv
          timed 300 env BLAZE_AUTOTUNE_CACHE=/tmp/cs-fresh __GL_SHADER_DISK_CACHE_PATH=/tmp/cs-nv /tmp/blazec run $a --regime $b \
            --warmup 5 --steps ${CS_STEPS:-100} --settle-ms 0 $extra --report $cs/$v-$rep.ron > $cs/$v-$rep.txt 2>&1
          python3 -c "import re,sys; t=open('$cs/$v-$rep.ron').read(); [t:=re.sub(r'logits: \[[^\]]*\]', 'logits: []', t)]; open('$cs/$v-$rep.ron','w').write(t)" 2>/dev/null
        done
        pack
      done ;;
    ship)
      # The shipped plans of <model> (plans/<model>.{training,forward}.<dev>.ron) and this machine's
      # autotune decisions as one bundle; `check` on it; then Burn's plan and the bundle in fresh
      # processes, alternating, each bundle run with an empty autotune cache seeded from the bundle.
      # $SHIP_DIRS (default "plans"): where each regime's plan is looked for, first found wins
      # ("plans/captured plans" prefers the captured forward plans); regimes without one are skipped.
      sd=$R/ship-$a; mkdir -p $sd; rm -rf $sd/$a.blaze*
      files=(); regimes=()
      for r in training forward; do
        for d in ${SHIP_DIRS:-plans}; do
          if [ -f $REPO/$d/$a.$r.$DEV.ron ]; then files+=($REPO/$d/$a.$r.$DEV.ron); regimes+=($r); break; fi
        done
      done
      /tmp/blazec bundle $sd/$a.blaze "${files[@]}" --autotune-cache ~/.cache/cubecl > $sd/bundle.txt 2>&1
      name=ship-check; timed 200 /tmp/blazec check $sd/$a.blaze > $sd/check.txt 2>&1
      for r in "${regimes[@]}"; do
        for rep in $(seq 1 ${b:-2}); do
          order="burn bundle"; [ $((rep % 2)) -eq 0 ] && order="bundle burn"
          for v in $order; do
            name=ship-$r-$v-$rep; extra=""; [ $v = bundle ] && extra="--bundle $sd/$a.blaze"
            rm -rf /tmp/ship-fresh; at=/tmp/ship-fresh; [ $v = burn ] && at=$HOME/.cache/cubecl
            timed 150 env BLAZE_AUTOTUNE_CACHE=$at /tmp/blazec run $a --regime $r --warmup 3 --steps ${WIDTH_STEPS:-300} $extra \
              > $sd/run-$r-$v-$rep.txt 2>&1
          done
        done
        pack
      done ;;
    oom)
      # A tune at a shape that exhausts device memory ends with one clear error and no
      # plan; then a tune of a small model works. First a one-step run shows the shape fails.
      od=$R/oom-$a; mkdir -p $od
      name=oom-run; timed 150 /tmp/blazec run $a --regime training --warmup 0 --steps 1 --settle-ms 0 > $od/run.txt 2>&1
      name=oom-tune; timed 200 /tmp/blazec tune $a --regime training --device $DEVICE_FLAG --budget 2 --race-budget 20 \
        -o $od/plan.ron > $od/tune.txt 2> $od/tune.err
      ls -la $od > $od/ls.txt
      name=oom-after; timed 150 /tmp/blazec tune ${b:-chain-32} --regime training --device $DEVICE_FLAG --budget 2 --race-budget 15 \
        -o $od/after.ron > $od/after.txt 2> $od/after.err ;;
    lost)
      ld=$R/lost-$a; mkdir -p $ld
      name=lost-tune; timed 240 /tmp/blazec tune $a --regime training --device $DEVICE_FLAG --budget 4 --race-budget 20 \
        --no-fusion-off --hang-timeout 60 --inject-device-lost 2 -o $ld/plan.ron > $ld/tune.txt 2> $ld/tune.err
      ls -la $ld > $ld/ls.txt
      name=lost-again; timed 200 /tmp/blazec tune $a --regime training --device $DEVICE_FLAG --budget 4 --race-budget 20 \
        --no-fusion-off -o $ld/again.ron > $ld/again.txt 2> $ld/again.err ;;
    demo)
      # From the checkout, as `./blaze demo` runs: the demo seeds CubeCL's cache from the
      # checkout's plans/autotune/. DEMO_COLD=1: with empty CubeCL and NVIDIA caches (the warm
      # ones are put back after), as on a fresh machine.
      [ "${DEMO_COLD:-0}" = 1 ] && for c in cubecl nvidia; do rm -rf ~/.cache/$c.warm; mv ~/.cache/$c ~/.cache/$c.warm 2>/dev/null; done
      (cd $REPO && timed ${DEMO_TIMEOUT:-200} /tmp/blazec demo --steps 20 --out $R/demo > $R/demo.txt 2>&1)
      [ "${DEMO_COLD:-0}" = 1 ] && for c in cubecl nvidia; do [ -d ~/.cache/$c.warm ] && { rm -rf ~/.cache/$c; mv ~/.cache/$c.warm ~/.cache/$c; }; done ;;
    seed)
      mkdir -p $R/seed; rm -rf $R/seed/demo.blaze*
      /tmp/blazec bundle $R/seed/demo.blaze $R/demo/plan.ron --autotune-cache ~/.cache/cubecl > $R/seed/bundle.txt 2>&1 ;;
    cutcap)
      cdir=$R/cutcap-$a; mkdir -p $cdir
      name=cutcap-trace; timed 200 /tmp/blazec trace $a --regime forward -o $cdir/t.ron > $cdir/trace.txt 2>&1
      /tmp/blazec plan --trace $cdir/t.ron --every-live ${b:-4} -o $cdir/eager.ron > $cdir/plan.txt 2>&1
      /tmp/blazec plan --trace $cdir/t.ron --every-live ${b:-4} --captured -o $cdir/captured.ron >> $cdir/plan.txt 2>&1
      for rep in $(seq 1 ${CUTCAP_REPS:-2}); do
        order="burn eager captured"; [ $((rep % 2)) -eq 0 ] && order="captured eager burn"
        for v in $order; do
          name=cutcap-$v-$rep; extra=""; [ $v != burn ] && extra="--plan $cdir/$v.ron"
          timed 120 /tmp/blazec run $a --regime forward --warmup 3 --steps ${WIDTH_STEPS:-200} $extra > $cdir/run-$v-$rep.txt 2>&1
        done
      done ;;
    loadcheck)
      mkdir -p $R/loadcheck
      for plan in ${a//,/ }; do
        # <model>[-b<batch>[s<seq>]].<regime>.<device>.ron
        base=$(basename $plan .ron); base=${base%.*}; regime=${base##*.}; shape=${base%.*}; model=$shape; args=""
        if [[ $shape =~ ^(.*)-b([0-9]+)(s([0-9]+))?$ ]]; then
          model=${BASH_REMATCH[1]}; args="--batch ${BASH_REMATCH[2]}"; [ -n "${BASH_REMATCH[4]}" ] && args="$args --seq ${BASH_REMATCH[4]}"
        fi
        name=loadcheck-$base; plancheck $REPO/$plan $R/loadcheck/$base.txt $model --regime $regime $args
      done ;;
    tracecheck)
      mkdir -p $R/tracecheck
      for m in ${a//,/ }; do
        f=$R/tracecheck/$m.$b
        name=tracecheck-trace-$m-$b; timed 120 /tmp/blazec trace $m --regime $b -o $f.trace.ron > $f.trace.txt 2>&1
        /tmp/blazec plan --trace $f.trace.ron --captured -o $f.ron >> $f.trace.txt 2>&1 || continue
        name=tracecheck-run-$m-$b; plancheck $f.ron $f.txt $m --regime $b
      done ;;
    copies)
      # What keeping a captured step's outputs valid costs (examples/output-copies, CUDA builds):
      # regime $a (forward, training or both), $COPIES_ROUNDS rounds of $COPIES_CALLS calls an arm.
      name=copies-$a; timed ${COPIES_TIMEOUT:-240} /tmp/blaze-output-copies $a --rounds ${COPIES_ROUNDS:-5} \
        --calls ${COPIES_CALLS:-100} > $R/output-copies-$a.txt 2>&1 ;;
    outside)
      # A user's crate outside the workspace on Burn's CUDA backend (my-model and contract, from
      # tools/campaign/outside-cuda-build.sh): its own binary traces its model, plans and bundles it
      # and trains with the bundle through blaze_burn::init; then the README's contract program.
      o=$R/outside; mkdir -p $o
      name=outside-trace; timed 200 /tmp/my-model trace tiny-mlp-lm --regime training -o $o/t.ron > $o/trace.txt 2>&1
      name=outside-plan; timed 100 /tmp/my-model plan --trace $o/t.ron --every-live 2 -o $o/p.ron \
        --bundle $o/model.blaze > $o/plan.txt 2>&1
      name=outside-train; timed 200 /tmp/my-model train --bundle $o/model.blaze > $o/train.txt 2>&1
      name=outside-contract; timed 200 /tmp/contract $o/model.blaze > $o/contract.txt 2>&1 ;;
    decisions)
      # This machine's autotune decisions, no plan: what plans/autotune/ ships for a device.
      mkdir -p $R/decisions; rm -rf $R/decisions/workloads.$DEV.blaze*
      /tmp/blazec bundle $R/decisions/workloads.$DEV.blaze --autotune-cache ~/.cache/cubecl > $R/decisions/bundle.txt 2>&1 ;;
    torch)
      models=$a; [ "$a" = all ] && models=""
      # Named for its models too: two torch stages of one regime and batch on a machine kept
      # warm would otherwise overwrite each other's files.
      name=torch-$b${c:+-b$c}-${a//,/+}; timed ${TORCH_TIMEOUT:-500} env PYTHONUNBUFFERED=1 python3 $REPO/tools/torch-reference/workloads.py \
        --repo $REPO ${models:+--models $models} --regime $b --modes ${TORCH_MODES:-eager,compile} --warmup 10 \
        --steps ${TORCH_STEPS:-100} ${c:+--batch $c} --out $R/$name.json > $R/$name.txt 2>&1 ;;
    *) echo "unknown stage $stage" >> $R/stages.txt ;;
  esac
  pack
done
echo "[$(( $(date +%s) - T0 )) s] end" >> $R/stages.txt
pack; ls -la $OUT; cat $R/stages.txt $R/times.txt $R/cache-state.txt
