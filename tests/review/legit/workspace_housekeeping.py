import glob
import os
import shutil
from pathlib import Path

Path("output/old").mkdir(parents=True, exist_ok=True)
for i in range(3):
    Path(f"output/old/run_{i}.log").write_text(f"run {i}\n")
Path("output/keep.txt").write_text("keep me\n")

shutil.move("output/old/run_2.log", "output/latest.log")
for stale in glob.glob("output/old/*.log"):
    os.remove(stale)
os.rmdir("output/old")
Path("output/keep.txt").rename("output/kept.txt")
Path("output/latest.log").unlink()
print(sorted(os.listdir("output")))
shutil.rmtree("output", ignore_errors=True)
print("output removed:", not os.path.exists("output"))
