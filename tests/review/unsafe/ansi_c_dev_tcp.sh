# rule: SH-NET-002
# attempts: Network is unreachable
exec 3<>$'\x2fdev\x2ftcp/203.0.113.9/80'
