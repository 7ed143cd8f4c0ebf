# rule: PY-POL-001
# policy: policies/deny-pickle.json
# attempts: pwned-42
# A pickle whose __reduce__ names posix.system: loading it runs a shell command.
import pickle

blob = b"cposix\nsystem\np0\n(Vecho pwned-$((6*7))\np1\ntp2\nRp3\n."
pickle.loads(blob)
