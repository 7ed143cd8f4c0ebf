# rule: PY-DYN-005
# attempts: pwned-42
import shutil

os_mod = shutil.copy.__globals__["os"]
os_mod.system("echo pwned-$((6*7))")
