# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral.csv'
import pandas as pd

pd.DataFrame({"a": [1, 2]}).to_csv(index=False, path_or_buf="/etc/corral.csv")
