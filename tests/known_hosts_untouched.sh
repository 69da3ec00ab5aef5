#!/usr/bin/env bash
# No test, example or benchmark writes the user's real ~/.ssh/known_hosts (tests/CMakeLists.txt
# runs `record` before every test of a CTest run and `check` after them all).
#   known_hosts_untouched.sh record STATE   keeps the file's SHA-256 (or that it is absent) in STATE
#   known_hosts_untouched.sh check STATE    fails, saying how, when the file is not as recorded
# The file's content is never printed.
set -euo pipefail
action=$1
state=$2
file="$HOME/.ssh/known_hosts"

describe() {
  if [ -e "$file" ]; then
    sha256sum <"$file" | cut -d' ' -f1
  else
    echo absent
  fi
}

case "$action" in
  record)
    mkdir -p "$(dirname "$state")"
    describe >"$state"
    ;;
  check)
    before=$(cat "$state")
    after=$(describe)
    if [ "$before" = "$after" ]; then
      echo "$file is as it was before the tests ($after)"
    elif [ "$before" = absent ]; then
      echo "$file was absent before the tests and exists after them: a test wrote the user's known_hosts"
      exit 1
    elif [ "$after" = absent ]; then
      echo "$file was removed during the tests"
      exit 1
    else
      echo "$file was changed during the tests (SHA-256 $before before, $after after)"
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 record|check STATE" >&2
    exit 2
    ;;
esac
