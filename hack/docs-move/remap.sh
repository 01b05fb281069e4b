#!/usr/bin/env bash
# remap.sh BASE BRANCH: print, as a patch on docs/ (apply with patch -p1 --no-backup-if-mismatch at
# the top of the repository), what BRANCH changed in README.md since BASE,
# for a branch cut before the README moved into docs/ (BASE is then
# usually `git merge-base main BRANCH`'s side that predates the move, such
# as 3bf9bb3). Both READMEs are split by split.py into the pages they
# became, and the patch is the difference. Changes to the README's first
# 97 lines (the old opening, now rewritten) are printed on stderr, to be
# carried over by hand. Resolve the README.md conflict with the current
# README (git checkout --ours README.md) and apply the patch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git show "$1":README.md >"$tmp/base.md"
git show "$2":README.md >"$tmp/new.md"
mkdir -p "$tmp/a" "$tmp/b"
SPLIT_ROOT="$tmp/a" python3 "$here/split.py" "$tmp/base.md"
SPLIT_ROOT="$tmp/b" python3 "$here/split.py" "$tmp/new.md"
diff <(sed -n 1,97p "$tmp/base.md") <(sed -n 1,97p "$tmp/new.md") >&2 || true
cd "$tmp" && diff -ruN a b || true
