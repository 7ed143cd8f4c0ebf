#!/bin/sh
# setup.sh: playwright-core (Playwright's protocol client, no browsers of its
# own) for tests/webview/webview.test.mjs, which drives Debian's chromium.
# Idempotent; the npm registry is the only network it needs.  The shape of
# tests/mcp/setup.sh.
#
#   tests/webview/setup.sh   prints the directory whose node_modules holds
#                            playwright-core (the test gets it as
#                            CORRAL_WEBVIEW_MODULES); exits 77 when npm is
#                            missing (a skip)
#
# `npm ci` from the pinned package-lock.json, rerun whenever the lock changed
# since the last install, in tests/webview itself when current or writable,
# else in ${XDG_CACHE_HOME:-$HOME/.cache}/corral-webview (an ordinary user's
# run from a read-only copy of the tree).
set -eu
export npm_config_update_notifier=false

here=$(cd "$(dirname "$0")" && pwd)
lock_sum=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
current() { [ -f "$1/node_modules/.corral-lock" ] && [ "$(cat "$1/node_modules/.corral-lock")" = "$lock_sum" ]; }

if current "$here" || [ -w "$here" ]; then
	dir=$here
else
	dir=${XDG_CACHE_HOME:-$HOME/.cache}/corral-webview
fi
mkdir -p "$dir"
if command -v flock >/dev/null 2>&1 && [ -w "$dir" ]; then
	exec 9>"$dir/.setup.lock"
	flock 9
fi
if ! current "$dir"; then
	command -v npm >/dev/null 2>&1 || { echo "setup.sh: npm is needed to install playwright-core" >&2; exit 77; }
	[ "$dir" = "$here" ] || cp "$here/package.json" "$here/package-lock.json" "$dir/"
	echo "setup.sh: npm ci in $dir" >&2
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$lock_sum" >"$dir/node_modules/.corral-lock"
fi
echo "$dir"
