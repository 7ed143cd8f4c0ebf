# rule: PY-PROC-002
# attempts: pwned-42
# Code given to python3 -c is reviewed as Python.
python3 -c 'import os; os.system("echo pwned-$((6*7))")'
