import numpy as np

dtype = [("student", "U8"), ("subject", "U10"), ("grade", "i4"), ("term", "U2")]
grades = np.genfromtxt("data/grades.tsv", delimiter="\t", skip_header=1, dtype=dtype, encoding="utf-8")
t2 = grades[grades["term"] == "T2"]
order = np.argsort(t2, order=["subject", "grade"])[::-1]
for subj in np.unique(t2["subject"]):
    best = t2[t2["subject"] == subj]
    top = best[np.argmax(best["grade"])]
    print(f"{subj:<8} best: {top['student']} ({top['grade']})")
print("overall mean T2:", round(float(t2["grade"].mean()), 2), "sorted rows:", len(order))
