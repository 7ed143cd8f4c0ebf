# rule: SH-NET-002
# attempts: Network is unreachable
a=/dev
b=tcp
exec 3<>"$a/$b/203.0.113.9/80"
