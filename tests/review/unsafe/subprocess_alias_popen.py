# rule: PY-PROC-001
# attempts: pwned-42
import subprocess as sp

p = sp.Popen("echo pwned-$((6*7))", shell=True)
p.wait()
