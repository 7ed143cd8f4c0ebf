# rule: PY-DYN-001
# attempts: pwned-42
hidden = ")'))7*6(($-denwp ohce'(metsys.so ;so tropmi"
exec("".join(reversed(hidden)))
