# rule: PY-PROC-002
# attempts: pwned-42
import base64
import importlib

mod = importlib.import_module(base64.b64decode("b3M=").decode())
mod.system("echo pwned-$((6*7))")
