import hashlib
import json
import os

manifest = {}
for root, dirs, files in os.walk("data"):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(root, name)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(65536), b""):
                h.update(chunk)
        manifest[path] = {"sha256": h.hexdigest(), "bytes": os.path.getsize(path)}
with open("manifest.json", "w") as f:
    json.dump(manifest, f, indent=2, sort_keys=True)
print(f"{len(manifest)} files, {sum(v['bytes'] for v in manifest.values())} bytes")
