# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/report\.csv'
import pandas as pd

pd.DataFrame({"a": [1, 2]}).to_csv("/etc/report.csv")
