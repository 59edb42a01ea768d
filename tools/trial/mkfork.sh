#!/usr/bin/env bash
# mkfork.sh MIRROR BRANCH DIR: a fork to try patchstack on, as docs/benchmarks.md's real drifts
# were made: a clone of MIRROR (a clone of github.com/modal-projects/sglang, which carries
# upstream `main` and its engineers' branches) in DIR, with origin/BRANCH imported as a series
# over origin/main (`import branch --take-merge`) and pushed. The forks of the benchmarks:
# KT_FORK (saatwik/kernel-timers, 47 patches), WS_FORK (weight-sync-instrumentation, 46),
# DV2_FORK (dflash_v2, 66). Needs patchstack on PATH.
set -euo pipefail
mirror=$1 branch=$2 dir=$3
git clone -q "$mirror" "$dir"
cd "$dir"
git config user.name trial
git config user.email trial@example.invalid
git checkout -q -B work "origin/$branch"
patchstack import branch "origin/$branch" --upstream origin/main --take-merge --tag essential
patchstack push --all
git branch -f lin HEAD
patchstack status | tail -n 3
