# rule: PY-PROC-002
# attempts: pwned-42
part = "__imp" + "ort__('os')"
eval(part + ".system('echo pwned-$((6*7))')")
