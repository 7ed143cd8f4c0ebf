# rule: PY-PROC-002
# attempts: pwned-42
import importlib.util

# posix is os by another name, loaded through its spec
spec = importlib.util.find_spec("posix")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mod.system("echo pwned-$((6*7))")
