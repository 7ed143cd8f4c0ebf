import csv
import statistics as st

with open("data/survey.csv", newline="") as f:
    rows = list(csv.DictReader(f))
ages = [int(r["age"]) for r in rows]
before = [float(r["score_before"]) for r in rows]
after = [float(r["score_after"]) for r in rows]
print(f"age: mean {st.mean(ages):.1f} median {st.median(ages)} pstdev {st.pstdev(ages):.2f}")
print(f"quartiles: {st.quantiles(ages, n=4)}")
print(f"correlation before/after: {st.correlation(before, after):.3f}")
slope, intercept = st.linear_regression(before, after)
print(f"after = {slope:.2f} * before + {intercept:.2f}")
print(f"geometric mean of scores: {st.geometric_mean(after):.2f}, harmonic: {st.harmonic_mean(after):.2f}")
