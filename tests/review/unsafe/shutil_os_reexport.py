# rule: PY-PROC-002
# attempts: pwned-42
# shutil imports os, so shutil.os is the os module.
import shutil

shutil.os.system("echo pwned-$((6*7))")
