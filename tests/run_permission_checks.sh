#!/usr/bin/env bash
# Runs a test binary's [permissions] cases (the command and its arguments after MODE) so that
# they check something even when the suite runs as root, as CI and the README's setup do.
# Usage: run_permission_checks.sh dropped|kept COMMAND [ARGS...]
#   dropped  (<name>_unprivileged): as root, with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
#            dropped from the inheritable, ambient and bounding sets (so from the permitted and
#            effective sets of everything it starts): root then obeys file permissions like any
#            owner. No other user and no searchable parent directory is needed, so this works in
#            a 0700 checkout. As another user the command runs as it is.
#   kept     (<name>_with_dac_override, WILL_FAIL): as root with the capabilities kept, so the
#            checks must fail; it shows that the dropped run checked something.
# Both set EXEDEV_PERMISSION_CHECKS=required: the cases run instead of skipping for root.
# Prints "skipped: …" as its first line (CTest's skip pattern for these entries) only where the
# mode cannot be set up, and says why.
set -euo pipefail
mode=$1
shift
export EXEDEV_PERMISSION_CHECKS=required
caps=-dac_override,-dac_read_search

# Bit 1 of the effective capability set is CAP_DAC_OVERRIDE.
effective=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
has_dac_override=$(( (16#$effective >> 1) & 1 ))

case "$mode" in
  dropped)
    if [[ $(id -u) != 0 && $has_dac_override == 0 ]]; then exec "$@"; fi
    if ! command -v setpriv >/dev/null; then
      echo "skipped: setpriv (util-linux) is not installed, so CAP_DAC_OVERRIDE cannot be dropped"
      exit 0
    fi
    if ! setpriv --inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$caps" true 2>/dev/null; then
      echo "skipped: setpriv cannot drop CAP_DAC_OVERRIDE from the bounding set here (it needs CAP_SETPCAP)"
      exit 0
    fi
    exec setpriv --inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$caps" "$@"
    ;;
  kept)
    if [[ $has_dac_override == 0 ]]; then
      echo "skipped: this process lacks CAP_DAC_OVERRIDE (not root), so no permission is bypassed to show"
      exit 0
    fi
    exec "$@"
    ;;
  *)
    echo "usage: run_permission_checks.sh dropped|kept COMMAND [ARGS...]" >&2
    exit 2
    ;;
esac
