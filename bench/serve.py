#!/usr/bin/python3
"""`corral serve` under load, beside the CLI and a stock Jupyter kernel
(issue 16's benchmark, docs/api.md).

One run, one server (`corral serve --listen 127.0.0.1:0`, a token and data
directory of its own), then, in order:

1. throughput: --clients keep-alive connections (default 32), each stepping
   `x + 1` in a sandbox of its own as fast as it is answered, for
   --duration seconds (default 10): steps per second, and where the two
   cores went meanwhile (the server's threads, the sandboxes' processes,
   the load generator, idle);
2. latency: the same with --lat-clients connections (default 4): p50, p99;
   and one Python client stepping --seq-steps times in a row, which also
   reads each result's own `wall_ms` and `exec_ms` (what the session and the
   interpreter took) to tell HTTP's share of the round trip; and, when
   Debian's python3-websocket is installed, --ws-steps over one WebSocket;
3. create a warm sandbox then its first result (`1 + 1`), --creates times
   one after the other (default 50), each deleted after: p50, p90;
4. memory of --idle idle sandboxes (default 100): the summed PSS and USS
   (smaps_rollup) of the server and all its descendants, per sandbox, and
   the drop of the machine's MemAvailable.  The server makes a limited
   number of warm sandboxes at once (32 when this was written) and past it
   falls back to cold ones, so they are asked for warm until it refuses,
   measured there, and the rest made with the default (cold) and measured
   again;
5. side by side: the same trivial step through `corral session exec` (a
   CLI process per step), through a stock Jupyter kernel (Debian's
   ipykernel, driven by jupyter_client's BlockingKernelClient: its start,
   `import pandas`, a trivial step), and a bare `python3 -c 'x=1; x+1'`
   process for scale.

The load generator is wrk (Debian's `wrk`), not a Python client: on two
cores a Python client costs about as much CPU per request as the server, so
it would measure itself.  wrk's own latency histogram is not used: wrk
corrects it for coordinated omission (each slow answer adds the requests a
fixed-rate client would have sent meanwhile), so one 200 ms stall in a
closed loop of 0.7 ms steps turns into hundreds of synthetic slow samples
and a p99 of over a second; the script's Lua times every step itself
(CLOCK_MONOTONIC through LuaJIT's ffi, from request() to response(),
which wrk calls just before it writes the request and just after the answer
is complete).  wrk's Lua API has no per-connection state, but
it has per-thread state and spreads connections evenly over threads, so
with as many threads as connections (-t N -c N) every connection is alone
in its thread and its thread's `init` builds the request for its own
sandbox; `setup` hands each thread its sandbox id.  The threads are
epoll loops that sleep while their request is out; the CPU wrk used is
measured (wait4) and printed, so the reader can judge.  The sandboxes are
made, and `x = 1` run in each, by this script before wrk starts.

Prints a table; writes every figure and sample to --json (default
bench/out/serve.json), a markdown fragment to --md (for bench/run-all.sh)
and a plot of the per-step latencies to --plot (default
docs/img/serve-bench.png; '' skips it).  Figures, not pass/fail.
Everything it starts (the server, the CLI's session host, the kernels) is
stopped, and its temporary directories removed, also on Ctrl-C.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from benchlib import ENV, ROOT, build_kind, find_corral, find_tool, pct, quote, table, timed_run, write_md

PY = "/usr/bin/python3"  # Debian's: ipykernel, jupyter_client, matplotlib
TARGETS = {"throughput": 1500, "p99_ms": 10.0, "create_p50_ms": 35.0}


def say(msg):
    print(msg, flush=True)


def load():
    return round(os.getloadavg()[0], 2)


def stats(xs):
    return {"n": len(xs), "p50": pct(xs, 50), "p90": pct(xs, 90), "p99": pct(xs, 99), "max": max(xs)}


# ---- /proc: processes, memory, CPU ----

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid, tid=None):
    """(comm, ppid, utime + stime in ticks) of a process or one of its threads, or None when gone."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    f = s[s.rindex(")") + 2:].split()
    return comm, int(f[1]), int(f[11]) + int(f[12])


def tree(root):
    """root and every process descending from it."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                children.setdefault(st[1], []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def rollup_kib(pid):
    """(PSS, USS) of a process in KiB from smaps_rollup: USS is its
    Private_Clean + Private_Dirty, what it alone holds."""
    pss = uss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith(("Private_Clean:", "Private_Dirty:")):
                    uss += int(line.split()[1])
    except OSError:
        pass
    return pss, uss


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def machine_cpu():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, sum(v[:8])


def cpu_snapshot(server_pid):
    """CPU ticks so far: each thread of the server, the server's process in
    all (threads that have ended included), and every descendant process by
    command name."""
    threads = {}
    for tid in os.listdir(f"/proc/{server_pid}/task"):
        st = proc_stat(server_pid, tid)
        if st:
            threads[int(tid)] = (st[0], st[2])
    procs = {}
    for pid in tree(server_pid)[1:]:
        st = proc_stat(pid)
        if st:
            procs[pid] = (st[0], st[2])
    return {"threads": threads, "server": proc_stat(server_pid)[2], "procs": procs, "machine": machine_cpu(),
            "t": time.monotonic()}


def cpu_window(a, b):
    """Per cent of one CPU used between two snapshots: the server (in all,
    and by thread name), its descendants by command name, the machine."""
    secs = b["t"] - a["t"]
    pc = lambda ticks: 100.0 * ticks / CLK_TCK / secs
    by_thread = {}
    for tid, (comm, ticks) in b["threads"].items():
        if tid in a["threads"]:
            by_thread.setdefault(comm, []).append(pc(ticks - a["threads"][tid][1]))
    by_proc = {}
    for pid, (comm, ticks) in b["procs"].items():
        by_proc[comm] = by_proc.get(comm, 0.0) + pc(ticks - a["procs"].get(pid, (comm, 0))[1])
    busy = b["machine"][0] - a["machine"][0]
    total = b["machine"][1] - a["machine"][1]
    return {"seconds": secs, "server": pc(b["server"] - a["server"]),
            "server_threads": {k: {"n": len(v), "sum": sum(v), "max": max(v)} for k, v in by_thread.items()},
            "descendants": by_proc, "machine_busy": 100.0 * busy / total * os.cpu_count(),
            "same_threads": sorted(set(a["threads"]) & set(b["threads"])) == sorted(b["threads"])}


# ---- the server ----

class Server:
    """`corral serve` on 127.0.0.1, a port of its own, its data in tmp."""

    def __init__(self, corral, tmp, env):
        self.data = os.path.join(tmp, "data")
        os.mkdir(self.data, 0o700)
        self.argv = [corral, "serve", "--listen", "127.0.0.1:0", "--data", self.data, "--max-per-token", "128",
                     "--max-sandboxes", "128", "--max-steps-per-token", "64",
                     "--max-rate", "100000"]
        self.out = open(os.path.join(tmp, "serve.out"), "w+")
        self.err = open(os.path.join(tmp, "serve.err"), "w+")
        # A session of its own, as a daemon has: with autogroup scheduling (on
        # here) a session is a scheduling group, and the server should not
        # share one with this script and wrk.  Ctrl-C here stops it through
        # stop(), with SIGTERM, like every other way out.
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err, env=env,
                                     start_new_session=True)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 30
        line = ""
        while not line.endswith("\n"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"corral serve did not start: {self.stderr()[-2000:]}")
            time.sleep(0.02)
            self.out.seek(0)
            line = self.out.readline()
        m = re.match(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            self.stop()
            raise SystemExit(f"corral serve printed no URL: {line!r}")
        self.port = int(m.group(1))
        with open(os.path.join(self.data, "token")) as f:
            self.token = f.read().strip()

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def stop(self):
        """SIGTERM, and wait for it; returns what of its process tree is left."""
        if self.proc.poll() is None:
            left = tree(self.pid)[1:]
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            time.sleep(0.2)
            return [p for p in left if os.path.exists(f"/proc/{p}")]
        return []


class Client:
    """One keep-alive HTTP/1.1 connection to the server (http.client)."""

    def __init__(self, srv):
        self.c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
        self.h = {"Authorization": f"Bearer {srv.token}", "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.c.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=self.h)
        r = self.c.getresponse()
        raw = r.read()
        if r.status >= 300:
            raise SystemExit(f"{method} {path}: {r.status} {raw[:500]!r}")
        return json.loads(raw)

    def try_call(self, method, path, body=None):
        """(status, the answer's JSON) whatever the status."""
        self.c.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=self.h)
        r = self.c.getresponse()
        return r.status, json.loads(r.read())

    def create(self):
        return self.call("POST", "/v1/sandboxes", {})

    def step(self, sid, code):
        r = self.call("POST", f"/v1/sandboxes/{sid}/exec", {"code": code})
        if r.get("status") != "ok":
            raise SystemExit(f"step {code!r} in {sid}: {json.dumps(r)[:500]}")
        return r

    def delete(self, sid):
        self.call("DELETE", f"/v1/sandboxes/{sid}")

    def close(self):
        self.c.close()


# ---- 1 and 2: wrk ----

LUA = r"""-- Written by bench/serve.py: one sandbox per wrk thread, one connection per
-- thread; every step's own round trip kept (wrk's histogram is corrected for
-- coordinated omission, which a closed loop of steps is not asked about).
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } corral_ts;
int clock_gettime(int clk, corral_ts *ts);
]]
local ts = ffi.new("corral_ts")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e3 + tonumber(ts.tv_nsec) / 1e6
end

local ids = {%(ids)s}
local token = "%(token)s"
local out = "%(out)s"
local n = 0
local threads = {}

function setup(thread)
  n = n + 1
  thread:set("sandbox", ids[n])
  table.insert(threads, thread)
end

function init(args)
  req = wrk.format("POST", "/v1/sandboxes/" .. sandbox .. "/exec",
                   {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"},
                   '{"code": "x + 1"}')
  bad = 0
  ms = {}
  t0 = 0
end

-- Called just before wrk writes the request (and starts its own clock).
function request()
  t0 = now_ms()
  return req
end

-- Every answer must be the step's result with the value 2.
function response(status, headers, body)
  ms[#ms + 1] = now_ms() - t0
  if status ~= 200 or not string.find(body, '"text":"2"', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local b = 0
  local f = io.open(out, "w")
  for _, t in ipairs(threads) do
    b = b + t:get("bad")
    for _, v in ipairs(t:get("ms")) do f:write(string.format("%%.4f\n", v)) end
  end
  f:close()
  local e = summary.errors
  io.write(string.format('WRK-JSON {"duration_us": %%d, "requests": %%d, "bad": %%d, "errors": ' ..
    '{"connect": %%d, "read": %%d, "write": %%d, "status": %%d, "timeout": %%d}, ' ..
    '"corrected_us": {"p50": %%d, "p99": %%d, "mean": %%f}}\n',
    summary.duration, summary.requests, b, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end
"""


def wrk_run(wrk, srv, tmp, clients, duration, sample_cpu):
    """`clients` sandboxes, `x = 1` in each, then wrk -t N -c N stepping
    `x + 1` for `duration` seconds.  Returns the steps per second, every
    step's round trip (ms), wrk's CPU time and, with sample_cpu, where the
    CPU went from 1 s in to 1 s before the end (every connection's thread
    alive at both ends).  wrk runs in a session of its own, as a client
    elsewhere would: with autogroup scheduling, a session is a scheduling
    group, and the server has one of its own too (Server)."""
    c = Client(srv)
    made = [c.create() for _ in range(clients)]
    ids = [sb["id"] for sb in made]
    for sid in ids:
        c.step(sid, "x = 1")
    script = os.path.join(tmp, f"steps-{clients}.lua")
    samples = os.path.join(tmp, f"steps-{clients}.ms")
    with open(script, "w") as f:
        f.write(LUA % {"ids": ", ".join(f'"{i}"' for i in ids), "token": srv.token, "out": samples})
    argv = [wrk, "-t", str(clients), "-c", str(clients), "-d", f"{int(duration)}s", "--timeout", "10s", "-s", script,
            f"http://127.0.0.1:{srv.port}/"]
    out_path = os.path.join(tmp, f"wrk-{clients}.out")
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        pid = os.posix_spawn(wrk, argv, ENV, setsid=True, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, fd, 1),
            (os.POSIX_SPAWN_DUP2, fd, 2)])
    finally:
        os.close(fd)
    window = None
    try:
        if sample_cpu and duration > 3:
            time.sleep(1)
            a = cpu_snapshot(srv.pid)
            time.sleep(duration - 2)
            b = cpu_snapshot(srv.pid)
            window = cpu_window(a, b)
        _, status, ru = os.wait4(pid, 0)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    with open(out_path) as f:
        out = f.read()
    m = re.search(r"^WRK-JSON (.*)$", out, re.M)
    if os.waitstatus_to_exitcode(status) != 0 or not m:
        raise SystemExit(f"{quote(argv)} failed: {out[-2000:]}")
    r = json.loads(m.group(1))
    with open(samples) as f:
        r["ms"] = [float(x) for x in f]
    if r["bad"] or any(r["errors"].values()) or len(r["ms"]) != r["requests"]:
        raise SystemExit(f"{quote(argv)}: {r['bad']} wrong answers, errors {r['errors']}, "
                         f"{len(r['ms'])} times for {r['requests']} steps")
    r["argv"] = argv
    r["warm"] = sum(bool(sb.get("warm")) for sb in made)
    r["steps_per_s"] = r["requests"] / (r["duration_us"] / 1e6)
    r["wrk_cpu_s"] = ru.ru_utime + ru.ru_stime
    r["wrk_cpu_pct"] = 100.0 * r["wrk_cpu_s"] / (r["duration_us"] / 1e6)
    r["cpu"] = window
    # Every sandbox still holds its x (the steps ran where they were sent).
    for sid in ids:
        if c.step(sid, "x")["value"]["text"] != "1":
            raise SystemExit(f"sandbox {sid} lost its x")
        c.delete(sid)
    c.close()
    return r


def seq_steps(srv, n):
    """One client, n steps in a row: the round trip, and the result's own
    wall_ms (the session's round trip) and exec_ms (inside the interpreter)."""
    c = Client(srv)
    sid = c.create()["id"]
    c.step(sid, "x = 1")
    for _ in range(50):
        c.step(sid, "x + 1")
    rtt, wall, execd = [], [], []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        r = c.step(sid, "x + 1")
        rtt.append((time.perf_counter_ns() - t0) / 1e6)
        wall.append(r["wall_ms"])
        execd.append(r["exec_ms"])
    c.delete(sid)
    c.close()
    return {"rtt_ms": rtt, "wall_ms": wall, "exec_ms": execd}


def ws_steps(srv, n):
    """The same over one WebSocket (python3-websocket), if it is installed."""
    try:
        import websocket
    except ImportError:
        return {"error": "python3-websocket is not installed"}
    c = Client(srv)
    sid = c.create()["id"]
    ws = websocket.create_connection(f"ws://127.0.0.1:{srv.port}/v1/sandboxes/{sid}/ws",
                                     header=[f"Authorization: Bearer {srv.token}"], timeout=60)
    ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def step(i, code):
        ws.send(json.dumps({"type": "exec", "id": str(i), "code": code}))
        while True:
            ev = json.loads(ws.recv())
            if ev.get("type") == "result":
                return ev["result"]
            if ev.get("type") == "error":
                raise SystemExit(f"websocket step: {ev}")
    try:
        step(0, "x = 1")
        for i in range(10):
            step(i, "x + 1")
        rtt = []
        for i in range(n):
            t0 = time.perf_counter_ns()
            r = step(i, "x + 1")
            rtt.append((time.perf_counter_ns() - t0) / 1e6)
            if r["value"]["text"] != "2":
                raise SystemExit(f"websocket step gave {r['value']}")
    finally:
        ws.close()
        c.delete(sid)
        c.close()
    return {"rtt_ms": rtt}


# ---- 3 and 4 ----

def create_first(srv, n):
    """POST /v1/sandboxes, then the first step `1 + 1`; deleted after, untimed."""
    c = Client(srv)
    for _ in range(2):
        sid = c.create()["id"]
        c.step(sid, "1 + 1")
        c.delete(sid)
    total, create, warm = [], [], 0
    for _ in range(n):
        t0 = time.perf_counter_ns()
        sb = c.create()
        t1 = time.perf_counter_ns()
        r = c.step(sb["id"], "1 + 1")
        t2 = time.perf_counter_ns()
        if r["value"]["text"] != "2":
            raise SystemExit(f"1 + 1 gave {r['value']}")
        c.delete(sb["id"])
        warm += bool(sb.get("warm"))
        total.append((t2 - t0) / 1e6)
        create.append((t1 - t0) / 1e6)
    c.close()
    return {"total_ms": total, "create_ms": create, "warm": warm}


def idle_memory(srv, n):
    """PSS and USS of the server's process tree and MemAvailable before n
    idle sandboxes (each has run one step) and after.  They are asked for
    warm ({"warm": true}) until the server refuses one, and the memory is
    measured there too; the rest are made with the default, which falls
    back to a cold sandbox where no warm one can be had (docs/api.md)."""
    def measure():
        time.sleep(1)
        pids = tree(srv.pid)
        mem = [rollup_kib(p) for p in pids]
        comms = {}
        for p in pids[1:]:
            st = proc_stat(p)
            if st:
                comms[st[0]] = comms.get(st[0], 0) + 1
        return {"pss_kib": sum(m[0] for m in mem), "uss_kib": sum(m[1] for m in mem), "server_pss_kib": mem[0][0],
                "processes": len(pids), "processes_by_name": comms, "mem_available_kib": mem_available_kib()}
    c = Client(srv)
    out = {"n": n, "before": measure(), "create_ms": [], "warm": [], "refused": None}
    ids = []
    try:
        for _ in range(n):
            t0 = time.perf_counter_ns()
            if out["refused"] is None:
                status, sb = c.try_call("POST", "/v1/sandboxes", {"warm": True})
                if status != 201:
                    out["refused"] = {"after": len(ids), "status": status, "answer": sb}
                    out["all_warm"] = measure()
                    t0 = time.perf_counter_ns()
                    sb = c.create()
            else:
                sb = c.create()
            ids.append(sb["id"])
            c.step(sb["id"], "x = 1")
            out["create_ms"].append((time.perf_counter_ns() - t0) / 1e6)
            out["warm"].append(bool(sb.get("warm")))
        out["after"] = measure()
    finally:
        t1 = time.perf_counter_ns()
        for sid in ids:
            c.delete(sid)
        out["deleted_s"] = (time.perf_counter_ns() - t1) / 1e9
        c.close()
    b, a = out["before"], out["after"]
    out["pss_per_sandbox_kib"] = (a["pss_kib"] - b["pss_kib"]) / n
    out["uss_per_sandbox_kib"] = (a["uss_kib"] - b["uss_kib"]) / n
    out["available_drop_per_sandbox_kib"] = (b["mem_available_kib"] - a["mem_available_kib"]) / n
    k = sum(out["warm"])
    w = out.get("all_warm")
    if w and 0 < k < n:
        out["warm_pss_per_sandbox_kib"] = (w["pss_kib"] - b["pss_kib"]) / k
        out["warm_uss_per_sandbox_kib"] = (w["uss_kib"] - b["uss_kib"]) / k
        out["warm_available_drop_per_sandbox_kib"] = (b["mem_available_kib"] - w["mem_available_kib"]) / k
        out["cold_pss_per_sandbox_kib"] = (a["pss_kib"] - w["pss_kib"]) / (n - k)
        out["cold_uss_per_sandbox_kib"] = (a["uss_kib"] - w["uss_kib"]) / (n - k)
    return out


# ---- 5: the CLI, a Jupyter kernel, a bare process ----

def cli_steps(corral, env, n):
    """`corral session start`, then `corral session exec ID -c 'x + 1'` n
    times, a CLI process each (after 20 untimed)."""
    p = subprocess.run([corral, "session", "start", "--json"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"corral session start exited {p.returncode}: {p.stderr.strip()}"}
    sid = json.loads(p.stdout)["id"]
    try:
        subprocess.run([corral, "session", "exec", sid, "-c", "x = 1"], env=env, capture_output=True, check=True)
        argv = [corral, "session", "exec", sid, "-c", "x + 1"]
        for _ in range(20):
            timed_run(argv, env=env)
        ms = []
        for _ in range(n):
            ns, rc, _, _ = timed_run(argv, env=env)
            if rc != 0:
                return {"error": f"{quote(argv)} exited {rc}"}
            ms.append(ns / 1e6)
    finally:
        subprocess.run([corral, "session", "stop", sid], env=env, capture_output=True)
        subprocess.run([corral, "session", "shutdown"], env=env, capture_output=True)
    return {"step_ms": ms, "argv": argv}


def jupyter(tmp, starts, n):
    """Debian's ipykernel through jupyter_client: `starts` kernels, each
    timed from start_kernel() to wait_for_ready() and then `import pandas`
    (execute to the shell reply); in the last, n trivial steps."""
    # Finding the kernel imports ipykernel and so debugpy here, whose warning
    # about frozen modules (and the kernel's own, below) is not this benchmark's.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        from jupyter_client.manager import KernelManager
    except ImportError:
        return {"error": "python3-jupyter-client is not installed"}
    env = dict(ENV, IPYTHONDIR=os.path.join(tmp, "ipython"), JUPYTER_RUNTIME_DIR=os.path.join(tmp, "jupyter"),
               MPLBACKEND="Agg")

    def run(kc, code):
        """(ms to the shell reply, ms to the reply and the kernel idle again on iopub)."""
        t0 = time.perf_counter_ns()
        mid = kc.execute(code)
        while True:
            rep = kc.get_shell_msg(timeout=60)
            if rep["parent_header"].get("msg_id") == mid:
                break
        t1 = time.perf_counter_ns()
        if rep["content"]["status"] != "ok":
            raise SystemExit(f"jupyter: {code!r}: {rep['content']}")
        while True:
            m = kc.get_iopub_msg(timeout=60)
            if (m["parent_header"].get("msg_id") == mid and m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"):
                break
        return (t1 - t0) / 1e6, (time.perf_counter_ns() - t0) / 1e6

    out = {"start_ms": [], "import_pandas_ms": []}
    for i in range(starts):
        km = KernelManager(kernel_name="python3")
        km.connection_file = os.path.join(tmp, f"kernel-{i}.json")
        kc = None
        try:
            t0 = time.perf_counter_ns()
            km.start_kernel(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            out["start_ms"].append((time.perf_counter_ns() - t0) / 1e6)
            out["kernel_argv"] = km.kernel_spec.argv
            out["import_pandas_ms"].append(run(kc, "import pandas")[0])
            if i == starts - 1:
                run(kc, "x = 1")
                for _ in range(20):
                    run(kc, "x + 1")
                reply, idle = [], []
                for _ in range(n):
                    a, b = run(kc, "x + 1")
                    reply.append(a)
                    idle.append(b)
                out["step_reply_ms"], out["step_idle_ms"] = reply, idle
        finally:
            if kc is not None:
                kc.stop_channels()
            km.shutdown_kernel(now=False)
    return out


def bare(n):
    argv = [PY, "-c", "x=1; x+1"]
    for _ in range(3):
        timed_run(argv)
    return {"argv": argv, "ms": [timed_run(argv)[0] / 1e6 for _ in range(n)]}


# ---- the report ----

def fmt(ms):
    return f"{ms:,.2f} ms" if ms < 10 else f"{ms:,.1f} ms" if ms < 100 else f"{ms:,.0f} ms"


def mib(kib):
    return f"{kib / 1024:,.1f} MiB"


def verdict(value, target, higher_better):
    """'met', or by how much it was missed."""
    if (value >= target) if higher_better else (value <= target):
        return "met"
    if higher_better:
        return f"missed: {value / target * 100:.0f}% of the target ({target - value:,.0f}/s short)"
    return f"missed by {value - target:,.1f} ms ({value / target:.1f}×)"


def cpu_line(cpu, wrk_pct, steps_per_s):
    """Where the two cores went during the throughput run, in words, and
    the CPU time per step."""
    if not cpu:
        return "not sampled"
    per_step = lambda pc: pc / 100 / steps_per_s * 1e3  # ms of CPU per step
    threads = sorted(cpu["server_threads"].items(), key=lambda kv: -kv[1]["sum"])
    parts = [f"{k} ×{v['n']} {v['sum']:.0f}%" for k, v in threads[:4] if v["sum"] >= 1]
    desc = sorted(cpu["descendants"].items(), key=lambda kv: -kv[1])
    dparts = [f"{k} {v:.0f}%" for k, v in desc[:4] if v >= 1]
    return (f"machine {cpu['machine_busy']:.0f}% of {os.cpu_count() * 100}%: corral serve {cpu['server']:.0f}% "
            f"({', '.join(parts) or 'no thread above 1%'}; a sandbox's supervising thread is named after the "
            f"connection thread that made it); its descendants "
            f"{sum(cpu['descendants'].values()):.0f}% ({', '.join(dparts) or 'none above 1%'}); wrk {wrk_pct:.0f}%. "
            f"CPU per step: the server {per_step(cpu['server']):.2f} ms, the sandboxes' processes "
            f"{per_step(sum(cpu['descendants'].values())):.2f} ms, wrk {per_step(wrk_pct):.2f} ms")


def rows_of(r):
    """(what, measured, target or comparison) rows of the table."""
    rows = []
    t = r["throughput"]
    ts = stats(t["ms"])
    rows.append((f"trivial steps/s, {r['args']['clients']} keep-alive clients, a sandbox each "
                 f"({t['warm']} warm; wrk)",
                 f"{t['steps_per_s']:,.0f}/s ({t['requests']:,} steps in {t['duration_us'] / 1e6:.1f} s; "
                 f"p50 {fmt(ts['p50'])}, p99 {fmt(ts['p99'])})",
                 f"≥ {TARGETS['throughput']:,}/s: {verdict(t['steps_per_s'], TARGETS['throughput'], True)}"))
    rows.append(("  where the CPU went meanwhile", cpu_line(t["cpu"], t["wrk_cpu_pct"], t["steps_per_s"]),
                 "from /proc, 1 s in to 1 s before the end"))
    lt = r["latency"]
    ls = stats(lt["ms"])
    rows.append((f"trivial step latency, {r['args']['lat_clients']} keep-alive clients (wrk)",
                 f"p50 {fmt(ls['p50'])}, p90 {fmt(ls['p90'])}, p99 {fmt(ls['p99'])}, p99.9 "
                 f"{fmt(pct(lt['ms'], 99.9))}, max {fmt(ls['max'])} ({ls['n']:,} steps, "
                 f"{lt['steps_per_s']:,.0f}/s)"
                 + (f"; machine {lt['cpu']['machine_busy']:.0f}% busy" if lt["cpu"] else ""),
                 f"p99 ≤ {TARGETS['p99_ms']:.0f} ms: {verdict(ls['p99'], TARGETS['p99_ms'], False)}"))
    s = r["sequential"]
    rtt, wall, ex = stats(s["rtt_ms"]), stats(s["wall_ms"]), stats(s["exec_ms"])
    rows.append((f"the same, 1 client in a row (Python http.client, {rtt['n']} steps)",
                 f"p50 {fmt(rtt['p50'])}, p99 {fmt(rtt['p99'])}; of which the session's round trip (`wall_ms`) "
                 f"p50 {fmt(wall['p50'])}, the interpreter (`exec_ms`) p50 {fmt(ex['p50'])}",
                 f"HTTP and the server's dispatch: p50 {fmt(rtt['p50'] - wall['p50'])}"))
    ws = r.get("websocket", {})
    if "rtt_ms" in ws:
        w = stats(ws["rtt_ms"])
        rows.append((f"the same over one WebSocket ({w['n']} steps)", f"p50 {fmt(w['p50'])}, p99 {fmt(w['p99'])}",
                     "optional"))
    c = r["create"]
    tot, cr = stats(c["total_ms"]), stats(c["create_ms"])
    rows.append((f"create a warm sandbox, then the first result of `1 + 1` ({tot['n']} in a row)",
                 f"p50 {fmt(tot['p50'])}, p90 {fmt(tot['p90'])}, max {fmt(tot['max'])}; the create alone p50 "
                 f"{fmt(cr['p50'])} ({c['warm']} of {tot['n']} warm)",
                 f"p50 ≤ {TARGETS['create_p50_ms']:.0f} ms: {verdict(tot['p50'], TARGETS['create_p50_ms'], False)}"))
    m = r["memory"]
    k = sum(m["warm"])
    ref = m["refused"]
    if "warm_pss_per_sandbox_kib" in m:
        w = m["all_warm"]
        rows.append((f"{k} idle warm sandboxes (the most the server makes: it answered the next "
                     f"`{{\"warm\": true}}` with {ref['status']}): PSS of the server and all its descendants",
                     f"{mib(w['pss_kib'])} ({mib(m['before']['pss_kib'])} with none): "
                     f"{mib(m['warm_pss_per_sandbox_kib'])} per sandbox; USS {mib(m['warm_uss_per_sandbox_kib'])} "
                     "per sandbox",
                     f"MemAvailable fell {mib(m['before']['mem_available_kib'] - w['mem_available_kib'])}: "
                     f"{mib(m['warm_available_drop_per_sandbox_kib'])} per sandbox"))
        cold = [t for t, wm in zip(m["create_ms"], m["warm"]) if not wm]
        rows.append((f"{m['n']} idle sandboxes, the {m['n'] - k} past those made with the default (cold)",
                     f"{mib(m['after']['pss_kib'])} ({m['after']['processes']} processes): "
                     f"{mib(m['cold_pss_per_sandbox_kib'])} PSS, {mib(m['cold_uss_per_sandbox_kib'])} USS per cold "
                     f"sandbox; a cold one's create + first step p50 {fmt(pct(cold, 50))}",
                     f"MemAvailable fell {mib(m['before']['mem_available_kib'] - m['after']['mem_available_kib'])} "
                     f"in all: {mib(m['available_drop_per_sandbox_kib'])} per sandbox"))
    else:
        rows.append((f"{m['n']} idle sandboxes ({k} warm): PSS of the server and all its descendants",
                     f"{mib(m['after']['pss_kib'])} ({mib(m['before']['pss_kib'])} with none; "
                     f"{m['after']['processes']} processes): {mib(m['pss_per_sandbox_kib'])} per sandbox; USS "
                     f"{mib(m['uss_per_sandbox_kib'])} per sandbox",
                     f"MemAvailable fell {mib(m['before']['mem_available_kib'] - m['after']['mem_available_kib'])}: "
                     f"{mib(m['available_drop_per_sandbox_kib'])} per sandbox"))
    cli = r["cli"]
    if "step_ms" in cli:
        s = stats(cli["step_ms"])
        rows.append((f"the trivial step through the CLI: `corral session exec ID -c 'x + 1'` ({s['n']})",
                     f"p50 {fmt(s['p50'])}, p99 {fmt(s['p99'])}", "a corral process per step"))
    else:
        rows.append(("the trivial step through the CLI", cli.get("error", "?"), "skipped"))
    j = r["jupyter"]
    if "step_reply_ms" in j:
        s, i = stats(j["step_reply_ms"]), stats(j["step_idle_ms"])
        rows.append((f"Jupyter kernel (ipykernel): the trivial step, execute → shell reply ({s['n']})",
                     f"p50 {fmt(s['p50'])}, p99 {fmt(s['p99'])}; to the kernel idle on iopub p50 {fmt(i['p50'])}",
                     "jupyter_client's BlockingKernelClient"))
        rows.append((f"Jupyter kernel: start to ready ({len(j['start_ms'])} kernels); then `import pandas`",
                     f"start p50 {fmt(pct(j['start_ms'], 50))}; import pandas p50 "
                     f"{fmt(pct(j['import_pandas_ms'], 50))}",
                     "a warm corral sandbox has pandas imported (create row above)"))
    else:
        rows.append(("Jupyter kernel", j.get("error", "?"), "skipped"))
    b = stats(r["bare"]["ms"])
    rows.append((f"`python3 -c 'x=1; x+1'`, a bare process ({b['n']})", f"p50 {fmt(b['p50'])}", "for scale"))
    return rows


def markdown(r, rows, plot_rel):
    def generic(argv):
        """argv with this run's temporary directory and port as TMP and PORT."""
        text = quote(argv).replace(r["tmp"], "TMP")
        return re.sub(r"127\.0\.0\.1:\d+/", "127.0.0.1:PORT/", text)
    lines = ["`" + r["command"] + "` as " + r["user"] + f", corral {r['corral']} (a {r['build']}), {r['date']}; "
             f"{r['machine']}; load average (1 min) " + ", ".join(f"{k} {v}" for k, v in r["load"].items())
             + ". Figures, not thresholds; every step is timed, percentiles interpolate between the samples.", "",
             f"The server: `{generic(r['server_argv'])}`. The load: `{generic(r['throughput']['argv'])}` "
             f"({r['wrk']}) with `bench/serve.py`'s Lua script: a sandbox per connection, every step's round trip "
             "timed, every answer checked for the value 2.", ""]
    if plot_rel:
        lines += [f"![corral serve: per-step latency against the CLI and a Jupyter kernel]({plot_rel})", ""]
    lines += ["| what | measured | target or comparison |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"


def plot(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bars = []  # (label, p50, p99)
    lt = r["latency"]["ms"]
    bars.append((f"corral HTTP\n{r['args']['lat_clients']} clients (wrk)", pct(lt, 50), pct(lt, 99)))
    s = r["sequential"]["rtt_ms"]
    bars.append(("corral HTTP\n1 client", pct(s, 50), pct(s, 99)))
    ws = r.get("websocket", {})
    if "rtt_ms" in ws:
        bars.append(("corral WebSocket\n1 client", pct(ws["rtt_ms"], 50), pct(ws["rtt_ms"], 99)))
    if "step_ms" in r["cli"]:
        bars.append(("corral CLI\nsession exec", pct(r["cli"]["step_ms"], 50), pct(r["cli"]["step_ms"], 99)))
    if "step_reply_ms" in r["jupyter"]:
        j = r["jupyter"]["step_reply_ms"]
        bars.append(("Jupyter kernel\n(ipykernel)", pct(j, 50), pct(j, 99)))
    bars.append(("python3 -c\n(new process)", pct(r["bare"]["ms"], 50), pct(r["bare"]["ms"], 99)))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    xs = range(len(bars))
    w = 0.38
    ax.bar([x - w / 2 for x in xs], [b[1] for b in bars], w, label="p50", color="#3b75af")
    ax.bar([x + w / 2 for x in xs], [b[2] for b in bars], w, label="p99", color="#ef8636")
    for x, b in zip(xs, bars):
        ax.text(x - w / 2, b[1] * 1.08, f"{b[1]:.2g}", ha="center", fontsize=8)
        ax.text(x + w / 2, b[2] * 1.08, f"{b[2]:.2g}", ha="center", fontsize=8)
    ax.axhline(TARGETS["p99_ms"], color="grey", ls="--", lw=0.8)
    ax.text(-0.45, TARGETS["p99_ms"] * 1.08, "10 ms: the p99 target (HTTP, 4 clients)", ha="left",
            fontsize=8, color="grey")
    ax.set_yscale("log")
    ax.set_ylim(top=max(b[2] for b in bars) * 2)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars], fontsize=9)
    ax.set_ylabel("ms per trivial step (x + 1), log scale")
    ax.set_title(f"A trivial step: corral serve, the CLI, a Jupyter kernel ({r['date']}, {os.cpu_count()} CPUs)")
    ax.legend(loc="upper left")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        total = int(f.readline().split()[1])
    return f"{os.cpu_count()} CPUs, {model}, {total / 1048576:.0f} GiB RAM, Linux {os.uname().release}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--lat-clients", type=int, default=4)
    ap.add_argument("--lat-duration", type=int, default=6)
    ap.add_argument("--seq-steps", type=int, default=1000)
    ap.add_argument("--ws-steps", type=int, default=100)
    ap.add_argument("--creates", type=int, default=50)
    ap.add_argument("--idle", type=int, default=100)
    ap.add_argument("--cli-steps", type=int, default=200)
    ap.add_argument("--kernels", type=int, default=3)
    ap.add_argument("--jupyter-steps", type=int, default=500)
    ap.add_argument("--bare", type=int, default=30)
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "out", "serve.json"))
    ap.add_argument("--md")
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "img", "serve-bench.png"))
    a = ap.parse_args()
    # SIGTERM (and SIGINT, even where a shell ignored it for a background
    # job) unwinds through the finally clauses that stop what was started.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    corral, why = find_corral()
    wrk, wrk_why = find_tool("wrk", "WRK")
    if corral is None or wrk is None:
        say(f"serve: skipped: {why or wrk_why}")
        write_md(a.md, f"Skipped: {why or wrk_why}.")
        return
    corral = os.path.abspath(corral)
    build = os.path.dirname(corral)
    env = dict(ENV)
    for var, name in (("CORRAL_ZYGOTE", "corral-zygote"), ("CORRAL_INIT", "corral-init")):
        env[var] = os.environ.get(var, os.path.join(build, name))
    cmd = ["bench/serve.py"] + sys.argv[1:]
    if "CORRAL" in os.environ:
        cmd = [f"CORRAL={os.environ['CORRAL']}"] + cmd
    r = {"args": vars(a), "command": " ".join(cmd), "corral": corral, "build": build_kind(build),
         "user": f"uid {os.geteuid()}", "machine": machine(), "wrk": subprocess.run(
             [wrk, "-v"], capture_output=True, text=True).stdout.split(" Copyright")[0],
         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": {"start": load()}}
    tmp = r["tmp"] = tempfile.mkdtemp(prefix="corral-bench-serve-")
    srv = None
    left = []
    try:
        env["XDG_RUNTIME_DIR"] = os.path.join(tmp, "run")
        os.mkdir(env["XDG_RUNTIME_DIR"], 0o700)
        t0 = time.perf_counter_ns()
        srv = Server(corral, tmp, env)
        r["server_argv"] = srv.argv
        c = Client(srv)
        sb = c.create()  # waits for the zygote the server started
        c.step(sb["id"], "1 + 1")
        c.delete(sb["id"])
        c.close()
        r["first_sandbox_ms"] = (time.perf_counter_ns() - t0) / 1e6
        say(f"== corral serve on port {srv.port} (pid {srv.pid}); start to a first warm sandbox's result: "
            f"{r['first_sandbox_ms']:.0f} ms")

        say(f"== throughput: {a.clients} keep-alive clients, a sandbox each, {a.duration:g} s of `x + 1` (wrk)")
        r["throughput"] = t = wrk_run(wrk, srv, tmp, a.clients, a.duration, sample_cpu=True)
        say(f"{t['steps_per_s']:,.0f} steps/s, p50 {pct(t['ms'], 50):.2f} ms, p99 "
            f"{pct(t['ms'], 99):.2f} ms, errors {t['errors']}, bad answers {t['bad']}; wrk used "
            f"{t['wrk_cpu_pct']:.0f}% of a CPU")
        say(cpu_line(t["cpu"], t["wrk_cpu_pct"], t["steps_per_s"]))
        r["load"]["after throughput"] = load()

        say(f"== latency: {a.lat_clients} keep-alive clients, {a.lat_duration:g} s (wrk)")
        r["latency"] = lt = wrk_run(wrk, srv, tmp, a.lat_clients, a.lat_duration, sample_cpu=True)
        say(f"p50 {pct(lt['ms'], 50):.2f} ms, p99 {pct(lt['ms'], 99):.2f} ms, max {max(lt['ms']):.1f} ms "
            f"({lt['steps_per_s']:,.0f} steps/s)")
        say(f"== {a.seq_steps} steps in a row, one client (http.client)")
        r["sequential"] = s = seq_steps(srv, a.seq_steps)
        say(f"p50 {pct(s['rtt_ms'], 50):.2f} ms, p99 {pct(s['rtt_ms'], 99):.2f} ms; wall_ms p50 "
            f"{pct(s['wall_ms'], 50):.2f}, exec_ms p50 {pct(s['exec_ms'], 50):.3f}")
        r["websocket"] = ws = ws_steps(srv, a.ws_steps)
        if "rtt_ms" in ws:
            say(f"websocket: p50 {pct(ws['rtt_ms'], 50):.2f} ms, p99 {pct(ws['rtt_ms'], 99):.2f} ms")
        r["load"]["after latency"] = load()

        say(f"== create a warm sandbox, then `1 + 1`: {a.creates} in a row")
        r["create"] = cf = create_first(srv, a.creates)
        say(f"p50 {pct(cf['total_ms'], 50):.1f} ms, p90 {pct(cf['total_ms'], 90):.1f} ms (the create alone p50 "
            f"{pct(cf['create_ms'], 50):.1f} ms)")

        say(f"== memory: {a.idle} idle sandboxes, warm while the server makes them")
        r["memory"] = m = idle_memory(srv, a.idle)
        say(f"{sum(m['warm'])} warm" + (f" (then refused: {m['refused']['status']} "
                                        f"{json.dumps(m['refused']['answer'])[:200]})" if m["refused"] else "")
            + f"; PSS {m['before']['pss_kib'] / 1024:.0f} -> {m['after']['pss_kib'] / 1024:.0f} MiB: "
            f"{m['pss_per_sandbox_kib'] / 1024:.2f} MiB per sandbox; MemAvailable drop "
            f"{m['available_drop_per_sandbox_kib'] / 1024:.2f} MiB per sandbox")
        r["load"]["after memory"] = load()
        left = srv.stop()
        r["server_stderr"] = srv.stderr()[-4000:]
        srv = None
        if left:
            say(f"warning: processes of the server left after it stopped: {left}")

        say(f"== the CLI: corral session exec ID -c 'x + 1', {a.cli_steps}")
        cli_env = dict(env, XDG_RUNTIME_DIR=os.path.join(tmp, "cli-run"))
        os.mkdir(cli_env["XDG_RUNTIME_DIR"], 0o700)
        r["cli"] = cli = cli_steps(corral, cli_env, a.cli_steps)
        say(f"p50 {pct(cli['step_ms'], 50):.2f} ms" if "step_ms" in cli else cli["error"])

        say(f"== a Jupyter kernel: {a.kernels} starts, import pandas, {a.jupyter_steps} steps")
        r["jupyter"] = j = jupyter(tmp, a.kernels, a.jupyter_steps)
        if "step_reply_ms" in j:
            say(f"start p50 {pct(j['start_ms'], 50):.0f} ms, import pandas p50 {pct(j['import_pandas_ms'], 50):.0f} "
                f"ms, step p50 {pct(j['step_reply_ms'], 50):.2f} ms (to idle {pct(j['step_idle_ms'], 50):.2f} ms)")
        else:
            say(j["error"])
        r["bare"] = bare(a.bare)
        r["load"]["end"] = load()
    finally:
        if srv is not None:
            left = srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    r["left_after_stop"] = left

    rows = rows_of(r)
    print()
    print(table(["what", "measured", "target or comparison"], rows))
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(r, f)
    plot_rel = None
    if a.plot:
        plot(r, a.plot)
        plot_rel = os.path.relpath(os.path.abspath(a.plot), os.path.join(ROOT, "docs"))
        say(f"wrote {a.plot}")
    write_md(a.md, markdown(r, rows, plot_rel))
    say(f"wrote {a.json}" + (f" and {a.md}" if a.md else ""))


if __name__ == "__main__":
    main()
