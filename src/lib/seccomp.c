/* seccomp.c: the jail's system-call filter, built with libseccomp and handed
 * to init as raw BPF (init is static and links no libseccomp).
 *
 * Policy (docs/security.md lists every decision):
 *  - an allow-list of what ordinary programs (Python, the shell, coreutils,
 *    numpy/pandas/matplotlib) use;
 *  - two deny-lists, both answered with a user notification to init:
 *    kill_syscalls, whose attempt is an attack (init reports the call and
 *    kills the whole tree), and eperm_syscalls, calls that fail without
 *    privileges anyway and that programs probe (init answers EPERM, so the
 *    call never runs, and reports its name once); init tells them apart with
 *    the EPERM set built here (jail_bpf.eperm);
 *  - everything else fails with ENOSYS, the answer libc and runtimes expect
 *    from a kernel that lacks a call, so feature probes fall back cleanly;
 *  - clone3 gets ENOSYS so libc falls back to clone, whose flags a filter can
 *    read: clone with any namespace flag is refused with EPERM, as unshare;
 *  - foreign ABIs (i386, x32) hit the bad-arch action, a kill.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail-internal.h"

static const char *const allowed_syscalls[] = {
        "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "capget", "chdir", "chown", "clock_getres", "clock_gettime", "clock_nanosleep", "close", "close_range", "connect",
        "copy_file_range", "dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl",
        "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd", "eventfd2", "execve", "execveat", "exit",
        "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork",
        "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate", "futex", "futex_waitv",
        "futimesat", "get_mempolicy", "get_robust_list", "get_thread_area", "getcpu", "getcwd", "getdents",
        "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer", "getpeername", "getpgid",
        "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresuid", "getrlimit",
        "getrusage", "getsid", "getsockname", "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr",
        "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy",
        "io_getevents", "io_pgetevents", "io_setup", "io_submit", "ioprio_get", "kill", "lchown",
        "lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "lremovexattr", "lseek",
        "lsetxattr", "lstat", "madvise", "membarrier", "memfd_create", "mincore", "mkdir", "mkdirat",
        "mlock", "mlock2", "mlockall", "mmap", "mprotect", "mq_getsetattr",
        "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap", "msgctl",
        "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap", "nanosleep",
        "newfstatat", "pause", "pidfd_open", "pidfd_send_signal", "pipe",
        "pipe2", "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64", "pselect6",
        "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
        "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat",
        "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
        "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
        "rt_tgsigqueueinfo", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
        "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
        "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield",
        "select", "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto",
        "set_robust_list", "set_thread_area", "set_tid_address", "setfsgid", "setfsuid", "setgid",
        "setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid", "setresuid",
        "setreuid", "setrlimit", "setsid", "setsockopt", "setuid", "setxattr", "shmat", "shmctl",
        "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "socketpair", "splice",
        "stat", "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs",
        "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun",
        "timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime",
        "times", "tkill", "truncate", "umask", "uname", "unlink", "unlinkat", "utime", "utimensat",
        "utimes", "vfork", "wait4", "waitid", "write", "writev",
};

/* Killed: the call's mere attempt is an attack on the kernel or on the jail
 * (docs/security.md gives the reason for each).  init reports it by name and
 * kills the whole tree. */
static const char *const kill_syscalls[] = {
        "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp",
        "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_enter",
        "io_uring_register", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "create_module", "open_by_handle_at", "uselib", "modify_ldt", "vm86", "vm86old",
};

/* Refused: calls that fail without privileges the jail never has (or that
 * policy refuses, like a nested namespace), which libraries and test suites
 * probe and every container runtime answers with EPERM.  init answers EPERM
 * on its listener, so the call never runs, and reports its name once; the
 * result lists it under "denied" and the program carries on.  So do clone
 * with a namespace flag and the set-id modes below (the latter in the filter
 * itself, unrecorded). */
static const char *const eperm_syscalls[] = {
        "mount", "umount2", "umount", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
        "move_mount", "open_tree", "mount_setattr", "unshare", "setns", "reboot", "swapon", "swapoff", "acct",
        "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl",
        "ioperm", "quotactl", "quotactl_fd", "syslog", "vhangup", "name_to_handle_at", "fanotify_init",
        "lookup_dcookie", "_sysctl", "nfsservctl",
        /* Node (libuv >= 1.45) creates a ring at every start and falls back
         * to epoll when it cannot: refused, the ring never exists, so
         * io_uring_enter and io_uring_register (which need one) still kill. */
        "io_uring_setup",
};

#define CLONE_NAMESPACE_FLAGS                                                                                        \
        (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |             \
         CLONE_NEWCGROUP | 0x80 /* CLONE_NEWTIME */)

#define SETID_BITS (S_ISUID | S_ISGID)
#define TIOCSTI_CMD 0x5412u
#define TIOCLINUX_CMD 0x541Cu
#define PERSONALITY_QUERY 0xffffffffu

/* Which program seccomp_build() makes from the one policy. */
enum filter_kind {
        FILTER_JAIL,          /* what every jail's program runs under */
        FILTER_ZYGOTE,        /* the zygote's: the jail's and what forking a session needs */
        FILTER_PREMADE_OUTER, /* a pre-made jail's before its claim: the jail's and the claim's own calls */
        FILTER_PREMADE_INNER, /* loaded on the outer one at the claim: what the outer one lets through */
};

/* What a zygote may do on top of the policy (zygote.c: each session it
 * forks unshares namespaces, mounts its /proc, /tmp and /workspace, drops
 * its capabilities and loads the jail's filter itself). */
static const char *const zygote_extra_syscalls[] = {
        "unshare", "mount", "umount2", "mount_setattr", "move_mount", "capset", "seccomp",
};

/* What a pre-made jail's program process does at its claim, after its
 * outer filter is loaded (enter.c): attach the caller's trees and seal the
 * root, drop its capabilities, load the inner filter. */
static const char *const premade_extra_syscalls[] = {
        "mount", "umount2", "move_mount", "capset", "seccomp",
};

static bool is_extra(enum filter_kind kind, const char *name)
{
        const char *const *names = kind == FILTER_ZYGOTE ? zygote_extra_syscalls : premade_extra_syscalls;
        size_t n = kind == FILTER_ZYGOTE ? ARRAY_SIZE(zygote_extra_syscalls) : ARRAY_SIZE(premade_extra_syscalls);
        if (kind != FILTER_ZYGOTE && kind != FILTER_PREMADE_OUTER)
                return false;
        for (size_t i = 0; i < n; i++)
                if (strcmp(name, names[i]) == 0)
                        return true;
        return false;
}

/* Both deny lists notify: init (or a session's init) tells them apart by
 * number with the EPERM set (jail_bpf.eperm), answering EPERM or killing.
 * They notify in the zygote's filter too: with no listener there they fail
 * with ENOSYS, and in a session, whose own filter (loaded later) notifies as
 * well, the tie goes to the newest filter, the one with the session's
 * listener.  A kill or an errno here would outrank it and the call would go
 * unnamed.  A pre-made jail's outer and inner filters work the same way. */
static int add_denied(scmp_filter_ctx ctx, enum filter_kind kind, const char *const *names, size_t n,
                      uint64_t *eperm)
{
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(names[i]);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue; /* not on this architecture */
                if (eperm && (unsigned)nr < 64u * CORRAL_INIT_EPERM_WORDS)
                        eperm[nr / 64] |= 1ull << (nr % 64);
                int r = seccomp_rule_add(ctx, is_extra(kind, names[i]) ? SCMP_ACT_ALLOW : SCMP_ACT_NOTIFY, nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The policy as kind's program.  The inner filter keeps only what is not
 * an allow (its default): the notified calls, so that each ties with the
 * outer filter's notification and reaches the inner one's listener, and an
 * ENOSYS for the outer filter's extra capset and seccomp; every errno of
 * the outer filter stands. */
static int add_rules(scmp_filter_ctx ctx, enum filter_kind kind, uint64_t *eperm)
{
        bool inner = kind == FILTER_PREMADE_INNER;
        int r;
        for (size_t i = 0; i < ARRAY_SIZE(allowed_syscalls) && !inner; i++) {
                int nr = seccomp_syscall_resolve_name(allowed_syscalls[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not on this architecture */
                if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0)
                        return r;
        }
        if ((r = add_denied(ctx, kind, kill_syscalls, ARRAY_SIZE(kill_syscalls), NULL)) < 0 ||
            (r = add_denied(ctx, kind, eperm_syscalls, ARRAY_SIZE(eperm_syscalls), eperm)) < 0)
                return r;
        /* clone notifies only with a namespace flag (below): EPERM, as
         * unshare. */
        eperm[SCMP_SYS(clone) / 64] |= 1ull << (SCMP_SYS(clone) % 64);
        if (kind != FILTER_JAIL) {
                /* capset and seccomp: the jail's default, ENOSYS, except
                 * where they are extras. */
                static const char *const extra[] = { "capset", "seccomp" };
                for (size_t i = 0; i < ARRAY_SIZE(extra); i++) {
                        int nr = seccomp_syscall_resolve_name(extra[i]);
                        if (nr != __NR_SCMP_ERROR &&
                            (r = seccomp_rule_add(ctx, inner ? SCMP_ACT_ERRNO(ENOSYS) : SCMP_ACT_ALLOW, nr, 0)) < 0)
                                return r;
                }
        }
        if (kind == FILTER_ZYGOTE) {
                /* Any clone: a session's pid namespace comes from unshare()
                 * then fork(). */
                if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 0)) < 0)
                        return r;
        }
        /* clone: only without namespace flags.  Each flag gets its own rule
         * because libseccomp allows one comparison per argument and rule. */
        r = kind == FILTER_ZYGOTE || inner ? 0
                                           : seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NAMESPACE_FLAGS, 0));
        if (r < 0)
                return r;
        for (unsigned long bit = 1; bit <= CLONE_NAMESPACE_FLAGS && kind != FILTER_ZYGOTE; bit <<= 1) {
                if (!(CLONE_NAMESPACE_FLAGS & bit))
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
                if (r < 0)
                        return r;
        }
        /* clone3 is deliberately absent: it gets the default ENOSYS (libseccomp
         * refuses a rule equal to the default action), so libc falls back to
         * clone, whose flags are checked above.  clone3 passes its flags in
         * memory, where a filter cannot read them. */
        if (inner)
                return 0; /* the rest are allows and errnos: the outer filter's */

        /* socket: local and IP families only; anything else EAFNOSUPPORT.
         * AF_VSOCK in particular is not namespaced and would reach the
         * hypervisor from an empty network namespace. */
        static const int families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
        for (size_t i = 0; i < ARRAY_SIZE(families); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
                if (r < 0)
                        return r;
        }
        /* No set-user-ID or set-group-ID bits on files: a root caller's
         * workspace is idmapped so the jail writes as its owner, and a setuid
         * file made there would be setuid root on the host.  The mode is
         * checked where it is an argument (openat2 passes it in memory, so it
         * is not allowed at all); anything with those bits is EPERM. */
        static const struct {
                const char *name;
                unsigned mode_arg;
        } mode_calls[] = { { "chmod", 1 }, { "fchmod", 1 }, { "fchmodat", 2 }, { "creat", 1 },
                           { "open", 2 },  { "openat", 3 }, { "mknod", 1 },    { "mknodat", 2 } };
        for (size_t i = 0; i < ARRAY_SIZE(mode_calls); i++) {
                int nr = seccomp_syscall_resolve_name(mode_calls[i].name);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue;
                unsigned a = mode_calls[i].mode_arg;
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
                                     (struct scmp_arg_cmp){ a, SCMP_CMP_MASKED_EQ, SETID_BITS, 0 });
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                             (struct scmp_arg_cmp){ a, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID });
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                             (struct scmp_arg_cmp){ a, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID });
                if (r < 0)
                        return r;
        }
        /* Other socket families: EAFNOSUPPORT, the answer for a family the
         * kernel lacks.  The allowed ones are matched on all 64 bits above, so
         * high garbage never passes. */
        for (int fam = 0; fam < 64; fam++) {
                if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK)
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam));
                if (r < 0)
                        return r;
        }
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, 64));
        if (r < 0)
                return r;
        /* ioctl and personality are allowed here and narrowed by the hand-
         * written prefix below. */
        if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 0)) < 0)
                return r;
        if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 0)) < 0)
                return r;
        return 0;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) ((uint32_t)offsetof(struct seccomp_data, args) + 8u * (i))
#else
#define ARG_LO(i) ((uint32_t)offsetof(struct seccomp_data, args) + 8u * (i) + 4u)
#endif

/* A prefix run before libseccomp's program.  The kernel reads ioctl's
 * command and personality's argument as 32-bit ints, but libseccomp 2.5
 * compares all 64 bits, so ioctl(fd, 0x100005412) would pass a rule written
 * with it and still reach TIOCSTI.  These checks look at the low word only.
 * Anything the prefix does not decide falls through to the next instruction,
 * which is the start of libseccomp's program. */
static size_t build_prefix(struct sock_filter *f, uint32_t native_arch)
{
        enum { NOTIFY = 11, END = 12 }; /* indexes of the two exits below */
        struct sock_filter p[] = {
                /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, native_arch, 0, END - 2),
                /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)SCMP_SYS(ioctl), 0, 3),
                /* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
                /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI_CMD, NOTIFY - 6, 0),
                /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX_CMD, NOTIFY - 7, END - 7),
                /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)SCMP_SYS(personality), 0, END - 8),
                /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
                /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, END - 10, 0),
                /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PERSONALITY_QUERY, END - 11, NOTIFY - 11),
                /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
                /* 12: END, falls through into libseccomp's program */
        };
        memcpy(f, p, sizeof(p));
        return ARRAY_SIZE(p);
}

static int seccomp_build(struct jail_bpf *out, enum filter_kind kind, corral_error **ret_err)
{
        scmp_filter_ctx ctx = seccomp_init(kind == FILTER_PREMADE_INNER ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(ENOSYS));
        int memfd = -1, rc = -1;
        struct sock_filter *insns = NULL;
        int r;
        memset(out->eperm, 0, sizeof(out->eperm));
        if (ctx == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot create the seccomp filter");
        /* Foreign ABIs (i386 via int 0x80, x32) are a violation too. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_NOTIFY);
        /* A binary tree of syscall numbers instead of a linear chain: every
         * system call of the program walks this filter. */
        if (r == 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r == 0)
                r = add_rules(ctx, kind, out->eperm);
        if (r < 0) {
                corral_fail(ret_err, -r, "cannot build the seccomp filter");
                goto out;
        }
        memfd = memfd_create("corral-bpf", MFD_CLOEXEC);
        if (memfd < 0 || (r = seccomp_export_bpf(ctx, memfd)) < 0) {
                corral_fail(ret_err, memfd < 0 ? errno : -r, "cannot export the seccomp filter");
                goto out;
        }
        off_t size = lseek(memfd, 0, SEEK_END);
        size_t n = (size_t)size / sizeof(struct sock_filter);
        insns = calloc(n + 16, sizeof(struct sock_filter));
        if (insns == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot export the seccomp filter");
                goto out;
        }
        size_t pre = build_prefix(insns, seccomp_arch_native());
        if (pread(memfd, insns + pre, (size_t)size, 0) != size) {
                corral_fail(ret_err, errno, "cannot read back the seccomp filter");
                free(insns);
                goto out;
        }
        out->insns = insns;
        out->len = pre + n;
        rc = 0;
out:
        if (memfd >= 0)
                close(memfd);
        seccomp_release(ctx);
        return rc;
}

int jail_seccomp_build(struct jail_bpf *out, corral_error **ret_err)
{
        return seccomp_build(out, FILTER_JAIL, ret_err);
}

int jail_seccomp_build_premade(struct jail_bpf *outer, struct jail_bpf *inner, corral_error **ret_err)
{
        if (seccomp_build(outer, FILTER_PREMADE_OUTER, ret_err) < 0)
                return -1;
        if (seccomp_build(inner, FILTER_PREMADE_INNER, ret_err) < 0) {
                free(outer->insns);
                outer->insns = NULL;
                return -1;
        }
        return 0;
}

static struct jail_bpf zygote_bpf;
static corral_error *zygote_err;
static pthread_once_t zygote_once = PTHREAD_ONCE_INIT;

static void load_zygote_program(void)
{
        seccomp_build(&zygote_bpf, FILTER_ZYGOTE, &zygote_err);
}

int jail_seccomp_zygote_program(const struct jail_bpf **ret, corral_error **ret_err)
{
        pthread_once(&zygote_once, load_zygote_program);
        if (zygote_bpf.insns == NULL)
                return corral_fail(ret_err, 0, "%s", zygote_err ? zygote_err->msg : "zygote filter unavailable");
        *ret = &zygote_bpf;
        return 0;
}

/* The program compiled at build time (seccomp-bpf.c, made by
 * tools/gen-seccomp.c from the policy above), so that no jail pays for
 * libseccomp's compiler; the generator itself is built without it. */
#ifdef CORRAL_PREBUILT_BPF
extern const struct sock_filter jail_prebuilt_bpf[];
extern const size_t jail_prebuilt_bpf_len;
extern const uint32_t jail_prebuilt_bpf_arch;
extern const uint64_t jail_prebuilt_eperm[CORRAL_INIT_EPERM_WORDS];
extern const struct sock_filter jail_prebuilt_premade_outer[], jail_prebuilt_premade_inner[];
extern const size_t jail_prebuilt_premade_outer_len, jail_prebuilt_premade_inner_len;
#endif

static struct jail_bpf cached;
static corral_error *cached_err;
static pthread_once_t cached_once = PTHREAD_ONCE_INIT;

static void load_program(void)
{
#ifdef CORRAL_PREBUILT_BPF
        if (jail_prebuilt_bpf_arch == seccomp_arch_native()) {
                cached.insns = (struct sock_filter *)jail_prebuilt_bpf;
                cached.len = jail_prebuilt_bpf_len;
                memcpy(cached.eperm, jail_prebuilt_eperm, sizeof(cached.eperm));
                return;
        }
#endif
        jail_seccomp_build(&cached, &cached_err);
}

int jail_seccomp_program(const struct jail_bpf **ret, corral_error **ret_err)
{
        pthread_once(&cached_once, load_program);
        if (cached.insns == NULL)
                return corral_fail(ret_err, 0, "%s", cached_err ? cached_err->msg : "seccomp filter unavailable");
        *ret = &cached;
        return 0;
}

static struct jail_bpf premade_outer, premade_inner;
static corral_error *premade_err;
static pthread_once_t premade_once = PTHREAD_ONCE_INIT;

static void load_premade_programs(void)
{
#ifdef CORRAL_PREBUILT_BPF
        if (jail_prebuilt_bpf_arch == seccomp_arch_native()) {
                premade_outer.insns = (struct sock_filter *)jail_prebuilt_premade_outer;
                premade_outer.len = jail_prebuilt_premade_outer_len;
                premade_inner.insns = (struct sock_filter *)jail_prebuilt_premade_inner;
                premade_inner.len = jail_prebuilt_premade_inner_len;
                memcpy(premade_outer.eperm, jail_prebuilt_eperm, sizeof(premade_outer.eperm));
                memcpy(premade_inner.eperm, jail_prebuilt_eperm, sizeof(premade_inner.eperm));
                return;
        }
#endif
        jail_seccomp_build_premade(&premade_outer, &premade_inner, &premade_err);
}

int jail_seccomp_premade_programs(const struct jail_bpf **ret_outer, const struct jail_bpf **ret_inner,
                                  corral_error **ret_err)
{
        pthread_once(&premade_once, load_premade_programs);
        if (premade_outer.insns == NULL)
                return corral_fail(ret_err, 0, "%s", premade_err ? premade_err->msg : "seccomp filter unavailable");
        *ret_outer = &premade_outer;
        *ret_inner = &premade_inner;
        return 0;
}

char *jail_seccomp_syscall_name(int nr, uint32_t arch)
{
        char *name = NULL;
        if (arch == seccomp_arch_native() && (nr & 0x40000000) == 0)
                name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        else {
                /* x32 shares the native arch token, with bit 30 set in nr. */
                bool x32 = arch == seccomp_arch_native();
                const char *abi = x32 ? "x32" : arch == SCMP_ARCH_X86 ? "i386" : "foreign";
                char *inner = x32 || arch == SCMP_ARCH_X86
                                      ? seccomp_syscall_resolve_num_arch(x32 ? SCMP_ARCH_X32 : SCMP_ARCH_X86,
                                                                         x32 ? nr & ~0x40000000 : nr)
                                      : NULL;
                if (asprintf(&name, "%s (%s ABI)", inner ? inner : "unknown", abi) < 0)
                        name = NULL;
                free(inner);
        }
        if (name == NULL && asprintf(&name, "syscall %d", nr) < 0)
                name = NULL;
        return name;
}

void jail_denied_add(struct jail_denied *d, int nr, uint32_t arch)
{
        for (size_t i = 0; i < d->n; i++)
                if (d->nr[i] == nr && d->arch[i] == arch)
                        return;
        if (d->n == JAIL_MAX_DENIED)
                return;
        d->nr[d->n] = nr;
        d->arch[d->n] = arch;
        d->n++;
}

void jail_denied_to_result(const struct jail_denied *d, corral_jail_result *r)
{
        if (d->n == 0)
                return;
        r->denied = calloc(d->n, sizeof(char *));
        if (r->denied == NULL)
                return; /* out of memory: the result just lists none */
        for (size_t i = 0; i < d->n; i++) {
                char *name = jail_seccomp_syscall_name(d->nr[i], d->arch[i]);
                if (name != NULL)
                        r->denied[r->n_denied++] = name;
        }
}
