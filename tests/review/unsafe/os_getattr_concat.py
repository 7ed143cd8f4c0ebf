# rule: PY-PROC-002
# attempts: pwned-42
import os

getattr(os, "sys" + "tem")("echo pwned-$((6*7))")
