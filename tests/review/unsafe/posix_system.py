# rule: PY-PROC-002
# attempts: pwned-42
import posix

posix.system("echo pwned-$((6*7))")
