import os
import sys

BASE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DATA_DIR", "data")
OUT = os.getenv("OUTPUT_DIR", os.path.join(os.getcwd(), "output"))
os.makedirs(OUT, exist_ok=True)

print("script directory:", BASE, file=sys.stderr)
print("python", sys.version_info[:2], "on", sys.platform, "cpus:", os.cpu_count())
sizes = {name: os.path.getsize(os.path.join(DATA, name)) for name in sorted(os.listdir(DATA))}
biggest = max(sizes, key=sizes.get)
with open(os.path.join(OUT, "sizes.txt"), "w") as f:
    for name, size in sizes.items():
        f.write(f"{name}\t{size}\n")
print("largest input:", biggest, sizes[biggest], "bytes;", "exists:", os.path.exists(os.path.join(OUT, "sizes.txt")))
