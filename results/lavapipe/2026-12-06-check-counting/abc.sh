#!/bin/bash
# Alternating processes, order rotated each repetition: base (6980229), kinds (variant table),
# count (variant table + counting outside the lock). The check's cost per operation of the step.
cd /tmp/ck; export XDG_RUNTIME_DIR=/tmp
vs=(base kinds count)
for rep in 1 2 3 4 5 6 7 8; do
  for k in 0 1 2; do
    v=${vs[$(( (k + rep) % 3 ))]}
    /tmp/blazec-$v run cnn-mnist --regime training --warmup 2 --steps 3 --settle-steps 0 --plan cp.ron > cnn-mnist-$v-$rep.txt 2>&1
    /tmp/blazec-$v run attention-d257 --batch 2 --seq 32 --regime training --warmup 2 --steps 3 --settle-steps 0 --plan pp.ron > attention-$v-$rep.txt 2>&1
  done
done
echo done > abc-done.txt
