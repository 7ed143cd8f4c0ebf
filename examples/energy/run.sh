#!/bin/sh
# The energy case study, `make demo`: generate a year of hourly readings from
# a building's meter with anomalies injected, let an agent find them with
# `corral run` (the dataset staged read-only at input/building_energy.csv),
# and score what it flagged against the ground truth, which never enters
# the jail.  See examples/energy/README.md.
#
# Environment:
#   CORRAL     the corral binary (build/corral)
#   MODEL      replay (the scripted transcript) or a model name; unset: a
#              configured model if there is one, else the transcript
#              (examples/choose-model.sh has the rules)
#   DEMO_OUT   where the results go (demo-output): DEMO_OUT/energy/ holds the
#              artifacts, energy-answer.txt the answer, energy-trace.jsonl/.html
#              the run, energy-data/ the dataset and the ground truth (apart
#              from energy/, where the copy-out of the agent's files writes)
#   SEED       the dataset's seed (2025; the transcript's final answer quotes
#              the figures of this seed)
#   PYTHON     a python3 with numpy and pandas (/usr/bin/python3)
#
# Exit status: corral run's when it failed (1 the agent gave up, 2 usage,
# 3 the model could not be reached), 2 when a model is configured but not
# named or the agent wrote no anomalies.csv, else 0.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
corral=${CORRAL:-build/corral}
out=${DEMO_OUT:-demo-output}
py=${PYTHON:-/usr/bin/python3}
task="ingest the hourly dataset, compute normal baseline behaviour, flag anomalies with robust z-scores, and save three artifacts: anomalies.csv, energy_anomalies.png, report.md"
# shellcheck source=examples/choose-model.sh
. "$here/../choose-model.sh"

choose_model "$here/transcript.jsonl" || exit 2
# A fresh start: stale artifacts must not be scored.
rm -rf "$out/energy" "$out/energy-data" "$out/energy-trace.jsonl" "$out/energy-trace.html" "$out/energy-answer.txt"
mkdir -p "$out/energy-data"
"$py" "$here/generate.py" --seed "${SEED:-2025}" --out "$out/energy-data"
echo "== dataset: $out/energy-data/building_energy.csv, $(($(wc -l < "$out/energy-data/building_energy.csv") - 1)) hourly readings;" \
     "$(($(wc -l < "$out/energy-data/ground_truth.csv") - 1)) injected anomalies listed in ground_truth.csv (kept out of the jail)"
echo "== corral run with $model_desc"
rc=0
# shellcheck disable=SC2086 # model_opts is a list of options
"$corral" run $model_opts --max-iterations 15 --trace "$out/energy-trace.jsonl" \
        -i "$out/energy-data/building_energy.csv" -o "$out/energy" "$task" > "$out/energy-answer.txt" || rc=$?
if [ -f "$out/energy-trace.jsonl" ]; then
        "$corral" trace export --html "$out/energy-trace.jsonl" >/dev/null
fi

echo
echo "== artifacts in $out/energy/ (the answer in $out/energy-answer.txt):"
ls -l "$out/energy" 2>/dev/null || echo "   (none)"
echo "   the run as a page: $out/energy-trace.html (corral trace show $out/energy-trace.jsonl replays it here)"
if [ ! -f "$out/energy/anomalies.csv" ]; then
        echo "== no anomalies.csv: nothing to score" >&2
        [ "$rc" -ne 0 ] && exit "$rc"
        exit 2
fi
echo "== the flagged anomalies against the ground truth (examples/energy/score.py):"
"$py" "$here/score.py" "$out/energy/anomalies.csv" "$out/energy-data/ground_truth.csv"
exit "$rc"
