# rule: PY-PROC-001
# attempts: pwned-42
from importlib.util import find_spec, module_from_spec

spec = find_spec("sub" + "process")
proc = module_from_spec(spec)
spec.loader.exec_module(proc)
proc.run(["sh", "-c", "echo pwned-$((6*7))"])
