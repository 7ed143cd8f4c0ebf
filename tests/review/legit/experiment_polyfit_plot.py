import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

data = np.genfromtxt("data/experiment.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
x, y = data["x"], data["y"]
fig, ax = plt.subplots()
ax.scatter(x, y, s=10, label="measured")
xs = np.linspace(x.min(), x.max(), 200)
for degree in (1, 2, 3):
    coeffs = np.polyfit(x, y, degree)
    ax.plot(xs, np.polyval(coeffs, xs), label=f"degree {degree}")
    rss = np.sum((np.polyval(coeffs, x) - y) ** 2)
    print(f"degree {degree}: RSS={rss:.1f}")
ax.legend()
fig.savefig("polyfit.png")
