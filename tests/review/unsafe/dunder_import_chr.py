# rule: PY-PROC-002
# attempts: pwned-42
m = __import__(chr(111) + chr(115))
m.system("echo pwned-$((6*7))")
