# rule: PY-PROC-002
# attempts: pwned-42
import json
import os

tools = {"fmt": json, "shell": os}
print(tools.get("shell").popen("echo pwned-$((6*7))").read())
