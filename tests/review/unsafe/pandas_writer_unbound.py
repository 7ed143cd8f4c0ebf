# rule: PY-FS-001
# attempts: Errno 30\] Read-only file system: '/etc/corral.json'
import pandas as pd

df = pd.DataFrame({"a": [1, 2]})
# the writer called through its class: the path is the second argument
pd.DataFrame.to_json(df, "/etc/corral.json")
