#!/usr/bin/env bash
# patchstack review for the action: review the change a pull request makes to the series
# (from its merge base to its head, or INPUT_OLD..INPUT_NEW) as JSON, HTML and Markdown in
# $RUNNER_TEMP/patchstack/, and the Markdown into the job summary.
set -euo pipefail

out="${RUNNER_TEMP:?}/patchstack"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
python="$(command -v python || command -v python3)"

new="${INPUT_NEW:-$("$python" "$here/ghaction.py" event head-sha)}"
old="${INPUT_OLD:-}"
if [ -z "$old" ]; then
  base="$("$python" "$here/ghaction.py" event base-sha)"
  if [ -n "$base" ] && [ -n "$new" ]; then old="$(git merge-base "$base" "$new")"; fi
fi
if [ -z "$old" ] || [ -z "$new" ]; then
  echo "::error title=patchstack::review needs a pull_request event, or the inputs old and new"
  exit 2
fi
echo "review $old..$new"

dir=()
if [ -n "${INPUT_SERIES_DIR:-}" ]; then dir=(--dir "$INPUT_SERIES_DIR"); fi
run_url="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:?}/actions/runs/${GITHUB_RUN_ID:-0}"

patchstack review "$old" "$new" ${dir[@]+"${dir[@]}"} --json -o "$out/review.json"
changes="$("$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(p["words"] != ["unchanged"] for p in d["patches"]) + d["base"]["moved"])
' "$out/review.json")"
patchstack review "$old" "$new" ${dir[@]+"${dir[@]}"} --format html -o "$out/review.html"
patchstack review "$old" "$new" ${dir[@]+"${dir[@]}"} --format markdown --full-url "$run_url" \
  -o "$out/review.md"
if [ "$changes" = 0 ]; then
  printf '%s\n%s\n' '<!-- patchstack-review -->' \
    'patchstack review: this pull request does not change the patch series.' > "$out/review.md"
fi
cat "$out/review.md" >> "${GITHUB_STEP_SUMMARY:?}"
{
  echo "changed=$([ "$changes" = 0 ] && echo false || echo true)"
  echo "markdown=$out/review.md"
  echo "html=$out/review.html"
  echo "json=$out/review.json"
} >> "${GITHUB_OUTPUT:?}"
