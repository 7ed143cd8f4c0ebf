# rule: PY-PROC-002
# attempts: pwned-42
printf 'import os\nos.system("echo pwned-$((6*7))")\n' | python3
