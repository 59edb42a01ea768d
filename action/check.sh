#!/usr/bin/env bash
# patchstack check for the action: does the series apply on its target? One run, as JSON
# (kept in $RUNNER_TEMP/patchstack/check.json), rendered into the job summary and the log;
# the step fails with check's own exit status (1: a patch conflicts, 2: bad input).
set -euo pipefail

out="${RUNNER_TEMP:?}/patchstack"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
python="$(command -v python || command -v python3)"

dir=()
if [ -n "${INPUT_SERIES_DIR:-}" ]; then dir=(--dir "$INPUT_SERIES_DIR"); fi
onto="${INPUT_ONTO:-}"
if [ -n "${INPUT_UPSTREAM_URL:-}" ]; then
  branch="${INPUT_UPSTREAM_BRANCH:-main}"
  ref="refs/remotes/patchstack-upstream/$branch"
  git fetch --quiet --no-tags "$INPUT_UPSTREAM_URL" "+refs/heads/$branch:$ref"
  onto="${onto:-$ref}"
fi
target=()
if [ -n "$onto" ]; then target=(--onto "$onto"); fi

status=0
patchstack ${dir[@]+"${dir[@]}"} check ${target[@]+"${target[@]}"} --json | tee "$out/check.json" > /dev/null || status=$?
if [ "$status" -le 1 ] && [ -s "$out/check.json" ]; then
  "$python" "$here/ghaction.py" check-summary "$out/check.json" | tee -a "${GITHUB_STEP_SUMMARY:?}"
fi
echo "result=$([ "$status" = 0 ] && echo ok || { [ "$status" = 1 ] && echo conflict || echo error; })" >> "${GITHUB_OUTPUT:?}"
echo "json=$out/check.json" >> "$GITHUB_OUTPUT"
exit "$status"
