#!/usr/bin/env bash
# Materialise vendor/<crate>-stock (the published crate, checksum-verified) and
# vendor/<crate> (= stock + patches/<crate>.patch) for every crate Blaze patches.
#
# Invariants:
#   * No Burn source is committed; both copies are generated (see vendor/.gitignore).
#   * The stock copy is byte-identical to the published .crate whose sha256 cargo recorded in
#     patches/fetch/Cargo.lock; if it was edited, this script refuses to run.
#   * The patched copy is regenerated from stock + patch whenever it differs from that.
# Prints the patch size (files, insertions, deletions) so the change to Burn stays counted.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
CRATES=(burn-fusion-0.22.1)

cargo_home="${CARGO_HOME:-$HOME/.cargo}"
cargo fetch --quiet --manifest-path patches/fetch/Cargo.toml

lock_checksum() { # name version -> sha256 recorded by cargo
  awk -v n="$1" -v v="$2" '
    $0 == "name = \"" n "\"" { hit = 1; next }
    hit && $0 == "version = \"" v "\"" { ver = 1; next }
    hit && ver && /^checksum/ { gsub(/"/, "", $3); print $3; exit }
    /^\[\[package\]\]/ { hit = 0; ver = 0 }' patches/fetch/Cargo.lock
}

tree_digest() { # dir -> one sha256 over every file's path and content
  (cd "$1" && find . -type f ! -name '.blaze-*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

for crate in "${CRATES[@]}"; do
  name="${crate%-*}"; version="${crate##*-}"
  want="$(lock_checksum "$name" "$version")"
  [ -n "$want" ] || { echo "setup: no checksum for $crate in patches/fetch/Cargo.lock" >&2; exit 2; }
  file="$(ls "$cargo_home"/registry/cache/*/"$crate.crate" 2>/dev/null | head -n1 || true)"
  [ -n "$file" ] || { echo "setup: cargo did not download $crate.crate" >&2; exit 2; }
  got="$(sha256sum "$file" | cut -d' ' -f1)"
  [ "$got" = "$want" ] || { echo "setup: $file has sha256 $got, cargo recorded $want" >&2; exit 2; }

  stock="vendor/$name-stock"; patched="vendor/$name"; patch="patches/$name.patch"
  fresh="$(mktemp -d)"; trap 'rm -rf "$fresh"' EXIT
  tar -xzf "$file" -C "$fresh"
  want_tree="$(tree_digest "$fresh/$crate")"
  if [ -d "$stock" ]; then
    if [ "$(tree_digest "$stock")" != "$want_tree" ]; then
      echo "setup: $stock differs from the published $crate (sha256 $want)." >&2
      echo "setup: refusing to run; never edit the stock copy. Delete $stock to regenerate it." >&2
      exit 3
    fi
  else
    mv "$fresh/$crate" "$stock"
  fi

  # patched = stock + patch, rebuilt in a scratch dir and swapped in only if it changed.
  scratch="$(mktemp -d)"; cp -a "$stock/." "$scratch/"
  if [ -s "$patch" ]; then
    (cd "$scratch" && patch -p1 --quiet --forward --no-backup-if-mismatch < "$root/$patch") \
      || { echo "setup: $patch does not apply to $crate" >&2; exit 4; }
  fi
  if [ ! -d "$patched" ]; then
    mv "$scratch" "$patched"
    # A first copy (a fresh clone) gets the time of the patch's last commit as every file's
    # mtime, not the time of this run: cargo rebuilds a path crate whose sources are newer than
    # its build, so a fresh clone beside a kept target directory reuses a build of the same
    # patch (CI's clones: Burn is not rebuilt), while a build older than the patch's commit is
    # rebuilt. Only for a patch as committed: an edited one keeps this run's time.
    if committed="$(git -C "$root" log -1 --format=%ct -- "$patch" 2>/dev/null)" && [ -n "$committed" ] \
      && git -C "$root" diff --quiet HEAD -- "$patch" 2>/dev/null; then
      find "$patched" -exec touch -h -d "@$committed" {} +
    fi
  elif ! diff -rq -x '.blaze-*' "$scratch" "$patched" >/dev/null; then
    rm -rf "$patched"; mv "$scratch" "$patched"
  else
    rm -rf "$scratch"
  fi
  stats="$(git diff --no-index --shortstat "$stock" "$patched" 2>/dev/null || true)"
  echo "setup: $patched = published $crate (sha256 ${want:0:12}…) + $patch:${stats:- no changes}"
done
