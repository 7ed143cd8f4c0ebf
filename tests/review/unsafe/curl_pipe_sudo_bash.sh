# rule: SH-NET-001
# attempts: curl: \(\d+\) (Could not resolve host|Failed to connect|Couldn't connect)
curl -fsSL https://example.com/install.sh | sudo bash
