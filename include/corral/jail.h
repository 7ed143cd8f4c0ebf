/* corral/jail.h: run one program inside an isolated, resource-limited jail.
 *
 * A jail is a fresh set of Linux namespaces (user, mount, pid, network, ipc,
 * uts, cgroup) with a new read-only root, a seccomp filter, no capabilities,
 * no_new_privs, and limits on wall time, CPU time, memory, processes, open
 * files, disk and output.  The library refuses to run code when namespaces,
 * seccomp or no_new_privs are unavailable; only resource limits fall back
 * (cgroup v2 -> cgroup v1 -> rlimits), and the result says which was used.
 *
 * Life cycle:
 *   corral_jail_config cfg;
 *   corral_jail_config_init(&cfg);            defaults, see below
 *   corral_jail_config_set_argv(&cfg, argv, &err);
 *   corral_jail_run(&cfg, NULL, &res, &err);  spawn, supervise, tear down
 *   ... use res ...
 *   corral_jail_result_release(&res);
 *   corral_jail_config_release(&cfg);
 *
 * corral_jail_run() is safe to call from several threads at once: it changes
 * no process-wide state (no unshare() in the caller, no SIGCHLD handler, no
 * environment or cwd changes).  The jail is killed when the thread that
 * spawned it exits (parent-death signal), so call it from a long-lived thread.
 */
#ifndef CORRAL_JAIL_H
#define CORRAL_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corral/error.h>

#ifdef __cplusplus
extern "C" {
#endif

enum corral_net {
        CORRAL_NET_NONE = 0,   /* a network namespace of its own whose only interface is its
                                * own loopback, up (127.0.0.1 reaches the jail, nothing else) */
        CORRAL_NET_DOWN,       /* the same namespace with loopback left down: no interface at all */
        CORRAL_NET_HOST,       /* the host's network: opt-in, warned by the CLI */
        CORRAL_NET_ALLOW,      /* as none, plus a proxy on the jail's 127.0.0.1:3128 served from the
                                * host that reaches only net_allow's hosts (docs/network.md) */
};
/* Where the proxy listens inside a CORRAL_NET_ALLOW jail. */
#define CORRAL_NET_PROXY_PORT 3128
/* The old name of "none" with loopback up (before it became the default). */
#define CORRAL_NET_LOOPBACK CORRAL_NET_NONE

enum corral_stdin {
        CORRAL_STDIN_NULL = 0, /* /dev/null */
        CORRAL_STDIN_PIPE,     /* bytes copied from corral_jail_io.stdin_fd */
};

struct corral_bind {
        char *src;      /* host path (with src_fd: only names it in messages) */
        char *dst;      /* absolute path inside the jail */
        bool writable;
        int src_fd;     /* -1, or (corral_jail_config_add_bind_fd) the fd whose
                         * file is bound instead of src; borrowed */
};

/* Everything the jail needs.  All pointers are owned by the config and freed
 * by corral_jail_config_release(); use the setters or strdup() your own. */
typedef struct corral_jail_config {
        /* What to run.  argv[0] is looked up on the jail's PATH. */
        char **argv;             /* NULL-terminated */
        /* Optional program text, written to /run/corral/<script_name> (read-
         * only) before the program starts; argv usually names it. */
        char *script;
        size_t script_len;
        char *script_name;
        char **env;              /* extra NAME=VALUE, NULL-terminated or NULL */

        char *workspace;         /* host dir bound at /workspace, or NULL for a
                                  * private tmpfs of disk_bytes */
        char *rootfs;            /* read-only root instead of host /usr, /lib* */
        struct corral_bind *binds;
        size_t n_binds;

        /* Limits; 0 means "no limit" only where documented. */
        double timeout_s;        /* wall clock, whole tree (default 30; see no_timeout) */
        double cpu_time_s;       /* CPU seconds (0: none) */
        uint64_t memory_bytes;   /* default 512 MiB */
        uint64_t pids;           /* default 128 */
        double cpus;             /* CPU share, 0: unlimited */
        uint64_t nofile;         /* default 256 */
        uint64_t disk_bytes;     /* workspace tmpfs, /tmp, per-file cap (256 MiB) */
        uint64_t output_limit;   /* per stream (default 1 MiB) */
        /* The memory limit under the rlimit fallback is an address-space limit
         * (RLIMIT_AS), which runtimes that reserve much more than they use
         * (Node's V8 and WebAssembly reservations) cannot start under.  0 (the
         * default): memory_bytes; else this many bytes of address space, at
         * least memory_bytes.  Cgroup limits are unaffected. */
        uint64_t address_space_bytes;
        /* A long-lived program (a server), opted in by the caller; both false
         * by default.  no_timeout: no wall-clock limit at all (timeout_s is
         * neither checked nor used).  stream_unlimited: output that is
         * streamed and not kept (a corral_jail_io with capture false) reaches
         * on_output whole; output_limit then only bounds what is captured. */
        bool no_timeout;
        bool stream_unlimited;

        enum corral_net net;
        enum corral_stdin stdin_mode;
        bool require_cgroups;    /* refuse instead of falling back to rlimits */

        /* Host uid/gid range for jails when the caller is root; each jail
         * takes one free id from it. */
        uint32_t uid_base;
        uint32_t uid_count;

        /* CORRAL_NET_ALLOW (docs/network.md).  net_allow: "HOST[:PORT]",
         * "*.DOMAIN[:PORT]" (any subdomain), "IPV4[:PORT]" or "[IPV6][:PORT]";
         * without a port, 80 and 443.  net_resolve: "HOST:ADDR", the proxy's
         * answer for HOST instead of the host's resolver (an address so
         * mapped may be loopback or private).  Both NULL-terminated or NULL. */
        char **net_allow;
        char **net_resolve;
        uint64_t net_bytes;      /* bytes through the proxy, both ways, all connections (default 1 GiB) */
        uint64_t net_conns;      /* connections open at once (default 32) */
        /* Brokered credentials (docs/network.md): the proxy adds
         * "header: value" to every request to host, on the host side, and
         * masks value in what comes back; the value never enters the jail.
         * For an HTTPS host the proxy terminates TLS with a CA made for the
         * jail.  net_upstream_ca: a PEM file of CAs trusted, besides the
         * system's, for those hosts' certificates (NULL: system only). */
        struct corral_net_secret *net_secrets;
        size_t n_net_secrets;
        char *net_upstream_ca;
} corral_jail_config;

struct corral_net_secret {
        char *host;   /* a host name or IP address of the allow-list, lowercase */
        char *header; /* an HTTP header name */
        char *value;  /* wiped when the config is released */
};

/* Set the documented defaults. */
void corral_jail_config_init(corral_jail_config *cfg);
/* Free everything the config owns; accepts a zeroed config. */
void corral_jail_config_release(corral_jail_config *cfg);

/* A deep copy of src into dst (uninitialised); dst is released on failure. */
int corral_jail_config_copy(corral_jail_config *dst, const corral_jail_config *src, corral_error **ret_err);
/* "SRC" and "DST" given apart (DST absolute, inside the jail). */
int corral_jail_config_add_bind_at(corral_jail_config *cfg, const char *src, const char *dst, bool writable,
                                   corral_error **ret_err);
/* Bind, read-only, the file or directory open as src_fd at dst (absolute,
 * inside the jail): the file the fd was opened on, whatever its path has
 * become since (a path swapped for a symlink later cannot redirect it).  As
 * root the fd itself is cloned (open_tree); otherwise it is bound by the
 * path it has now (/proc/self/fd/N), and the mount is checked to be that
 * file.  name only names it in messages.  The fd is borrowed: keep it open
 * while the config (and its copies) may run. */
int corral_jail_config_add_bind_fd(corral_jail_config *cfg, int src_fd, const char *name, const char *dst,
                                   corral_error **ret_err);
int corral_jail_config_set_argv(corral_jail_config *cfg, char *const *argv, corral_error **ret_err);
int corral_jail_config_set_script(corral_jail_config *cfg, const char *name, const char *text, size_t len,
                                  corral_error **ret_err);
/* The program as code, as corral exec -c and a server's "run code" take it:
 * lang "python" or "bash" runs its interpreter on the code, put at
 * /run/corral/NAME, with args (NULL-terminated, may be NULL) after it.  The
 * code must be text, UTF-8 without NUL bytes: a usage error naming it as
 * `what` ("the code", a file's name) otherwise. */
int corral_jail_config_set_code(corral_jail_config *cfg, const char *lang, const char *name, const char *code,
                                size_t len, char *const *args, const char *what, corral_error **ret_err);
/* The language of a program file by its name: "python" (.py), "bash"
 * (.sh), else NULL. */
const char *corral_lang_from_name(const char *name);
/* "NAME=VALUE"; a later NAME replaces an earlier one. */
int corral_jail_config_add_env(corral_jail_config *cfg, const char *assignment, corral_error **ret_err);
/* "SRC[:DST]"; DST defaults to SRC. */
int corral_jail_config_add_bind(corral_jail_config *cfg, const char *spec, bool writable, corral_error **ret_err);
/* Allow-list entries for CORRAL_NET_ALLOW, comma-separated ("a.com,*.b.org:8443");
 * each is checked.  Does not change cfg->net. */
int corral_jail_config_add_net_allow(corral_jail_config *cfg, const char *list, corral_error **ret_err);
/* "HOST:ADDR" (ADDR an IPv4 or IPv6 address) for the proxy's resolver. */
int corral_jail_config_add_net_resolve(corral_jail_config *cfg, const char *spec, corral_error **ret_err);
/* A brokered credential: host (a name or address the allow-list allows),
 * header (an HTTP field name) and its value (no CR, LF or NUL; at least 4
 * bytes, so that masking echoes of it is sound).  All copied. */
int corral_jail_config_add_net_secret(corral_jail_config *cfg, const char *host, const char *header,
                                      const char *value, corral_error **ret_err);
/* "HOST=HEADER:ENV": the same, with the value of the caller's environment
 * variable ENV (read now; a usage error naming ENV when unset or empty), so
 * that the value is never on a command line or in a config file. */
int corral_jail_config_add_net_secret_env(corral_jail_config *cfg, const char *spec, corral_error **ret_err);
/* Drop (and wipe) the brokered credentials whose host cfg's network no
 * longer reaches (a narrowed allow-list, or no allow-list): what a server
 * does to its operator's credentials for a sandbox that asks for less. */
void corral_jail_config_drop_unreachable_secrets(corral_jail_config *cfg);
/* Check the whole config; fills ret_err with a usage error when it is wrong. */
int corral_jail_config_validate(const corral_jail_config *cfg, corral_error **ret_err);

enum corral_status {
        CORRAL_STATUS_OK = 0,    /* exited 0 */
        CORRAL_STATUS_ERROR,     /* exited non-zero, or could not be executed */
        CORRAL_STATUS_TIMEOUT,   /* the wall limit stopped it */
        CORRAL_STATUS_OOM,       /* the memory limit stopped it */
        CORRAL_STATUS_KILLED,    /* another limit or a signal ended it */
};

enum corral_limit {
        CORRAL_LIMIT_NONE = 0,
        CORRAL_LIMIT_WALL_TIME,
        CORRAL_LIMIT_CPU_TIME,
        CORRAL_LIMIT_MEMORY,
        CORRAL_LIMIT_PIDS,
        CORRAL_LIMIT_SECCOMP,
        CORRAL_LIMIT_FILE_SIZE,
        CORRAL_LIMIT_SIGNAL,     /* killed by a signal no limit explains */
        CORRAL_LIMIT_CANCELLED,  /* the caller cancelled the run (cancel_fd) */
};

enum corral_limits_backend {
        CORRAL_BACKEND_CGROUP_V2 = 0,
        CORRAL_BACKEND_CGROUP_V1,
        CORRAL_BACKEND_RLIMIT,
};

/* How long each of corral's own steps took, in milliseconds. */
struct corral_jail_phases {
        double prepare;   /* config, cgroup, filter (parent, before clone) */
        double clone;     /* clone() until the child runs */
        double mounts;    /* id maps written, new root built, pivot_root */
        double seccomp;   /* filter loaded in the payload */
        double exec;      /* init exec'd until the payload's execve */
        double teardown;  /* program exited until everything was released */
};

typedef struct corral_jail_result {
        enum corral_status status;
        int exit_code;            /* shell-style: 0-255, 128+N for signal N */
        int signal;               /* terminating signal, 0 if none */
        enum corral_limit limit;
        char *reason;             /* in words, NULL when status is ok/error */
        char *stdout_buf;         /* captured, at most output_limit bytes */
        size_t stdout_len;
        char *stderr_buf;
        size_t stderr_len;
        bool stdout_truncated;
        bool stderr_truncated;
        uint64_t stdout_total;    /* bytes the program wrote, kept or not */
        uint64_t stderr_total;
        double wall_ms;
        double cpu_ms;
        uint64_t memory_peak_bytes;
        enum corral_limits_backend backend;
        int seccomp_syscall;      /* syscall number when limit is seccomp */
        char *seccomp_syscall_name;
        /* System calls the filter answered with EPERM (they did nothing; the
         * program went on), by name, each once in the order first made. */
        char **denied;
        size_t n_denied;
        struct corral_jail_phases phases;
        /* CORRAL_NET_ALLOW: every connection to the proxy, allowed or not,
         * in the order they ended (at most CORRAL_NET_LOG_MAX; the rest are
         * counted in network_dropped).  net_proxy: the proxy ran. */
        bool net_proxy;
        struct corral_net_conn *network;
        size_t n_network;
        uint64_t network_dropped;
} corral_jail_result;

/* One connection through the CORRAL_NET_ALLOW proxy. */
struct corral_net_conn {
        char *host;               /* as the program asked for it ("" when no request was read) */
        uint16_t port;
        char *method;             /* "CONNECT", "GET", ... ("" when no request was read) */
        bool allowed;             /* the proxy connected it */
        char *reason;             /* why it was refused or ended early, NULL when neither */
        char *address;            /* the address connected to, NULL if none */
        uint64_t bytes_up;        /* from the program */
        uint64_t bytes_down;      /* to the program */
        bool brokered;            /* the host's credentials were added (docs/network.md) */
        double ms;                /* accepted until closed */
};
#define CORRAL_NET_LOG_MAX 1024

/* Streaming hooks; all optional. */
typedef struct corral_jail_io {
        int stdin_fd;             /* source for CORRAL_STDIN_PIPE */
        /* Called with each chunk of output as it arrives, only for bytes kept
         * under output_limit.  stream is 1 or 2. */
        void (*on_output)(void *userdata, int stream, const char *data, size_t len);
        /* Called once when a stream first exceeds output_limit. */
        void (*on_truncate)(void *userdata, int stream);
        /* Called once for a note the caller may show (e.g. a limit fallback). */
        void (*on_notice)(void *userdata, const char *message);
        void *userdata;
        bool capture;             /* keep output in the result buffers */
        /* When this fd (> 0) becomes readable, the jail is killed and the run
         * ends with status killed, limit "cancelled".  0 or -1: none. */
        int cancel_fd;
        /* CORRAL_NET_ALLOW: called as each connection through the proxy
         * ends, allowed or refused (the same record the result's network
         * log keeps), on one of the proxy's threads, with userdata: it must
         * be thread-safe and quick.  c is borrowed for the call. */
        void (*on_net_conn)(void *userdata, const struct corral_net_conn *c);
} corral_jail_io;

/* Spawn the jail, supervise it to the end and tear everything down.
 * Returns 0 when the program ran (whatever its status: see ret_result), or a
 * negative value with ret_err filled when the jail could not be set up; then
 * no program code ran. */
int corral_jail_run(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret_result,
                    corral_error **ret_err);

void corral_jail_result_release(corral_jail_result *res);

const char *corral_status_to_string(enum corral_status s);
const char *corral_limit_to_string(enum corral_limit l);
const char *corral_limits_backend_to_string(enum corral_limits_backend b);

/* Serialize a result as the schema-1 JSON object (see docs/exec-json.md).
 * Returns a malloc'd NUL-terminated string, or NULL on allocation failure. */
char *corral_jail_result_to_json(const corral_jail_result *res);
/* One connection through the proxy as the JSON object of the result's
 * "network" array (docs/exec-json.md).  malloc'd, or NULL on allocation
 * failure. */
char *corral_net_conn_to_json(const struct corral_net_conn *c);
/* The object a front end prints instead when the program could not be started
 * (a usage error, a jail that could not be set up; nothing ran): status
 * "failed", exit_code 125, reason and error {kind, message, field} from err
 * (NULL: "unknown error"); message, when not NULL, is the front end's wording
 * of err (the CLI's names its flag).  malloc'd, or NULL on allocation failure. */
char *corral_jail_failure_to_json(const corral_error *err, const char *message);

/* Profiles: limits, mounts and environment in JSON (docs/profile.md). */
int corral_jail_config_load_profile(corral_jail_config *cfg, const char *path, corral_error **ret_err);
/* The same from a profile's text; name only appears in messages. */
int corral_jail_config_load_profile_text(corral_jail_config *cfg, const char *text, size_t len, const char *name,
                                         corral_error **ret_err);
char *corral_jail_config_to_profile_json(const corral_jail_config *cfg);

/* Parsers shared with the CLI; each returns -1 and a usage error on bad
 * input ("12XB", negative, overflow). */
int corral_parse_size(const char *text, uint64_t *ret_bytes, corral_error **ret_err);
int corral_parse_seconds(const char *text, double *ret_seconds, corral_error **ret_err);
int corral_parse_count(const char *text, uint64_t *ret_count, corral_error **ret_err);

#ifdef __cplusplus
}
#endif
#endif
