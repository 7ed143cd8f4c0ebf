# rule: PY-DYN-001
# attempts: pwned-42
import builtins

fn = getattr(builtins, "ex" + "ec".upper().lower())
fn("import os; os.system('echo pwned-$((6*7))')")
