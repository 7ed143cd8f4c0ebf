# rule: PY-PROC-002
# attempts: pwned-42
code='import os; os.system("echo pwned-$((6*7))")'
python3 -c "$code"
