# rule: SH-NET-002
# attempts: Network is unreachable
host=203.0.113.9
trap "echo x > /dev/tcp/$host/80" EXIT
