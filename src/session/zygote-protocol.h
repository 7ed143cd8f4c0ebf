/* zygote-protocol.h: the messages between corral (src/session/warm.c) and
 * corral-zygote (src/session/zygote.c); docs/sessions.md, "Warm sessions".
 *
 * Both sides are built from this header in one tree: no compatibility to
 * keep.  Two channels, both SOCK_SEQPACKET (one message per record, fds by
 * SCM_RIGHTS):
 *
 *  - the zygote's control socket (its fd 0):
 *      corral -> zygote  ZYGOTE_MSG_BPF, once: the jail's EPERM set (protocol.h,
 *                        CORRAL_INIT_EPERM_WORDS uint64_t), then its filter,
 *                        raw BPF
 *      zygote -> corral  ZYGOTE_MSG_READY once the imports are done, or
 *                        ZYGOTE_MSG_FAILED with a message
 *      corral -> zygote  ZYGOTE_MSG_FORK with three fds: the session's frame
 *                        socket, its control socket, its diagnostics pipe
 *  - a session's control socket, between corral and the session's init (the
 *    pid 1 of the session's pid namespace, a fork of the zygote that never
 *    runs Python):
 *      init -> corral    struct init_msg records (src/lib/protocol.h):
 *                        MSG_INIT_START when the namespaces are made (corral
 *                        reads init's host pid from SCM_CREDENTIALS),
 *                        MSG_SETUP_FAILED, MSG_SECCOMP_VIOLATION,
 *                        MSG_SECCOMP_EPERM, MSG_EXITED
 *      corral -> init    one struct zygote_claim, then the environment
 *                        strings, then the binds' destinations (relative
 *                        to /workspace), with the workspace and then each
 *                        bind as a detached mount (fds, in that order),
 *                        then, for --net allow, the socket on which
 *                        init sends the proxy's listening socket, and
 *                        last, when there is one, the bundle init puts at
 *                        /etc/ssl/certs/ca-certificates.crt (with brokered
 *                        credentials a sealed memfd with the CA, else the
 *                        host's bundle file)
 *
 * Threads: definitions only.
 *
 * Internal to src/session/ (warm.c and corral-zygote).
 */
#ifndef CORRAL_ZYGOTE_PROTOCOL_H
#define CORRAL_ZYGOTE_PROTOCOL_H

#include <stdint.h>

#define ZYGOTE_MSG_BPF 'B'
#define ZYGOTE_MSG_READY 'R'
#define ZYGOTE_MSG_FAILED 'X'
#define ZYGOTE_MSG_FORK 'F'
#define ZYGOTE_MSG_CLAIM 'W'

/* Where the zygote binary and the driver are bound in its jail.  The
 * binary's name starts with "python" so that the jail library gives it
 * matplotlib's pre-built font cache, as it does to python3. */
#define ZYGOTE_IN_JAIL "/run/corral-zygote/python3-zygote"
#define ZYGOTE_DRIVER_DIR "/run/corral-session"

#define ZYGOTE_MAX_BPF 4096        /* instructions */
#define ZYGOTE_MAX_ENV (128u << 10) /* bytes of environment strings in a claim */
#define ZYGOTE_MAX_BINDS 64         /* binds beneath /workspace per session */
#define ZYGOTE_MAX_DESTS (32u << 10) /* bytes of their destinations */

struct zygote_ready {
        char type;                 /* ZYGOTE_MSG_READY */
        char pad[3];
        uint32_t threads;          /* threads after the imports (must be 1) */
        double import_ms;
};

/* The session's part of the jail's setup, done by its init at claim time. */
struct zygote_claim {
        char type;                 /* ZYGOTE_MSG_CLAIM */
        uint8_t loopback;          /* bring up lo in the session's network namespace */
        uint8_t proxy;             /* --net allow: the last fd is a unix socket for the proxy's listener
                                    * (netdev_proxy_listener_send()) */
        uint8_t ca;                /* --net allow: the last fd is the bundle for ZYGOTE_CA_DIR: with brokered
                                    * credentials the system's roots and the CA (PEM, a memfd), else the
                                    * host's bundle file itself (read-only) */
        uint32_t envc;             /* NUL-terminated NAME=VALUE strings follow */
        uint32_t uid;              /* the session's uid and gid in the zygote's namespace (0: the zygote's own) */
        uint32_t nbinds;           /* mounts after the workspace's, at the destinations after the environment */
        uint64_t disk_bytes;       /* /tmp's size, RLIMIT_FSIZE */
        uint64_t nofile;
        uint64_t cpu_time_s;       /* RLIMIT_CPU, 0 none */
        uint64_t rlimit_as;        /* no memory cgroup: RLIMIT_AS, else 0 */
        uint64_t rlimit_nproc;     /* no pids cgroup: RLIMIT_NPROC, else 0 */
};

/* Steps of a session's set-up, for MSG_SETUP_FAILED (a = step, b = errno). */
enum zygote_step {
        ZSTEP_UNSHARE = 1,
        ZSTEP_FORK,
        ZSTEP_PROC,
        ZSTEP_CLAIM,
        ZSTEP_TMP,
        ZSTEP_WORKSPACE,
        ZSTEP_LOOPBACK,
        ZSTEP_USERNS,
        ZSTEP_RLIMIT,
        ZSTEP_CAPS,
        ZSTEP_SECCOMP,
        ZSTEP_PYTHON,
        ZSTEP_BIND,
        ZSTEP_DEVPTS,
        ZSTEP_PROXY,
        ZSTEP_CA,
};

/* Where the bundle goes: the zygote's /etc has this directory, empty, and a
 * session with --net allow mounts a tmpfs of its own on it. */
#define ZYGOTE_CA_DIR "/etc/ssl/certs"
#define ZYGOTE_CA_FILE "ca-certificates.crt"
#define ZYGOTE_MAX_CA (4u << 20) /* bytes of the bundle */

#endif
