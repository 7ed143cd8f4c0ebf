# rule: PY-FS-002
# attempts: rmtree attempt: \[Errno (30|13|16)\]
import shutil
from pathlib import Path

try:
    shutil.rmtree(Path("/"))
except OSError as e:
    print("rmtree attempt:", e)
