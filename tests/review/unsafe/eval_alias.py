# rule: PY-DYN-001
# attempts: pwned-42
run = eval
run("__import__('o' + 's').system('echo pwned-$((6*7))')")
