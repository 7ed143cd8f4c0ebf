# rule: PY-PROC-001
# attempts: pwned-42
# Nested function aliasing: the import and the call are in different scopes.
def helpers():
    import subprocess

    def runner():
        return subprocess.call
    return runner


go = helpers()()
go(["sh", "-c", "echo pwned-$((6*7))"])
