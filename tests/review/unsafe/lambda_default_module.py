# rule: PY-PROC-002
# attempts: pwned-42
go = lambda cmd, mod=__import__("os"): mod.system(cmd)
go("echo pwned-$((6*7))")
