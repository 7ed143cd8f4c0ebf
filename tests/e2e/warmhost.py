"""Drive tests/e2e/warm-sessions.c: several sessions over one zygote in one
process (the CLI runs one zygote per session supervisor).  Used by
tests/e2e/test_zygote.py and tests/attack/test_zygote.py."""
import json
import os
import subprocess

CORRAL = os.environ.get("CORRAL") or os.path.join(os.path.dirname(__file__), "../../build/corral")
HELPER = os.environ.get("CORRAL_WARM_SESSIONS") or os.path.join(os.path.dirname(os.path.abspath(CORRAL)),
                                                                  "tests", "warm-sessions")
ZYGOTE_COMM = "python3-zygote"


def limits_backend():
    """What bounds memory here for the caller: "cgroup-v2", "cgroup-v1" or "rlimit" (as `corral exec`)."""
    r = subprocess.run([CORRAL, "exec", "--json", "--", "true"], capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout)["limits_backend"]


def available():
    return os.path.isfile(HELPER) and os.access(HELPER, os.X_OK)


class WarmHost:
    """One warm-sessions process; every request waits for its answer."""

    def __init__(self, env=None):
        self.proc = subprocess.Popen([HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)

    def request(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"warm-sessions died: {self.proc.stderr.read()[-2000:]}"
        return json.loads(line)

    def start(self, warm=True, **kw):
        r = self.request(op="start", warm=warm, **kw)
        assert r["ok"], r
        return r["s"]

    def step(self, s, code, timeout=30):
        r = self.request(op="exec", s=s, code=code, timeout=timeout)
        assert r["ok"], r
        return r["result"]

    def value(self, s, code, timeout=30):
        res = self.step(s, code, timeout)
        assert res["status"] == "ok", res
        return res["value"]["text"] if res["value"] else None

    def stop(self, s):
        assert self.request(op="stop", s=s)["ok"]

    def zygote_pid(self):
        r = self.request(op="zygote")
        return r["pid"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


def procs_named(comm):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() == comm:
                    out.append(int(p))
        except OSError:
            pass
    return out


def ns_inode_of(pid, kind):
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino


def session_host_pids(pidns_inode):
    """Host pids of the processes in the pid namespace with this inode."""
    out = []
    for p in procs_named(ZYGOTE_COMM):
        try:
            if ns_inode_of(p, "pid") == pidns_inode:
                out.append(p)
        except OSError:
            pass
    return sorted(out)


def host_uid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None
