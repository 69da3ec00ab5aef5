#!/bin/sh
# exedev-mcp --upload seeds the workspace before serving and --download copies it back at exit
# (stdin at EOF: the session ends at once), on a local directory and on a VM of the bundled
# emulator over /exec; --exclude holds at both ends. Usage: trees_test.sh EXEDEV_MCP
set -eu
server=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/exedev-mcp-trees-XXXXXXXX")
trap 'rm -rf "$work"' EXIT
src="$work/src"
mkdir -p "$src/a/b" "$src/empty" "$src/.git"
printf 'nested\n' > "$src/a/b/c.txt"
printf '#!/bin/sh\n' > "$src/run.sh"; chmod 755 "$src/run.sh"
printf 'odd\n' > "$src/name with spaces"
printf 'ref\n' > "$src/.git/HEAD"
ln -s a/b/c.txt "$src/link"
expected() { (cd "$src" && find . -path ./.git -prune -o -printf '%y %m %p %l\n' | LC_ALL=C sort); }
actual() { (cd "$1" && find . -printf '%y %m %p %l\n' | LC_ALL=C sort); }

mkdir "$work/local"
"$server" --local="$work/local" --exclude=.git/ --upload="$src:seed" --download="seed:$work/back-local" < /dev/null 2> "$work/log"
grep -q 'uploaded' "$work/log" && grep -q 'downloaded' "$work/log"
[ "$(actual "$work/local/seed")" = "$(expected)" ]
[ "$(actual "$work/back-local")" = "$(expected)" ]
cmp "$src/a/b/c.txt" "$work/back-local/a/b/c.txt"

"$server" --emulator --transport=exec --exclude=.git/ --upload="$src:seed" --download="seed:$work/back-vm" < /dev/null 2> "$work/log" ||
  { cat "$work/log"; exit 1; }
[ "$(actual "$work/back-vm")" = "$(expected)" ]
cmp "$src/name with spaces" "$work/back-vm/name with spaces"

# A missing LOCAL to upload is an error before serving, with a non-zero exit.
if "$server" --local="$work/local" --upload="$work/missing:x" < /dev/null 2> "$work/log"; then exit 1; fi
echo "exedev-mcp --upload/--download: local and emulator VM trees round-trip"
