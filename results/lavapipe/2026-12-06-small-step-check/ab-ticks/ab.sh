#!/bin/bash
cd /tmp/tk; export XDG_RUNTIME_DIR=/tmp
vs=(base ticks)
for rep in 1 2 3 4 5 6 7 8; do
  for k in 0 1; do
    v=${vs[$(( (k + rep) % 2 ))]}
    /tmp/blazec-$v run cnn-mnist --regime forward --warmup 3 --steps 5 --plan cnn-mnist.forward.ron > cnn-mnist-$v-$rep.txt 2>&1
    /tmp/blazec-$v run attention-d257 --batch 2 --seq 32 --regime forward --warmup 3 --steps 5 --plan attention-d257-b2s32.forward.ron > attention-$v-$rep.txt 2>&1
  done
done
echo done > ab-done.txt
