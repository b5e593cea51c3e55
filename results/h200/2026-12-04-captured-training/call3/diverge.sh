# Call 3: captured training, eager and captured losses step by step (same seed); then the
# campaign script's fresh-process pairs.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
xz -dc .gpu/blazec.xz > /tmp/blazec && chmod +x /tmp/blazec
mkdir -p ~/.cache && cat .gpu-cache/cache.txz.* | xz -dc | tar xf - -C ~/.cache
R=$OUT/diverge; mkdir -p $R; T0=$(date +%s)
for m in mlp-w1024 cnn-mnist attention-d257; do
  timeout 60 /tmp/blazec trace $m --regime training -o /tmp/$m.t.ron > $R/trace-$m.txt 2>&1
  /tmp/blazec plan --trace /tmp/$m.t.ron --captured -o $R/$m.training.captured.ron > $R/plan-$m.txt 2>&1
  for v in eager captured eager2; do
    p=""; [ $v = captured ] && p="--plan $R/$m.training.captured.ron"
    timeout 40 /tmp/blazec run $m --regime training --warmup 3 --steps 300 --settle-ms 0 $p > $R/run-$m-$v.txt 2>&1
  done
  echo "$m done at $(( $(date +%s) - T0 )) s" >> $R/times.txt
done
tar czf $OUT/diverge.tgz -C $OUT diverge && rm -rf $R
