#!/bin/bash
B=/var/tmp/blaze-target/release/blazec
export BLAZE_AUTOTUNE_CACHE=/tmp/exp/ac XDG_RUNTIME_DIR=/tmp
M="attention-d257 --batch 2 --seq 32 --regime training"
cd /tmp/exp
$B run $M --warmup 2 --steps 3 > populate.txt 2>&1
one() { local s=$(date +%s%N); echo quit | $B serve $M --warmup 3 --settle-steps 5 > $1.out 2> $1.err; echo "$1 $(( ($(date +%s%N)-s)/1000000 )) ms" >> times.txt; }
rm -f times.txt
one alone1
one alone2
# A server that is ready and then idle, holding the cache open.
mkfifo hold 2>/dev/null
(sleep 300 > hold &) ; $B serve $M --warmup 3 --settle-steps 5 < hold > holder.out 2> holder.err &
H=$!
while ! grep -q ready holder.out 2>/dev/null; do sleep 1; done
one shared1
one shared2
kill $H
one alone3
cat times.txt
