# rule: SH-NET-002
# attempts: connect: Network is unreachable
target=/dev/tcp/203.0.113.9/80
exec 3<>"$target"
