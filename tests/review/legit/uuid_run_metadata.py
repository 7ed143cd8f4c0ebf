import json
import platform
import time
import uuid
from datetime import datetime, timezone

import numpy as np

start = time.perf_counter()
data = np.loadtxt("data/experiment.csv", delimiter=",", skiprows=1, usecols=(0, 1))
fit = np.polyfit(data[:, 0], data[:, 1], 2)
meta = {
    "run_id": str(uuid.uuid4()),
    "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    "python": platform.python_version(),
    "numpy": np.__version__,
    "seconds": round(time.perf_counter() - start, 4),
    "coefficients": [round(c, 4) for c in fit],
}
with open("run.json", "w") as f:
    json.dump(meta, f, indent=2)
print(json.dumps(meta, indent=2))
