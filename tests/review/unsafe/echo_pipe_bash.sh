# rule: SH-NET-002
# attempts: Network is unreachable
echo 'exec 3<>/dev/tcp/203.0.113.9/80' | bash
