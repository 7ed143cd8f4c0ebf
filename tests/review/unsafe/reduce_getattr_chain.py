# rule: PY-PROC-002
# attempts: pwned-42
import functools
import shutil

# shutil.os.system, one attribute at a time
functools.reduce(getattr, ["os", "system"], shutil)("echo pwned-$((6*7))")
