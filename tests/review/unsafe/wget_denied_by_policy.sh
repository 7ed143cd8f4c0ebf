# rule: SH-POL-001
# policy: policies/deny-wget.json
# attempts: wget: (unable to resolve host address|unable to connect)|failed: (Temporary failure in name resolution|Name or service not known|Network is unreachable)
wget -O latest.csv http://example.com/export.csv
