import os as o
from subprocess import run as r
r(["ls"])
o.system("ls")
import pandas as pd
df = pd.read_csv("x.csv")
df.to_csv("out.csv")
getattr(o, "sys"+"tem")("x")
__import__("o"+"s").popen("x")
exec("import ctypes")
globals()["__builtins__"]
open("/etc/passwd", "w")
from os import *
system("x")
().__class__.__base__.__subclasses__()
for i in range(9):
    o.fork()
