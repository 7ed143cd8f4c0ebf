# rule: PY-PROC-002
# attempts: pwned-42
import os.path as osp

osp.os.system("echo pwned-$((6*7))")
