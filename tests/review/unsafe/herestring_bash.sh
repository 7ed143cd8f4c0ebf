# rule: SH-NET-002
# attempts: Network is unreachable
bash <<< 'exec 3<>/dev/tcp/203.0.113.9/80'
