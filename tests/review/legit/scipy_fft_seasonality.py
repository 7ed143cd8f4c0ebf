import numpy as np
import pandas as pd
from scipy import fft

df = pd.read_csv("data/sensors.csv", parse_dates=["timestamp"])
s = df[df["sensor_id"] == "s-01"].set_index("timestamp")["temperature"].interpolate().bfill().to_numpy()
s = s - s.mean()
spectrum = np.abs(fft.rfft(s))
freqs = fft.rfftfreq(len(s), d=1.0)  # cycles per hour
top = np.argsort(spectrum[1:])[::-1][:3] + 1
for k in top:
    print(f"period {1 / freqs[k]:6.1f} h  amplitude {spectrum[k]:8.1f}")
