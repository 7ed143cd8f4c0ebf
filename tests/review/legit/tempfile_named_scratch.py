import json
import tempfile

import numpy as np

with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=True) as tmp:
    json.dump({"values": list(range(10))}, tmp)
    tmp.flush()
    tmp.seek(0)
    values = np.array(json.load(tmp)["values"])
print("scratch file roundtrip:", values.sum())
with open("/tmp/scratch_matrix.txt", "w") as f:
    np.savetxt(f, np.eye(3))
print(np.loadtxt("/tmp/scratch_matrix.txt").trace())
