#!/bin/sh
# setup.sh: a Node and the official E2B SDK for tests/e2b/sdk.test.mjs and
# bench/e2b.mjs.  Idempotent; the npm registry is the only network it needs.
#
#   tests/e2b/setup.sh      prints two lines: the node to run, then the
#                           directory whose node_modules holds the SDK (give
#                           it to the scripts as CORRAL_E2B_MODULES); exits
#                           77 when no Node or npm can be had (a skip)
#
# Node: the SDK wants >= 20.18.1 (<21 or >= 22).  $CORRAL_E2B_NODE, then node
# on PATH, is taken if new enough; otherwise (Debian 12 packages Node 18)
# Node 22 comes from the npm registry as the package node-linux-<arch>, which
# ships the binary, unpacked into <dir>/.node.
#
# The SDK: `npm ci` from the pinned package-lock.json, rerun whenever the lock
# changed since the last install.  <dir> is tests/e2b itself when its
# node_modules is current or it is writable; else $CORRAL_E2B_MODULES, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/corral-e2b (an ordinary user's run from a
# read-only copy of the tree: scripts/run-tests.sh).
set -eu
export npm_config_update_notifier=false # no notice on stderr about newer npms

here=$(cd "$(dirname "$0")" && pwd)
node_pkg_version=22.23.3

say() { echo "setup.sh: $*" >&2; }

# The sha256 of the lock, kept beside an install made from it.
lock_sum=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
current() { [ -f "$1/node_modules/.corral-lock" ] && [ "$(cat "$1/node_modules/.corral-lock")" = "$lock_sum" ]; }

if current "$here"; then
	dir=$here
elif [ -n "${CORRAL_E2B_MODULES:-}" ]; then
	dir=$CORRAL_E2B_MODULES
elif [ -w "$here" ]; then
	dir=$here
else
	dir=${XDG_CACHE_HOME:-$HOME/.cache}/corral-e2b
fi
mkdir -p "$dir"

# Two runs at once (the test suites and a bench) install once.
if command -v flock >/dev/null 2>&1 && [ -w "$dir" ]; then
	exec 9>"$dir/.setup.lock"
	flock 9
fi

# 0 when node $1 is one the SDK supports.
node_ok() {
	"$1" -e '
		const [a, b, c] = process.versions.node.split(".").map(Number)
		const ok = a >= 22 || (a === 20 && (b > 18 || (b === 18 && c >= 1)))
		process.exit(ok ? 0 : 1)' 2>/dev/null
}

node=
for cand in "${CORRAL_E2B_NODE:-}" "$(command -v node || true)" "$dir/.node/bin/node"; do
	if [ -n "$cand" ] && [ -x "$cand" ] && node_ok "$cand"; then
		node=$cand
		break
	fi
done

if [ -z "$node" ]; then
	command -v npm >/dev/null 2>&1 || { say "no Node >= 20.18.1 and no npm to fetch one"; exit 77; }
	case $(uname -m) in
	x86_64) arch=x64 ;;
	aarch64) arch=arm64 ;;
	*) say "no Node >= 20.18.1, and npm has no node-linux build for $(uname -m)"; exit 77 ;;
	esac
	say "fetching Node $node_pkg_version from the npm registry (node-linux-$arch)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "node-linux-$arch@$node_pkg_version" >/dev/null)
	mkdir "$tmp/unpacked"
	tar -xzf "$tmp"/node-linux-*.tgz -C "$tmp/unpacked"
	rm -rf "$dir/.node"
	mv "$tmp/unpacked/package" "$dir/.node"
	node=$dir/.node/bin/node
	node_ok "$node" || { say "$node does not run"; exit 1; }
fi

if ! current "$dir"; then
	command -v npm >/dev/null 2>&1 || { say "npm is needed to install the E2B SDK"; exit 77; }
	if [ "$dir" != "$here" ]; then
		cp "$here/package.json" "$here/package-lock.json" "$dir/"
	fi
	say "npm ci in $dir"
	# npm itself runs under the node chosen above (its shebang is env node).
	(cd "$dir" && PATH=$(dirname "$node"):$PATH npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$lock_sum" >"$dir/node_modules/.corral-lock"
fi

echo "$node"
echo "$dir"
