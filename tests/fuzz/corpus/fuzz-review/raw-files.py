import io, os, numpy as np, pandas as pd, sqlite3
fl = os.O_WRONLY; fl |= os.O_CREAT | 0o1000
os.chdir("/etc"); os.open("x" + y, fl); io.FileIO(f"/usr/{z}", "w")
np.memmap("/etc/m"); pd.DataFrame.to_csv(df, path_or_buf=os.path.join("/var", "a", b))
sqlite3.connect("../../e" + "tc/x"); open(base64.b64decode("L2V0Yw==").decode(), "w")
import asyncio
asyncio.get_event_loop_policy().new_event_loop().subprocess_exec(P, "id")
