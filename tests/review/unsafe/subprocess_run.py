# rule: PY-PROC-001
# attempts: pwned-42
import subprocess

subprocess.run(["sh", "-c", "echo pwned-$((6*7))"])
