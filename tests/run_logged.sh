#!/usr/bin/env bash
# Runs a test command with its stdout and stderr also written to LOG, so that
# token_never_in_test_output (tests/check_no_token.sh) can read every test's output whole:
# CTest's own LastTest.log is only complete once the whole run has ended.
# Usage: run_logged.sh LOG COMMAND [ARGS...]
set -uo pipefail
log=$1
shift
mkdir -p "$(dirname "$log")"
"$@" 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
