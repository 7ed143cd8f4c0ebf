"""Attacks on resources: fork bomb, memory bomb, CPU loop, sleeping past the
wall limit, output flood, filling the disk.  Each bomb is bounded in the
program itself, so a broken limit fails the test instead of the machine."""
import os
import subprocess
import threading
import time

from corral_attack import host_procs, marker, out_json

MiB = 1 << 20


class HostWatch:
    """Samples the host while a jail runs: how many processes carry the
    marker, and how long the host takes to start /bin/true."""

    def __init__(self, needle):
        self.needle = needle
        self.max_procs = 0
        self.max_latency = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic()
            subprocess.run(["true"])
            self.max_latency = max(self.max_latency, time.monotonic() - t)
            self.max_procs = max(self.max_procs, len(host_procs(self.needle)))
            self.samples += 1
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._t.join(5)


def _no_leftovers(needle, timeout=1.5):
    deadline = time.monotonic() + timeout
    while host_procs(needle) and time.monotonic() < deadline:
        time.sleep(0.02)
    return host_procs(needle)


FORK_BOMB = r"""
import os, sys, time
made, errors = 0, {}
for i in range(300):
    try:
        pid = os.fork()
    except OSError as e:
        errors[e.errno] = errors.get(e.errno, 0) + 1
        continue
    if pid == 0:
        try:
            os.fork()  # and each child tries once more
        except OSError:
            pass
        time.sleep(30)
        os._exit(0)
    made += 1
print(made, errors, flush=True)
time.sleep(30)
"""


def test_fork_bomb(run_jail):
    m = marker("forkbomb")
    watch = HostWatch(m)
    try:
        r = run_jail(["--pids", "64"], FORK_BOMB, timeout=2, argv=[m])
    finally:
        watch.stop()
    assert r["status"] == "timeout" or (r["status"] == "error" and r["limit"] == "pids"), r
    made = int(r["stdout"].split()[0])
    assert made < 64, r  # the limit stopped the forks
    assert watch.samples >= 3
    assert watch.max_procs <= 64, f"{watch.max_procs} jail processes seen on the host"
    assert watch.max_latency < 1.5, f"the host took {watch.max_latency:.2f} s to start a process"
    assert r.elapsed < 5
    assert _no_leftovers(m) == {}, "fork-bomb processes outlived the jail"


MEMORY_BOMB = r"""
chunks = []
for i in range(512):           # up to 512 MiB, touched
    chunks.append(b"\x01" * (1 << 20))
print("survived", len(chunks), flush=True)
"""


def test_memory_bomb(run_jail):
    r = run_jail(["-m", "64M"], MEMORY_BOMB, timeout=10)
    assert r["status"] == "oom", r
    assert r["limit"] == "memory", r
    assert "survived" not in r["stdout"]
    # Host side: corral and everything it waited for peaked near the limit.
    assert r.maxrss_kb * 1024 < 128 * MiB, f"peak RSS {r.maxrss_kb} KiB"


def test_cpu_loop(run_jail):
    r = run_jail(["--cpu-time", "1"], "while True:\n    pass", timeout=5)
    assert r["status"] == "killed", r
    assert r["limit"] == "cpu-time", r
    assert r.elapsed < 3.5, f"the CPU limit took {r.elapsed:.2f} s (the wall limit is 5 s)"
    assert r["cpu_ms"] >= 900, r


def test_sleep_past_wall_limit(run_jail):
    m = marker("sleeper")
    code = r"""
import os, signal, subprocess, sys, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
subprocess.Popen(["sleep", "60", sys.argv[1]], start_new_session=True)
time.sleep(60)
"""
    r = run_jail([], code, timeout=1, argv=[m])
    assert r["status"] == "timeout", r
    assert r["exit_code"] == 124 and r.rc == 124, r
    assert r["limit"] == "wall-time"
    assert r.elapsed < 3, f"corral returned after {r.elapsed:.2f} s"
    assert _no_leftovers(m) == {}, "a sleeper outlived the wall limit"


OUTPUT_FLOOD = r"""
import os, threading
block = b"x" * (1 << 20)
def err():
    for i in range(50):
        os.write(2, block)
t = threading.Thread(target=err)
t.start()
for i in range(200):
    n = 0
    while n < len(block):
        n += os.write(1, block[n:])
t.join()
"""


def test_output_flood(run_jail):
    r = run_jail(["--output-limit", "1M"], OUTPUT_FLOOD, timeout=20)
    assert r["status"] == "ok", r
    assert r["stdout_truncated"] is True and r["stderr_truncated"] is True
    assert len(r["stdout"].encode()) <= MiB and len(r["stderr"].encode()) <= MiB
    assert len(r["stdout"]) >= MiB // 2  # what was kept is really there
    assert r["stdout_bytes"] == 200 * MiB and r["stderr_bytes"] == 50 * MiB, r
    # Host side: corral (and the jail it waited for) stayed small.
    assert r.maxrss_kb * 1024 < 64 * MiB, f"peak RSS {r.maxrss_kb} KiB for 250 MiB of output"


DISK_FILL = r"""
import errno, json, os, sys
m = sys.argv[1]
chunk = b"x" * (1 << 20)
res = {}
def fill(path, total, piece):
    written, err, i = 0, None, 0
    try:
        while written < total:
            with open(path if piece >= total else f"{path}-{i}", "wb") as f:
                left = min(piece, total - written)
                while left:
                    n = f.write(chunk[:min(left, len(chunk))])
                    f.flush()
                    written += n
                    left -= n
            i += 1
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
    return [written, err]
for d in sys.argv[2:]:
    res[d + " one file"] = fill(f"{d}/{m}-big", 64 << 20, 64 << 20)
    for n in os.listdir(d):
        if n.startswith(m):
            os.unlink(f"{d}/{n}")
    res[d + " many files"] = fill(f"{d}/{m}-part", 64 << 20, 4 << 20)
print(json.dumps(res), flush=True)
sys.exit(3 if all(v[1] for v in res.values()) else 0)
"""


def _host_files_named(needle):
    hits = []
    for d in ("/tmp", "/var/tmp", "/dev/shm", "/run"):
        try:
            hits += [os.path.join(d, n) for n in os.listdir(d) if needle in n]
        except OSError:
            pass
    return hits


def test_disk_fill_tmp_and_workspace(run_jail):
    m = marker("disk")
    r = run_jail(["--disk", "16M"], DISK_FILL, timeout=10, argv=[m, "/tmp", "/workspace"])
    res = out_json(r)
    assert r["status"] == "error" and r["exit_code"] == 3, r  # it saw the errors and exited, not killed
    for d in ("/tmp", "/workspace"):
        written, err = res[d + " one file"]
        assert err in ("EFBIG", "ENOSPC") and written <= 16 * MiB, (d, res)
        written, err = res[d + " many files"]
        assert err == "ENOSPC" and written <= 16 * MiB, (d, res)
    assert _host_files_named(m) == []


ONE_BIG_FILE = r"""
import errno, json, sys
written, err = 0, None
try:
    with open("/workspace/big", "wb") as f:
        for i in range(32):
            written += f.write(b"x" * (1 << 20))
            f.flush()
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps([written, err]))
sys.exit(3 if err else 0)
"""


def test_disk_fill_host_workspace(run_jail, host_dir):
    r = run_jail(["-w", host_dir, "--disk", "8M"], ONE_BIG_FILE, timeout=10)
    assert r["status"] == "error" and r["exit_code"] == 3, r
    written, err = out_json(r)
    assert err == "EFBIG" and written <= 8 * MiB, r
    # Host side: the file in the host directory stopped at the per-file cap.
    assert 0 < os.path.getsize(os.path.join(host_dir, "big")) <= 8 * MiB


def test_disk_fill_shell_killed_by_file_size(run_jail, host_dir):
    """A writer that does not ignore SIGXFSZ (unlike Python) is stopped by it."""
    r = run_jail(["-w", host_dir, "--disk", "8M"], "head -c 32M /dev/zero > /workspace/big; echo after $?",
                 lang="bash", timeout=5)
    assert os.path.getsize(os.path.join(host_dir, "big")) <= 8 * MiB
    if r["status"] == "killed":  # head itself died of SIGXFSZ and bash reported it
        assert r["limit"] in ("file-size", "signal"), r
    else:
        assert "after 153" in r["stdout"] or "after 1" in r["stdout"], r  # 128 + SIGXFSZ
