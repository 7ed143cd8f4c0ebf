#!/bin/sh
# The attack suite through a session host's pool of pre-made jails (docs/exec-pool.md): its `corral exec`
# runs claim a pooled jail where one fits, and every test must hold as for a direct jail.  make stress runs it;
# minutes, not for make test.  Usage: tests/stress/exec-pool-attack.sh CORRAL [TEST FILES AND PYTEST ARGS]
# (default: tests/attack)
set -eu
corral=$1
shift
rt=$(mktemp -d /tmp/corral-exec-pool-attack.XXXXXX)
# The pool refills at once, so that the suite's runs one after the other are served by it (by default a
# refill waits until no claim came for 100 ms, and back-to-back runs fall back to direct jails).
export XDG_RUNTIME_DIR="$rt" CORRAL="$corral" CORRAL_EXEC_POOL=4 CORRAL_EXEC_POOL_QUIET_MS=0 CORRAL_EXEC_POOL_WAIT_MS=3000
trap '"$corral" session shutdown >/dev/null 2>&1 || true; rm -rf "$rt"' EXIT
"$corral" session start --cold >/dev/null
[ $# -gt 0 ] || set -- tests/attack
rc=0
/usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" || rc=$?
"$corral" session status
exit $rc
