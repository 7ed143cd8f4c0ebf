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

/* Fixed setup steps reported as negative indexes (ops use 0..n-1). */
enum enter_step {
        STEP_SYNC = -1,
        STEP_IDS = -2,
        STEP_CAPS = -3,
        STEP_PRIVATE = -4,
        STEP_ROOT_TMPFS = -5,
        STEP_PIVOT = -6,
        STEP_DETACH_OLDROOT = -7,
        STEP_ROOT_READONLY = -8,
        STEP_HOSTNAME = -9,
        STEP_LOOPBACK = -10,
        STEP_DROP_CAPS = -11,
        STEP_NO_NEW_PRIVS = -12,
        STEP_FDS = -13,
        STEP_EXEC_INIT = -14,
        STEP_PDEATHSIG = -15,
        STEP_NETNS = -16,
        STEP_PROXY = -17,
        STEP_CGROUP = -18,
        STEP_ORDERS = -19,       /* a pre-made jail: its claim */
        STEP_RESIZE = -20,
        STEP_ATTACH = -21,
        STEP_SCRIPT = -22,
        STEP_PROGRAM_PROCESS = -23, /* a pre-made jail: its program's process, forked before the claim */
};

/* A pre-made jail's claim (spawn.c to corral-init's program mode, over
 * plan.order_fd): one SOCK_SEQPACKET message with this, and as SCM_RIGHTS
 * the program's stdin, init's orders (the sealed memfd), then n_trees
 * detached mounts
 * (trees.c): with workspace, the first replaces /workspace and each other
 * is attached at the next destination in dsts (NUL-separated, absolute in
 * the jail); with script, last, the program text (a sealed memfd) that the
 * program process writes to /run/corral/script_name, as the plan's OP_FILE
 * does for a direct jail.  The program process (corral-init in program
 * mode, below) answers JAIL_PREMADE_READY on the same socket when it waits
 * for this. */
#define JAIL_PREMADE_MAX_DESTS (32u << 10)
#define JAIL_PREMADE_MAX_SCRIPT_NAME 128
#define JAIL_PREMADE_READY 'r'
#define JAIL_PREMADE_MAX_FDS 68 /* UNIX_MAX_FDS: orders, stdin, trees and script */
struct jail_premade_claim {
        uint64_t disk_bytes;     /* /tmp and the default /workspace are resized to this (0: as made) */
        uint64_t root_bytes;     /* with a script: the root tmpfs is resized to this first */
        uint64_t script_len;
        uint32_t script;         /* 1: the last descriptor is the program text */
        uint32_t n_trees;
        uint32_t workspace;      /* 1: trees[0] is the workspace */
        char script_name[JAIL_PREMADE_MAX_SCRIPT_NAME];
        uint32_t dsts_len;
        char dsts[JAIL_PREMADE_MAX_DESTS];
};

/* A pre-made jail's program process (enter.c) runs corral-init in program
 * mode (init-orders.h's CORRAL_INIT_PROGRAM_VAR=1 in its environment)
 * until its claim:
 * fds 1 and 2 are the program's stdout and stderr, 3 the socket to the
 * jail's init (which adopted it), 4 the status pipe and 5 the claim's
 * socket; its outer filter (seccomp.c) is loaded and it holds
 * CAP_SYS_ADMIN alone, as an ambient capability, for the claim's mounts. */
#define CORRAL_PROGRAM_SOCK_FD 3
#define CORRAL_PROGRAM_CLAIM_FD 5

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
