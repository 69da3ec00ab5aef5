#!/usr/bin/env bash
# Fails when the suite's captured output (CTest's log of every test that ran before this one)
# contains an exe.dev token: the emulator issues exe1.<26 base32 characters>, as exe.dev does.
set -euo pipefail
log=$1
[[ -s $log ]] || { echo "no test log at $log"; exit 1; }
if grep -nE 'exe1\.[A-Z2-7]{26}' "$log" | cut -c1-200; then
  echo "a token appears in the test output above (file $log)"
  exit 1
fi
echo "no token in $(wc -l <"$log") lines of test output"
