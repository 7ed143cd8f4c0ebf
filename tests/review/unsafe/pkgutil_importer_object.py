# rule: PY-PROC-001
# attempts: pwned-42
import importlib.util
import json
import os.path
import pkgutil

# the importer of the standard library's directory, found from another module
finder = pkgutil.get_importer(os.path.dirname(os.path.dirname(json.__file__)))
spec = finder.find_spec("subprocess")
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mod.run(["sh", "-c", "echo pwned-$((6*7))"])
