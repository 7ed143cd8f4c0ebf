"""The uid pool as root: one host uid per jail, leased so that no other
local user can take the leases away.

Earlier versions leased a uid by binding the abstract unix socket
"corral-uid-N": any local user could bind those names first and leave root's
corral with no uid to run a jail under.  Leases are now locks on a file only
root can open (docs/security.md, "Identity")."""
import os
import socket
import stat
import subprocess

import pytest

from corral_attack import CORRAL, IS_ROOT, ROOT_ONLY

pytestmark = pytest.mark.skipif(not IS_ROOT, reason=ROOT_ONLY)

START, COUNT = 1500000000, 4

SQUAT = r"""
import os, signal, socket, sys
socks = []
for uid in range(int(sys.argv[1]), int(sys.argv[1]) + int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0corral-uid-%d" % uid)
    socks.append(s)
print("bound", flush=True)
signal.pause()
"""


def test_an_ordinary_user_cannot_starve_the_uid_pool(tmp_path):
    def drop():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    squatter = subprocess.Popen(["python3", "-c", SQUAT, str(START), str(COUNT)], stdout=subprocess.PIPE,
                                text=True, preexec_fn=drop)
    try:
        assert squatter.stdout.readline().strip() == "bound"
        # every uid of the range is "taken" the old way; the jails still run,
        # each under a uid of the range
        for _ in range(3):
            r = subprocess.run([CORRAL, "exec", "--uid-range", f"{START}:{COUNT}", "--json", "--", "sleep", "0"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
        # and nobody but root can open the pool's lock
        st = os.stat("/run/corral")
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and st.st_mode & 0o022 == 0
        st = os.stat("/run/corral/uid-pool.lock")
        assert st.st_uid == 0 and st.st_mode & 0o077 == 0
        probe = subprocess.run(["python3", "-c", "open('/run/corral/uid-pool.lock', 'r+')"], capture_output=True,
                               text=True, preexec_fn=drop)
        assert probe.returncode != 0 and "Permission denied" in probe.stderr
    finally:
        squatter.kill()
        squatter.wait()


def test_concurrent_jails_get_distinct_uids_from_a_small_range():
    """Four jails at once from a range of four: each its own uid; a fifth
    finds none free and says so."""
    procs = [subprocess.Popen([CORRAL, "exec", "--uid-range", f"{START}:{COUNT}", "--json", "--", "sh", "-c",
                               "cat /proc/self/uid_map; sleep 2"], stdout=subprocess.PIPE, text=True)
             for _ in range(COUNT)]
    try:
        import time
        time.sleep(1)
        r = subprocess.run([CORRAL, "exec", "--uid-range", f"{START}:{COUNT}", "--", "true"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 125 and f"all {COUNT} jail uids from {START} are in use" in r.stderr, r.stderr
    finally:
        outs = [p.communicate(timeout=60)[0] for p in procs]
    import json
    host_uids = {int(json.loads(o)["stdout"].split()[1]) for o in outs}
    assert host_uids == set(range(START, START + COUNT)), outs
