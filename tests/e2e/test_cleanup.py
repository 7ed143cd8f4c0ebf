"""Nothing is left behind: processes, cgroups, mounts, temp dirs."""
import glob
import os
import subprocess
import time


def corral_cgroups():
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if root.count("/") > 8:
            dirs[:] = []
            continue
        found += [os.path.join(root, d) for d in dirs if d.startswith(f"corral-")]
    return sorted(found)


def test_no_leftovers_after_runs(corral):
    before_cg = corral_cgroups()
    before_tmp = sorted(os.listdir("/tmp"))
    marker = f"corral-leftover-{os.getpid()}"
    for args in (["-c", "print(1)"],
                 ["--timeout", "0.5", "--", "sh", "-c", f"sleep 30 & exec -a {marker} sleep 30"],
                 ["-c", f"import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execvp('sh', ['sh', '-c', 'exec -a {marker} sleep 30'])\n"],
                 ["--", "no-such-program"]):
        corral("exec", *args)
    time.sleep(0.2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert marker not in ps
    assert corral_cgroups() == before_cg
    assert sorted(os.listdir("/tmp")) == before_tmp
    assert not any("corral" in line and "oldroot" in line for line in open("/proc/self/mountinfo"))
