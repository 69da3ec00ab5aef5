#!/bin/sh
# exedev-mcp with an SSH key and no EXE_TOKEN (issue 40): the emulator runs as its own process
# with the key registered; `exedev-mcp --exedev --ssh-key=KEY` makes a VM through the API with
# exe0 tokens it signs with that key, seeds and copies back a tree over SSH with the same key,
# and destroys the VM at exit. HOME is a temporary directory: nothing of the real ~/.ssh is read
# or written. Usage: ssh_key_only_test.sh EXEDEV_MCP EXEDEV_EMULATOR
set -eu
server=$1
emulator=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/exedev-mcp-key-XXXXXXXX")
trap 'rm -rf "$work"' EXIT
HOME="$work/home"
export HOME
mkdir -p "$HOME" "$work/src/docs"
unset EXE_TOKEN EXE_SSH_KEY SSH_AUTH_SOCK
/usr/bin/ssh-keygen -q -t ed25519 -N '' -C exedev-mcp-test -f "$work/key"
printf 'one credential\n' > "$work/src/docs/readme.txt"

eval "$("$emulator" --background --print-env --ssh-key="$work/key.pub")"
trap 'kill "$EXEDEV_EMULATOR_PID"; rm -rf "$work"' EXIT
unset EXE_TOKEN  # --print-env exported the emulator's own token: the server must do without it

"$server" --exedev --ssh-key="$work/key" --transport=ssh --scope-tag=key-only --on-exit=destroy \
  --upload="$work/src:seed" --download="seed:$work/back" < /dev/null 2> "$work/log" ||
  { cat "$work/log"; exit 1; }
cmp "$work/src/docs/readme.txt" "$work/back/docs/readme.txt"
grep -q 'destroyed VM' "$work/log" || { cat "$work/log"; exit 1; }

# A key the emulator does not hold: the API refuses it, naming the key, and the server exits 1.
/usr/bin/ssh-keygen -q -t ed25519 -N '' -C stranger -f "$work/stranger"
if "$server" --exedev --ssh-key="$work/stranger" --transport=exec --upload="$work/src:seed" < /dev/null 2> "$work/log"; then
  exit 1
fi
grep -q 'minted with the SSH key SHA256:' "$work/log" || { cat "$work/log"; exit 1; }
echo "exedev-mcp with only an SSH key: a VM made, seeded over SSH, copied back and destroyed"
