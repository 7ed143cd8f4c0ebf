# rule: PY-DYN-005
# attempts: pwned-42
import subprocess  # noqa: F401 (makes Popen one of object's subclasses)

popen = next(c for c in object.__subclasses__() if c.__name__ == "Popen")
popen(["sh", "-c", "echo pwned-$((6*7))"]).wait()
