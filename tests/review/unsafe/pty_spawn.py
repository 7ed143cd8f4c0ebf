# rule: PY-PROC-004
# attempts: pty attempt failed: out of pty devices
# Inside the jail there is no /dev/ptmx: the attempt to open a terminal fails.
import pty

try:
    pty.spawn(["sh", "-c", "echo pwned-$((6*7))"])
except OSError as e:
    print("pty attempt failed:", e)
