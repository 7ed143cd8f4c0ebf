# rule: PY-PROC-002
# attempts: pwned-42
import builtins

payload = "import os\nos.system('echo pwned-$((6*7))')\n"
builtins.exec(payload)
