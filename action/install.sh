#!/usr/bin/env bash
# Install patchstack from this action's own checkout (GITHUB_ACTION_PATH) into a virtual
# environment of its own, and put it on PATH for the steps after this one. patchstack itself
# is never looked up by name in a package index; its dependencies come from there at the exact
# versions of requirements.txt, as wheels. Every interpreter runs isolated (-I): the current
# folder is the workspace, a pull request's checkout, and a venv.py or pip.py there must not
# be what runs.
set -euo pipefail

python="${PATCHSTACK_PYTHON:-python3}"
venv="${RUNNER_TEMP:?}/patchstack-venv"
here="${GITHUB_ACTION_PATH:?}"
if [ ! -x "$venv/bin/patchstack" ]; then
  "$python" -I -m venv "$venv"
  pip=("$venv/bin/python" -I -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" --only-binary :all: --requirement "$here/action/requirements.txt"
  "${pip[@]}" --no-deps --no-build-isolation "$here"
fi
echo "$venv/bin" >> "${GITHUB_PATH:?}"
"$venv/bin/patchstack" --version
