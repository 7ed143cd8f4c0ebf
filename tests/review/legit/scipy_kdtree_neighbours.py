import numpy as np
from scipy.spatial import KDTree
from scipy.spatial.distance import pdist, squareform

rng = np.random.default_rng(7)
points = rng.uniform(0, 100, size=(200, 2))
tree = KDTree(points)
dist, idx = tree.query(points[:5], k=3)
print("nearest neighbours of the first 5 points:")
print(idx)
print("pairs closer than 2.0:", len(tree.query_pairs(2.0)))
D = squareform(pdist(points[:6]))
print(np.round(D, 1))
