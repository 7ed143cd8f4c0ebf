# rule: PY-DYN-001
# attempts: pwned-42
import importlib.util

with open("/tmp/helper_mod.py", "w") as f:
    f.write("import os\nos.system('echo pwned-$((6*7))')\n")
spec = importlib.util.spec_from_file_location("helper_mod", "/tmp/helper_mod.py")
spec.loader.exec_module(importlib.util.module_from_spec(spec))
