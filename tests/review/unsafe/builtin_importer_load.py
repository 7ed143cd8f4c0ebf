# rule: PY-PROC-002
# attempts: pwned-42
import warnings
from importlib.machinery import BuiltinImporter

warnings.simplefilter("ignore")
# an importer object asked for a module by name
posix = BuiltinImporter.load_module("posix")
posix.system("echo pwned-$((6*7))")
