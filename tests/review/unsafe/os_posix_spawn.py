# rule: PY-PROC-003
# attempts: pwned-42
import os

pid = os.posix_spawn("/bin/sh", ["sh", "-c", "echo pwned-$((6*7))"], dict(os.environ))
os.waitpid(pid, 0)
