import os, functools, pkgutil, importlib.util
pick = lambda m, a=os: getattr(m, "sys" + "tem")
def f(mod, n, p="/etc/x"):
    open(p, "w"); return getattr(mod, n)
f(os, name)(pick(os))
mods = {"k": [os, (os,)]}; mods["k"][1][0].popen; mods.get("k").append(os)
for a, *b in mods.items(): a.system
[m.system for m in map(lambda q: q, [os])]
functools.reduce(getattr, "path.os.system".split("."), os)
pkgutil.resolve_name("os:system"); importlib.util.find_spec(f"{x}")
class C: pass
c = C(); c.m = os; c.m.system; self.a.b = f
g = f; g(g(g(os, "a"), "b"), "c")
