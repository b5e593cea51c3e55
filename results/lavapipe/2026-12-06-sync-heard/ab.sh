#!/bin/bash
# Alternating fresh processes of two blazec builds (old: the window end judged at the next
# operation; new: judged when the sync is heard), 8 repetitions, the op-stream check's cost as
# each run prints it. Run from a directory holding the two plans of
# results/lavapipe/2026-12-06-small-step-check/ and the binaries /tmp/blazec-{old,new}.
export XDG_RUNTIME_DIR=/tmp
vs=(old new)
for rep in 1 2 3 4 5 6 7 8; do
  for k in 0 1; do
    v=${vs[$(( (k + rep) % 2 ))]}
    /tmp/blazec-$v run cnn-mnist --regime forward --warmup 3 --steps 5 --plan cnn-mnist.forward.ron > cnn-mnist-$v-$rep.txt 2>&1
    /tmp/blazec-$v run attention-d257 --batch 2 --seq 32 --regime forward --warmup 3 --steps 5 --plan attention-d257-b2s32.forward.ron > attention-$v-$rep.txt 2>&1
  done
done
echo done > ab-done.txt
