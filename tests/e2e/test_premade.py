"""Pre-made jails of the library (issue 24, docs/exec-pool.md): a jail made in advance with one
configuration and claimed with another gets the claim's limits, disk, workspace and binds, runs like a
direct jail, and shares nothing with another (tests/e2e/premade-jails.c drives the library)."""
import json
import os
import stat
import subprocess
import sys

import pytest

CORRAL = os.environ.get("CORRAL") or os.path.join(os.path.dirname(__file__), "../../build/corral")
HELPER = os.environ.get("CORRAL_PREMADE_JAILS") or os.path.join(os.path.dirname(os.path.abspath(CORRAL)),
                                                                  "tests", "premade-jails")
pytestmark = pytest.mark.skipif(not os.path.exists(HELPER), reason="needs tests/premade-jails")
# Made with larger limits than any claim below, so that each limit hit is the claim's.
MADE = {"memory": "1G", "pids": 128, "disk": "256M", "timeout": 60}


def premade(claim, *argv, made=MADE):
    p = subprocess.run([HELPER, json.dumps(made), json.dumps(claim), "--", *argv], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def result(claim, *argv, made=MADE):
    d = premade(claim, *argv, made=made)
    assert d["rc"] == 0 and d["misfit"] is None, d
    return d["result"]


def test_runs_like_a_direct_jail():
    r = result({}, "/bin/sh", "-c", "echo out; echo err >&2; id -u; exit 3")
    direct = json.loads(subprocess.run([CORRAL, "exec", "--json", "--", "/bin/sh", "-c",
                                        "echo out; echo err >&2; id -u; exit 3"],
                                       capture_output=True, text=True, timeout=60).stdout)
    for k in ("status", "exit_code", "stdout", "stderr", "limit", "limits_backend"):
        assert r[k] == direct[k], (k, r, direct)
    assert r["stdout"] == "out\n1000\n" and r["exit_code"] == 3


def test_root_is_read_only_and_caps_are_gone():
    r = result({}, "/bin/sh", "-c", "touch /x 2>/dev/null && echo wrote; grep -E '^(CapEff|CapBnd|NoNewPrivs)' "
               "/proc/self/status")
    assert "wrote" not in r["stdout"]
    assert "CapEff:\t0000000000000000" in r["stdout"] and "CapBnd:\t0000000000000000" in r["stdout"]
    assert "NoNewPrivs:\t1" in r["stdout"], r


def direct(flags, argv):
    p = subprocess.run([CORRAL, "exec", "--json", *flags, "--", *argv], capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)


def test_a_program_that_ends_before_init_started_is_seen():
    # Claimed at once, a short program may end before the adopting corral-init has blocked SIGCHLD: the
    # signal is lost, and init must still see the end (it hung until the wall-time limit, once in a full
    # test run, before it looked for an ended process at its start). Busy loops on every CPU make a late
    # init likely: without that look this failed 3 runs of 3.
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 2))]
    try:
        for _ in range(40):
            r = result({"timeout": "5s"}, "/bin/true")
            assert (r["status"], r["exit_code"], r["limit"]) == ("ok", 0, None), r
    finally:
        for p in busy:
            p.kill()
            p.wait()


@pytest.mark.parametrize("claim,flags,argv,limit", [
    ({"memory": "64M"}, ["--memory", "64M"], ["python3", "-c", "b = bytearray(400 << 20)"], "memory"),
    ({"pids": 8}, ["--pids", "8"], ["/bin/sh", "-c", "for i in $(seq 30); do sleep 3 & done; wait"], "pids"),
    ({"timeout": "500ms"}, ["--timeout", "500ms"], ["sleep", "10"], "wall-time"),
])
def test_limits_are_the_claims(claim, flags, argv, limit):
    r = result(claim, *argv)
    d = direct(flags, argv)
    # Hit as in a direct jail with the same limits (without cgroups, the pids limit is RLIMIT_NPROC: a fork
    # fails and the shell says so, as in a direct jail).
    assert (r["limit"], r["exit_code"], r["status"]) == (d["limit"], d["exit_code"], d["status"]), (r, d)
    if r["limits_backend"] != "rlimit" or limit != "pids":
        assert r["limit"] == limit, r


def test_disk_limit_is_the_claims():
    # One file past the limit: stopped by the per-file cap (RLIMIT_FSIZE, as in a direct jail).
    r = result({"disk": "4M"}, "/bin/sh", "-c", "head -c 16000000 /dev/zero > /tmp/x")
    assert r["exit_code"] == 128 + 25, r  # SIGXFSZ
    # Files each under it: the tmpfs, sized at the claim, is full at 4 MiB (made at 256 MiB).
    r = result({"disk": "4M"}, "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do head -c 1000000 /dev/zero > "
               "/workspace/$i || break; done; ls /workspace | wc -l")
    assert "No space left on device" in r["stderr"] and int(r["stdout"]) <= 5, r


def test_disk_limit_sizes_tmp_and_workspace():
    r = result({"disk": "8M"}, "/bin/sh", "-c", "df -k /tmp /workspace | tail -2")
    sizes = [int(line.split()[1]) for line in r["stdout"].splitlines()]
    assert sizes == [8192, 8192], r


def test_workspace_and_binds_attached_at_the_claim(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.chmod(ws, 0o777)
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.txt").write_text("from the host\n")
    claim = {"workspace": str(ws), "binds": [{"src": str(data), "dst": "/data", "writable": False},
                                             {"src": str(data), "dst": "/workspace/sub/d", "writable": False}]}
    r = result(claim, "/bin/sh", "-c", "cat /data/in.txt /workspace/sub/d/in.txt; echo made > /workspace/out.txt; "
               "echo x > /data/no 2>/dev/null || echo read-only")
    assert r["stdout"] == "from the host\nfrom the host\nread-only\n", r
    assert (ws / "out.txt").read_text() == "made\n"
    assert not (data / "no").exists()


def test_two_premade_jails_share_no_namespace_cgroup_or_uid(tmp_path):
    # Both alive at once (a namespace's inode number is reused once it is gone).
    script = ("for n in user pid mnt net ipc uts cgroup; do readlink /proc/self/ns/$n; done; "
              "grep -E 'memory|pids' /proc/self/cgroup; touch /workspace/f; stat -c %u /workspace/f; sleep 1")
    procs = [subprocess.Popen([HELPER, json.dumps(MADE), "{}", "--", "/bin/sh", "-c", script],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    host = []
    for p in procs:  # seen from the host while both run: each jail's host uid and cgroups
        pid = json.loads(p.stdout.readline())["made_pid"]
        with open(f"/proc/{pid}/status") as f:
            uid = [line.split()[1] for line in f if line.startswith("Uid:")][0]
        with open(f"/proc/{pid}/cgroup") as f:
            cgroups = {line.strip() for line in f if "/corral-" in line}  # the jail's own (none without cgroups)
        host.append((uid, cgroups))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        d = json.loads(out)
        assert d["rc"] == 0, d
        outs.append(d["result"]["stdout"].splitlines())
    a, b = outs
    assert not set(a[:7]) & set(b[:7]), (a, b)
    assert not host[0][1] & host[1][1], host
    if os.geteuid() == 0:
        assert host[0][0] != host[1][0], host  # each its own host uid of the pool


def test_a_claim_that_does_not_fit_is_not_claimed(tmp_path):
    d = premade({"rootfs": "/"}, "/bin/true")
    assert d["misfit"] == "a root file system of its own" and d["rc"] == -2, d
    d = premade({"net": "down"}, "/bin/true")
    assert d["misfit"] == "another network" and d["rc"] == -2, d


def test_a_jail_with_a_proxy_is_not_made_in_advance():
    d = premade({}, "/bin/true", made={"net": "allow=example.com"})
    assert d["rc"] == -3 and "made in advance" in d["error"], d


# ---- the session host's pool (CORRAL_EXEC_POOL) ----

def host_env(tmp_path, pool):
    rt = tmp_path / "rt"
    rt.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(rt), CORRAL_EXEC_POOL=str(pool))
    return env


def corral(env, *args):
    return subprocess.run([CORRAL, *args], capture_output=True, text=True, env=env, timeout=120)


def pool_status(env):
    p = corral(env, "session", "status", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_session_host_keeps_the_pool_full_and_leaves_nothing(tmp_path):
    env = host_env(tmp_path, 3)
    assert corral(env, "session", "start", "--cold").returncode == 0
    try:
        for _ in range(200):
            st = pool_status(env)
            if st["exec_pool"]["size"] == 3:
                break
            subprocess.run(["sleep", "0.05"])
        pool = st["exec_pool"]
        assert (pool["size"], pool["target"], pool["made"], pool["claimed"], pool["failed"]) == (3, 3, 3, 0, 0), st
        text = corral(env, "session", "status").stdout
        assert "pre-made jails for corral exec: 3 ready of 3, 0 running, 3 made, 0 claimed" in text, text
        host = st["pid"]
        inits = [int(p) for p in subprocess.run(["pgrep", "-P", str(host)], capture_output=True,
                                                text=True).stdout.split()]
    finally:
        assert corral(env, "session", "shutdown").returncode == 0
    for _ in range(100):
        alive = [p for p in inits if os.path.exists(f"/proc/{p}")]
        if not alive:
            break
        subprocess.run(["sleep", "0.05"])
    assert not alive, f"jails made in advance outlived their host: {alive}"


def test_two_by_default_none_when_asked_and_a_bad_size_is_refused(tmp_path):
    for pool, want in ((None, 2), (0, None), (3, 3)):
        rt = tmp_path / {None: "d", 0: "z", 3: "p"}[pool]  # a short socket path
        env = host_env(rt, pool or 0)
        if pool is None:
            del env["CORRAL_EXEC_POOL"]
        assert corral(env, "session", "start", "--cold").returncode == 0
        try:
            st = pool_status(env)["exec_pool"]
            assert (st and st["target"]) == want, st
            # corral exec asks a host for a jail only where it listens for claims: while its pool is on
            marker = rt / "rt" / "corral" / "sessions" / "exec-pool.sock"
            assert marker.exists() == (want is not None), list(marker.parent.iterdir())
            assert want is None or stat.S_ISSOCK(marker.stat().st_mode)
            if want:
                wait_ready(env)
            r = corral(dict(env, CORRAL_EXEC_POOL_WAIT_MS="3000"), "exec", "--json", "--", "/bin/true")
            assert json.loads(r.stdout)["from"] == ("pool" if want else "direct"), r.stdout
        finally:
            corral(env, "session", "shutdown")
        assert not marker.exists()
    (tmp_path / "bad").mkdir()
    env = host_env(tmp_path / "bad", 17)
    p = corral(env, "session", "start", "--cold")
    assert p.returncode == 2 and "CORRAL_EXEC_POOL must be a number of jails (0: no pool) from 0 to 16, not '17'" \
        in p.stderr, p.stderr
    p = corral(dict(env, CORRAL_EXEC_POOL="2", CORRAL_EXEC_POOL_QUIET_MS="soon"), "session", "start", "--cold")
    assert p.returncode == 2 and "CORRAL_EXEC_POOL_QUIET_MS must be a number of milliseconds from 0 to 60000, " \
        "not 'soon'" in p.stderr, p.stderr


@pytest.mark.parametrize("limit", [None, "1K"])
def test_output_read_by_the_claimant_is_a_direct_jails(limit):
    # As `corral exec` will read a pooled jail's output: the pipes handed out, read by another thread.
    script = "head -c 10000 /dev/zero | tr '\\\\0' a; echo; echo err >&2; exit 4"
    claim, flags = ({"output_limit": limit}, ["--output-limit", limit]) if limit else ({}, [])
    p = subprocess.run([HELPER, json.dumps(MADE), json.dumps(claim), "--", "/bin/sh", "-c", script],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PREMADE_HAND_OUT="1"))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.splitlines()[-1])["result"]
    d = direct(flags, ["/bin/sh", "-c", script])
    for k in ("status", "exit_code", "stdout", "stderr", "stdout_bytes", "stderr_bytes", "stdout_truncated"):
        assert r[k] == d[k], (k, r[k], d[k])
    assert r["stdout_bytes"] == 10001 and r["stdout_truncated"] == (limit is not None)


# ---- the claim over host.sock (op exec-claim; `corral exec` does not use it yet) ----

import array  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402


def send_frame(s, obj):
    body = json.dumps(obj).encode()
    s.sendall(struct.pack(">I", len(body)) + body)


def recv_frame(s):
    """One frame and the descriptors that came with it."""
    fds = array.array("i")
    head, anc, _, _ = s.recvmsg(4, socket.CMSG_SPACE(8 * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    if len(head) < 4:
        return None, list(fds)
    n = struct.unpack(">I", head)[0]
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        assert chunk, "the host hung up mid-frame"
        body += chunk
    return json.loads(body), list(fds)


def claim(env, argv, profile=None, gave_up=False, sock="exec-pool"):
    """A claim as `corral exec` makes it (on exec-pool.sock; host.sock serves it too): the request with its
    ticket, a pipe holding one byte that the host takes to run the program. With gave_up, the client took
    it back first, as one does that stopped waiting and started a direct jail."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(env["XDG_RUNTIME_DIR"], "corral", "sessions", f"{sock}.sock"))
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    os.write(w, b"t")
    os.close(w)
    if gave_up:
        assert os.read(r, 1) == b"t"
    body = json.dumps({"op": "exec-claim", "profile": profile or {}, "argv": argv, "ticket": 0}).encode()
    s.sendmsg([struct.pack(">I", len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
    s.sendall(body)
    os.close(r)
    msg, fds = recv_frame(s)
    return s, msg, fds


def read_all(fd):
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            subprocess.run(["sleep", "0.01"])
            continue
        if not chunk:
            os.close(fd)
            return out
        out += chunk


@pytest.fixture
def pool_host(tmp_path):
    env = host_env(tmp_path, 2)
    assert corral(env, "session", "start", "--cold").returncode == 0
    for _ in range(200):
        if pool_status(env)["exec_pool"]["size"] == 2:
            break
        time.sleep(0.05)
    yield env
    corral(env, "session", "shutdown")


def procs_with(arg):
    """The `sleep ARG` processes: the jailed program, not the `corral exec -- sleep ARG` that asked for it
    (found first, it once let a test kill the host before the claim, and the client then ran a direct jail)."""
    found = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if args[0].endswith(b"sleep") and arg.encode() in args:
                found.append(int(p))
        except (OSError, ValueError):
            pass
    return found


def wait_running(arg, seconds=2):
    end = time.monotonic() + seconds
    while not procs_with(arg) and time.monotonic() < end:
        time.sleep(0.02)
    return procs_with(arg)


def wait_gone(arg, seconds):
    end = time.monotonic() + seconds
    while procs_with(arg) and time.monotonic() < end:
        time.sleep(0.02)
    return procs_with(arg)


def test_claim_over_host_sock_hands_the_output_to_the_client(pool_host):
    s, msg, fds = claim(pool_host, ["/bin/sh", "-c", "echo hello; echo err >&2; exit 5"], {"memory": "128M"})
    assert msg["t"] == "claimed" and len(fds) == 2, (msg, fds)
    assert read_all(fds[0]) == b"hello\n" and read_all(fds[1]) == b"err\n"
    msg, _ = recv_frame(s)
    r = msg["result"]
    assert msg["t"] == "result" and r["exit_code"] == 5 and r["stdout"] == "" and r["stdout_bytes"] == 0, msg
    st = pool_status(pool_host)["exec_pool"]
    assert st["claimed"] == 1, st


def test_claims_on_either_socket_and_nothing_else_on_the_pools(pool_host):
    # exec-pool.sock, where a thread waits in accept() for the next claim (daemon.c), and host.sock serve
    # the same claim; two claims on exec-pool.sock at once are both served (the waiting thread is replaced).
    first = claim(pool_host, ["/bin/sh", "-c", "read x; echo $x"])
    assert first[1]["t"] == "claimed", first[1]
    for sock in ("exec-pool", "host"):
        wait_ready(pool_host)
        s, msg, fds = claim(pool_host, ["/bin/echo", sock], sock=sock)
        assert msg["t"] == "claimed" and read_all(fds[0]) == sock.encode() + b"\n", msg
        read_all(fds[1])
        msg, _ = recv_frame(s)
        assert msg["t"] == "result" and msg["result"]["exit_code"] == 0, msg
    first[0].close()  # its hang-up kills the first jail, still waiting for its stdin
    for fd in first[2]:
        os.close(fd)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(pool_host["XDG_RUNTIME_DIR"], "corral", "sessions", "exec-pool.sock"))
    send_frame(s, {"op": "status"})
    msg, _ = recv_frame(s)
    assert msg["t"] == "error" and msg["message"] == "exec-pool.sock serves exec-claim only", msg


def test_a_claim_that_does_not_fit_falls_back(pool_host):
    s, msg, fds = claim(pool_host, ["/bin/true"], {"net": "host"})
    assert msg == {"t": "fallback", "why": "another network"} and not fds, msg
    assert pool_status(pool_host)["exec_pool"]["fallbacks"] == {"another network": 1}


def test_a_claim_with_a_member_the_host_does_not_know_falls_back(pool_host):
    # A newer corral's claim, to a host that lingered across the upgrade: run directly, never without it.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(pool_host["XDG_RUNTIME_DIR"], "corral", "sessions", "host.sock"))
    send_frame(s, {"op": "exec-claim", "profile": {}, "argv": ["/bin/true"], "quota": 1})
    msg, fds = recv_frame(s)
    assert msg == {"t": "fallback", "why": "a claim this host does not know"} and not fds, msg
    assert pool_status(pool_host)["exec_pool"]["claimed"] == 0


def test_a_client_that_took_its_ticket_back_runs_nothing_in_the_pool(pool_host):
    # It starts a direct jail instead: the pooled one must never run the program too. The host finds the
    # ticket taken, hangs up without an answer and tears the jail down.
    s, msg, fds = claim(pool_host, ["/bin/sh", "-c", "exec sleep 33.1234"], gave_up=True)
    assert msg is None and fds == [], msg
    time.sleep(0.3)
    assert procs_with("33.1234") == []
    st = pool_status(pool_host)["exec_pool"]
    assert st["claimed"] == 1 and st["running"] == 0, st


def test_a_claim_without_a_ticket_falls_back(pool_host):
    # An older corral's claim, which would have said go after "claimed": it runs directly.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(pool_host["XDG_RUNTIME_DIR"], "corral", "sessions", "exec-pool.sock"))
    send_frame(s, {"op": "exec-claim", "profile": {}, "argv": ["/bin/true"]})
    msg, fds = recv_frame(s)
    assert msg == {"t": "fallback", "why": "a claim without a ticket"} and not fds, msg
    assert pool_status(pool_host)["exec_pool"]["claimed"] == 0


def test_killing_the_client_kills_the_jail_at_once(pool_host):
    s, msg, fds = claim(pool_host, ["sleep", "31.4159"])
    assert msg["t"] == "claimed"
    assert wait_running("31.4159"), "the claimed jail's program never started"
    t0 = time.monotonic()
    s.close()  # the client's end: as if it were killed
    assert wait_gone("31.4159", 5) == [], "the jail outlived its client"
    assert time.monotonic() - t0 < 2, "the jail took long to die"
    for fd in fds:
        os.close(fd)


def test_the_rest_of_the_tree_ends_at_the_answer_and_the_jail_once_the_client_hung_up(pool_host):
    # Init kills what the program left running as it reports the program's end (its output then ends,
    # though a child held it), and lingers: the host tears the jail down once the client hung up, off the
    # client's path. Until then the claim still counts as running.
    s, msg, fds = claim(pool_host, ["/bin/sh", "-c", "sleep 41.2718 & echo hi"])
    assert msg["t"] == "claimed", msg
    t0 = time.monotonic()
    assert read_all(fds[0]) == b"hi\n" and read_all(fds[1]) == b""
    assert time.monotonic() - t0 < 1, "the output ended only when the jail did"
    msg, _ = recv_frame(s)
    assert msg["t"] == "result" and msg["result"]["exit_code"] == 0, msg
    assert wait_gone("41.2718", 1) == [], "the program's child outlived the answer"
    time.sleep(0.3)
    assert pool_status(pool_host)["exec_pool"]["running"] == 1, "the jail was torn down before the hang-up"
    s.close()
    end = time.monotonic() + 1
    while pool_status(pool_host)["exec_pool"]["running"] and time.monotonic() < end:
        time.sleep(0.02)
    assert pool_status(pool_host)["exec_pool"]["running"] == 0, "the hang-up did not end the jail"


def test_a_client_that_keeps_its_connection_does_not_keep_its_jail(pool_host):
    s, msg, fds = claim(pool_host, ["/bin/true"])
    assert msg["t"] == "claimed", msg
    for fd in fds:
        read_all(fd)
    msg, _ = recv_frame(s)
    assert msg["t"] == "result", msg
    end = time.monotonic() + 5
    while pool_status(pool_host)["exec_pool"]["running"] and time.monotonic() < end:
        time.sleep(0.05)
    assert pool_status(pool_host)["exec_pool"]["running"] == 0, "the jail waited for the hang-up for ever"
    s.close()


def test_host_killed_mid_claim_leaves_nothing_and_the_client_hears_it(pool_host):
    s, msg, fds = claim(pool_host, ["sleep", "32.7182"])
    assert msg["t"] == "claimed"
    wait_running("32.7182")
    host = pool_status(pool_host)["pid"]
    pool = [int(p) for p in subprocess.run(["pgrep", "-P", str(host)], capture_output=True, text=True).stdout.split()]
    os.kill(host, signal.SIGKILL)
    s.settimeout(10)
    msg, _ = recv_frame(s)
    assert msg is None, msg  # the connection ends without a result: the client says so, never runs it again
    assert read_all(fds[0]) == b"" and read_all(fds[1]) == b""
    assert wait_gone("32.7182", 5) == [], "the program outlived its host"
    end = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{p}") for p in pool) and time.monotonic() < end:
        time.sleep(0.02)
    assert not [p for p in pool if os.path.exists(f"/proc/{p}")], "jails of the pool outlived their host"
    # Their cgroups go with the next jail's sweep of those whose supervisor died (cgroup.c).
    subprocess.run([CORRAL, "exec", "--", "true"], capture_output=True, timeout=60,
                   env=dict(os.environ, CORRAL_EXEC_POOL="0"))  # a direct jail, which sweeps
    left = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        left += [os.path.join(root, d) for d in dirs if d.startswith(f"corral-{host}-")]
        dirs[:] = [d for d in dirs if not d.startswith("corral-")]
    assert left == [], left


# ---- corral exec through the pool ----

def wait_ready(env):
    """A jail ready in the pool: it refills once no claim came for 100 ms (exec-pool.c), so a test's claims
    one after the other would otherwise fall back to direct jails."""
    for _ in range(400):
        st = pool_status(env)
        if not st or not st["exec_pool"] or st["exec_pool"]["size"] >= 1:
            return  # no host, or no pool: nothing to wait for
        time.sleep(0.02)
    raise AssertionError(f"no jail made in advance: {pool_status(env)}")


def pool_exec(env, *args, **kw):
    if env.get("CORRAL_EXEC_POOL") != "0":
        wait_ready(env)
    return subprocess.run([CORRAL, "exec", *args], capture_output=True, text=True, env=env, timeout=120, **kw)


@pytest.fixture
def exec_env(pool_host):
    # A loaded test host may take longer than the 50 ms corral exec waits for a pooled jail by default.
    return dict(pool_host, CORRAL_EXEC_POOL_WAIT_MS="3000")


def test_corral_exec_runs_in_a_pooled_jail_as_in_a_direct_one(exec_env):
    argv = ["/bin/sh", "-c", "echo hi; echo err >&2; exit 3"]
    p = pool_exec(exec_env, "--json", "--memory", "256M", "--", *argv)
    d = pool_exec(dict(exec_env, CORRAL_EXEC_POOL="0"), "--json", "--memory", "256M", "--", *argv)
    r, rd = json.loads(p.stdout), json.loads(d.stdout)
    assert (r["from"], rd["from"]) == ("pool", "direct"), (r, rd)
    assert p.returncode == d.returncode == 3
    assert set(r) == set(rd)
    for k in ("status", "exit_code", "stdout", "stderr", "stdout_bytes", "stderr_bytes", "limit", "limits_backend"):
        assert r[k] == rd[k], (k, r, rd)
    p = pool_exec(exec_env, "--", *argv)  # streamed
    d = pool_exec(dict(exec_env, CORRAL_EXEC_POOL="0"), "--", *argv)
    assert (p.returncode, p.stdout, p.stderr) == (d.returncode, d.stdout, d.stderr) == (3, "hi\n", d.stderr), (p, d)
    assert p.stderr.endswith("err\n")  # after the rlimit note, when there is one


def test_corral_exec_limits_workspace_and_binds_at_the_claim(exec_env, tmp_path):
    r = json.loads(pool_exec(exec_env, "--json", "--memory", "64M", "--", "python3", "-c",
                             "b = bytearray(400 << 20)").stdout)
    assert (r["from"], r["limit"]) == ("pool", "memory"), r
    ws = tmp_path / "w"
    ws.mkdir()
    (tmp_path / "in.txt").write_text("data\n")
    p = pool_exec(exec_env, "--json", "-w", str(ws), "--ro-bind", f"{tmp_path / 'in.txt'}:/data/in.txt", "--",
                  "/bin/sh", "-c", "cat /data/in.txt > /workspace/out.txt")
    r = json.loads(p.stdout)
    assert r["from"] == "pool" and r["exit_code"] == 0, r
    assert (ws / "out.txt").read_text() == "data\n"
    assert [a["path"] for a in r["artifacts"]] == ["out.txt"], r


def test_corral_exec_code_through_the_pool(exec_env, tmp_path):
    """-c CODE (Python and bash): the program text reaches a pooled jail at
    /run/corral/NAME of its read-only root, as a direct jail has it, at any
    size a direct jail takes."""
    code = "import os, sys\nprint(sys.argv[0], os.listdir('/run/corral'))\n" + "x = 1\n" * 20000
    r = json.loads(pool_exec(exec_env, "--json", "-c", code + "print(x)\n").stdout)
    d = json.loads(pool_exec(dict(exec_env, CORRAL_EXEC_POOL="0"), "--json", "-c", code + "print(x)\n").stdout)
    assert (r["from"], d["from"]) == ("pool", "direct"), (r, d)
    assert r["stdout"] == d["stdout"] == "/run/corral/main.py ['main.py']\n1\n", (r, d)
    # A file of 6 MiB: more than a pre-made jail's root holds until the claim grows it.
    big = tmp_path / "big_program.py"
    big.write_text("# " + "pad " * (6 << 18) + "\nimport os\nprint(os.path.getsize('/run/corral/big_program.py'))\n")
    r = json.loads(pool_exec(exec_env, "--json", str(big)).stdout)
    assert r["from"] == "pool" and r["stdout"] == f"{big.stat().st_size}\n", r
    sh = "echo $0; touch /run/corral/other 2>/dev/null || echo read-only"
    r = json.loads(pool_exec(exec_env, "--json", "--lang", "bash", "-c", sh).stdout)
    assert r["from"] == "pool" and r["stdout"] == "/run/corral/main.sh\nread-only\n", r


def test_corral_exec_stdin_through_the_pool(exec_env, tmp_path):
    """--stdin: the caller's bytes reach the pooled jail's program as a direct
    jail's (a pipe, and a regular file of 1 MiB and more, which epoll cannot
    watch); a program that never reads its stdin still ends."""
    data = bytes(range(256)) * 4100
    for src in ("pipe", "file"):
        kw = {"input": data} if src == "pipe" else {"stdin": open(_write(tmp_path / "in.bin", data), "rb")}
        wait_ready(exec_env)
        p = subprocess.run([CORRAL, "exec", "--json", "--stdin", "--", "/bin/sh", "-c", "wc -c; echo done"],
                           capture_output=True, env=exec_env, timeout=120, **kw)
        r = json.loads(p.stdout)
        assert r["from"] == "pool" and r["stdout"] == f"{len(data)}\ndone\n", (src, r)
    wait_ready(exec_env)
    p = subprocess.run([CORRAL, "exec", "--json", "--stdin", "--", "/bin/true"], capture_output=True,
                       env=exec_env, timeout=120, input=data * 4)
    r = json.loads(p.stdout)
    assert r["from"] == "pool" and r["exit_code"] == 0, r


def test_a_pooled_result_counts_the_programs_use_and_its_tree_still_ends(exec_env):
    # The host answers once init reported the program's end, before init's own exit: CPU time and memory
    # peak come from the cgroups, and what the program left running dies with init after the answer.
    burn = ("b = bytearray(80 << 20)\nb[::4096] = b'x' * len(b[::4096])\nimport time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.3: pass\n")
    r = json.loads(pool_exec(exec_env, "--json", "--", "python3", "-c", burn).stdout)
    assert r["from"] == "pool" and r["exit_code"] == 0, r
    assert r["cpu_ms"] >= 250 and r["memory_peak_bytes"] >= 80 << 20, r
    t0 = time.monotonic()
    r = json.loads(pool_exec(exec_env, "--json", "--", "/bin/sh", "-c", "sleep 37.1234 & echo started").stdout)
    assert r["from"] == "pool" and r["exit_code"] == 0 and r["stdout"] == "started\n", r
    assert time.monotonic() - t0 < 10
    assert wait_gone("37.1234", 5) == [], "the program's child outlived its jail"


def test_a_claim_with_the_made_limits_has_them(exec_env):
    # Limits equal to those the jail was made with are not written again at the claim: they must be in
    # force all the same (128 processes, a /tmp of 256 MiB by default), as in a direct jail.
    argv = ["/bin/sh", "-c", "df -k /tmp | tail -1; for i in $(seq 200); do sleep 5 & done; wait"]
    r = json.loads(pool_exec(exec_env, "--json", "--", *argv).stdout)
    d = json.loads(pool_exec(dict(exec_env, CORRAL_EXEC_POOL="0"), "--json", "--", *argv).stdout)
    assert (r["from"], d["from"]) == ("pool", "direct"), (r, d)
    assert (r["limit"], r["exit_code"], r["status"]) == (d["limit"], d["exit_code"], d["status"]), (r, d)
    if r["limits_backend"] == "rlimit":
        assert r["exit_code"] != 0, r  # RLIMIT_NPROC: a fork failed, and the shell says so
    else:
        assert r["limit"] == "pids", r
    assert r["stdout"].split()[1] == str(256 << 10), r


def test_a_host_that_answers_late_never_runs_the_program_twice(pool_host, tmp_path):
    # A stopped host still accepts the claim (the listen queue); corral exec waits 50 ms, takes its ticket
    # back and runs a direct jail. Once the host goes on, it finds the ticket gone and runs nothing.
    wait_ready(pool_host)
    ws = tmp_path / "w"
    ws.mkdir()
    host = pool_status(pool_host)["pid"]
    os.kill(host, signal.SIGSTOP)
    try:
        p = subprocess.run([CORRAL, "exec", "--json", "-w", str(ws), "--", "/bin/sh", "-c", "echo ran >> runs"],
                           capture_output=True, text=True, env=pool_host, timeout=120)
    finally:
        os.kill(host, signal.SIGCONT)
    r = json.loads(p.stdout)
    assert r["from"] == "direct" and r["exit_code"] == 0, r
    for _ in range(100):
        st = pool_status(pool_host)["exec_pool"]
        if st["claimed"] == 1 and st["running"] == 0:
            break
        time.sleep(0.05)
    assert st["claimed"] == 1 and st["running"] == 0, st  # the host took a jail for it, then let it go
    time.sleep(0.2)
    assert (ws / "runs").read_text() == "ran\n"


def _write(path, data):
    path.write_bytes(data)
    return path


def test_an_exec_error_is_reported_however_fast_the_claim(tmp_path):
    # The program process of a pre-made jail may send init its orders, its listener and its exec error, and
    # end, before init has looked at their socket (a claim right after the jail was made, init still
    # starting): init must still report the error (it read one message after the end, and lost it in 2 runs
    # of 6 before it drained them all).
    env = dict(host_env(tmp_path, 4), CORRAL_EXEC_POOL_QUIET_MS="0", CORRAL_EXEC_POOL_WAIT_MS="3000")
    assert corral(env, "session", "start", "--cold").returncode == 0
    try:
        wait_ready(env)
        reasons = [json.loads(pool_exec(env, "--json", "--", "no-such-program-xyz").stdout) for _ in range(20)]
        assert all(r["from"] == "pool" for r in reasons[:4]), reasons
        assert all(r["exit_code"] == 127 and r["reason"] == "cannot execute 'no-such-program-xyz': No such file or "
                   "directory" for r in reasons), [(r["from"], r["reason"]) for r in reasons]
    finally:
        corral(env, "session", "shutdown")


def test_corral_exec_refuses_through_the_pool_as_directly(exec_env):
    """What a direct jail refuses (a credential without an allow-list, a bad
    limit) is refused the same with a pool ready: the same message and exit
    status, nothing run."""
    for args in (["--secret", "api.test=X-Key:HOME"], ["--pids", "0"]):
        p = pool_exec(exec_env, *args, "--", "/bin/echo", "ran")
        d = pool_exec(dict(exec_env, CORRAL_EXEC_POOL="0"), *args, "--", "/bin/echo", "ran")
        assert (p.returncode, p.stderr) == (d.returncode, d.stderr) and p.returncode in (2, 125), (args, p, d)
        assert "ran" not in p.stdout
    assert pool_status(exec_env)["exec_pool"]["claimed"] == 0


def test_corral_exec_falls_back_silently(exec_env, tmp_path):
    for env, args in ((dict(exec_env, CORRAL_EXEC_POOL="0"), []), (exec_env, ["--net", "host"]),
                      (dict(exec_env, XDG_RUNTIME_DIR=str(tmp_path)), [])):  # no host there
        p = pool_exec(env, "--json", *args, "--", "/bin/echo", "x")
        assert p.returncode == 0 and json.loads(p.stdout)["from"] == "direct", (args, p.stdout)
        assert "pool" not in p.stderr and "session" not in p.stderr, p.stderr


def test_concurrent_claims_each_get_a_jail_of_their_own(exec_env, tmp_path):
    # All 16 alive at once (a namespace's inode number is reused once it is gone): each waits for the others.
    sync = tmp_path / "sync"
    sync.mkdir()
    script = ("readlink /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt; touch /sync/$$-$(date +%N); "
              "i=0; while [ $(ls /sync | wc -l) -lt 16 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done")
    procs = [subprocess.Popen([CORRAL, "exec", "--json", "--bind", f"{sync}:/sync", "--", "/bin/sh", "-c", script],
                              stdout=subprocess.PIPE, text=True, env=exec_env) for _ in range(16)]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(r["exit_code"] == 0 for r in results), results
    ns = [tuple(r["stdout"].split()) for r in results]
    assert all(len(n) == 3 for n in ns) and len({x for n in ns for x in n}) == 48, ns  # nothing shared
    froms = [r["from"] for r in results]
    assert "pool" in froms, froms
    st = pool_status(exec_env)["exec_pool"]
    assert st["claimed"] == froms.count("pool"), (st, froms)


def test_a_running_claim_is_counted_and_the_pool_refills_beside_it(exec_env):
    # A refill waits for a claim begun less than 100 ms ago (exec-pool.c), not for good.
    p = subprocess.Popen([CORRAL, "exec", "--", "sleep", "31.2345"], env=exec_env)
    try:
        assert wait_running("31.2345", 30), "the claimed jail's program never ran"
        st = pool_status(exec_env)["exec_pool"]
        assert (st["running"], st["claimed"]) == (1, 1), st
        for _ in range(200):
            if pool_status(exec_env)["exec_pool"]["size"] == 2:
                break
            time.sleep(0.05)
        st = pool_status(exec_env)["exec_pool"]
        assert (st["size"], st["made"], st["running"]) == (2, 3, 1) and p.poll() is None, st
    finally:
        p.kill()  # its hang-up ends the claim
        p.wait()
    assert wait_gone("31.2345", 10) == []
    for _ in range(200):
        if pool_status(exec_env)["exec_pool"]["running"] == 0:
            break
        time.sleep(0.05)
    assert pool_status(exec_env)["exec_pool"]["running"] == 0


def test_killing_corral_exec_kills_the_pooled_jail_at_once(exec_env):
    p = subprocess.Popen([CORRAL, "exec", "--", "sleep", "34.5678"], env=exec_env)
    for _ in range(200):
        if procs_with("34.5678"):
            break
        time.sleep(0.02)
    assert procs_with("34.5678")
    p.kill()
    p.wait()
    t0 = time.monotonic()
    assert wait_gone("34.5678", 5) == [] and time.monotonic() - t0 < 2


def test_host_killed_while_corral_exec_runs(exec_env):
    p = subprocess.Popen([CORRAL, "exec", "--", "sleep", "35.6789"], env=exec_env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if procs_with("35.6789"):
            break
        time.sleep(0.02)
    assert procs_with("35.6789")
    os.kill(pool_status(exec_env)["pid"], signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 125 and "corral exec: the session host ended while the program ran" in err, (out, err)
    assert wait_gone("35.6789", 5) == []
    time.sleep(0.5)
    assert procs_with("35.6789") == [], "the program ran a second time"


@pytest.mark.parametrize("pool", ["pool", "direct"])
def test_init_holds_none_of_the_programs_stdin(exec_env, pool):
    # Each descriptor init gets from the program's process (its orders, its listener) came with a second one,
    # the padding of the message's control data, which was fd 0: init held the program's stdin to the end.
    if os.geteuid() != 0:
        pytest.skip("reads the descriptors of init, which is not dumpable: as root only")
    env = dict(exec_env, CORRAL_EXEC_POOL="0") if pool == "direct" else exec_env
    if pool == "pool":
        wait_ready(env)
    secs = "1.3579" if pool == "pool" else "1.3679"  # each its own, to find its process
    p = subprocess.Popen([CORRAL, "exec", "--json", "--", "sleep", secs], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)
    try:
        found = wait_running(secs, 10)
        assert found, "the program never started"
        prog = found[0]
        with open(f"/proc/{prog}/status") as f:
            init = int(next(line.split()[1] for line in f if line.startswith("PPid:")))
        stdin = os.readlink(f"/proc/{prog}/fd/0")
        # The program runs once its listener is sent; init may take it in a moment later (the orders came
        # before it, and so would any second descriptor of either message).
        end = time.monotonic() + 5
        while True:
            held = {fd: os.readlink(f"/proc/{init}/fd/{fd}") for fd in os.listdir(f"/proc/{init}/fd")}
            if any("seccomp" in what for what in held.values()) or time.monotonic() > end:
                break
            time.sleep(0.01)
        assert [fd for fd, what in held.items() if what == stdin and fd != "0"] == [], (stdin, held)
        assert sum(1 for what in held.values() if "seccomp" in what) == 1, held
    finally:
        out, _ = p.communicate(timeout=60)
    assert json.loads(out)["from"] == pool


@pytest.mark.parametrize("pool", ["pool", "direct"])
def test_the_program_starts_with_every_signals_default_action(exec_env, pool):
    # corral ignores SIGPIPE, and an ignored signal stays ignored across exec: a direct jail's program had it
    # ignored (`yes | head -1` went on writing, with "Broken pipe" errors), a pooled one's did not.
    env = dict(exec_env, CORRAL_EXEC_POOL="0") if pool == "direct" else exec_env
    r = json.loads(pool_exec(env, "--json", "--", "/bin/sh", "-c",
                             "grep -E '^Sig(Ign|Blk)' /proc/self/status; yes | head -1").stdout)
    assert r["from"] == pool and r["exit_code"] == 0, r
    assert r["stdout"] == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n", r
    assert r["stderr"] == "", r


def test_a_waiting_jail_holds_corral_init_with_one_capability_and_the_filters_bulk(pool_host):
    # Before its claim a pre-made jail's program process is corral-init in program mode: a small process
    # (no copy of the session host's memory, whose exec at the claim cost 0.2 ms more), with CAP_SYS_ADMIN
    # alone for the claim's mounts, no bounding set, and the outer part of the filter already loaded.
    host = pool_status(pool_host)["pid"]
    waiting = []
    for init in subprocess.run(["pgrep", "-P", str(host)], capture_output=True, text=True).stdout.split():
        for child in subprocess.run(["pgrep", "-P", init], capture_output=True, text=True).stdout.split():
            with open(f"/proc/{child}/status") as f:
                st = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
            if st["Name"] == "corral-init":
                waiting.append(st)
    assert len(waiting) == 2, waiting  # the pool's two jails
    for st in waiting:
        assert int(st["VmRSS"].split()[0]) < 256, st["VmRSS"]
        assert st["CapEff"] == st["CapPrm"] == st["CapAmb"] == f"{1 << 21:016x}", st  # CAP_SYS_ADMIN
        assert st["CapBnd"] == "0" * 16 and st["CapInh"] == f"{1 << 21:016x}", st
        assert st["Seccomp"] == "2" and st["Seccomp_filters"] == "1", st
