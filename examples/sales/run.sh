#!/bin/sh
# The sales example, `make demo-sales`: 10,000 generated transactions
# (Product, Revenue, Date, Region) with a few bulk orders injected; an agent
# finds the top 5 products, plots the trend and flags transactions beyond 3
# standard deviations with `corral run` (the data staged read-only at
# input/sales.csv); check.py compares the artifacts with the data.
#
# Environment: CORRAL, MODEL, DEMO_OUT, SEED, PYTHON as for
# examples/energy/run.sh; the results go to DEMO_OUT/sales/ (artifacts),
# sales-trace.jsonl/.html and sales-data/ (the data and the injected outliers).
#
# Exit status: corral run's when it failed, 2 when a model is configured but
# not named or an artifact is missing, 1 when the check fails, else 0.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
corral=${CORRAL:-build/corral}
out=${DEMO_OUT:-demo-output}
py=${PYTHON:-/usr/bin/python3}
task="find the top 5 products by revenue in sales.csv, plot the trend, and flag anomalies beyond 3 standard deviations; save top5.csv, trend.png, anomalies.csv and report.md"
# shellcheck source=examples/choose-model.sh
. "$here/../choose-model.sh"

choose_model "$here/transcript.jsonl" || exit 2
rm -rf "$out/sales" "$out/sales-data" "$out/sales-trace.jsonl" "$out/sales-trace.html" "$out/sales-answer.txt"
mkdir -p "$out/sales-data"
"$py" "$here/generate.py" --seed "${SEED:-2025}" --out "$out/sales-data"
echo "== dataset: $out/sales-data/sales.csv, $(($(wc -l < "$out/sales-data/sales.csv") - 1)) transactions;" \
     "the injected outliers in outliers.csv (kept out of the jail)"
echo "== corral run with $model_desc"
rc=0
# shellcheck disable=SC2086 # model_opts is a list of options
"$corral" run $model_opts --max-iterations 15 --trace "$out/sales-trace.jsonl" \
        -i "$out/sales-data/sales.csv" -o "$out/sales" "$task" > "$out/sales-answer.txt" || rc=$?
if [ -f "$out/sales-trace.jsonl" ]; then
        "$corral" trace export --html "$out/sales-trace.jsonl" >/dev/null
fi

echo
echo "== artifacts in $out/sales/ (the answer in $out/sales-answer.txt):"
ls -l "$out/sales" 2>/dev/null || echo "   (none)"
echo "   the run as a page: $out/sales-trace.html"
if [ ! -f "$out/sales/top5.csv" ] || [ ! -f "$out/sales/anomalies.csv" ]; then
        echo "== no top5.csv or anomalies.csv: nothing to check" >&2
        [ "$rc" -ne 0 ] && exit "$rc"
        exit 2
fi
echo "== the artifacts against the data (examples/sales/check.py):"
check=0
"$py" "$here/check.py" "$out/sales" "$out/sales-data" || check=$?
if [ "$rc" -eq 0 ]; then
        rc=$check
fi
exit "$rc"
