#!/usr/bin/env bash
# Regenerate patches/burn-fusion.patch from an edited vendor/burn-fusion (the only way Burn is
# changed): diff against the checksum-verified stock copy, headers as `a/…` `b/…`, no dates.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../vendor"
diff -ruN -x '.blaze-*' -x target burn-fusion-stock burn-fusion \
  | sed -E -e '/^diff -ruN/d' \
        -e 's#^--- burn-fusion-stock/([^\t]*).*#--- a/\1#' \
        -e 's#^\+\+\+ burn-fusion/([^\t]*).*#+++ b/\1#' > ../patches/burn-fusion.patch || true
git diff --no-index --shortstat burn-fusion-stock burn-fusion || true
