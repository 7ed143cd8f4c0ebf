#!/bin/bash
# run-full.sh [BUILD] [OUTDIR]: the full comparison of docs/compatibility.md (`make compat`).
#
# Runs tests/compat/cpython_compare.py over its full module list with BUILD/corral (default build/),
# as the current user and, when that is root, again as the ordinary user corraltest (made if missing, as
# scripts/run-tests.sh does) from a copy it can read.  Each run's table goes to the terminal and its JSON
# to OUTDIR (default compat-out/): root.json, user.json.  Exit status 1 if either run found a difference
# that cpython-differences.txt does not explain.  Takes 20-40 minutes per user on two cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
out=${2:-compat-out}
mkdir -p "$out"
rc=0
who=$([ "$(id -u)" -eq 0 ] && echo root || echo user)
echo "=== as $(id -un) (uid $(id -u))"
nice -n 10 /usr/bin/python3 tests/compat/cpython_compare.py --corral "$build/corral" --json "$out/$who.json" || rc=1

if [ "$(id -u)" -eq 0 ]; then
        user=corraltest
        id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
        tmp=$(mktemp -d /tmp/corral-compat.XXXXXX)
        trap 'rm -rf "$tmp"' EXIT
        mkdir -p "$tmp/bin" "$tmp/tests"
        cp "$build/corral" "$build/corral-init" "$tmp/bin/"
        cp -r tests/compat "$tmp/tests/"
        chmod -R a+rX "$tmp"
        echo "=== as $user (an ordinary user)"
        runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="/home/$user" LANG=C.UTF-8 \
                CORRAL_INIT="$tmp/bin/corral-init" \
                nice -n 10 /usr/bin/python3 "$tmp/tests/compat/cpython_compare.py" --corral "$tmp/bin/corral" \
                --json "$tmp/user.json" || rc=1
        cp "$tmp/user.json" "$out/user.json"
fi
exit $rc
