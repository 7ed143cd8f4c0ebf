# rule: PY-DYN-002
# attempts: pwned-42
import importlib

parts = ["sub", "pro", "cess"]
mod = importlib.import_module("".join(parts))
mod.run(["sh", "-c", "echo pwned-$((6*7))"])
