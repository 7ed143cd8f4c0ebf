# rule: PY-PROC-002
# attempts: pwned-42
# A string literal given to exec is code too: it must be reviewed as such.
exec("import os; os.system('echo pwned-$((6*7))')")
