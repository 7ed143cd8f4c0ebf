# rule: PY-DYN-001
# attempts: pwned-42
import code

code.InteractiveInterpreter().runsource("import os; os.system('echo pwned-$((6*7))')")
