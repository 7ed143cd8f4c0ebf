set -eu
# traps that clean up, code piped into python, variables for paths
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cut -d, -f3 data/sales.csv | sort | uniq -c | sort -rn > "$tmp"
head -n 3 "$tmp"
printf 'import json\nprint(json.load(open("data/config.json")))\n' | python3
python3 - <<'EOF'
import csv
rows = list(csv.DictReader(open("data/sales.csv")))
print(len(rows), "rows")
EOF
python3 <<< 'print(sum(range(10)))'
report_dir="output/daily"
mkdir -p "$report_dir"
pushd "$report_dir" > /dev/null
date +%F > stamp.txt
popd > /dev/null
ls "$report_dir"
