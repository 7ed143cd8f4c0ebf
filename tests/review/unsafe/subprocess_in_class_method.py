# rule: PY-PROC-001
# attempts: pwned-42
import subprocess


class Report:
    runner = staticmethod(subprocess.run)

    def build(self):
        self.runner("echo pwned-$((6*7))", shell=True)


Report().build()
