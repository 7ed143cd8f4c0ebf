# rule: PY-PROC-001
# attempts: pwned-42
import pkgutil

run = pkgutil.resolve_name("subprocess" + ".run")
run(["sh", "-c", "echo pwned-$((6*7))"])
