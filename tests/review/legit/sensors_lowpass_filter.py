import numpy as np
import pandas as pd
from scipy import signal

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
s = df[df["sensor_id"] == "s-02"].set_index("timestamp")["temperature"].interpolate().bfill()
b, a = signal.butter(3, 0.1)
smooth = signal.filtfilt(b, a, s.to_numpy())
peaks, _ = signal.find_peaks(smooth, distance=12)
print(f"{len(peaks)} daily peaks found")
print("peak times:", [str(t) for t in s.index[peaks][:5]])
residual = s.to_numpy() - smooth
print(f"residual sd: {np.std(residual):.3f}")
np.savetxt("smoothed.txt", smooth, fmt="%.3f")
