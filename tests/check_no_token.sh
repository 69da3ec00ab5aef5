#!/usr/bin/env bash
# Fails when what the tests printed (one log per test entry in DIR, written by
# tests/run_logged.sh) contains an exe.dev token: the emulator issues exe1.<26 base32
# characters>, as exe.dev does. No log at all means nothing could be checked: a failure.
set -euo pipefail
dir=$1
shopt -s nullglob
logs=("$dir"/*.log)
((${#logs[@]} > 0)) || { echo "no test output in $dir"; exit 1; }
if grep -nE 'exe1\.[A-Z2-7]{26}' "${logs[@]}" | cut -c1-200; then
  echo "a token appears in the test output above"
  exit 1
fi
echo "no token in $(cat "${logs[@]}" | wc -l) lines of output from ${#logs[@]} test entries"
