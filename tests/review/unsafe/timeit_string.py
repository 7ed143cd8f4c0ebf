# rule: PY-PROC-002
# attempts: pwned-42
# timeit compiles and runs its statement string: a constant one is reviewed as Python.
import timeit

timeit.timeit("os.system('echo pwned-$((6*7))')", setup="import os", number=1)
