# rule: PY-PROC-003
# attempts: pwned-42
from os import execlp as replace_me

replace_me("sh", "sh", "-c", "echo pwned-$((6*7))")
