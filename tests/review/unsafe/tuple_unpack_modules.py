# rule: PY-PROC-002
# attempts: pwned-42
import json
import os

pair = (json, os)
_, runner = pair
runner.system("echo pwned-$((6*7))")
