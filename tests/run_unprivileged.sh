#!/usr/bin/env bash
# Runs a test binary (with its arguments) as an unprivileged user, so checks that depend on
# file permissions check something even when the suite runs as root (as CI and the README's
# setup do). As a non-root user it simply runs the binary. Prints "skipped: …" (CTest's skip
# pattern for these entries) when root cannot drop to an unprivileged user.
set -euo pipefail
if [[ $(id -u) != 0 ]]; then exec "$@"; fi
user=${EXEDEV_UNPRIVILEGED_USER:-nobody}
if ! uid=$(id -u "$user" 2>/dev/null) || ! gid=$(id -g "$user" 2>/dev/null) || [[ $uid == 0 ]]; then
  echo "skipped: no unprivileged user '$user' to run the permission checks as"
  exit 0
fi
if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups test -x "$1"; then
  echo "skipped: user '$user' cannot execute $1 (a parent directory is not searchable)"
  exit 0
fi
# A home and temporary directory of its own: the caller's are root's.
home=$(mktemp -d)
trap 'rm -rf -- "$home"' EXIT
chown "$uid:$gid" "$home"
status=0
HOME=$home TMPDIR=$home setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all "$@" || status=$?
exit "$status"
