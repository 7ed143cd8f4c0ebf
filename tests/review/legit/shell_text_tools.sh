set -eu
# sed, find -exec and cd the ordinary way: reading, and writing under the workspace
mkdir -p output/reports
sed -n '1,5p' data/sales.csv
sed -e 's/,/;/g' -e '/^$/d' data/sales.csv > output/sales_semicolon.csv
cp data/notes.txt output/notes.txt
sed -i 's/ *$//' output/notes.txt
find data -name '*.csv' -exec wc -l {} +
find data -name '*.json' -exec cp {} output/reports/ \;
find data -type f -exec grep -l "error" {} \; || true
cd output/reports
echo "reports: $(ls | wc -l)" > status.txt
cd ../..
(cd output && tar -czf bundle.tgz reports)
mkdir -p output/unpacked && tar -xzf output/bundle.tgz -C output/unpacked
OUT=output
printf '%s\n' "done" > "$OUT/done.txt"
cd /tmp && echo scratch > scratch.txt && cd - > /dev/null
cat output/reports/status.txt output/done.txt
