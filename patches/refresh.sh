#!/usr/bin/env bash
# Regenerate patches/<crate>.patch from an edited vendor/<crate> (the developer's loop:
# edit vendor/burn-fusion, run this, commit the patch). vendor/setup.sh is the inverse.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for name in burn-fusion; do
  (cd vendor && diff -ruN -x '.blaze-*' -x target "$name-stock" "$name" \
     | sed -E "s#^(---|\+\+\+) $name-stock/#\1 a/#; s#^(---|\+\+\+) $name/#\1 b/#; s#^diff -ruN .*#\#&#; s#^(---|\+\+\+) (\S+)\t.*#\1 \2#" \
     | grep -v '^#diff' > "../patches/$name.patch") || true
  git diff --no-index --shortstat "vendor/$name-stock" "vendor/$name" || true
done
