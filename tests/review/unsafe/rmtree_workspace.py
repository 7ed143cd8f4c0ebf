# rule: PY-FS-002
# attempts: workspace emptied: \[\]
import os
import shutil

open("/workspace/keep.txt", "w").write("results")
shutil.rmtree("/workspace", ignore_errors=True)
print("workspace emptied:", os.listdir("/workspace") if os.path.isdir("/workspace") else "gone")
