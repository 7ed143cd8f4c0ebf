#!/bin/sh
# archive.sh: staging and archiving a large workspace, against cp -a and GNU tar.
#
#   bench/archive.sh [--files N] [--mb MB] [--runs N] [--md FILE] [--dir DIR]
#
# Makes a workspace of N files (default 10,000) of random data, MB in all
# (default 1024), in 100 directories under DIR (default $TMPDIR or /tmp),
# then times each operation with /usr/bin/time (wall seconds and peak RSS),
# RUNS times (default 3), printing the median of each:
#
#   corral staging   corral run -i DATA (read-only: bound, not copied) and
#                    corral run --manifest with a writable dir entry (copied),
#                    with a replay model that answers at once, so the run is
#                    staging plus corral's start and end; against cp -a
#   archive          corral run -w WS --archive (the workspace holds the data
#                    in WS/data) against tar -cf of the same tree
#   extract          corral workspace extract against tar -xf
#
# The page cache is not dropped (that would disturb everything else on the
# machine): the data is read once before the first measurement, so every
# contender reads from the cache and writes through it.  Everything made
# is removed at the end, also on error or Ctrl-C.  Prints numbers; never
# passes or fails.
set -eu

files=10000 mb=1024 runs=3 md="" dir=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--mb) mb=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--md) md=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	*) echo "usage: $0 [--files N] [--mb MB] [--runs N] [--md FILE] [--dir DIR]" >&2; exit 2 ;;
	esac
done

bench=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bench")
corral=${CORRAL:-$root/build/corral}
[ -x "$corral" ] || { echo "archive: skipped: $corral is not built" | tee ${md:+"$md"}; exit 0; }
[ -x /usr/bin/time ] || { echo "archive: skipped: /usr/bin/time is missing (apt-get install time)" | tee ${md:+"$md"}; exit 0; }
corral=$(readlink -f "$corral")

work=$(mktemp -d "$dir/corral-bench-archive-XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

data=$work/data
echo "archive: making $files files, $mb MiB in all, under $data" >&2
/usr/bin/python3 - "$data" "$files" "$mb" <<'EOF'
import os, sys
root, n, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = mb * 1024 * 1024 // n
block = os.urandom(size + 4096)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(block[i % 4096:i % 4096 + size])  # distinct files, no sparse tricks
EOF
cat "$data"/*/* >/dev/null # into the page cache
echo '{"reply":{"message":{"role":"assistant","content":"done"}}}' >"$work/answer.jsonl"
printf '{"entries":[{"dest":"data","dir":"%s","writable":true}]}\n' "$data" >"$work/manifest.json"

# measure NAME PREP CMD...: run PREP (untimed, a shell snippet), then time
# CMD, RUNS times; records "NAME seconds kib" lines in $work/results.
measure() {
	name=$1 prep=$2
	shift 2
	i=0
	while [ $i -lt "$runs" ]; do
		sh -c "$prep"
		if ! /usr/bin/time -f '%e %M' -o "$work/t" "$@" >"$work/out" 2>&1; then
			echo "archive: $name failed:" >&2
			cat "$work/out" >&2
			return 1
		fi
		echo "$name $(tail -n 1 "$work/t")" >>"$work/results"
		i=$((i + 1))
	done
	echo "archive: $name done" >&2
}

ws=$work/ws
fresh_ws="rm -rf '$ws' && mkdir '$ws'"
cd "$work"
measure "corral run -i DATA (read-only, bound)" "$fresh_ws" \
	"$corral" run --model "replay:$work/answer.jsonl" --no-trace -q -w "$ws" -i "$data" t
measure "corral run --manifest (writable dir, copied)" "$fresh_ws" \
	"$corral" run --model "replay:$work/answer.jsonl" --no-trace -q -w "$ws" --manifest "$work/manifest.json" t
measure "cp -a DATA" "rm -rf '$work/copy'" cp -a "$data" "$work/copy"
rm -rf "$work/copy"

# The archive's workspace: the data at WS/data (a plain directory, as code
# in a jail would leave it).
rm -rf "$ws" && mkdir "$ws" && mv "$data" "$ws/data"
measure "corral run -w WS --archive" "rm -f '$work/c.tar'" \
	"$corral" run --model "replay:$work/answer.jsonl" --no-trace -q -w "$ws" --archive "$work/c.tar" t
measure "tar -cf" "rm -f '$work/g.tar'" tar -C "$ws" -cf "$work/g.tar" .
measure "corral workspace extract" "rm -rf '$work/x'" "$corral" workspace extract "$work/c.tar" "$work/x"
measure "tar -xf" "rm -rf '$work/x' && mkdir '$work/x'" tar -C "$work/x" -xf "$work/g.tar"
arc_mb=$(( $(stat -c %s "$work/c.tar") / 1048576 ))
gnu_mb=$(( $(stat -c %s "$work/g.tar") / 1048576 ))

table=$(awk -v runs="$runs" '
	{ n = $0; sub(/ [^ ]+ [^ ]+$/, "", n); if (!(n in seen)) { seen[n] = 1; order[++k] = n }
	  t[n, ++c[n]] = $(NF - 1); m[n, c[n]] = $NF }
	function median(a, name, cnt,   i, j, v, tmp) {
		for (i = 1; i <= cnt; i++) v[i] = a[name, i] + 0
		for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { tmp = v[i]; v[i] = v[j]; v[j] = tmp }
		return v[int((cnt + 1) / 2)]
	}
	END {
		print "| operation | wall time (s) | peak RSS (MiB) |"
		print "|---|---:|---:|"
		for (i = 1; i <= k; i++)
			printf "| %s | %.2f | %.1f |\n", order[i], median(t, order[i], c[order[i]]), median(m, order[i], c[order[i]]) / 1024
	}' "$work/results")

report=$(cat <<EOF
### Staging and archiving a $mb MiB workspace of $files files (\`bench/archive.sh\`)

$files files of random data, $mb MiB in all, in 100 directories; the median of $runs runs of each, wall time and
peak RSS from \`/usr/bin/time\`, with the data in the page cache. The \`corral run\` rows are whole runs with a
replay model that answers at once, so they include corral's start and end (a few milliseconds). corral's archive
is $arc_mb MiB, GNU tar's $gnu_mb MiB.

$table
EOF
)
echo "$report"
[ -n "$md" ] && echo "$report" >"$md"
exit 0
