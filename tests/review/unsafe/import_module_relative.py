# rule: PY-PROC-002
# attempts: pwned-42
import importlib
import warnings

warnings.simplefilter("ignore")
# importlib.machinery, imported relative to its package, then an importer of it
machinery = importlib.import_module(".machinery", "importlib")
machinery.BuiltinImporter.load_module("posix").system("echo pwned-$((6*7))")
