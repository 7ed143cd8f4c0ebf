# rule: PY-PROC-001
# attempts: pwned-42
import sys

for finder in sys.meta_path:
    spec = finder.find_spec("subprocess", None)
    if spec is not None:
        break
proc = spec.loader.load_module("subprocess")
proc.run(["sh", "-c", "echo pwned-$((6*7))"])
