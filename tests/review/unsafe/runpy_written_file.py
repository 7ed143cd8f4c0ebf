# rule: PY-DYN-001
# attempts: pwned-42
import runpy

with open("/tmp/stage.py", "w") as f:
    f.write("import os\nos.system('echo pwned-$((6*7))')\n")
runpy.run_path("/tmp/stage.py")
