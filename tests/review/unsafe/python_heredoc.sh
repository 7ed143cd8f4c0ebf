# rule: PY-PROC-002
# attempts: pwned-42
# A here-document fed to python3 is Python code too.
python3 - <<'PY'
import os
os.system("echo pwned-$((6*7))")
PY
