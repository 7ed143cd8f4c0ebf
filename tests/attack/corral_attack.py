"""Helpers shared by the attack suite: running jails, watching the host.

Everything here runs on the host.  Programs that run inside a jail are plain
strings in the test files.  The suite reads nothing outside its own directory
at run time except CORRAL_SOURCE_ROOT/src/lib/seccomp.c (for the syscall
sweep) and, when present, the kernel's x86_64 syscall header; both have a
fallback here.
"""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORRAL = os.environ.get("CORRAL") or "/work/main/build/corral"
IS_ROOT = os.geteuid() == 0
# corral's default --uid-range when it runs as root.
UID_RANGE = range(1400000000, 1400000000 + 65536)

# What the terminal summary reports; filled by the preflight and the tests.
SESSION = {"backend": None, "notes": []}


def note(text):
    """A line for the terminal summary (environment quirks the suite tolerated)."""
    if text not in SESSION["notes"]:
        SESSION["notes"].append(text)


ROOT_ONLY = "needs root: checks the host uid corral assigns to jails from its uid range"
USER_ONLY = "needs an ordinary user: as root the jail gets a uid from the pool, not the caller's"


def marker(tag):
    """A string that appears nowhere on the host until a test puts it somewhere."""
    return f"corral-attack-{tag}-{uuid.uuid4().hex[:12]}"


# ---- running corral ----

class JailRun(dict):
    """The parsed `corral exec --json` object, plus what the host measured:
    elapsed (seconds), rc (corral's exit status), host_stderr (corral's own
    stderr) and maxrss_kb (peak RSS of corral and everything it waited for,
    from wait4)."""

    elapsed = 0.0
    rc = None
    host_stderr = ""
    maxrss_kb = 0

    def __repr__(self):
        keep = {k: self.get(k) for k in ("status", "exit_code", "signal", "limit", "reason", "syscall",
                                           "limits_backend")}
        keep["stdout"] = (self.get("stdout") or "")[:600]
        keep["stderr"] = (self.get("stderr") or "")[-600:]
        keep["host_stderr"] = self.host_stderr[-400:]
        return f"JailRun({keep!r}, elapsed={self.elapsed:.2f})"


def corral_argv(args=(), code=None, lang="python", argv=(), json_out=True):
    cmd = [CORRAL, "exec"]
    if json_out:
        cmd.append("--json")
    cmd += list(args)
    if code is not None:
        cmd += ["--lang", lang, "-c", code]
        if argv:
            cmd += ["--", *argv]
    else:
        cmd += list(argv)
    return cmd


def _reader(stream, sink):
    sink.append(stream.read())
    stream.close()


class JailProc:
    """A `corral exec --json` running in the background; wait() gives a JailRun."""

    def __init__(self, args=(), code=None, timeout=2, lang="python", argv=(), env=None, pass_fds=(),
                 host_timeout=None):
        args = list(args)
        if timeout is not None and not any(a in ("-t", "--timeout") or a.startswith("--timeout=") for a in args):
            args = ["-t", str(timeout)] + args
        self.cmd = corral_argv(args, code, lang, argv)
        self.host_timeout = host_timeout or (float(timeout or 30) + 20)
        self.start = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, pass_fds=tuple(pass_fds),
                                  start_new_session=True)
        self._out, self._err = [], []
        self._threads = [threading.Thread(target=_reader, args=(self.p.stdout, self._out), daemon=True),
                         threading.Thread(target=_reader, args=(self.p.stderr, self._err), daemon=True)]
        for t in self._threads:
            t.start()

    @property
    def pid(self):
        return self.p.pid

    def wait(self):
        deadline = self.start + self.host_timeout
        status = rusage = None
        while True:
            pid, status, rusage = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(self.p.pid, signal.SIGKILL)
                os.wait4(self.p.pid, 0)
                raise AssertionError(f"corral did not return within {self.host_timeout:.0f} s "
                                     f"(the wall limit did not work): {self.cmd[:6]}")
            time.sleep(0.005)
        elapsed = time.monotonic() - self.start
        self.p.returncode = os.waitstatus_to_exitcode(status)
        for t in self._threads:
            t.join(10)
        out = b"".join(self._out).decode("utf-8", "replace")
        err = b"".join(self._err).decode("utf-8", "replace")
        if not out.strip():
            raise AssertionError(f"corral printed no JSON (rc={self.p.returncode}): {err.strip()[-1500:]}")
        try:
            run = JailRun(json.loads(out))
        except ValueError as e:
            raise AssertionError(f"corral printed invalid JSON ({e}): {out[:500]!r}") from None
        run.elapsed = elapsed
        run.rc = self.p.returncode
        run.host_stderr = err
        run.maxrss_kb = rusage.ru_maxrss
        return run

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_jail(args=(), code=None, timeout=2, **kw):
    """Run CODE (python unless lang="bash") or `-- argv` through `corral exec
    --json` with `-t timeout` unless args set one; returns a JailRun."""
    return JailProc(args, code, timeout, **kw).wait()


def out_json(run):
    """The last line of the jail's stdout, parsed: programs report with
    print(json.dumps(...))."""
    lines = [ln for ln in run["stdout"].splitlines() if ln.strip()]
    assert lines, f"the jail printed nothing: {run!r}"
    return json.loads(lines[-1])


def assert_seccomp_kill(run, name):
    assert run["status"] == "killed", run
    assert run["limit"] == "seccomp", run
    assert run.get("syscall") == name, run
    assert run["exit_code"] == 128 + signal.SIGSYS, run


def assert_denied(run, *names):
    """The jail answered these calls with EPERM and lived on: not killed, and
    the result lists them under "denied".  (A warm session's step does not
    list them: its runner sets "denied" to None.)"""
    assert run["limit"] != "seccomp" and run.get("syscall") is None, run
    if "denied" in run and run["denied"] is None:
        return
    assert run.get("denied") == list(names), run


# ---- watching the host ----

def host_procs(needle, jail_only=True):
    """{pid: argv} of host processes whose command line contains needle.
    jail_only drops corral itself (whose -c CODE often holds the needle)."""
    found = {}
    nb = needle.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if nb not in cmd:
            continue
        argv = [a.decode("utf-8", "replace") for a in cmd.split(b"\0") if a]
        if jail_only and argv and os.path.basename(argv[0]) == os.path.basename(CORRAL):
            continue
        found[int(d)] = argv
    return found


def wait_for_procs(needle, count=1, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = host_procs(needle)
        if len(found) >= count:
            return found
        time.sleep(0.01)
    return host_procs(needle)


def host_uid_of(pid):
    """The real uid of a host process, as `ps -o uid=` reports it."""
    ps = shutil.which("ps")
    if ps:
        r = subprocess.run([ps, "-o", "uid=", "-p", str(pid)], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return int(r.stdout.split()[0])
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    raise AssertionError(f"cannot find the uid of pid {pid}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ns_inode(kind):
    return os.stat(f"/proc/self/ns/{kind}").st_ino


# ---- the seccomp policy ----

# The two deny-lists as of this suite's writing (docs/security.md gives the
# reason for each call).  Tested together with whatever seccomp.c lists now:
# a call may join a list freely, but one that leaves it (for the other list
# or the allow-list) must leave these too, on purpose.
KILL_BASELINE = (
    "ptrace process_vm_readv process_vm_writev pidfd_getfd process_madvise kcmp keyctl add_key request_key bpf "
    "perf_event_open userfaultfd io_uring_enter io_uring_register kexec_load kexec_file_load "
    "init_module finit_module delete_module create_module open_by_handle_at uselib modify_ldt vm86 vm86old"
).split()
EPERM_BASELINE = (
    "mount umount2 umount pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr "
    "unshare setns reboot swapon swapoff acct settimeofday clock_settime clock_adjtime adjtimex sethostname "
    "setdomainname iopl ioperm quotactl quotactl_fd syslog vhangup name_to_handle_at fanotify_init "
    "lookup_dcookie _sysctl nfsservctl io_uring_setup"
).split()
# Before issue 25 every one of them killed; none may have left both lists.
DENIED_BASELINE = (
    "ptrace process_vm_readv process_vm_writev pidfd_getfd process_madvise kcmp mount umount2 umount "
    "pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr unshare setns keyctl "
    "add_key request_key bpf perf_event_open userfaultfd kexec_load kexec_file_load init_module finit_module "
    "delete_module create_module reboot swapon swapoff acct open_by_handle_at name_to_handle_at io_uring_setup "
    "io_uring_enter io_uring_register settimeofday clock_settime clock_adjtime adjtimex sethostname "
    "setdomainname iopl ioperm quotactl quotactl_fd lookup_dcookie syslog vhangup uselib _sysctl nfsservctl "
    "modify_ldt fanotify_init vm86 vm86old"
).split()

# x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl), used when
# the kernel header is not installed.  Numbers never change once assigned.
_X86_64_TABLE = """
0 read 1 write 2 open 3 close 4 stat 5 fstat 6 lstat 7 poll 8 lseek 9 mmap 10 mprotect 11 munmap
12 brk 13 rt_sigaction 14 rt_sigprocmask 15 rt_sigreturn 16 ioctl 17 pread64 18 pwrite64 19 readv
20 writev 21 access 22 pipe 23 select 24 sched_yield 25 mremap 26 msync 27 mincore 28 madvise
29 shmget 30 shmat 31 shmctl 32 dup 33 dup2 34 pause 35 nanosleep 36 getitimer 37 alarm 38 setitimer
39 getpid 40 sendfile 41 socket 42 connect 43 accept 44 sendto 45 recvfrom 46 sendmsg 47 recvmsg
48 shutdown 49 bind 50 listen 51 getsockname 52 getpeername 53 socketpair 54 setsockopt
55 getsockopt 56 clone 57 fork 58 vfork 59 execve 60 exit 61 wait4 62 kill 63 uname 64 semget
65 semop 66 semctl 67 shmdt 68 msgget 69 msgsnd 70 msgrcv 71 msgctl 72 fcntl 73 flock 74 fsync
75 fdatasync 76 truncate 77 ftruncate 78 getdents 79 getcwd 80 chdir 81 fchdir 82 rename 83 mkdir
84 rmdir 85 creat 86 link 87 unlink 88 symlink 89 readlink 90 chmod 91 fchmod 92 chown 93 fchown
94 lchown 95 umask 96 gettimeofday 97 getrlimit 98 getrusage 99 sysinfo 100 times 101 ptrace
102 getuid 103 syslog 104 getgid 105 setuid 106 setgid 107 geteuid 108 getegid 109 setpgid
110 getppid 111 getpgrp 112 setsid 113 setreuid 114 setregid 115 getgroups 116 setgroups
117 setresuid 118 getresuid 119 setresgid 120 getresgid 121 getpgid 122 setfsuid 123 setfsgid
124 getsid 125 capget 126 capset 127 rt_sigpending 128 rt_sigtimedwait 129 rt_sigqueueinfo
130 rt_sigsuspend 131 sigaltstack 132 utime 133 mknod 134 uselib 135 personality 136 ustat
137 statfs 138 fstatfs 139 sysfs 140 getpriority 141 setpriority 142 sched_setparam
143 sched_getparam 144 sched_setscheduler 145 sched_getscheduler 146 sched_get_priority_max
147 sched_get_priority_min 148 sched_rr_get_interval 149 mlock 150 munlock 151 mlockall
152 munlockall 153 vhangup 154 modify_ldt 155 pivot_root 156 _sysctl 157 prctl 158 arch_prctl
159 adjtimex 160 setrlimit 161 chroot 162 sync 163 acct 164 settimeofday 165 mount 166 umount2
167 swapon 168 swapoff 169 reboot 170 sethostname 171 setdomainname 172 iopl 173 ioperm
174 create_module 175 init_module 176 delete_module 177 get_kernel_syms 178 query_module
179 quotactl 180 nfsservctl 181 getpmsg 182 putpmsg 183 afs_syscall 184 tuxcall 185 security
186 gettid 187 readahead 188 setxattr 189 lsetxattr 190 fsetxattr 191 getxattr 192 lgetxattr
193 fgetxattr 194 listxattr 195 llistxattr 196 flistxattr 197 removexattr 198 lremovexattr
199 fremovexattr 200 tkill 201 time 202 futex 203 sched_setaffinity 204 sched_getaffinity
205 set_thread_area 206 io_setup 207 io_destroy 208 io_getevents 209 io_submit 210 io_cancel
211 get_thread_area 212 lookup_dcookie 213 epoll_create 214 epoll_ctl_old 215 epoll_wait_old
216 remap_file_pages 217 getdents64 218 set_tid_address 219 restart_syscall 220 semtimedop
221 fadvise64 222 timer_create 223 timer_settime 224 timer_gettime 225 timer_getoverrun
226 timer_delete 227 clock_settime 228 clock_gettime 229 clock_getres 230 clock_nanosleep
231 exit_group 232 epoll_wait 233 epoll_ctl 234 tgkill 235 utimes 236 vserver 237 mbind
238 set_mempolicy 239 get_mempolicy 240 mq_open 241 mq_unlink 242 mq_timedsend 243 mq_timedreceive
244 mq_notify 245 mq_getsetattr 246 kexec_load 247 waitid 248 add_key 249 request_key 250 keyctl
251 ioprio_set 252 ioprio_get 253 inotify_init 254 inotify_add_watch 255 inotify_rm_watch
256 migrate_pages 257 openat 258 mkdirat 259 mknodat 260 fchownat 261 futimesat 262 newfstatat
263 unlinkat 264 renameat 265 linkat 266 symlinkat 267 readlinkat 268 fchmodat 269 faccessat
270 pselect6 271 ppoll 272 unshare 273 set_robust_list 274 get_robust_list 275 splice 276 tee
277 sync_file_range 278 vmsplice 279 move_pages 280 utimensat 281 epoll_pwait 282 signalfd
283 timerfd_create 284 eventfd 285 fallocate 286 timerfd_settime 287 timerfd_gettime 288 accept4
289 signalfd4 290 eventfd2 291 epoll_create1 292 dup3 293 pipe2 294 inotify_init1 295 preadv
296 pwritev 297 rt_tgsigqueueinfo 298 perf_event_open 299 recvmmsg 300 fanotify_init
301 fanotify_mark 302 prlimit64 303 name_to_handle_at 304 open_by_handle_at 305 clock_adjtime
306 syncfs 307 sendmmsg 308 setns 309 getcpu 310 process_vm_readv 311 process_vm_writev 312 kcmp
313 finit_module 314 sched_setattr 315 sched_getattr 316 renameat2 317 seccomp 318 getrandom
319 memfd_create 320 kexec_file_load 321 bpf 322 execveat 323 userfaultfd 324 membarrier 325 mlock2
326 copy_file_range 327 preadv2 328 pwritev2 329 pkey_mprotect 330 pkey_alloc 331 pkey_free
332 statx 333 io_pgetevents 334 rseq 424 pidfd_send_signal 425 io_uring_setup 426 io_uring_enter
427 io_uring_register 428 open_tree 429 move_mount 430 fsopen 431 fsconfig 432 fsmount 433 fspick
434 pidfd_open 435 clone3 436 close_range 437 openat2 438 pidfd_getfd 439 faccessat2
440 process_madvise 441 epoll_pwait2 442 mount_setattr 443 quotactl_fd 444 landlock_create_ruleset
445 landlock_add_rule 446 landlock_restrict_self 447 memfd_secret 448 process_mrelease
449 futex_waitv 450 set_mempolicy_home_node 451 cachestat 452 fchmodat2 453 map_shadow_stack
454 futex_wake 455 futex_wait 456 futex_requeue 457 statmount 458 listmount 459 lsm_get_self_attr
460 lsm_set_self_attr 461 lsm_list_modules 462 mseal 463 setxattrat 464 getxattrat 465 listxattrat
466 removexattrat 467 open_tree_attr 468 file_getattr 469 file_setattr
"""

UNISTD_64 = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"


def syscall_numbers():
    """{name: number} for x86_64: the installed kernel header where readable,
    the table above for the rest."""
    words = _X86_64_TABLE.split()
    table = {words[i + 1]: int(words[i]) for i in range(0, len(words), 2)}
    try:
        with open(UNISTD_64) as f:
            hdr = f.read()
    except OSError:
        return table
    table.update({m.group(1): int(m.group(2)) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)", hdr)})
    return table


def seccomp_source_path():
    root = os.environ.get("CORRAL_SOURCE_ROOT") or str(HERE.parents[1])
    return os.path.join(root, "src", "lib", "seccomp.c")


def seccomp_lists():
    """(allowed, killed, eperm) name lists parsed from seccomp.c, or None with
    the reason when the source cannot be read."""
    path = seccomp_source_path()
    try:
        with open(path) as f:
            src = f.read()
    except OSError as e:
        return None, f"cannot read {path} ({e.strerror}); set CORRAL_SOURCE_ROOT to the source tree"
    lists = []
    for name in ("allowed_syscalls", "kill_syscalls", "eperm_syscalls"):
        m = re.search(r"\b%s\s*\[\]\s*=\s*\{(.*?)\};" % name, src, re.S)
        if m is None:
            return None, f"no {name}[] array in {path}"
        lists.append(re.findall(r'"([^"]+)"', m.group(1)))
    return tuple(lists), None


# Calls whose file-mode argument seccomp.c checks (name: index of the mode
# argument).  They are on neither list: a mode with S_ISUID or S_ISGID is
# EPERM, anything else is allowed.  openat2 keeps its mode in memory, out of
# the filter's reach, and so is not allowed at all (ENOSYS).
MODE_CHECKED = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "creat": 1, "open": 2, "openat": 3, "mknod": 1,
                "mknodat": 2}

# What a path the jail must not reach may answer: missing, or refused
# (/proc/1/... of the non-dumpable corral-init is EACCES).
UNREACHABLE = ("err:No such file or directory", "err:Permission denied")


def _deny_list(baseline, which):
    lists, _ = seccomp_lists()
    names = list(baseline)
    if lists:
        names += [n for n in lists[which] if n not in names]
    table = syscall_numbers()
    return [(n, table[n]) for n in names if n in table]


def killed_syscalls():
    """Every call whose attempt kills the jail that exists on x86_64, as
    (name, number)."""
    return _deny_list(KILL_BASELINE, 1)


def eperm_syscalls():
    """Every call the jail answers with EPERM that exists on x86_64, as
    (name, number)."""
    return _deny_list(EPERM_BASELINE, 2)


def errno_name(e):
    return errno.errorcode.get(e, str(e))


PREFLIGHT_CODE = r"""
import json, os, socket
ns = {k: os.stat(f"/proc/self/ns/{k}").st_ino for k in ("pid", "net", "mnt", "user", "ipc", "uts")}
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
with open("/proc/net/dev") as f:
    netdev = [line.split(":")[0].strip() for line in f.read().splitlines()[2:]]
print(json.dumps({"ns": ns, "pids": pids, "ifaces": [n for _, n in socket.if_nameindex()],
                  "netdev": netdev, "mypid": os.getpid(), "uid": os.getuid()}))
"""


def preflight_problems(run_jail, net):
    """(problems, run): the isolation every attack relies on, proved by a
    probe run through run_jail with --net NET (a direct jail, a pooled one,
    a session step); problems empty when it holds."""
    try:
        run = run_jail(["--net", net, "--pids", "16", "-m", "256M"], PREFLIGHT_CODE, timeout=10)
    except AssertionError as e:
        return [f"--net {net}: {e}"], None
    if run["status"] != "ok":
        return [f"--net {net}: the preflight program did not run: {run!r}"], run
    info = out_json(run)
    problems = []
    for kind in ("pid", "net", "mnt", "user"):
        if info["ns"][kind] == ns_inode(kind):
            problems.append(f"--net {net}: the jail shares the host's {kind} namespace "
                            f"(inode {info['ns'][kind]})")
    if len(info["pids"]) > 4 or max(info["pids"]) > 16:
        problems.append(f"--net {net}: the jail sees pids {info['pids'][:20]} (expected only its own few)")
    if os.getpid() in info["pids"] and os.getpid() > 16:
        problems.append(f"--net {net}: the jail sees the test runner's pid {os.getpid()}")
    if info["ifaces"] != ["lo"] or info["netdev"] != ["lo"]:
        problems.append(f"--net {net}: network interfaces {info['ifaces']} / {info['netdev']} (expected only lo)")
    if info["uid"] == 0:
        problems.append(f"--net {net}: the jail runs as uid 0")
    return problems, run
