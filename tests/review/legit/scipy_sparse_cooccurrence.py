import json

import numpy as np
from scipy import sparse

with open("data/events.jsonl") as f:
    events = [json.loads(line) for line in f]
users = sorted({e["user"] for e in events})
kinds = sorted({e["event"] for e in events})
ui = {u: i for i, u in enumerate(users)}
ki = {k: i for i, k in enumerate(kinds)}
rows = [ui[e["user"]] for e in events]
cols = [ki[e["event"]] for e in events]
M = sparse.csr_matrix((np.ones(len(events)), (rows, cols)), shape=(len(users), len(kinds)))
co = (M.T @ M).toarray()
print(kinds)
print(co.astype(int))
print("density:", M.nnz / np.prod(M.shape))
