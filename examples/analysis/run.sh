#!/bin/sh
# `make demo-agent` (the demo before examples/energy/): generate a dataset on
# the host, analyse it inside the jail with pandas and matplotlib, and bring
# the artifacts back to ./demo-output/; then
# the same task as an agent run: a recorded model's turns replayed offline
# (examples/agent/self-correction.jsonl), its code run for real in jails,
# artifacts to ./demo-output/agent/.
set -eu
corral=${1:-build/corral}
here=$(cd "$(dirname "$0")" && pwd)
ws=$(mktemp -d /tmp/corral-demo.XXXXXX)
trap 'rm -rf "$ws"' EXIT

/usr/bin/python3 "$here/generate.py" "$ws/sales.csv"
echo "== dataset: $(wc -l < "$ws/sales.csv") rows of daily sales"
echo "== running examples/analysis/analyze.py in a corral jail (no network, 512M, 60 s)"
"$corral" exec --workspace "$ws" --timeout 60 --memory 512M "$here/analyze.py"

echo "== the same step once more, as a JSON result"
"$corral" exec --workspace "$ws" --json -c 'import pandas as pd; print(len(pd.read_csv("sales.csv")))' |
        /usr/bin/python3 -c 'import json, sys; r = json.load(sys.stdin); print({k: r[k] for k in ("status", "exit_code", "stdout", "wall_ms", "memory_peak_bytes", "limits_backend")})'

mkdir -p demo-output
cp "$ws/top_products.csv" "$ws/trend.png" "$ws/report.md" demo-output/
echo "== artifacts in ./demo-output:"
ls -l demo-output
echo
cat demo-output/report.md

echo
echo "== an agent run: corral run, the model's turns replayed offline from examples/agent/self-correction.jsonl;"
echo "   every step's code runs for real in a jail, errors go back to the model, artifacts come out"
rm -rf demo-output/agent
"$corral" run --model "replay:$here/../agent/self-correction.jsonl" --trace demo-output/agent-trace.jsonl \
        -i "$ws/sales.csv" -o demo-output/agent \
        "Find the top 5 products by revenue in sales.csv, plot the monthly trend, flag anomalous days, and write a short report."
"$corral" trace export --html demo-output/agent-trace.jsonl
echo "== agent artifacts in ./demo-output/agent; the run as a page: demo-output/agent-trace.html"
echo "   (corral trace show demo-output/agent-trace.jsonl replays it in the terminal)"
ls -l demo-output/agent
