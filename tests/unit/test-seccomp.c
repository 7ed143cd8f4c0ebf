/* test-seccomp.c: the jail's system-call filter (src/lib/seccomp.c).
 *
 * The program is built once and checked for size; then a forked child loads
 * it (no_new_privs + SECCOMP_FILTER_FLAG_NEW_LISTENER, as corral-init does),
 * hands the listener to this process over a socket and makes a fixed list of
 * calls.  This process plays init's part: it receives each user notification,
 * records which call it was and answers EPERM so the child carries on.  The
 * child then reports what every call returned.  Allowed calls must work,
 * unlisted ones (and clone3) fail with ENOSYS without a notification, denied
 * ones notify.  A pre-made jail's filter in two parts is checked twice: in
 * a child that loads both as enter.c does, and by running the three
 * programs here, in a small evaluator, over every system call number with
 * the arguments the policy looks at. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jail-internal.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define X32_BIT 0x40000000
#define TIOCLINUX_CMD 0x541C
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_BE_4 ((2 << 13) | 4)

TEST(program)
{
        const struct jail_bpf *bpf = NULL;
        corral_error *err = NULL;
        CHECK_INT(jail_seccomp_program(&bpf, &err), 0);
        CHECK(err == NULL);
        CHECK(bpf != NULL && bpf->insns != NULL);
        if (bpf == NULL)
                return;
        printf("# %zu instructions\n", bpf->len);
        CHECK(bpf->len > 12);
        CHECK(bpf->len < BPF_MAXINSNS); /* 4096: the kernel's limit */
        /* The prefix starts by checking the architecture. */
        CHECK(bpf->insns[0].code == (BPF_LD | BPF_W | BPF_ABS));
        CHECK(bpf->insns[0].k == offsetof(struct seccomp_data, arch));
        /* Every jump lands inside the program and every path returns. */
        bool jumps_ok = true;
        for (size_t i = 0; i < bpf->len; i++) {
                const struct sock_filter *f = &bpf->insns[i];
                if (BPF_CLASS(f->code) == BPF_JMP) {
                        size_t far = BPF_OP(f->code) == BPF_JA ? i + 1 + f->k
                                                               : i + 1 + (f->jt > f->jf ? f->jt : f->jf);
                        if (far >= bpf->len)
                                jumps_ok = false;
                }
        }
        CHECK(jumps_ok);
        CHECK(BPF_CLASS(bpf->insns[bpf->len - 1].code) == BPF_RET);

        /* Built once, the same program every time. */
        const struct jail_bpf *again = NULL;
        CHECK_INT(jail_seccomp_program(&again, NULL), 0);
        CHECK(again == bpf);

        /* The program in use (compiled in at build time where the
         * architecture matches) is what the policy compiles to now. */
        struct jail_bpf fresh = { 0 };
        CHECK_INT(jail_seccomp_build(&fresh, &err), 0);
        CHECK_INT(fresh.len, bpf->len);
        CHECK(fresh.insns != NULL && fresh.len == bpf->len &&
              memcmp(fresh.insns, bpf->insns, bpf->len * sizeof(struct sock_filter)) == 0);
        CHECK(memcmp(fresh.eperm, bpf->eperm, sizeof(fresh.eperm)) == 0);
        free(fresh.insns);
        corral_error_free(err);
}

TEST(syscall_names)
{
        uint32_t native = seccomp_arch_native();
        struct {
                int nr;
                uint32_t arch;
                const char *want;
        } cases[] = {
                { __NR_ptrace, native, "ptrace" },
                { __NR_getpid, native, "getpid" },
                { __NR_mount, native, "mount" },
#ifdef __x86_64__
                { 20, AUDIT_ARCH_I386, "getpid (i386 ABI)" },
                { 26, AUDIT_ARCH_I386, "ptrace (i386 ABI)" },
                { X32_BIT | 521, AUDIT_ARCH_X86_64, "ptrace (x32 ABI)" },
                { X32_BIT | __NR_getpid, AUDIT_ARCH_X86_64, "getpid (x32 ABI)" },
#endif
                { 99999, native, "syscall 99999" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                char *name = jail_seccomp_syscall_name(cases[i].nr, cases[i].arch);
                CHECK_STR(name, cases[i].want);
                free(name);
        }
}

/* ---- loading it ---- */

enum call {
        C_GETPID,
        C_GETPPID,
        C_UNLISTED,      /* ioprio_set: real, harmless, not on either list */
        C_NR_1000,       /* no such system call */
        C_SECCOMP,       /* not listed: no further filters from inside */
        C_CLONE3,
        C_SOCKET_UNIX,
        C_SOCKET_INET,
        C_SOCKET_VSOCK,
        C_SOCKET_PACKET,
        C_PTRACE,        /* denied from here on: each notifies */
        C_IOCTL_TIOCSTI,
        C_IOCTL_TIOCSTI_HIGH, /* 0x100005412: the kernel sees TIOCSTI */
        C_IOCTL_TIOCLINUX,
        C_IOCTL_FIONREAD,     /* allowed */
        C_PERSONALITY_QUERY,  /* allowed */
        C_PERSONALITY_0,      /* allowed */
        C_PERSONALITY_ADDR_NO_RANDOMIZE,
        C_PERSONALITY_HIGH_0, /* 0x100000000: the kernel reads 32 bits, sees 0: allowed */
        C_PERSONALITY_HIGH,   /* 0x100040000: the kernel sees ADDR_NO_RANDOMIZE */
        C_CLONE_NEWUSER,
        C_CLONE_NEWTIME_BIT,
        C_UNSHARE,
        C_MOUNT,
        C_BPF,
        C_FORK,               /* plain clone: allowed; the child exits 7 */
        C_X32_GETPID,         /* x32 ABI: the bad-arch action notifies */
        C_I386_GETPID,        /* int 0x80: the same, where ia32 emulation exists */
        N_CALLS
};

struct outcome {
        long ret;
        int err;
};

static int send_fd(int sock, int fd)
{
        char dummy = 'x';
        struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
        char dummy;
        struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
                return -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c == NULL || c->cmsg_type != SCM_RIGHTS)
                return -1;
        int fd;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}

static long x(long r, struct outcome *o)
{
        o->ret = r;
        o->err = r < 0 ? errno : 0;
        return r;
}

#ifdef __x86_64__
static long i386_getpid(void)
{
        long r = 20; /* __NR_getpid on i386 */
        __asm__ volatile("int $0x80" : "+a"(r) : : "memory");
        return r;
}
#endif

/* The child: load the filter (after outer, with no listener, if given),
 * hand over the listener, make the calls. */
static __attribute__((noreturn)) void child(int sock, const struct jail_bpf *outer, const struct jail_bpf *bpf)
{
        struct outcome out[N_CALLS];
        memset(out, 0, sizeof(out));
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                _exit(10);
        struct sock_fprog outer_prog = { .len = (unsigned short)(outer ? outer->len : 0),
                                         .filter = outer ? outer->insns : NULL };
        if (outer && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &outer_prog) < 0)
                _exit(14);
        struct sock_fprog prog = { .len = (unsigned short)bpf->len, .filter = bpf->insns };
        int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (listener < 0)
                _exit(11);
        if (send_fd(sock, listener) < 0)
                _exit(12);
        close(listener);

        char c = 'x';
        x(syscall(SYS_getpid), &out[C_GETPID]);
        x(syscall(SYS_getppid), &out[C_GETPPID]);
        x(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_BE_4), &out[C_UNLISTED]);
        x(syscall(1000, 0, 0, 0), &out[C_NR_1000]);
        uint32_t action = SECCOMP_RET_KILL_PROCESS;
        x(syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action), &out[C_SECCOMP]);
        /* size 0: should the filter ever let clone3 through, the kernel
         * refuses it (EINVAL) instead of forking this child. */
        struct clone_args ca;
        memset(&ca, 0, sizeof(ca));
        x(syscall(SYS_clone3, &ca, 0), &out[C_CLONE3]);
        long s = x(syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), &out[C_SOCKET_UNIX]);
        if (s >= 0)
                close((int)s);
        s = x(syscall(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), &out[C_SOCKET_INET]);
        if (s >= 0)
                close((int)s);
        s = x(syscall(SYS_socket, AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), &out[C_SOCKET_VSOCK]);
        if (s >= 0)
                close((int)s);
        s = x(syscall(SYS_socket, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), &out[C_SOCKET_PACKET]);
        if (s >= 0)
                close((int)s);
        x(syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0), &out[C_PTRACE]);
        /* On the socket, not a terminal: were they let through, nothing
         * would be typed anywhere (ENOTTY). */
        x(syscall(SYS_ioctl, sock, (unsigned long)TIOCSTI, &c), &out[C_IOCTL_TIOCSTI]);
        x(syscall(SYS_ioctl, sock, 0x100005412ul, &c), &out[C_IOCTL_TIOCSTI_HIGH]);
        x(syscall(SYS_ioctl, sock, (unsigned long)TIOCLINUX_CMD, &c), &out[C_IOCTL_TIOCLINUX]);
        int avail = -1;
        x(syscall(SYS_ioctl, sock, (unsigned long)FIONREAD, &avail), &out[C_IOCTL_FIONREAD]);
        x(syscall(SYS_personality, 0xffffffffUL), &out[C_PERSONALITY_QUERY]);
        x(syscall(SYS_personality, 0UL), &out[C_PERSONALITY_0]);
        x(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE), &out[C_PERSONALITY_ADDR_NO_RANDOMIZE]);
        x(syscall(SYS_personality, 0x100000000UL), &out[C_PERSONALITY_HIGH_0]);
        x(syscall(SYS_personality, 0x100000000UL | ADDR_NO_RANDOMIZE), &out[C_PERSONALITY_HIGH]);
        /* CLONE_THREAD without CLONE_SIGHAND: should the filter ever let
         * these through, the kernel refuses them (EINVAL) without forking. */
        x(syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | CLONE_THREAD | SIGCHLD), 0, 0, 0, 0),
          &out[C_CLONE_NEWUSER]);
        x(syscall(SYS_clone, 0x80UL | CLONE_THREAD | SIGCHLD, 0, 0, 0, 0), &out[C_CLONE_NEWTIME_BIT]);
        x(syscall(SYS_unshare, CLONE_NEWNS), &out[C_UNSHARE]);
        /* An empty target: ENOENT, were it let through. */
        x(syscall(SYS_mount, "none", "", "tmpfs", 0, NULL), &out[C_MOUNT]);
        x(syscall(SYS_bpf, 0, NULL, 0), &out[C_BPF]);
        pid_t pid = fork();
        if (pid == 0)
                _exit(7);
        int st = 0;
        out[C_FORK].ret = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
#ifdef __x86_64__
        x(syscall(X32_BIT | SYS_getpid), &out[C_X32_GETPID]);
        /* int 0x80 raises SIGSEGV where ia32 emulation is off: try it in
         * a grandchild, which inherits the filter. */
        pid = fork();
        if (pid == 0) {
                signal(SIGSEGV, SIG_DFL); /* not ASan's handler, which would exit 1 and report */
                long r = i386_getpid();
                _exit(r == -EPERM ? 0 : 1);
        }
        st = 0;
        if (pid > 0 && waitpid(pid, &st, 0) == pid)
                out[C_I386_GETPID].ret = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
        else
                out[C_I386_GETPID].ret = -1;
#endif
        if (write(sock, out, sizeof(out)) != (ssize_t)sizeof(out))
                _exit(13);
        _exit(0);
}

struct notice {
        int nr;
        uint32_t arch;
        uint64_t arg0, arg1;
};

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check_in_child(const struct jail_bpf *outer, const struct jail_bpf *bpf)
{
        struct seccomp_notif_sizes sizes;
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) {
                CHECK(!"SECCOMP_GET_NOTIF_SIZES failed");
                return;
        }
        size_t req_size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif
                                                                             : sizeof(struct seccomp_notif);
        size_t resp_size = sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
                                   ? sizes.seccomp_notif_resp
                                   : sizeof(struct seccomp_notif_resp);
        cleanup_free struct seccomp_notif *req = calloc(1, req_size);
        cleanup_free struct seccomp_notif_resp *resp = calloc(1, resp_size);

        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
                close(sv[0]);
                child(sv[1], outer, bpf);
        }
        close(sv[1]);
        CHECK(pid > 0);
        cleanup_close int listener = recv_fd(sv[0]);
        CHECK(listener >= 0);

        struct notice notes[64];
        size_t n_notes = 0;
        struct outcome out[N_CALLS];
        bool have_out = false;
        double deadline = now_s() + 20;
        while (!have_out && listener >= 0 && now_s() < deadline) {
                struct pollfd p[2] = { { .fd = listener, .events = POLLIN }, { .fd = sv[0], .events = POLLIN } };
                if (poll(p, 2, 1000) <= 0)
                        continue;
                if (p[0].revents & POLLIN) {
                        memset(req, 0, req_size);
                        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
                                if (n_notes < ARRAY_SIZE(notes))
                                        notes[n_notes++] = (struct notice){ req->data.nr, req->data.arch,
                                                                            req->data.args[0], req->data.args[1] };
                                memset(resp, 0, resp_size);
                                resp->id = req->id;
                                resp->error = -EPERM;
                                if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0)
                                        printf("# NOTIF_SEND: %s\n", strerror(errno));
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP)) {
                        ssize_t n = read(sv[0], out, sizeof(out));
                        CHECK(n == (ssize_t)sizeof(out));
                        have_out = n == (ssize_t)sizeof(out);
                        if (!have_out)
                                break;
                }
        }
        if (!have_out && pid > 0)
                kill(pid, SIGKILL);
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
                printf("#   child status 0x%x\n", st);
        close(sv[0]);
        CHECK(have_out);
        if (!have_out)
                return;

#define OUT(c) printf("# %-32s ret %ld errno %d (%s)\n", #c, out[c].ret, out[c].err, strerror(out[c].err))
        /* allowed */
        OUT(C_GETPID);
        CHECK(out[C_GETPID].ret == pid);
        CHECK(out[C_GETPPID].ret == getpid());
        OUT(C_SOCKET_UNIX);
        CHECK(out[C_SOCKET_UNIX].ret >= 0);
        CHECK(out[C_SOCKET_INET].ret >= 0);
        OUT(C_IOCTL_FIONREAD);
        CHECK(out[C_IOCTL_FIONREAD].ret == 0);
        OUT(C_PERSONALITY_QUERY);
        CHECK(out[C_PERSONALITY_QUERY].ret >= 0);
        OUT(C_PERSONALITY_0);
        CHECK(out[C_PERSONALITY_0].ret >= 0);
        OUT(C_PERSONALITY_HIGH_0);
        CHECK(out[C_PERSONALITY_HIGH_0].ret >= 0);
        CHECK_INT(out[C_FORK].ret, 7);
        /* unlisted: ENOSYS, no notification */
        OUT(C_UNLISTED);
        CHECK(out[C_UNLISTED].ret == -1 && out[C_UNLISTED].err == ENOSYS);
        OUT(C_NR_1000);
        CHECK(out[C_NR_1000].ret == -1 && out[C_NR_1000].err == ENOSYS);
        OUT(C_SECCOMP);
        CHECK(out[C_SECCOMP].ret == -1 && out[C_SECCOMP].err == ENOSYS);
        OUT(C_CLONE3);
        CHECK(out[C_CLONE3].ret == -1 && out[C_CLONE3].err == ENOSYS);
        /* other socket families fail without reaching the kernel */
        OUT(C_SOCKET_VSOCK);
        CHECK(out[C_SOCKET_VSOCK].ret == -1 &&
              (out[C_SOCKET_VSOCK].err == ENOSYS || out[C_SOCKET_VSOCK].err == EAFNOSUPPORT));
        OUT(C_SOCKET_PACKET);
        CHECK(out[C_SOCKET_PACKET].ret == -1 &&
              (out[C_SOCKET_PACKET].err == ENOSYS || out[C_SOCKET_PACKET].err == EAFNOSUPPORT));
        CHECK(out[C_SOCKET_VSOCK].err == EAFNOSUPPORT);
        /* denied: the EPERM answered above */
        static const enum call denied[] = { C_PTRACE,
                                            C_IOCTL_TIOCSTI,
                                            C_IOCTL_TIOCSTI_HIGH,
                                            C_IOCTL_TIOCLINUX,
                                            C_PERSONALITY_ADDR_NO_RANDOMIZE,
                                            C_PERSONALITY_HIGH,
                                            C_CLONE_NEWUSER,
                                            C_CLONE_NEWTIME_BIT,
                                            C_UNSHARE,
                                            C_MOUNT,
                                            C_BPF,
                                            C_X32_GETPID };
        static const char *const denied_names[] = { "C_PTRACE",        "C_IOCTL_TIOCSTI",
                                                    "C_IOCTL_TIOCSTI_HIGH", "C_IOCTL_TIOCLINUX",
                                                    "C_PERSONALITY_ADDR_NO_RANDOMIZE", "C_PERSONALITY_HIGH",
                                                    "C_CLONE_NEWUSER", "C_CLONE_NEWTIME_BIT",
                                                    "C_UNSHARE",       "C_MOUNT",
                                                    "C_BPF",           "C_X32_GETPID" };
        for (size_t i = 0; i < ARRAY_SIZE(denied); i++) {
#ifndef __x86_64__
                if (denied[i] == C_X32_GETPID)
                        continue;
#endif
                const struct outcome *o = &out[denied[i]];
                printf("# %-32s ret %ld errno %d (%s)\n", denied_names[i], o->ret, o->err, strerror(o->err));
                CHECK(o->ret == -1 && o->err == EPERM);
        }

        /* The notifications, in order, and nothing else. */
        struct {
                int nr;
                uint64_t arg; /* checked for ioctl (arg1) and personality/clone (arg0) */
        } want[] = {
                { __NR_ptrace, 0 },
                { __NR_ioctl, TIOCSTI },
                { __NR_ioctl, 0x100005412ull },
                { __NR_ioctl, TIOCLINUX_CMD },
                { __NR_personality, ADDR_NO_RANDOMIZE },
                { __NR_personality, 0x100000000ull | ADDR_NO_RANDOMIZE },
                { __NR_clone, CLONE_NEWUSER | CLONE_THREAD | SIGCHLD },
                { __NR_clone, 0x80 | CLONE_THREAD | SIGCHLD },
                { __NR_unshare, CLONE_NEWNS },
                { __NR_mount, 0 },
                { __NR_bpf, 0 },
#ifdef __x86_64__
                { X32_BIT | __NR_getpid, 0 },
                { 20, 0 }, /* i386 getpid, when int 0x80 works */
#endif
        };
        size_t n_want = ARRAY_SIZE(want);
#ifdef __x86_64__
        OUT(C_I386_GETPID);
        bool have_ia32 = out[C_I386_GETPID].ret != 1000 + SIGSEGV;
        if (have_ia32)
                CHECK_INT(out[C_I386_GETPID].ret, 0); /* -EPERM came back through int 0x80 */
        else
                printf("# ia32 emulation is off: no int 0x80 check\n");
        if (!have_ia32)
                n_want--;
#endif
        printf("# %zu notifications\n", n_notes);
        CHECK_INT(n_notes, n_want);
        for (size_t i = 0; i < n_notes && i < n_want; i++) {
                printf("#   nr %d arch 0x%x args 0x%llx 0x%llx\n", notes[i].nr, notes[i].arch,
                       (unsigned long long)notes[i].arg0, (unsigned long long)notes[i].arg1);
                CHECK_INT(notes[i].nr, want[i].nr);
                if (want[i].nr == __NR_ioctl)
                        CHECK(notes[i].arg1 == want[i].arg);
                else if (want[i].arg)
                        CHECK(notes[i].arg0 == want[i].arg);
#ifdef __x86_64__
                CHECK(notes[i].arch == (want[i].nr == 20 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64));
#endif
        }
}

TEST(filter_in_child)
{
        const struct jail_bpf *bpf = NULL;
        if (jail_seccomp_program(&bpf, NULL) < 0) {
                CHECK(!"no seccomp program");
                return;
        }
        check_in_child(NULL, bpf);
}

/* A pre-made jail's program process loads the outer part before its claim
 * and the inner one at it (enter.c): the same calls, the same answers, the
 * same notifications, all on the inner part's listener. */
TEST(premade_filters_in_child)
{
        const struct jail_bpf *outer = NULL, *inner = NULL;
        if (jail_seccomp_premade_programs(&outer, &inner, NULL) < 0) {
                CHECK(!"no pre-made jail's programs");
                return;
        }
        printf("# outer %zu instructions, inner %zu\n", outer->len, inner->len);
        check_in_child(outer, inner);
}

/* ---- the two parts, stacked, decide as the whole ---- */

/* Run a classic BPF program on d as the kernel's seccomp does; the
 * instructions libseccomp and build_prefix() emit.  *bad: one it does not
 * know. */
static uint32_t run_bpf(const struct jail_bpf *b, const struct seccomp_data *d, bool *bad)
{
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
        for (size_t pc = 0; pc < b->len; pc++) {
                const struct sock_filter *f = &b->insns[pc];
                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (f->k > sizeof(*d) - 4 || f->k % 4) {
                                *bad = true;
                                return 0;
                        }
                        memcpy(&a, (const char *)d + f->k, 4);
                        break;
                case BPF_LD | BPF_MEM:
                        a = mem[f->k % BPF_MEMWORDS];
                        break;
                case BPF_LDX | BPF_MEM:
                        x = mem[f->k % BPF_MEMWORDS];
                        break;
                case BPF_ST:
                        mem[f->k % BPF_MEMWORDS] = a;
                        break;
                case BPF_STX:
                        mem[f->k % BPF_MEMWORDS] = x;
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= f->k;
                        break;
                case BPF_MISC | BPF_TAX:
                        x = a;
                        break;
                case BPF_MISC | BPF_TXA:
                        a = x;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += f->k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= f->k ? f->jt : f->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & f->k) ? f->jt : f->jf;
                        break;
                case BPF_RET | BPF_K:
                        return f->k;
                case BPF_RET | BPF_A:
                        return a;
                default:
                        *bad = true;
                        return 0;
                }
        }
        *bad = true; /* ran off the end */
        return 0;
}

/* The kernel's choice between stacked filters (kernel/seccomp.c): the
 * newest first, and an action lower as a signed number replaces the one so
 * far; so a tie goes to the newest. */
static int32_t action_only(uint32_t ret)
{
        return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

TEST(premade_filters_stacked_are_the_whole)
{
        const struct jail_bpf *whole = NULL, *outer = NULL, *inner = NULL;
        if (jail_seccomp_program(&whole, NULL) < 0 || jail_seccomp_premade_programs(&outer, &inner, NULL) < 0) {
                CHECK(!"no seccomp programs");
                return;
        }
        /* The values the policy compares: socket families, file modes with
         * and without set-id bits, clone's namespace flags, ioctl commands
         * (with high bits the kernel ignores), personality's values; and
         * some noise. */
        static const uint64_t values[] = {
                0, 1, 2, 10, 16, 17, 40, 63, 64, 65, 0644, 04755, 02755, 06000, 0x5412, 0x541C, 0x100005412ull,
                0x10000541Cull, 0x5401, 0xffffffffull, 0x100000000ull, 0x100040000ull, 0x40000,
                CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
                0x80, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, SIGCHLD,
                CLONE_NEWUSER | SIGCHLD, ~0ull, 0x8000000000000000ull,
        };
        static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0 };
        uint32_t native = seccomp_arch_native();
        size_t runs = 0, differ = 0, misrouted = 0, notified = 0;
        bool bad = false;
        for (size_t ai = 0; ai < ARRAY_SIZE(arches) + 1; ai++) {
                uint32_t arch = ai == 0 ? native : arches[ai - 1];
                for (uint32_t i = 0; i < 1024 + 700; i++) {
                        uint32_t nr = i < 1024 ? i : X32_BIT | (i - 1024);
                        for (size_t arg = 0; arg < 4; arg++) {
                                for (size_t v = 0; v < ARRAY_SIZE(values); v++) {
                                        struct seccomp_data d;
                                        memset(&d, 0, sizeof(d));
                                        d.nr = (int)nr;
                                        d.arch = arch;
                                        d.args[arg] = values[v];
                                        uint32_t w = run_bpf(whole, &d, &bad);
                                        uint32_t in = run_bpf(inner, &d, &bad), out = run_bpf(outer, &d, &bad);
                                        bool from_inner = !(action_only(out) < action_only(in));
                                        uint32_t got = from_inner ? in : out;
                                        runs++;
                                        if (got != w) {
                                                if (differ++ < 8)
                                                        printf("#   nr 0x%x arch 0x%x arg%zu 0x%llx: whole 0x%x, "
                                                               "stacked 0x%x\n",
                                                               nr, arch, arg, (unsigned long long)values[v], w, got);
                                        } else if ((got & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF) {
                                                notified++;
                                                /* Only the inner part has a listener. */
                                                if (!from_inner && misrouted++ < 8)
                                                        printf("#   nr 0x%x arch 0x%x: notified by the outer part\n",
                                                               nr, arch);
                                        }
                                }
                        }
                }
        }
        printf("# %zu inputs, %zu notified\n", runs, notified);
        CHECK(!bad);
        CHECK_INT(differ, 0);
        CHECK_INT(misrouted, 0);
        CHECK(notified > 0);
        /* Not a copy of the whole: the claim loads a small program. */
        CHECK(inner->len < whole->len / 3);
}

/* The two deny classes: init answers EPERM for the calls in the set and
 * kills for every other notification (docs/security.md). */
TEST(eperm_set)
{
        const struct jail_bpf *bpf = NULL;
        if (jail_seccomp_program(&bpf, NULL) < 0) {
                CHECK(!"no seccomp program");
                return;
        }
        static const int eperm[] = { __NR_chroot, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_unshare,
                                      __NR_setns, __NR_clone, __NR_clock_settime, __NR_settimeofday,
                                      __NR_adjtimex, __NR_clock_adjtime, __NR_sethostname, __NR_setdomainname,
                                      __NR_reboot, __NR_swapon, __NR_swapoff, __NR_acct, __NR_quotactl,
                                      __NR_syslog, __NR_vhangup, __NR_fsopen, __NR_move_mount, __NR_open_tree,
                                      __NR_io_uring_setup };
        static const int kill[] = { __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_pidfd_getfd,
                                    __NR_kcmp, __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_keyctl,
                                    __NR_add_key, __NR_request_key, __NR_io_uring_enter, __NR_io_uring_register,
                                    __NR_kexec_load, __NR_init_module, __NR_finit_module, __NR_delete_module,
                                    __NR_open_by_handle_at, __NR_ioctl, __NR_personality,
                                    /* allowed or ENOSYS, never notified: in the set would do no harm, but
                                     * the set is exactly the policy's */
                                    __NR_getpid, __NR_clone3, __NR_openat2 };
        for (size_t i = 0; i < ARRAY_SIZE(eperm); i++) {
                if (!corral_eperm_has(bpf->eperm, eperm[i]))
                        printf("#   %d should be answered EPERM\n", eperm[i]);
                CHECK(corral_eperm_has(bpf->eperm, eperm[i]));
        }
        for (size_t i = 0; i < ARRAY_SIZE(kill); i++) {
                if (corral_eperm_has(bpf->eperm, kill[i]))
                        printf("#   %d should not be answered EPERM\n", kill[i]);
                CHECK(!corral_eperm_has(bpf->eperm, kill[i]));
        }
        /* Out of range and x32 numbers are never in it. */
        CHECK(!corral_eperm_has(bpf->eperm, -1));
        CHECK(!corral_eperm_has(bpf->eperm, 64 * CORRAL_INIT_EPERM_WORDS));
        CHECK(!corral_eperm_has(bpf->eperm, X32_BIT | __NR_chroot));
}

int main(void)
{
        RUN(program);
        RUN(eperm_set);
        RUN(syscall_names);
        RUN(filter_in_child);
        RUN(premade_filters_in_child);
        RUN(premade_filters_stacked_are_the_whole);
        return DONE();
}
