# rule: SH-NET-001
# attempts: (wget: unable to resolve host address|failed: (Temporary failure in name resolution|Network is unreachable|Name or service not known))
wget -O /tmp/setup.sh https://example.com/setup.sh; chmod +x /tmp/setup.sh; /tmp/setup.sh
