#!/usr/bin/env bash
# Install patchstack from this action's own checkout (GITHUB_ACTION_PATH) into a virtual
# environment of its own, and put it on PATH for the steps after this one. patchstack itself
# is never looked up by name in a package index; only its dependencies come from there.
set -euo pipefail

python="${PATCHSTACK_PYTHON:-python3}"
venv="${RUNNER_TEMP:?}/patchstack-venv"
if [ ! -x "$venv/bin/patchstack" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${GITHUB_ACTION_PATH:?}"
fi
echo "$venv/bin" >> "${GITHUB_PATH:?}"
"$venv/bin/patchstack" --version
