/* protocol.h: the wire formats between the supervisor (libcorral) and the
 * jail's init (src/init/init.c).  Both sides are built from this header in
 * one tree, so there is no cross-version compatibility to keep; the magic and
 * version only catch a wrong binary being exec'd.
 *
 * fd 3 of init: a sealed memfd holding an init_header (with the EPERM set:
 *   the native system-call numbers whose notifications init answers with
 *   EPERM instead of a kill), then n_rlimits
 *   init_rlimit records, then bpf_len sock_filter instructions, then
 *   strings_len bytes of NUL-terminated strings: argv (argc of them), envp
 *   (envc), and the working directory.
 * fd 4 of init (and of the setup child before it): a pipe to the supervisor
 *   carrying fixed-size init_msg records.
 * fds 0-2: the program's stdio.  No other fd crosses into the jail.
 *
 * Threads: definitions only.
 */
#ifndef CORRAL_PROTOCOL_H
#define CORRAL_PROTOCOL_H

#include <linux/audit.h>
#include <stdint.h>

#if defined(__x86_64__)
#define CORRAL_AUDIT_ARCH_NATIVE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CORRAL_AUDIT_ARCH_NATIVE AUDIT_ARCH_AARCH64
#else
#error "corral-init knows x86_64 and aarch64"
#endif

#define CORRAL_INIT_MAGIC 0x6c72726fu /* "orrl" */
#define CORRAL_INIT_VERSION 2u
#define CORRAL_INIT_CONFIG_FD 3
#define CORRAL_INIT_STATUS_FD 4
#define CORRAL_INIT_MAX_CONFIG (16u << 20)
/* init_header.flags: load the filter without a user-notification listener
 * (a zygote: the sessions it forks load their own filter with one, and a
 * task may sit under only one listener). */
#define CORRAL_INIT_FLAG_NO_LISTENER 1u
/* ... once the program ended, kill the rest of the tree, report, and wait
 * to be killed: a pre-made jail's supervisor answers at the report and
 * kills init (whose exit starts the namespaces' teardown) only once its
 * caller is done (docs/exec-pool.md). */
#define CORRAL_INIT_FLAG_LINGER 2u
/* The EPERM set covers native system calls 0 .. 64 * words - 1. */
#define CORRAL_INIT_EPERM_WORDS 16

/* Is nr in the EPERM set?  Everything else notified (numbers past the set,
 * the x32 bit, foreign architectures: check arch first) is a kill. */
static inline int corral_eperm_has(const uint64_t *set, int32_t nr)
{
        return nr >= 0 && nr < 64 * CORRAL_INIT_EPERM_WORDS && ((set[nr / 64] >> (nr % 64)) & 1u) != 0;
}

struct init_header {
        uint32_t magic;
        uint32_t version;
        uint32_t n_rlimits;
        uint32_t argc;
        uint32_t envc;
        uint32_t bpf_len;     /* instructions */
        uint32_t strings_len; /* bytes */
        uint32_t flags;
        uint64_t eperm[CORRAL_INIT_EPERM_WORDS];
};

struct init_rlimit {
        int32_t resource;
        uint32_t pad;
        uint64_t cur;
        uint64_t max;
};

enum init_msg_type {
        MSG_CHILD_START = 1, /* setup child runs; t */
        MSG_ROOT_READY,      /* namespaces and new root done; t */
        MSG_SETUP_FAILED,    /* a = setup step index, b = errno */
        MSG_INIT_START,      /* init's main() entered; t */
        MSG_SECCOMP_LOADED,  /* payload filter loaded, about to execve; t */
        MSG_EXEC_FAILED,     /* a = errno from execve (or PATH search) */
        MSG_SECCOMP_VIOLATION, /* a = syscall nr, b = audit arch */
        MSG_EXITED,          /* a = wait status of the payload */
        MSG_INIT_FAILED,     /* a = init step, b = errno */
        MSG_SECCOMP_EPERM,   /* a = syscall nr, b = audit arch: answered EPERM (once per nr) */
};

/* Steps of init itself, for MSG_INIT_FAILED. */
enum init_step {
        INIT_STEP_CONFIG = 1,
        INIT_STEP_SIGNALS,
        INIT_STEP_FORK,
        INIT_STEP_RLIMIT,
        INIT_STEP_CHDIR,
        INIT_STEP_SECCOMP,
        INIT_STEP_LISTENER,
};

struct init_msg {
        uint32_t type;
        int32_t a;
        int32_t b;
        uint32_t pad;
        double t; /* CLOCK_MONOTONIC ms; shared by all pid namespaces */
};

#endif
