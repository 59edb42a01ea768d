#!/usr/bin/env bash
# Build git versions from a git source repository and run tests with each on PATH: patch files
# must be the same bytes whatever git (2.38 and later) made them.
#
#   tools/git_versions.sh GIT_SOURCE_REPO OUT_DIR v2.38.5 v2.55.0 [-- PYTEST ARGS...]
#
# GIT_SOURCE_REPO: a clone (or bare copy) of git's own repository; OUT_DIR: where each version
# is built and installed (kept: a second run reuses it). Default tests: the golden patch files.
set -euo pipefail
src=$1; out=$2; shift 2
versions=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do versions+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(tests/test_boundary.py -k "users_config or object_format" -p no:xdist -o "addopts=")
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
for v in "${versions[@]}"; do
  prefix="$out/$v"
  if [ ! -x "$prefix/bin/git" ]; then
    work="$out/src-$v"
    rm -rf "$work"
    git -C "$src" worktree add -q --detach "$work" "$v" 2>/dev/null \
      || { mkdir -p "$work" && git -C "$src" archive "$v" | tar -x -C "$work"; }
    make -C "$work" -j"$(nproc)" prefix="$prefix" NO_CURL=1 NO_OPENSSL=1 NO_GETTEXT=1 \
      NO_TCLTK=1 NO_EXPAT=1 NO_PERL=1 NO_PYTHON=1 install >/dev/null
  fi
  echo "== $("$prefix/bin/git" version)"
  (cd "$here" && PATH="$prefix/bin:$PATH" GIT_EXEC_PATH="$prefix/libexec/git-core" \
    python -m pytest "${tests[@]}")
done
