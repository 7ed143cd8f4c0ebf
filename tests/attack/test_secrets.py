"""Attacks on secrets: API keys in corral's own environment, and the host
environment in general, must not be findable anywhere inside the jail."""
import os
import uuid

from corral_attack import marker, out_json

# Looks for the canary's prefix everywhere it could be: the environment,
# every /proc/*/environ and cmdline, and the readable memory of every process
# in the jail (pid 1 is corral-init).  Prints what follows each hit; the host
# checks that the full canary never shows up.  The needle is assembled at run
# time and so also lives in this program's memory: those hits are expected.
SCAN = r"""
import json, os, sys
needle = ("sk-" + "canary-").encode()
hits = {}
stats = {"pids": [], "mem_bytes": {}, "mem_errors": {}}
def scan(buf, where):
    i = buf.find(needle)
    while i != -1 and len(hits) < 5000:
        ctx = buf[i:i + len(needle) + 32].decode("latin-1")
        hits.setdefault(ctx, where)
        i = buf.find(needle, i + 1)
for k, v in os.environ.items():
    scan(f"{k}={v}".encode(), "os.environ")
for p in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    stats["pids"].append(int(p))
    for what in ("environ", "cmdline"):
        try:
            with open(f"/proc/{p}/{what}", "rb") as f:
                scan(f.read(), f"/proc/{p}/{what}")
        except OSError:
            pass
    total, errors = 0, set()
    try:
        with open(f"/proc/{p}/maps") as f:
            regions = [l.split() for l in f]
        mem = open(f"/proc/{p}/mem", "rb", 0)
    except OSError as e:
        stats["mem_errors"][p] = [os.strerror(e.errno)]
        continue
    for r in regions:
        if not r[1].startswith("r") or (len(r) > 5 and r[5] in ("[vvar]", "[vvar_vclock]", "[vsyscall]")):
            continue
        lo, hi = (int(x, 16) for x in r[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(min(hi - lo, 256 << 20))
        except (OSError, OverflowError, ValueError) as e:
            errors.add(str(e))
            continue
        total += len(data)
        scan(data, f"/proc/{p}/mem")
    mem.close()
    stats["mem_bytes"][p] = total
    if errors:
        stats["mem_errors"][p] = sorted(errors)
print(json.dumps({"hits": hits, "stats": stats}))
"""


def test_canary_api_key_not_in_jail(run_jail):
    canary = "sk-canary-" + uuid.uuid4().hex
    decoy = "sk-canary-decoy" + uuid.uuid4().hex[:12]
    env = dict(os.environ)
    env.update({"OPENAI_API_KEY": canary, "ANTHROPIC_API_KEY": canary, "AWS_SECRET_ACCESS_KEY": canary,
                "CORRAL_TEST_TOKEN": canary})
    # The decoy goes in on purpose (-e): it proves the scan finds what is there.
    r = run_jail(["-e", f"DECOY={decoy}", "-m", "512M"], SCAN, env=env, timeout=20)
    assert r["status"] == "ok", r
    # Host side: the canary is nowhere in what the jail could see.
    assert canary not in r["stdout"] and canary not in r["stderr"]
    assert canary[10:] not in r["stdout"]  # not even its random half
    res = out_json(r)
    assert any(ctx.startswith(decoy) for ctx in res["hits"]), "the scan did not even find the decoy"
    stats = res["stats"]
    assert 1 in stats["pids"]
    me = str(max(stats["pids"]))
    assert stats["mem_bytes"].get(me, 0) > 1 << 20, stats  # it really read its own memory
    # pid 1 (corral-init) is not dumpable: its maps and memory are refused.
    assert "1" not in stats["mem_bytes"], stats
    assert stats["mem_errors"].get("1") == ["Permission denied"], stats


def test_environment_is_clean(run_jail):
    m = marker("env")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/root", "USER": "root", "LOGNAME": "root",
           "SHELL": "/bin/bash", "CORRAL_ATTACK_MARKER": m, "LD_PRELOAD": f"/nonexistent/{m}.so",
           "PYTHONPATH": f"/nonexistent/{m}", "PYTHONSTARTUP": f"/nonexistent/{m}.py", "SSH_AUTH_SOCK": f"/tmp/{m}",
           "KUBECONFIG": f"/root/{m}", "CORRAL_INIT": os.environ.get("CORRAL_INIT", "")}
    env = {k: v for k, v in env.items() if v}
    code = "import json, os\nprint(json.dumps(dict(os.environ)))"
    r = run_jail([], code, env=env)
    inside = out_json(r)
    assert r["status"] == "ok", r
    assert m not in r["stdout"]
    assert inside["HOME"] == "/tmp" and inside["USER"] == "sandbox", inside
    for k in ("LD_PRELOAD", "PYTHONPATH", "PYTHONSTARTUP", "SSH_AUTH_SOCK", "KUBECONFIG", "SHELL",
              "CORRAL_ATTACK_MARKER", "CORRAL_INIT"):
        assert k not in inside, k
    for k, v in env.items():
        if k in inside:
            assert inside[k] != v or k == "PATH", (k, v)
    assert "/root" not in r["stdout"]


def test_init_environment_and_cmdline_are_empty(run_jail):
    """corral-init is exec'd fresh with an empty environment and no arguments
    that carry the caller's state; being non-dumpable, its environ is not
    even readable.  Either way the caller's secret is nowhere."""
    canary = "sk-canary-" + uuid.uuid4().hex
    env = dict(os.environ, OPENAI_API_KEY=canary)
    code = r"""
import errno, json
res = {}
for w in ("environ", "cmdline"):
    try:
        with open("/proc/1/" + w, "rb") as f:
            res[w] = "data:" + f.read().decode("latin-1")
    except OSError as e:
        res[w] = "err:" + errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(res))
"""
    r = run_jail([], code, env=env)
    res = out_json(r)
    assert r["status"] == "ok", r
    assert canary not in r["stdout"] + r["stderr"]
    assert canary[10:] not in r["stdout"]
    assert res["environ"] in ("err:EACCES", "data:"), res
    assert res["cmdline"] in ("err:EACCES", "data:corral-init\0"), res
