/* sys.h: the freestanding system-call layer of corral-init.
 *
 * corral-init starts once per jail, so its start-up is on every run's path.
 * A static glibc program spends ~0.3 ms before main() probing the CPU (cpuid
 * traps to the hypervisor in a VM) and resolving ifuncs; corral-init needs
 * none of that, so it is built with -nostdlib on this file: raw system calls,
 * a bump allocator and the few string functions it uses.  Only kernel UAPI
 * headers are included.  Every call returns -errno on failure, like the
 * kernel, and nothing here sets errno.
 *
 * Threads: corral-init has one thread; nothing here is for more.
 */
#ifndef CORRAL_INIT_SYS_H
#define CORRAL_INIT_SYS_H

#include <asm/unistd.h>
#include <linux/fcntl.h>
#include <linux/ioctl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/poll.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/signalfd.h>
#include <linux/stat.h>
#include <linux/time_types.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <stddef.h>
#include <stdint.h>

#define SYS_INLINE static inline __attribute__((always_inline))

SYS_INLINE long sys6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
        register long r10 __asm__("r10") = d;
        register long r8 __asm__("r8") = e;
        register long r9 __asm__("r9") = f;
        long ret;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        return ret;
#elif defined(__aarch64__)
        register long x8 __asm__("x8") = n;
        register long x0 __asm__("x0") = a;
        register long x1 __asm__("x1") = b;
        register long x2 __asm__("x2") = c;
        register long x3 __asm__("x3") = d;
        register long x4 __asm__("x4") = e;
        register long x5 __asm__("x5") = f;
        __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
        return x0;
#else
#error "corral-init: add this architecture's system-call convention"
#endif
}
#define SYS0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* Constants not in the UAPI headers included above. */
#define S_AF_UNIX 1
#define S_SOCK_SEQPACKET 5
#define S_SOL_SOCKET 1
#define S_SCM_RIGHTS 1
#define S_MSG_NOSIGNAL 0x4000
#define S_MSG_DONTWAIT 0x40
#define S_MSG_CMSG_CLOEXEC 0x40000000
#define S_MSG_CTRUNC 0x8
#define S_MSG_TRUNC 0x20
#define S_SIGCHLD 17
#define S_SIGKILL 9
#define S_SIG_BLOCK 0
#define S_SIG_SETMASK 2
#define S_SEEK_END 2
#define S_CLOCK_MONOTONIC 1
#define S_PROT_RW 3
#define S_MAP_PRIVATE_ANON 0x22
#define S_WNOHANG 1
#define S_EPERM 1
#define S_EINTR 4
#define S_ENOENT 2
#define S_EACCES 13
#define S_ENOEXEC 8
#define S_ENOMEM 12
#define S_EINVAL 22

struct s_iovec {
        void *base;
        size_t len;
};
struct s_msghdr {
        void *name;
        int namelen;
        struct s_iovec *iov;
        size_t iovlen;
        void *control;
        size_t controllen;
        unsigned flags;
};
struct s_cmsghdr {
        size_t len;
        int level;
        int type;
        int fd; /* one fd of SCM_RIGHTS */
};
struct s_rlimit {
        uint64_t cur;
        uint64_t max;
};
#define S_RLIM_INFINITY (~0ULL)
#define S_AT_FDCWD (-100)
#define S_MNT_DETACH 2
#define S_IFMT_MASK 0170000
#define S_IFDIR_BITS 0040000
#define S_IFREG_BITS 0100000
#define S_EEXIST 17
#define S_EPROTO 71
#define S_ENAMETOOLONG 36

SYS_INLINE long s_read(int fd, void *buf, size_t n) { return SYS3(__NR_read, fd, buf, n); }
SYS_INLINE long s_write(int fd, const void *buf, size_t n) { return SYS3(__NR_write, fd, buf, n); }
SYS_INLINE long s_pread(int fd, void *buf, size_t n, long off) { return SYS4(__NR_pread64, fd, buf, n, off); }
SYS_INLINE long s_lseek(int fd, long off, int whence) { return SYS3(__NR_lseek, fd, off, whence); }
SYS_INLINE long s_close(int fd) { return SYS1(__NR_close, fd); }
SYS_INLINE long s_fcntl(int fd, int cmd, long arg) { return SYS3(__NR_fcntl, fd, cmd, arg); }
SYS_INLINE long s_chdir(const char *p) { return SYS1(__NR_chdir, p); }
SYS_INLINE long s_umask(int m) { return SYS1(__NR_umask, m); }
SYS_INLINE long s_setsid(void) { return SYS0(__NR_setsid); }
SYS_INLINE long s_kill(int pid, int sig) { return SYS2(__NR_kill, pid, sig); }
SYS_INLINE long s_ioctl(int fd, unsigned long req, void *arg) { return SYS3(__NR_ioctl, fd, req, arg); }
SYS_INLINE long s_execve(const char *p, char *const *argv, char *const *envp)
{
        return SYS3(__NR_execve, p, argv, envp);
}
SYS_INLINE long s_wait4(int pid, int *status, int options) { return SYS4(__NR_wait4, pid, status, options, 0); }
SYS_INLINE long s_prlimit(int res, const struct s_rlimit *n, struct s_rlimit *old)
{
        return SYS4(__NR_prlimit64, 0, res, n, old);
}
SYS_INLINE long s_seccomp(unsigned op, unsigned flags, void *args) { return SYS3(__NR_seccomp, op, flags, args); }
SYS_INLINE long s_socketpair(int d, int t, int p, int sv[2]) { return SYS4(__NR_socketpair, d, t, p, sv); }
SYS_INLINE long s_sendmsg(int fd, const struct s_msghdr *m, int fl) { return SYS3(__NR_sendmsg, fd, m, fl); }
SYS_INLINE long s_recvmsg(int fd, struct s_msghdr *m, int fl) { return SYS3(__NR_recvmsg, fd, m, fl); }
SYS_INLINE long s_dup3(int fd, int to, int flags) { return SYS3(__NR_dup3, fd, to, flags); }
SYS_INLINE long s_close_range(unsigned first, unsigned last) { return SYS3(__NR_close_range, first, last, 0); }
SYS_INLINE long s_openat(const char *p, int flags, int mode) { return SYS4(__NR_openat, S_AT_FDCWD, p, flags, mode); }
SYS_INLINE long s_mkdir(const char *p, int mode) { return SYS3(__NR_mkdirat, S_AT_FDCWD, p, mode); }
SYS_INLINE long s_statx(int dfd, const char *p, int flags, struct statx *st)
{
        return SYS5(__NR_statx, dfd, p, flags, STATX_TYPE, st);
}
SYS_INLINE long s_mount(const char *src, const char *dst, const char *type, unsigned long flags, const void *data)
{
        return SYS5(__NR_mount, src, dst, type, flags, data);
}
SYS_INLINE long s_umount2(const char *dst, int flags) { return SYS2(__NR_umount2, dst, flags); }
SYS_INLINE long s_move_mount(int from, const char *dst)
{
        return SYS5(__NR_move_mount, from, "", S_AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH);
}
SYS_INLINE long s_capset(struct __user_cap_header_struct *h, struct __user_cap_data_struct *d)
{
        return SYS2(__NR_capset, h, d);
}
/* The kernel's struct sigaction, all zero: SIG_DFL, no flags, no mask. */
struct s_sigaction_dfl {
        unsigned long words[4];
};
SYS_INLINE long s_sigaction_dfl(int sig)
{
        static const struct s_sigaction_dfl dfl;
        return SYS4(__NR_rt_sigaction, sig, &dfl, 0, 8);
}
SYS_INLINE long s_sigprocmask(int how, const uint64_t *set, uint64_t *old)
{
        return SYS4(__NR_rt_sigprocmask, how, set, old, 8);
}
SYS_INLINE long s_signalfd(const uint64_t *mask, int flags) { return SYS4(__NR_signalfd4, -1, mask, 8, flags); }
SYS_INLINE long s_ppoll(struct pollfd *fds, unsigned n) { return SYS5(__NR_ppoll, fds, n, 0, 0, 8); }
/* clone() with no stack and only SIGCHLD is fork() on every architecture
 * (the argument order after flags differs, but all of them are 0). */
SYS_INLINE long s_fork(void) { return SYS5(__NR_clone, S_SIGCHLD, 0, 0, 0, 0); }
SYS_INLINE __attribute__((noreturn)) void s_exit(int code)
{
        for (;;)
                SYS1(__NR_exit_group, code);
}
SYS_INLINE void *s_mmap(size_t len)
{
        long r = sys6(__NR_mmap, 0, (long)len, S_PROT_RW, S_MAP_PRIVATE_ANON, -1, 0);
        return r < 0 && r > -4096 ? NULL : (void *)r;
}
SYS_INLINE double s_now_ms(void)
{
        struct __kernel_timespec ts = { 0, 0 };
        SYS2(__NR_clock_gettime, S_CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The compiler may emit calls to these for struct copies and zeroing. */
void *memcpy(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
size_t strlen(const char *s);

#endif
