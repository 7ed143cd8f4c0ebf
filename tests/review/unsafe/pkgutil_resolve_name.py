# rule: PY-PROC-002
# attempts: pwned-42
import pkgutil

# a name resolved at run time is the name it resolves to
pkgutil.resolve_name("os:system")("echo pwned-$((6*7))")
