#!/bin/sh
# Run corral's benchmarks and write docs/benchmarks.md with their
# figures, the machine, the date and this exact command line.
#
#   bench/run-all.sh [--rounds N] [--timeout-runs N] [--flood-runs N]
#
# $CORRAL (default build/corral) and $NSJAIL (default: nsjail on PATH) pick
# the binaries; a missing one is skipped with the reason in the report.
set -eu

cmdline="$0 $*"
for v in CORRAL NSJAIL; do
	eval "val=\${$v-}"
	[ -n "$val" ] && cmdline="$v=$val $cmdline"
done

rounds=200 timeout_runs=50 flood_runs=5
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--timeout-runs) timeout_runs=$2; shift 2 ;;
	--flood-runs) flood_runs=$2; shift 2 ;;
	*) echo "usage: $0 [--rounds N] [--timeout-runs N] [--flood-runs N]" >&2; exit 2 ;;
	esac
done

bench=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bench")
out=$bench/out
py=/usr/bin/python3 # Debian's, which has python3-matplotlib
mkdir -p "$out"
cd "$out" # tools under test run from a directory we own

$py "$bench/startup.py" --rounds "$rounds" --csv "$out/startup-samples.csv" \
	--plot "$root/docs/benchmarks-startup.png" --md "$out/startup.md"
echo
# Entering a cgroup v1 controller: supervisor-attached against self-entered (bench/cgroup_attach.py).
$py "$bench/cgroup_attach.py" --md "$out/cgroup-attach.md"
echo
$py "$bench/timeout.py" --runs "$timeout_runs" --md "$out/timeout.md"
echo
$py "$bench/flood_rss.py" --runs "$flood_runs" --md "$out/flood.md"
echo
$py "$bench/agent_overhead.py" --runs 5 --md "$out/agent.md"
echo
# The modes of corral run (docs/modes.md) on scripted tasks; with $MODEL set
# (make bench MODEL=...), also against that model: success per mode.
$py "$bench/modes.py" --md "$out/modes.md"
if [ -n "${MODEL-}" ]; then
	echo
	$py "$bench/modes.py" --model "$MODEL" ${BASE_URL:+--base-url "$BASE_URL"} --md "$out/modes-model.md" ||
		echo "modes against $MODEL: skipped: the endpoint did not answer" | tee "$out/modes-model.md"
fi
echo
# A C program (bench/artifact_diff.c), built beside corral by meson.
artifact_diff=$(dirname "${CORRAL:-$root/build/corral}")/bench/artifact-diff
if [ -x "$artifact_diff" ]; then
	"$artifact_diff" --files 10000 --runs 200 --md "$out/artifact.md"
else
	echo "artifact-diff: skipped: $artifact_diff is not built" | tee "$out/artifact.md"
fi
echo
# The safety review of one step (bench/review.c), built beside corral by meson.
review_bench=$(dirname "${CORRAL:-$root/build/corral}")/bench/review
if [ -x "$review_bench" ]; then
	"$review_bench" --runs 2000 --md "$out/review.md"
else
	echo "review: skipped: $review_bench is not built" | tee "$out/review.md"
fi
echo
# Sessions against their targets: warm vs cold start, steps, memory, the
# five-turn scenario (bench/sessions.py; warm sessions need root).
$py "$bench/sessions.py" --json "$out/sessions.json" --md "$out/sessions.md" \
	--plot "$root/docs/sessions-bench.png" ||
	echo "sessions: failed (bench/sessions.py exited $?); see its output above" | tee "$out/sessions.md"
echo
# corral run with the user's session host up, with a zygote of its own, cold;
# four runs at once sharing the host's zygote (bench/run_host.py).
$py "$bench/run_host.py" --runs 5 --md "$out/run-host.md"
echo
# corral serve under keep-alive HTTP load (wrk), beside the CLI and a stock Jupyter kernel
# (bench/serve.py; about a minute).
$py "$bench/serve.py" --json "$out/serve.json" --md "$out/serve.md" --plot "$root/docs/img/serve-bench.png" ||
	echo "serve: failed (bench/serve.py exited $?); see its output above" | tee "$out/serve.md"
echo
# corral serve's agent runs: POST, event latency, replay, and wrk on GET /v1/runs (bench/runs.py;
# about half a minute, against the scripted model server on loopback).
$py "$bench/runs.py" --json "$out/runs.json" --md "$out/runs.md" ||
	echo "runs: failed (bench/runs.py exited $?); see its output above" | tee "$out/runs.md"
echo
# corral mcp over stdio, and corral serve's /mcp over Streamable HTTP, through
# the official MCP SDK (bench/mcp.mjs; Node and the SDK from the npm registry by
# tests/mcp/setup.sh, which exits 77 without them).
if mcp_setup=$("$root/tests/mcp/setup.sh"); then
	for t in stdio http; do
		f=mcp; [ "$t" = http ] && f=mcp-http
		CORRAL_MCP_MODULES=$(echo "$mcp_setup" | sed -n 2p) "$(echo "$mcp_setup" | sed -n 1p)" "$bench/mcp.mjs" \
			--transport "$t" --json "$out/$f.json" --md "$out/$f.md" ||
			echo "mcp ($t): failed (bench/mcp.mjs exited $?); see its output above" | tee "$out/$f.md"
	done
else
	echo "mcp: skipped: tests/mcp/setup.sh could not provide Node and the MCP SDK" | tee "$out/mcp.md" "$out/mcp-http.md"
fi
echo
# The official E2B SDK (npm, through tests/e2b/setup.sh) against corral serve's E2B API: create then the
# first runCode (bench/e2b.py).
$py "$bench/e2b.py" --json "$out/e2b.json" --md "$out/e2b.md" ||
	echo "e2b: failed (bench/e2b.py exited $?); see its output above" | tee "$out/e2b.md"
echo
# The --net allow= proxy against direct loopback: latency per request, 1 MB and 100 MB downloads, plain HTTP,
# HTTPS tunnels and brokered HTTPS (bench/net_proxy.py; about half a minute).
$py "$bench/net_proxy.py" --md "$out/net-proxy.md" ||
	echo "net_proxy: failed (bench/net_proxy.py exited $?); see its output above" | tee "$out/net-proxy.md"
echo
# 1 GB of files in $TMPDIR (removed afterwards): staging, archiving, extracting.
sh "$bench/archive.sh" --md "$out/archive.md"

# First line of a tool's --version, or "not found".
version() {
	command -v "$1" >/dev/null 2>&1 || { echo "not found"; return; }
	"$@" 2>&1 | head -n 1
}
nsjail_bin=${NSJAIL:-$(command -v nsjail || true)}
nsjail_rev="not found"
if [ -n "$nsjail_bin" ] && [ -x "$nsjail_bin" ]; then
	nsjail_rev="$nsjail_bin, built from source"
	src=$(dirname "$(readlink -f "$nsjail_bin")")
	rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || true)
	[ -n "$rev" ] && nsjail_rev="$nsjail_rev at upstream commit $rev"
fi

{
	cat <<EOF
# Benchmarks

Generated by \`bench/run-all.sh\`; see \`bench/README.md\` for what each script
measures. Numbers are wall-clock times of one whole run as seen by the caller
(spawn to reap), taken on the machine below. They are figures, not pass/fail
thresholds.

- Date: $(date -u '+%Y-%m-%d %H:%M UTC')
- Command: \`$cmdline\` (from the repository root)
- Machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1),
  $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r)
- Ran as: $(id -un) (uid $(id -u))
- Versions: $(version bwrap --version); $(version firejail --version);
  $(version unshare --version); nsjail: $nsjail_rev;
  workload Python $($py -c 'import platform; print(platform.python_version())')

![start-up box plot](benchmarks-startup.png)

EOF
	cat "$out/startup.md"
	cat <<'EOF'

How the comparison sandboxes are set up (checked from inside each): all
get new pid, net, mount, ipc and uts namespaces; bwrap and nsjail also a
user namespace (uid 65534 inside) and a cgroup namespace, a new root with a
read-only /usr, the host's /bin, /sbin, /lib, /lib64 recreated, a fresh
/proc, a minimal /dev and an empty /tmp. `unshare` is the floor: namespaces
only, no mounts. firejail is setuid root and makes no user namespace when
run as root; it keeps the host's root file system, with a private home,
/tmp and /dev. None of them installs a seccomp filter in this
configuration. Every contender is started with the same three-variable
environment (PATH, HOME, LANG); bwrap and nsjail clear even that.

nsjail is not packaged by Debian 12, so it was built from its upstream
source outside this repository: a checkout of google/nsjail with its kafel
submodule checked out at the commit nsjail pins, built with plain `make`
after installing the Debian packages libprotobuf-dev, protobuf-compiler,
libnl-route-3-dev, bison, flex and pkg-config. The harness only looks for
`$NSJAIL` or `nsjail` on PATH and skips it when neither is there.

EOF
	cat "$out/cgroup-attach.md"
	echo
	cat "$out/timeout.md"
	echo
	cat "$out/flood.md"
	echo
	cat "$out/agent.md"
	echo
	cat "$out/modes.md"
	[ -n "${MODEL-}" ] && { echo; cat "$out/modes-model.md"; }
	echo
	cat "$out/artifact.md"
	echo
	cat "$out/review.md"
	echo
	cat "$out/archive.md"
	echo
	cat "$out/sessions.md"
	echo
	echo "### corral run and the session host (\`bench/run_host.py\`)"
	echo
	cat "$out/run-host.md"
	echo
	echo "### corral serve (\`bench/serve.py\`)"
	echo
	cat "$out/serve.md"
	echo
	echo "### corral serve's agent runs (\`bench/runs.py\`)"
	echo
	cat "$out/runs.md"
	echo
	echo "### corral mcp (\`bench/mcp.mjs\`)"
	echo
	cat "$out/mcp.md"
	echo
	echo "### corral serve's /mcp over Streamable HTTP (\`bench/mcp.mjs --transport http\`)"
	echo
	cat "$out/mcp-http.md"
	echo
	echo "### The E2B SDK against corral serve (\`bench/e2b.py\`)"
	echo
	cat "$out/e2b.md"
	echo
	cat "$out/net-proxy.md"
	echo
	cat "$bench/notes.md" # hand-written: what the figures mean
} >"$root/docs/benchmarks.md"

echo
echo "wrote $root/docs/benchmarks.md, $root/docs/benchmarks-startup.png, $root/docs/img/serve-bench.png and $out/"
