/* jail-internal.h: the pieces of a jail, shared between the library's files.
 *
 *   config.c   defaults, setters and validation of corral_jail_config
 *   plan.c     turns a config into a jail_plan: every path, mount and string
 *              the setup child needs, computed before clone()
 *   enter.c    what the setup child does between clone() and exec'ing init:
 *              id switch, new root, hostname, loopback, dropping privileges
 *   spawn.c    what the caller does: cgroups, clone3(), id maps, the
 *              supervision loop (epoll on pipes, pidfd and timerfd), teardown
 *   seccomp.c  the system-call filter
 *   cgroup.c   cgroup v2 / v1 limits and accounting
 *   uidpool.c  per-jail host uids when the caller is root
 *   outcome.c  how the program ended, classified (cold and warm jails)
 *   result.c   names of the result's enums and its JSON form
 *   profile.c  JSON profiles
 *   trees.c    workspace and binds as detached mounts, attached by the jail
 *
 * Threads: the parent's side is thread-safe (caches made under pthread_once,
 * counters atomic, uid leases by OFD locks); enter.c runs in the setup child
 * (one thread); a struct jail, plan or jail_cgroup is one caller's.
 */
#ifndef CORRAL_JAIL_INTERNAL_H
#define CORRAL_JAIL_INTERNAL_H

#include <linux/filter.h>
#include <pthread.h>
#include <sys/types.h>

#include <corral/jail.h>

#include "protocol.h"
#include "proxy.h" /* net_proxy_start/stop: warm sessions serve their own namespace's listener */
#include "util.h"

/* ---- seccomp.c ---- */
struct jail_bpf {
        struct sock_filter *insns;
        size_t len;
        uint64_t eperm[CORRAL_INIT_EPERM_WORDS]; /* notified calls answered EPERM (protocol.h) */
};
/* The filter every jail loads (built once, or compiled in at build time). */
CORRAL_HIDDEN int jail_seccomp_program(const struct jail_bpf **ret, corral_error **ret_err);
/* Build it from the policy with libseccomp; out->insns is malloc'd. */
CORRAL_HIDDEN int jail_seccomp_build(struct jail_bpf *out, corral_error **ret_err);
/* The same filter in two parts for a pre-made jail's program process
 * (enter.c), so that the claim loads a small program instead of the whole:
 * the outer one, loaded before the claim without a listener, is the policy
 * with the claim's own calls allowed (mount, umount2, move_mount, capset,
 * seccomp); the inner one, loaded at the claim with the listener, notifies
 * what the policy notifies (the tie goes to it, the newer filter) and
 * refuses capset and seccomp with ENOSYS.  Stacked, they decide every call
 * as jail_seccomp_program() does (test-seccomp.c runs all three).  Built
 * once, or compiled in at build time; the _build variant mallocs. */
CORRAL_HIDDEN int jail_seccomp_premade_programs(const struct jail_bpf **ret_outer, const struct jail_bpf **ret_inner,
                                                corral_error **ret_err);
CORRAL_HIDDEN int jail_seccomp_build_premade(struct jail_bpf *outer, struct jail_bpf *inner, corral_error **ret_err);
CORRAL_HIDDEN char *jail_seccomp_syscall_name(int nr, uint32_t arch);
/* The calls a jail's init answered with EPERM (MSG_SECCOMP_EPERM), each
 * once, in the order they came; past JAIL_MAX_DENIED the rest are dropped. */
#define JAIL_MAX_DENIED 64
struct jail_denied {
        int nr[JAIL_MAX_DENIED];
        uint32_t arch[JAIL_MAX_DENIED];
        size_t n;
};
CORRAL_HIDDEN void jail_denied_add(struct jail_denied *d, int nr, uint32_t arch);
/* Their names into r->denied / r->n_denied (nothing when there are none). */
CORRAL_HIDDEN void jail_denied_to_result(const struct jail_denied *d, corral_jail_result *r);
/* The zygote's filter (src/session/zygote.c): the jail's policy plus what
 * forking a session into fresh namespaces needs (unshare, mount, umount2,
 * move_mount, mount_setattr, capset, seccomp, clone with namespace flags);
 * denied calls notify, and with no listener fail with ENOSYS.  Built once. */
CORRAL_HIDDEN int jail_seccomp_zygote_program(const struct jail_bpf **ret, corral_error **ret_err);

/* ---- outcome.c ----
 * What a cold jail (spawn.c) and a warm session's jail (warm.c) know about
 * how their program ended; jail_outcome_classify() is the one place that
 * turns it into a result's status, limit, signal, exit code and reason. */
enum jail_end {
        JAIL_END_EXITED,         /* code: the exit status */
        JAIL_END_SIGNALED,       /* code: the signal */
        JAIL_END_NO_REPORT,      /* init ended without saying how the program did */
};
struct jail_outcome_limits {
        double timeout_s, cpu_time_s;
        uint64_t memory_bytes, disk_bytes, pids;
};
struct jail_outcome {
        enum jail_end end;
        int code;
        bool exec_failed;        /* the program could not be executed */
        int exec_errno;
        const char *program;     /* argv[0], for that message */
        bool violation;          /* a blocked system call killed the jail */
        int violation_nr;
        uint32_t violation_arch;
        bool cancelled;          /* the caller's cancel_fd */
        bool cpu_exceeded;       /* the supervisor saw the tree pass cpu_time_s */
        bool timed_out;          /* the wall-clock timer fired */
        uint64_t oom_kills, pids_max_hits; /* the cgroup's counters */
        enum corral_limits_backend backend;
        bool stderr_memory_error; /* jail_outcome_memory_error() on the whole stderr */
        double cpu_s;            /* the program's CPU seconds (rusage), < 0 unknown */
        struct jail_outcome_limits limits;
};
/* end and code from a wait status. */
CORRAL_HIDDEN void jail_outcome_set_wait_status(struct jail_outcome *o, int wait_status);
/* limits and program from a config (borrowed: o->program points into it). */
CORRAL_HIDDEN void jail_outcome_set_limits(struct jail_outcome *o, const corral_jail_config *cfg);
/* Whether the last line of a program's stderr says an allocation failed. */
CORRAL_HIDDEN bool jail_outcome_memory_error(const char *data, size_t len);
CORRAL_HIDDEN void jail_outcome_classify(const struct jail_outcome *o, corral_jail_result *r);

/* ---- cgroup.c ---- */
struct cgroup_layout {
        char *v2_dir;            /* our own cgroup in the v2 hierarchy */
        bool v2_memory, v2_pids, v2_cpu;
        bool v2_moved_self;      /* we moved into <v2_dir>/corral-supervisor */
        char *v1_memory, *v1_pids, *v1_cpu, *v1_cpuacct; /* our own v1 cgroups */
        bool test_tree;          /* plain files: a prepared tree in a test */
};
enum cg_version { CG_NONE = 0, CG_V1, CG_V2 };
struct cgroup_limits {
        uint64_t memory_bytes;
        uint64_t pids;
        double cpus;
};
struct jail_cgroup {
        const struct cgroup_layout *layout;
        char *v2;
        int v2_fd;
        bool v2_cloned_into;
        char *v1_memory, *v1_pids, *v1_cpu, *v1_cpuacct;
        enum cg_version memory, pids, cpu;
        bool v1_by_child;        /* the jail's setup child enters the v1 cgroups itself */
        bool stats_open;         /* cgroup_open_stats(): the counters' files are read from stat_fds */
        int stat_fds[4];         /* CG_STAT_*, -1 where there is none */
};
enum { CG_STAT_PEAK, CG_STAT_OOM, CG_STAT_PIDS, CG_STAT_CPU, CG_STATS };
struct cgroup_stats {
        uint64_t memory_peak;
        uint64_t oom_kills;
        uint64_t pids_max_hits;
        uint64_t cpu_usec;
        bool have_cpu;
};
/* Undo mountinfo's octal escapes (\040 for a space) in place. */
CORRAL_HIDDEN void mountinfo_unescape(char *s);
CORRAL_HIDDEN int cgroup_layout_detect(struct cgroup_layout *l);
CORRAL_HIDDEN int cgroup_layout_detect_from(struct cgroup_layout *l, const char *mountinfo, const char *proc_cgroup);
CORRAL_HIDDEN void cgroup_layout_release(struct cgroup_layout *l);
CORRAL_HIDDEN const struct cgroup_layout *cgroup_host_layout(void);
/* Remove cgroups left by supervisors that were SIGKILLed (once per process). */
CORRAL_HIDDEN void cgroup_sweep_stale(void);
CORRAL_HIDDEN int cgroup_create(const struct cgroup_layout *l, const char *name, const struct cgroup_limits *lim,
                                struct jail_cgroup *cg, corral_error **ret_err);
/* A made cgroup's limits changed to lim (a pre-made jail's claim):
 * refused (-1, error) when the jail already uses more memory than lim
 * allows, or lim asks for a CPU share and the jail has no cpu cgroup. */
CORRAL_HIDDEN int cgroup_set_limits(struct jail_cgroup *cg, const struct cgroup_limits *lim, corral_error **ret_err);
CORRAL_HIDDEN int cgroup_attach_v1(struct jail_cgroup *cg, pid_t pid, corral_error **ret_err);
/* The v1 cgroups' `tasks` files, opened for a child to enter them itself by
 * writing "0" (a single thread moving itself: no RCU grace period, see
 * cgroup.c).  Returns how many fds were put in ret_fds (CLOEXEC, the
 * caller's to close) and sets cg->v1_by_child; 0 when there is nothing to
 * enter or a file cannot be opened (then cgroup_attach_v1() does it all). */
#define CGROUP_V1_MAX 4
CORRAL_HIDDEN size_t cgroup_open_v1_tasks(struct jail_cgroup *cg, int ret_fds[CGROUP_V1_MAX]);
CORRAL_HIDDEN void cgroup_kill(struct jail_cgroup *cg);
CORRAL_HIDDEN void cgroup_read_stats(struct jail_cgroup *cg, struct cgroup_stats *st);
/* Keep the files cgroup_read_stats() reads open from now on (closed by
 * cgroup_destroy()): a pre-made jail's result then opens nothing. */
CORRAL_HIDDEN void cgroup_open_stats(struct jail_cgroup *cg);
/* Whether cgroup_read_stats() has the tree's memory peak and CPU time
 * (without them, a result needs the rusage of init's wait). */
CORRAL_HIDDEN bool cgroup_counts_usage(const struct jail_cgroup *cg);
/* CPU time of the whole tree so far (v2 cpu.stat or v1 cpuacct). */
CORRAL_HIDDEN bool cgroup_cpu_usage(struct jail_cgroup *cg, uint64_t *ret_usec);
CORRAL_HIDDEN void cgroup_destroy(struct jail_cgroup *cg);

/* ---- uidpool.c ---- */
struct uid_lease {
        uint32_t uid;
        int fd; /* the pool's lock file, its byte locked while the lease is held */
};
/* Whether jails lease host uids from [base, base+count): 1 as root where
 * the user namespace maps the range, 0 for an ordinary user or root of a
 * namespace that maps fewer ids (jails run as the caller), -1 (error set)
 * for root of such a namespace whose uid 0 is its parent's root. */
CORRAL_HIDDEN int uidpool_use(uint32_t base, uint32_t count, corral_error **ret_err);
CORRAL_HIDDEN int uidpool_acquire(uint32_t base, uint32_t count, struct uid_lease *ret, corral_error **ret_err);
CORRAL_HIDDEN void uidpool_release(struct uid_lease *lease);

/* ---- idmap.c ---- */
/* A detached bind of path (caller must be root), read-only unless writable,
 * always nosuid and nodev; with idmap_to, the path's owner appears as that
 * host id.  -1 when the kernel or filesystem cannot do it. */
/* What a jail's caller hears (corral_jail_io.on_notice) when its limits
 * fall back to rlimits; warm sessions say the same. */
#define JAIL_NOTICE_RLIMITS \
        "no usable cgroup: memory and process limits fall back to rlimits (per process, not per tree; see " \
        "'corral doctor')"

CORRAL_HIDDEN int idmap_open_tree(const char *path, bool recursive, uint32_t idmap_to, bool writable,
                                  corral_error **ret_err);
/* The same for what fd (O_PATH is enough) refers to; path names it in
 * messages. */
CORRAL_HIDDEN int idmap_open_tree_fd(int fd, const char *path, bool recursive, uint32_t idmap_to, bool writable,
                                     corral_error **ret_err);

/* ---- trees.c ----
 * A jail's workspace and binds as detached mounts, made on the host for
 * the jail to attach in its own mount namespace (warm sessions at claim,
 * pre-made jails at claim).  jail_trees_make() fills trees with
 * 1 + cfg->n_binds fds: the workspace (cfg->workspace cloned, or a fresh
 * tmpfs of cfg->disk_bytes owned by host_uid), then each bind; mount
 * points of binds beneath /workspace are made in the workspace tree.
 * leased: the jail has a host uid of its own (root; trees idmapped to it);
 * else it runs as the caller and a helper in a user namespace of its own
 * clones them.  At most JAIL_TREES_MAX_BINDS binds. */
#define JAIL_TREES_MAX_BINDS 64
CORRAL_HIDDEN int jail_trees_make(const corral_jail_config *cfg, uint32_t host_uid, bool leased, int *trees,
                                  corral_error **ret_err);
/* dst relative to /workspace, or NULL unless it lies strictly beneath it
 * with no empty, "." or ".." component. */
CORRAL_HIDDEN const char *jail_bind_beneath_workspace(const char *dst);

/* ---- fontcache.c ---- */
/* The host directory holding a pre-built matplotlib font cache for this
 * jail (built on first use, about a second, said first through on_notice
 * when given), or NULL when it does not apply or failed. */
CORRAL_HIDDEN char *fontcache_dir(const corral_jail_config *cfg, void (*on_notice)(void *, const char *),
                                  void *userdata);

/* ---- plan.c / enter.c ---- */
enum mount_op_kind {
        OP_DIR,      /* mkdir dst */
        OP_TMPFS,    /* tmpfs at dst with data */
        OP_BIND,     /* bind src (below /oldroot) at dst */
        OP_PROC,     /* fresh proc at dst */
        OP_FILE,     /* create dst with content */
        OP_SYMLINK,  /* dst -> src */
        OP_ATTACH,   /* attach the detached mount tree_fd at dst */
        OP_READONLY, /* make the mount at dst (alone) read-only, nosuid, noexec */
        OP_DEVPTS,   /* a private devpts instance at dst with data */
};
struct mount_op {
        enum mount_op_kind kind;
        const char *src;
        const char *dst;       /* relative to the new root */
        const char *data;      /* tmpfs options, or file content */
        size_t data_len;
        bool writable;
        bool src_is_dir;
        bool device;           /* a /dev node: keep dev, drop exec */
        int tree_fd;           /* OP_ATTACH: from idmap_open_tree() */
        mode_t mode;
        bool check_id;         /* OP_BIND: what got mounted must be expect_dev/ino */
        dev_t expect_dev;
        ino_t expect_ino;
};

_Static_assert(JAIL_PREMADE_MAX_FDS == UNIX_MAX_FDS, "a claim's descriptors fit one message");

struct jail_plan {
        struct mount_op *ops;
        size_t n_ops;
        size_t cap_ops;
        char **strings;          /* owned strings referenced by ops */
        size_t n_strings;
        char *root_tmpfs_data;
        uid_t uid_inside;
        gid_t gid_inside;
        bool drop_groups;        /* caller is root: setgroups(0) */
        bool attach_trees;       /* root: host binds are cloned by the caller */
        uint32_t idmap_to;       /* root: writable binds idmapped to this host id */
        int *tree_fds;           /* owned: detached idmapped trees */
        size_t n_tree_fds;
        char *notice;            /* for the caller, e.g. an idmap fallback */
        /* the caller's corral_jail_io.on_notice, for what it should hear
         * before the plan is done (a font cache being built) */
        void (*on_notice)(void *userdata, const char *message);
        void *notice_userdata;
        enum corral_net net;
        /* fds the child puts at 0..4, and the ones it only uses */
        int stdin_fd, stdout_fd, stderr_fd, config_fd, status_fd;
        int init_fd, sync_fd;
        int sync_wfd;            /* the caller's end, held until the jail is gone */
        int proxy_fd;            /* CORRAL_NET_ALLOW: a unix socket to the proxy, for its listening socket */
        int cg_tasks_fds[CGROUP_V1_MAX]; /* v1 `tasks` files the child writes "0" to first (cgroup_open_v1_tasks) */
        size_t n_cg_tasks_fds;
        bool keep_caps;          /* a zygote: keep the capabilities of its own user namespace */
        /* A pre-made jail: the child stops once its new root is mounted
         * and waits on order_fd for a claim (struct jail_premade_claim);
         * stdin_fd and config_fd come with it. */
        bool premade;
        int order_fd;
        /* ... and its filter's outer part (seccomp.c), loaded before the
         * claim; the inner one comes with the claim's orders. */
        const struct jail_bpf *bpf_outer;
        const char *ca_bundle;   /* brokered credentials: PEM text for JAIL_CA_BUNDLE (borrowed), or NULL */
        bool ssl_certs_dir;      /* a zygote: an empty /etc/ssl/certs, where a warm session with brokered
                                  * credentials mounts its own bundle (src/session/zygote.c) */
        bool trust_store;        /* --net allow without ca_bundle: the system's bundle (the rootfs's) bound
                                  * read-only at JAIL_CA_BUNDLE, when there is one */
};
/* Where a jail with brokered credentials finds the system's roots and its
 * own CA (Debian's path: OpenSSL's default file points here). */
#define JAIL_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define JAIL_MAX_TRUST_STORE (4u << 20) /* bytes: a larger "bundle" is not one */
/* The system's trust store for a --net allow jail without a credential:
 * SYSROOT/etc/ssl/certs/ca-certificates.crt (sysroot NULL or "": the
 * host's), resolved inside SYSROOT, a regular file of at most
 * JAIL_MAX_TRUST_STORE bytes.  A read-only fd, or -1: there is none. */
CORRAL_HIDDEN int jail_trust_store_open(const char *sysroot);
CORRAL_HIDDEN int jail_plan_build(struct jail_plan *p, const corral_jail_config *cfg, corral_error **ret_err);
/* The size of the root tmpfs of a jail for cfg (its program text and CA
 * bundle included): what the plan mounts, and a claim resizes a pre-made
 * jail's root to. */
CORRAL_HIDDEN size_t jail_plan_root_bytes(const corral_jail_config *cfg, const char *ca_bundle);
/* A host directory no jail may write to (the system's, or beneath them):
 * writable binds and workspaces of these are refused. real: a realpath. */
CORRAL_HIDDEN bool jail_path_is_system(const char *real);
CORRAL_HIDDEN void jail_plan_release(struct jail_plan *p);
CORRAL_HIDDEN const char *jail_plan_step_name(const struct jail_plan *p, int step, char *buf, size_t len);
CORRAL_HIDDEN __attribute__((noreturn)) void jail_enter(const struct jail_plan *p);

/* ---- config.c ---- */
/* A bind from separate paths (a source may contain ':'). */
CORRAL_HIDDEN int jail_config_add_bind_paths(corral_jail_config *cfg, const char *src, const char *dst, bool writable,
                                             corral_error **ret_err);
CORRAL_HIDDEN bool jail_env_name_valid(const char *name, size_t len);

/* ---- spawn.c helpers used by config.c ---- */
CORRAL_HIDDEN int jail_init_binary_fd(corral_error **ret_err);

/* ---- spawn.c: a zygote's jail (src/session/warm.c) ----
 * A zygote runs as uid 0 of its own user namespace (mapped to the jail's
 * unprivileged host uid) with that namespace's capabilities, so that it can
 * give each session it forks new namespaces; it runs under the zygote
 * filter, loaded without a listener.  No user code ever runs in it. */
struct jail_special {
        bool zygote;
        int stdin_socket;        /* >= 0: the jail's stdin is this socket itself (borrowed) */
        uint32_t *ret_host_uid;  /* set (atomically) before the clone: the jail's host uid */
        const uint32_t *extra_ids; /* root: host ids mapped as 1, 2, ... (uid and gid) */
        size_t n_extra_ids;      /* at most JAIL_MAX_EXTRA_IDS */
};
#define JAIL_MAX_EXTRA_IDS 64
CORRAL_HIDDEN int jail_run_special(const corral_jail_config *cfg, const corral_jail_io *io,
                                   const struct jail_special *sp, corral_jail_result *ret_result,
                                   corral_error **ret_err);

/* ---- spawn.c: pre-made jails (docs/exec-pool.md) ----
 * A jail made now and given its program later: jail_premade_make() makes
 * it with cfg (argv and environment do not matter; net none or down, no
 * script) and returns once its setup child waits, every namespace made,
 * its cgroups entered and its root mounted.  jail_premade_run() claims it
 * for cfg: limits written to its cgroups, /tmp and the default /workspace
 * resized to cfg's disk limit, cfg's workspace and binds attached
 * (trees.c), init's orders sent; then it is supervised as a direct jail
 * to its end.  It returns 0 or -1 as corral_jail_run() does, or
 * JAIL_PREMADE_UNCLAIMED (error set) when nothing of the claim reached
 * the jail (the caller may start a direct jail instead).  Either way the
 * caller then frees pm with jail_premade_free(), which tears it down (its
 * cgroups, uid lease and descriptors): after the result is passed on, so
 * that its caller does not wait for that.  jail_premade_misfit() says why
 * cfg cannot use pm (NULL: it can); jail_premade_free() also kills and
 * tears down one never claimed.  jail_premade_run() is
 * jail_premade_claim() (0, or JAIL_PREMADE_UNCLAIMED) and then
 * jail_premade_finish(), for a caller with something to do while the
 * program starts. */
struct jail_premade;
#define JAIL_PREMADE_UNCLAIMED (-2)
CORRAL_HIDDEN int jail_premade_make(const corral_jail_config *cfg, struct jail_premade **ret, corral_error **ret_err);
CORRAL_HIDDEN const char *jail_premade_misfit(const struct jail_premade *pm, const corral_jail_config *cfg);
CORRAL_HIDDEN int jail_premade_run(struct jail_premade *pm, const corral_jail_config *cfg, const corral_jail_io *io,
                                   corral_jail_result *ret, corral_error **ret_err);
CORRAL_HIDDEN int jail_premade_claim(struct jail_premade *pm, const corral_jail_config *cfg,
                                     const corral_jail_io *io, corral_error **ret_err);
CORRAL_HIDDEN int jail_premade_finish(struct jail_premade *pm, corral_jail_result *ret, corral_error **ret_err);
CORRAL_HIDDEN double jail_premade_idle_ms(const struct jail_premade *pm);
CORRAL_HIDDEN pid_t jail_premade_pid(const struct jail_premade *pm);
/* What bounds its memory (rlimit: corral_jail_run()'s caller would hear
 * JAIL_NOTICE_RLIMITS). */
CORRAL_HIDDEN enum corral_limits_backend jail_premade_backend(const struct jail_premade *pm);
CORRAL_HIDDEN void jail_premade_free(struct jail_premade *pm);
/* A result from its JSON form (corral_jail_result_to_json(), a pooled
 * jail's sent by the session host): everything but the output's fields
 * and the network log.  0, or -1 when o is not such an object (r is then
 * the caller's to release either way). */
struct json_t;
CORRAL_HIDDEN int jail_result_from_json(const struct json_t *o, corral_jail_result *r);
/* corral_jail_config_to_profile_json()'s object, for a caller that sends
 * it inside a message of its own (a claim); NULL when out of memory. */
CORRAL_HIDDEN struct json_t *jail_config_profile_object(const corral_jail_config *cfg);
/* corral_jail_config_load_profile_text() for a profile already parsed (a
 * claim's, inside its message). */
CORRAL_HIDDEN int jail_config_apply_profile_object(corral_jail_config *cfg, struct json_t *root, const char *name,
                                                   corral_error **ret_err);
/* corral_jail_result_to_json()'s object, likewise (a claim's result). */
CORRAL_HIDDEN struct json_t *jail_result_object(const corral_jail_result *r);
/* For a claimant that reads the program's output itself (the claim over
 * host.sock, docs/exec-pool.md): the read ends of the jail's stdout and
 * stderr pipes (non-blocking, close-on-exec), taken before
 * jail_premade_run(), which then reads neither and leaves the output's
 * fields of its result empty.  jail_output_pump() reads them to their end
 * as a direct jail's supervisor does (cfg's caps, io's on_output and
 * on_truncate, kept unless io is streaming) and fills those fields of ret
 * (freeing what they held); with stdin_w (the write end of a pipe the
 * jail's stdin reads, or -1; taken and closed) it copies io's stdin_fd
 * into it as that supervisor does; io's cancel_fd, when it fires, shuts
 * down the writing side of cancel_to (the claim's connection: the host
 * then kills the jail) and the reading goes on to the end.  0, or -1 with
 * ret_err. */
CORRAL_HIDDEN void jail_premade_take_output(struct jail_premade *pm, int *ret_stdout, int *ret_stderr);
CORRAL_HIDDEN int jail_output_pump(int out_r, int err_r, int stdin_w, const corral_jail_config *cfg,
                                   const corral_jail_io *io, int cancel_to, corral_jail_result *ret,
                                   corral_error **ret_err);

#define JAIL_UID_INSIDE 1000
#define JAIL_DEFAULT_UID_BASE 1400000000u
#define JAIL_DEFAULT_UID_COUNT 65536u
#define JAIL_SCRIPT_DIR "/run/corral"
#define JAIL_MAX_SCRIPT (16u << 20)

/* --net allow: the environment that points programs at the proxy
 * (HTTP_PROXY and the rest, docs/network.md), n strings in *ret_n. */
CORRAL_HIDDEN const char *const *jail_net_allow_env(size_t *ret_n);
/* Brokered credentials: the environment that names JAIL_CA_BUNDLE
 * (SSL_CERT_FILE and the rest, docs/network.md), n strings in *ret_n. */
CORRAL_HIDDEN const char *const *jail_net_ca_env(size_t *ret_n);
/* Brokered credentials for a jail whose /etc corral does not build (a warm
 * session): the jail's CA (proxy-tls.h, for net_proxy_start) in *ret_tls
 * and its bundle (the system's roots and the CA) in a sealed memfd in
 * *ret_fd.  0, or -1 with ret_err filled. */
CORRAL_HIDDEN int jail_net_ca_new(const corral_jail_config *cfg, struct net_tls **ret_tls, int *ret_fd,
                                  corral_error **ret_err);

#endif
