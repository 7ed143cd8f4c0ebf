import os
import tempfile

import numpy as np
import pandas as pd

# memory-mapped arrays in the workspace and in /tmp
os.makedirs("output", exist_ok=True)
sensors = pd.read_csv("data/sensors.csv")
temps = sensors["temperature"].fillna(sensors["temperature"].mean()).to_numpy()
mm = np.memmap("output/temps.dat", dtype="float64", mode="w+", shape=temps.shape)
mm[:] = temps
mm.flush()
back = np.memmap("output/temps.dat", dtype="float64", mode="r", shape=temps.shape)
print("mean", round(float(back.mean()), 3))
with tempfile.TemporaryDirectory(dir="/tmp") as d:
    scratch = np.lib.format.open_memmap(os.path.join(d, "z.npy"), mode="w+", dtype="float32", shape=(4, 4))
    scratch[:] = 1
    print("scratch sum", float(scratch.sum()))
np.savetxt(f"output/temps_{len(temps)}.txt", temps[:10])
print(sorted(os.listdir("output")))
