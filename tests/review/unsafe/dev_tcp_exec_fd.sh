# rule: SH-NET-002
# attempts: connect: Network is unreachable
exec 3<>/dev/tcp/198.51.100.4/80 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3
