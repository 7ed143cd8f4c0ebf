# rule: PY-PROC-004
# attempts: pwned-42
# The jail has ptys of its own (docs/security.md, "Terminals"): the spawned shell runs on one.
import pty

try:
    pty.spawn(["sh", "-c", "echo pwned-$((6*7))"])
except OSError as e:
    print("pty attempt failed:", e)
