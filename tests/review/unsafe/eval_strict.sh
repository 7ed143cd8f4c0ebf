# rule: SH-DYN-001
# policy: strict
# attempts: pwned-42
cmd=$(printf '%s' 'ZWNobyBwd25lZC0kKCg2KjcpKQ==' | base64 -d)
eval "$cmd"
