# rule: PY-PROC-001
# attempts: pwned-42
import importlib

mod = importlib.import_module("subprocess")
mod.run("echo pwned-$((6*7))", shell=True)
