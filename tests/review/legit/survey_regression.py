import numpy as np
import pandas as pd

df = pd.read_csv("data/survey.csv")
X = np.column_stack([np.ones(len(df)), df["score_before"], (df["group"] == "treatment").astype(float), df["age"]])
y = df["score_after"].to_numpy()
coef, residuals, rank, _ = np.linalg.lstsq(X, y, rcond=None)
pred = X @ coef
r2 = 1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()
for name, c in zip(["intercept", "score_before", "treatment", "age"], coef):
    print(f"{name:<13}{c:>8.3f}")
print(f"R^2 = {r2:.3f}")
