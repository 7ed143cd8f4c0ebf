/* corral-zygote: a Python interpreter with the data libraries imported that
 * forks sessions (docs/sessions.md, "Warm sessions").
 *
 * corral starts it in a jail of its own (src/session/warm.c), exec'd with
 * the jail's clean environment, so none of corral's memory (the API key) is
 * in it.  It runs as uid 0 of its own user namespace with that namespace's
 * capabilities, under a filter that adds what making a session needs.  It
 * imports numpy, pandas, matplotlib (Agg), scipy and corral's driver, checks
 * that it is single-threaded, and then only forks: it never runs user code.
 *
 * A session is made in three processes:
 *   setup   (fork of the zygote)  unshare mount, pid, network, ipc and uts
 *                                 namespaces, fork, exit
 *   init    (pid 1 of the session) a fresh /proc and /dev/pts; says
 *                                 hello to corral (which learns its host
 *                                 pid); waits in the
 *                                 warm pool.  On the claim (corral has put
 *                                 it in the session's cgroup): its own
 *                                 cgroup namespace, /tmp, /workspace,
 *                                 loopback; forks the interpreter, then
 *                                 holds its seccomp listener (EPERM or a
 *                                 kill, as corral-init), reaps, reports
 *   python  (fork of init)        rlimits; its own uid in the zygote's
 *                                 namespace (as root a host uid of its own;
 *                                 else the zygote's), then a user namespace
 *                                 of its own with it as uid 1000 (and only
 *                                 then RLIMIT_NPROC); every capability
 *                                 dropped, no_new_privs, the jail's filter
 *                                 with its listener handed to init; then
 *                                 PyOS_AfterFork_Child() and the driver.
 * Only the last runs Python again.  Never built with sanitizers.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/devpts.h"
#include "../lib/netdev.h"
#include "../lib/protocol.h"
#include "zygote-protocol.h"

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#define CTRL_FD 0
#define SESSION_UID 1000

static struct sock_filter *strict_bpf;
static unsigned short strict_len;
static uint64_t strict_eperm[CORRAL_INIT_EPERM_WORDS]; /* the calls a session's init answers EPERM */

/* ---- small helpers ---- */

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void report(int fd, uint32_t type, int32_t a, int32_t b)
{
        struct init_msg m = { .type = type, .a = a, .b = b, .t = now_ms() };
        ssize_t r = send(fd, &m, sizeof(m), MSG_NOSIGNAL);
        (void)r;
}

static __attribute__((noreturn)) void setup_fail(int ctl, int step)
{
        report(ctl, MSG_SETUP_FAILED, step, errno);
        _exit(125);
}

static int write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        size_t n = strlen(text);
        ssize_t w = write(fd, text, n);
        int e = errno;
        close(fd);
        errno = e;
        return w == (ssize_t)n ? 0 : -1;
}

static int send_fd(int sock, int fd)
{
        char tag = 'L';
        struct iovec iov = { &tag, 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* One message and up to max fds; returns its length, 0 at EOF, -1. */
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *ret_n)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * (ZYGOTE_MAX_BINDS + 4))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { buf, len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n;
        do
                n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        *ret_n = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                for (int i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (*ret_n < max)
                                fds[(*ret_n)++] = fd;
                        else
                                close(fd);
                }
        }
        return n;
}

static int capset_none(void)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof(data));
        return (int)syscall(SYS_capset, &hdr, data);
}

/* The session's init once the interpreter is forked: all it still does is
 * watch, reap, report, and kill(-1) on a violation or when corral is gone
 * (the interpreter runs as another uid of the zygote's namespace), so it
 * keeps CAP_KILL and nothing else, as corral-init keeps nothing. */
static int init_keep_only_kill(void)
{
        for (int cap = 0; cap <= 63; cap++)
                if (cap != CAP_KILL && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        return -1;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -1;
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof(data));
        data[0].permitted = data[0].effective = 1u << CAP_KILL;
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -1;
        return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); /* it never execs: nothing to gain either */
}

static int count_threads(void)
{
        DIR *d = opendir("/proc/self/task");
        int n = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
                if (e->d_name[0] != '.')
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* ---- the interpreter of one session ---- */

static void set_rlimit(int ctl, int res, uint64_t v)
{
        struct rlimit now, rl = { v, v };
        /* Only ever lower, as corral-init does. */
        if (getrlimit(res, &now) == 0 && now.rlim_max != RLIM_INFINITY) {
                if (rl.rlim_max > now.rlim_max)
                        rl.rlim_max = now.rlim_max;
                if (rl.rlim_cur > rl.rlim_max)
                        rl.rlim_cur = rl.rlim_max;
        }
        if (setrlimit(res, &rl) < 0)
                setup_fail(ctl, ZSTEP_RLIMIT);
}

static __attribute__((noreturn)) void run_python(int frames, int diag, int lsock, int ctl,
                                                 const struct zygote_claim *c, char **env)
{
        setsid();
        set_rlimit(ctl, RLIMIT_NOFILE, c->nofile);
        set_rlimit(ctl, RLIMIT_CORE, 0);
        set_rlimit(ctl, RLIMIT_FSIZE, c->disk_bytes);
        set_rlimit(ctl, RLIMIT_MEMLOCK, 8u << 20);
        set_rlimit(ctl, RLIMIT_MSGQUEUE, 1u << 20);
        if (c->cpu_time_s > 0) {
                struct rlimit rl = { c->cpu_time_s, c->cpu_time_s + 1 };
                if (setrlimit(RLIMIT_CPU, &rl) < 0)
                        setup_fail(ctl, ZSTEP_RLIMIT);
        }
        if (c->rlimit_as)
                set_rlimit(ctl, RLIMIT_AS, c->rlimit_as);

        /* The session's own id in the zygote's namespace (a host uid of its
         * own from corral's pool), then a user namespace of its own in which
         * that id is 1000: nothing of the session's namespaces (owned by the
         * zygote's) is ours to change any more. */
        if (c->uid != 0 && (setgroups(0, NULL) < 0 || setresgid(c->uid, c->uid, c->uid) < 0 ||
                            setresuid(c->uid, c->uid, c->uid) < 0))
                setup_fail(ctl, ZSTEP_USERNS);
        /* The id change made us non-dumpable: /proc/self/uid_map would be
         * root's. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        if (unshare(CLONE_NEWUSER) < 0)
                setup_fail(ctl, ZSTEP_USERNS);
        char map[32];
        snprintf(map, sizeof(map), "%d %u 1\n", SESSION_UID, c->uid);
        if (write_file("/proc/self/uid_map", map) < 0 || write_file("/proc/self/setgroups", "deny") < 0 ||
            write_file("/proc/self/gid_map", map) < 0)
                setup_fail(ctl, ZSTEP_USERNS);
        /* RLIMIT_NPROC only now.  The kernel counts processes per user
         * namespace and uid, and checks each level up the chain against the
         * limit its creator had when the namespace was made; as an ordinary
         * user every session is uid 0 of the zygote's namespace, so had we
         * lowered it first, the processes of all sessions would count
         * against this one's limit there (a neighbour's 40 processes, and a
         * session with --pids 16 could not fork).  Set here, it bounds this
         * session's own namespace; the level above keeps the zygote's. */
        if (c->rlimit_nproc)
                set_rlimit(ctl, RLIMIT_NPROC, c->rlimit_nproc);

        /* fds: the driver's 0 (requests), 1 (frames) and 2 (last words). */
        if (dup2(frames, 0) < 0 || dup2(frames, 1) < 0 || dup2(diag, 2) < 0)
                setup_fail(ctl, ZSTEP_CAPS);
        int ls = fcntl(lsock, F_DUPFD_CLOEXEC, 3);
        if (ls != 3 && (ls < 0 || dup3(ls, 3, O_CLOEXEC) < 0))
                setup_fail(ctl, ZSTEP_CAPS);
        int keep_ctl = fcntl(ctl, F_DUPFD_CLOEXEC, 4);
        if (keep_ctl != 4 && (keep_ctl < 0 || dup3(keep_ctl, 4, O_CLOEXEC) < 0))
                setup_fail(ctl, ZSTEP_CAPS);
        ctl = 4;
        syscall(SYS_close_range, 5, ~0U, 0);

        for (int cap = 0; cap <= 63; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        setup_fail(ctl, ZSTEP_CAPS);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                setup_fail(ctl, ZSTEP_CAPS);
        if (capset_none() < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                setup_fail(ctl, ZSTEP_CAPS);

        /* The jail's own filter, exactly as corral-init loads it; its
         * listener goes to the session's init.  The zygote's looser filter
         * stays beneath it: a call passes only if both allow it. */
        struct sock_fprog prog = { .len = strict_len, .filter = strict_bpf };
        long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0)
                setup_fail(ctl, ZSTEP_SECCOMP);
        if (send_fd(3, (int)listener) < 0)
                setup_fail(ctl, ZSTEP_SECCOMP);
        close((int)listener);
        close(3);
        close(ctl);
        if (chdir("/workspace") < 0)
                _exit(125);
        umask(022);
        /* Its own /proc entries as any process's (a fork keeps the
         * zygote's non-dumpable flag). */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);

        PyOS_AfterFork_Child();
        PyObject *os = PyImport_ImportModule("os");
        PyObject *py_env = os ? PyObject_GetAttrString(os, "environ") : NULL;
        for (size_t i = 0; py_env && env[i]; i++) {
                char *eq = strchr(env[i], '=');
                if (eq == NULL)
                        continue;
                PyObject *k = PyUnicode_DecodeFSDefaultAndSize(env[i], eq - env[i]);
                PyObject *v = PyUnicode_DecodeFSDefault(eq + 1);
                if (k && v)
                        PyObject_SetItem(py_env, k, v);
                Py_XDECREF(k);
                Py_XDECREF(v);
        }
        Py_XDECREF(py_env);
        Py_XDECREF(os);
        PyErr_Clear();
        int r = PyRun_SimpleString("import driver\ndriver.after_fork()\ndriver.main()\n");
        Py_Exit(r == 0 ? 0 : 1);
}

/* ---- a session's init ---- */

/* count NUL-terminated strings from buf (len bytes), as a NULL-terminated
 * array; *off moves past them.  NULL when they are not all there. */
static char **claim_strings(char *buf, size_t len, size_t *off, uint32_t count)
{
        char **v = calloc((size_t)count + 1, sizeof(char *));
        for (uint32_t i = 0; v && i < count; i++) {
                char *z = *off < len ? memchr(buf + *off, '\0', len - *off) : NULL;
                if (z == NULL) {
                        free(v);
                        return NULL;
                }
                v[i] = buf + *off;
                *off = (size_t)(z - buf) + 1;
        }
        return v;
}

/* Attach tree at rel beneath the directory ws (corral made the mount
 * point), never through a symlink or "..": one component at a time,
 * O_NOFOLLOW. */
static int attach_beneath(int ws, const char *rel, int tree)
{
        char path[4096];
        if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        int dir = fcntl(ws, F_DUPFD_CLOEXEC, 3);
        char *comp = path;
        while (dir >= 0) {
                char *slash = strchr(comp, '/');
                if (slash)
                        *slash = '\0';
                if (comp[0] == '\0' || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
                        close(dir);
                        errno = EINVAL;
                        return -1;
                }
                int next = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC | (slash ? O_DIRECTORY : 0));
                int e = errno;
                close(dir);
                if (next < 0) {
                        errno = e;
                        return -1;
                }
                if (slash == NULL) {
                        struct stat t;
                        if (fstat(next, &t) < 0 || S_ISLNK(t.st_mode)) {
                                close(next);
                                errno = ELOOP;
                                return -1;
                        }
                        int r = (int)syscall(SYS_move_mount, tree, "", next, "",
                                             MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
                        e = errno;
                        close(next);
                        errno = e;
                        return r;
                }
                dir = next;
                comp = slash + 1;
        }
        return -1;
}

/* A call the interpreter's filter handed us, answered as corral-init
 * answers it: EPERM (reported once) for the EPERM set, else a report and a
 * kill of the session. */
static void answer(int ctl, int listener, const struct seccomp_notif *req, uint64_t *seen)
{
        int32_t nr = (int32_t)req->data.nr;
        if (req->data.arch == CORRAL_AUDIT_ARCH_NATIVE && corral_eperm_has(strict_eperm, nr)) {
                struct seccomp_notif_resp resp = { .id = req->id, .error = -EPERM };
                ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
                if (!corral_eperm_has(seen, nr)) {
                        seen[nr / 64] |= 1ull << (nr % 64);
                        report(ctl, MSG_SECCOMP_EPERM, nr, (int32_t)req->data.arch);
                }
                return;
        }
        /* Kill first, as corral-init does: once we are gone the pending
         * call fails with ENOSYS and the interpreter would go on. */
        kill(-1, SIGKILL);
        report(ctl, MSG_SECCOMP_VIOLATION, nr, (int32_t)req->data.arch);
}

/* The CA bundle from corral (a memfd or the host's bundle, closed here) as ZYGOTE_CA_DIR's one
 * file, on a read-only tmpfs of the session's own: the zygote's directory
 * is empty and shared by every session.  0, or -1 with errno. */
static int install_ca_bundle(int memfd)
{
        struct stat st;
        int e = 0, fd = -1;
        if (fstat(memfd, &st) < 0) {
                e = errno;
                goto out;
        }
        if (st.st_size <= 0 || (uint64_t)st.st_size > ZYGOTE_MAX_CA) {
                e = EFBIG;
                goto out;
        }
        char opts[96];
        snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=16,mode=0755",
                 (unsigned long long)st.st_size + 65536);
        if (mount("tmpfs", ZYGOTE_CA_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
                e = errno;
                goto out;
        }
        fd = open(ZYGOTE_CA_DIR "/" ZYGOTE_CA_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
                e = errno;
                goto out;
        }
        char buf[65536];
        off_t at = 0;
        while (at < st.st_size) {
                ssize_t n = pread(memfd, buf, sizeof(buf), at);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        e = n < 0 ? errno : EIO;
                        goto out;
                }
                for (ssize_t w = 0; w < n;) {
                        ssize_t k = write(fd, buf + w, (size_t)(n - w));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0) {
                                e = errno;
                                goto out;
                        }
                        w += k;
                }
                at += n;
        }
        if (close(fd) < 0) {
                fd = -1;
                e = errno;
                goto out;
        }
        fd = -1;
        /* Read-only, as the rest of a jail's /etc. */
        if (mount(NULL, ZYGOTE_CA_DIR, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  NULL) < 0)
                e = errno;
out:
        if (fd >= 0)
                close(fd);
        close(memfd);
        errno = e;
        return e ? -1 : 0;
}

static __attribute__((noreturn)) void session_init(int frames, int ctl, int diag)
{
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        /* The zygote's /proc shows the zygote's pid namespace: a fresh one
         * for ours, with /proc/sys read-only as in every jail.  Mounted over
         * the old one, which stays hidden beneath it: the kernel lets a user
         * namespace mount proc only where a proc is already fully visible. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
            mount("/proc/sys", "/proc/sys", NULL, MS_BIND | MS_REC, NULL) < 0)
                setup_fail(ctl, ZSTEP_PROC);
        struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                             MOUNT_ATTR_NOEXEC };
        if (syscall(SYS_mount_setattr, AT_FDCWD, "/proc/sys", AT_RECURSIVE, &ro, sizeof(ro)) < 0)
                setup_fail(ctl, ZSTEP_PROC);
        /* Terminals of its own: a devpts instance over the zygote's, which
         * every session would otherwise share (/dev/ptmx points into it). */
        if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, JAIL_DEVPTS_OPTIONS) < 0)
                setup_fail(ctl, ZSTEP_DEVPTS);
        /* Hello: corral reads our host pid from the credentials. */
        report(ctl, MSG_INIT_START, 0, 0);

        /* The warm pool: wait for a claim. */
        static char buf[sizeof(struct zygote_claim) + ZYGOTE_MAX_ENV + ZYGOTE_MAX_DESTS];
        int fds[3 + ZYGOTE_MAX_BINDS], nfd = 0;
        ssize_t n = recv_fds(ctl, buf, sizeof(buf), fds, 3 + ZYGOTE_MAX_BINDS, &nfd);
        if (n <= 0)
                _exit(0); /* corral went away */
        struct zygote_claim c;
        if ((size_t)n < sizeof(c) || buf[0] != ZYGOTE_MSG_CLAIM) {
                errno = EPROTO;
                setup_fail(ctl, ZSTEP_CLAIM);
        }
        memcpy(&c, buf, sizeof(c));
        size_t off = sizeof(c);
        char **env = claim_strings(buf, (size_t)n, &off, c.envc);
        char **dests = env ? claim_strings(buf, (size_t)n, &off, c.nbinds) : NULL;
        if (dests == NULL || c.nbinds > ZYGOTE_MAX_BINDS ||
            nfd != 1 + (int)c.nbinds + (c.proxy ? 1 : 0) + (c.ca ? 1 : 0) || (c.proxy && !c.loopback) ||
            (c.ca && !c.proxy)) {
                errno = EPROTO;
                setup_fail(ctl, ZSTEP_CLAIM);
        }
        /* corral has moved us into the session's cgroup: root our view
         * there. */
        if (unshare(CLONE_NEWCGROUP) < 0)
                setup_fail(ctl, ZSTEP_CLAIM);
        char opts[128];
        snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=1777", (unsigned long long)c.disk_bytes,
                 (unsigned long long)(c.disk_bytes / 1024 + 1024));
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                setup_fail(ctl, ZSTEP_TMP);
        if (syscall(SYS_move_mount, fds[0], "", AT_FDCWD, "/workspace", MOVE_MOUNT_F_EMPTY_PATH) < 0)
                setup_fail(ctl, ZSTEP_WORKSPACE);
        close(fds[0]);
        /* The binds, in order (a later one may lie beneath an earlier). */
        if (c.nbinds > 0) {
                int ws = open("/workspace", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (ws < 0)
                        setup_fail(ctl, ZSTEP_BIND);
                for (uint32_t i = 0; i < c.nbinds; i++) {
                        if (attach_beneath(ws, dests[i], fds[1 + i]) < 0)
                                setup_fail(ctl, ZSTEP_BIND);
                        close(fds[1 + i]);
                }
                close(ws);
        }
        free(dests);
        if (c.loopback && netdev_loopback_up() < 0)
                setup_fail(ctl, ZSTEP_LOOPBACK);
        /* --net allow: the proxy's listening socket, made in this
         * namespace and served by corral on the host (warm.c, proxy.c);
         * nothing in the session holds it after this. */
        if (c.proxy && netdev_proxy_listener_send(fds[1 + c.nbinds]) < 0)
                setup_fail(ctl, ZSTEP_PROXY);
        /* --net allow: the system's roots (and, with brokered credentials,
         * the session's own CA) where a cold jail has them
         * (docs/network.md).  A copy, not a bind: the host's file is not
         * in this mount namespace, and ~200 KiB cost little. */
        if (c.ca && install_ca_bundle(fds[1 + c.nbinds + 1]) < 0)
                setup_fail(ctl, ZSTEP_CA);

        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                setup_fail(ctl, ZSTEP_FORK);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                setup_fail(ctl, ZSTEP_FORK);
        pid_t py = fork();
        if (py < 0)
                setup_fail(ctl, ZSTEP_FORK);
        if (py == 0) {
                sigprocmask(SIG_UNBLOCK, &chld, NULL);
                close(sv[0]);
                close(sfd);
                run_python(frames, diag, sv[1], ctl, &c, env);
        }
        close(sv[1]);
        close(frames);
        close(diag);
        if (init_keep_only_kill() < 0) {
                kill(py, SIGKILL);
                setup_fail(ctl, ZSTEP_CAPS);
        }

        int listener = -1, status = 0;
        bool sock_open = true;
        uint64_t eperm_seen[CORRAL_INIT_EPERM_WORDS] = { 0 };
        for (;;) {
                struct pollfd p[4] = {
                        { .fd = sfd, .events = POLLIN },
                        { .fd = sock_open ? sv[0] : -1, .events = POLLIN },
                        { .fd = listener, .events = POLLIN },
                        { .fd = ctl, .events = 0 }, /* hang-up: corral is gone */
                };
                if (poll(p, 4, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents) {
                        int got[1], ng = 0;
                        char tag;
                        if (recv_fds(sv[0], &tag, 1, got, 1, &ng) <= 0) {
                                close(sv[0]);
                                sock_open = false;
                        } else if (ng == 1) {
                                listener = got[0];
                        }
                }
                if (p[2].revents & POLLIN) {
                        struct seccomp_notif req;
                        memset(&req, 0, sizeof(req));
                        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0)
                                answer(ctl, listener, &req, eperm_seen);
                } else if (p[2].revents & (POLLHUP | POLLERR)) {
                        close(listener);
                        listener = -1;
                }
                if (p[3].revents & (POLLHUP | POLLERR)) {
                        kill(-1, SIGKILL);
                        _exit(0);
                }
                if (p[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) > 0)
                                ;
                        int st;
                        pid_t w;
                        while ((w = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
                                if (w == py) {
                                        status = st;
                                        report(ctl, MSG_EXITED, status, 0);
                                        /* Leaving takes the rest of the pid namespace. */
                                        _exit(0);
                                }
                        }
                }
        }
        kill(-1, SIGKILL);
        _exit(125);
}

/* ---- forking one session ---- */

static void fork_session(int frames, int ctl, int diag)
{
        PyOS_BeforeFork();
        pid_t setup = fork();
        if (setup == 0) {
                /* Not Python any more until the interpreter's own fork. */
                int keep[3] = { frames, ctl, diag };
                int hi[3];
                for (int i = 0; i < 3; i++)
                        hi[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 100 + i);
                for (int i = 0; i < 3; i++)
                        if (hi[i] < 0 || dup3(hi[i], 10 + i, O_CLOEXEC) < 0)
                                _exit(125);
                syscall(SYS_close_range, 0, 9, 0);
                syscall(SYS_close_range, 13, ~0U, 0);
                frames = 10;
                ctl = 11;
                diag = 12;
                int null = open("/dev/null", O_RDWR);
                if (null >= 0 && null != 0) /* 0-2 must not be a stray pipe */
                        dup2(null, 0);
                dup2(0, 1);
                dup2(0, 2);
                if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
                        setup_fail(ctl, ZSTEP_UNSHARE);
                pid_t init = fork();
                if (init < 0)
                        setup_fail(ctl, ZSTEP_FORK);
                if (init == 0)
                        session_init(frames, ctl, diag);
                _exit(0);
        }
        PyOS_AfterFork_Parent();
        if (setup < 0)
                report(ctl, MSG_SETUP_FAILED, ZSTEP_FORK, errno);
        close(frames);
        close(ctl);
        close(diag);
        if (setup > 0)
                while (waitpid(setup, NULL, 0) < 0 && errno == EINTR)
                        ;
}

static void fail_msg(const char *what, const char *detail)
{
        char msg[1024];
        int n = snprintf(msg, sizeof(msg), "%c%s%s%s", ZYGOTE_MSG_FAILED, what, detail ? ": " : "",
                         detail ? detail : "");
        ssize_t r = send(CTRL_FD, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, MSG_NOSIGNAL);
        (void)r;
}

static const char imports[] =
        "import sys\n"
        "sys.path.insert(0, '" ZYGOTE_DRIVER_DIR "')\n"
        "import driver\n"
        "import numpy, pandas, scipy, scipy.stats, matplotlib\n"
        "matplotlib.use('Agg')\n"
        "import matplotlib.pyplot\n"
        "import gc\n"
        "gc.collect()\n"
        /* Objects that exist now are never scanned again: the collector
         * does not dirty their pages in each session (copy-on-write). */
        "gc.freeze()\n";

int main(void)
{
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        static struct sock_filter bpf[ZYGOTE_MAX_BPF + 1];
        static char msg[1 + sizeof(strict_eperm) + sizeof(bpf)];
        const size_t head = 1 + sizeof(strict_eperm);
        int nfd;
        ssize_t n = recv_fds(CTRL_FD, msg, sizeof(msg), NULL, 0, &nfd);
        if (n <= (ssize_t)head || msg[0] != ZYGOTE_MSG_BPF || ((size_t)n - head) % sizeof(struct sock_filter) != 0 ||
            ((size_t)n - head) / sizeof(struct sock_filter) > ZYGOTE_MAX_BPF) {
                fail_msg("the zygote did not get its filter", NULL);
                return 125;
        }
        memcpy(strict_eperm, msg + 1, sizeof(strict_eperm));
        memcpy(bpf, msg + head, (size_t)n - head);
        strict_bpf = bpf;
        strict_len = (unsigned short)(((size_t)n - head) / sizeof(struct sock_filter));

        double t0 = now_ms();
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.parse_argv = 0;
        config.buffered_stdio = 0;
        config.write_bytecode = 0;
        PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, "/usr/bin/python3");
        if (!PyStatus_Exception(st))
                st = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(st)) {
                fail_msg("cannot start Python in the zygote", st.err_msg);
                return 125;
        }
        if (PyRun_SimpleString(imports) != 0) {
                fail_msg("the zygote cannot import the data libraries (its stderr says why)", NULL);
                return 125;
        }
        struct zygote_ready r = { .type = ZYGOTE_MSG_READY, .threads = (uint32_t)count_threads(),
                                  .import_ms = now_ms() - t0 };
        if (r.threads != 1) {
                char why[32];
                snprintf(why, sizeof(why), "%u threads", r.threads);
                fail_msg("the zygote is not single-threaded after its imports and will not fork", why);
                return 125;
        }
        if (send(CTRL_FD, &r, sizeof(r), MSG_NOSIGNAL) < 0)
                return 125;

        for (;;) {
                char req[16];
                int fds[3];
                n = recv_fds(CTRL_FD, req, sizeof(req), fds, 3, &nfd);
                if (n <= 0)
                        break; /* corral is gone: so are we */
                if (req[0] == ZYGOTE_MSG_FORK && nfd == 3) {
                        fork_session(fds[0], fds[1], fds[2]);
                } else {
                        for (int i = 0; i < nfd; i++)
                                close(fds[i]);
                }
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
        return 0;
}
