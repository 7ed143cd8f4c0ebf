/* host.h: the session host, an object holding sessions (docs/sessions.md,
 * "The session host").
 *
 * A host is a registry of named sessions (session.h) and the warm pool they
 * share: it starts a session from a jail configuration (a temporary
 * workspace made and removed for it, an archive restored into it, a cold
 * session where a warm one was only the default and cannot start), runs
 * steps in it, archives it, stops it, and ends it when its idle timeout or
 * lifetime passes.  It knows nothing of sockets: `corral session host`
 * serves one over unix sockets (daemon.h), and a server holds one in
 * process.
 *
 * Thread-safe: every function may be called from any thread.  A session
 * runs one request at a time (a step, an archive, a stop): a second waits
 * for the first; session_host_list() and session_host_info() never wait for
 * a step, they answer from the registry, updated when each request ends.
 *
 *   session_host_new(&opt, &h, &err);
 *   session_host_start(h, id, &spec, &started, &err);
 *   session_host_exec(h, id, code, len, &lim, &cb, &result, &err);
 *   session_host_stop(h, id, &err);
 *   session_host_free(h);                          every session stopped
 *
 * The zygote of warm sessions is one per process (warm.h): a host holds it
 * from its first warm session until it is freed, so that the next warm
 * start finds it ready.
 */
#ifndef CORRAL_SESSION_HOST_H
#define CORRAL_SESSION_HOST_H

#include <stdbool.h>

#include <corral/jail.h>
#include <jansson.h>

#include "session.h"

/* A session's name: SESSION_ID_LEN lowercase hex digits. */
#define SESSION_ID_LEN 12

struct session_host;

struct session_host_options {
        /* Called, without the host's lock, when a session has ended (stop,
         * expiry, the host's end) and everything of it is gone; NULL: none. */
        void (*on_session_end)(void *userdata, const char *id);
        void *userdata;
};

/* What a session is started from. */
struct session_spec {
        corral_jail_config cfg;  /* moved into the host by session_host_start(), even on failure */
        struct session_options opt;
        bool warm_asked;         /* warm was asked for: no cold session instead */
        const char *from;        /* an archive (absolute path) to restore into the workspace, or NULL */
        bool ws_existed;         /* cfg.workspace existed before (from: it is not removed on refusal) */
        const char *tmpdir;      /* where a temporary workspace is made when cfg.workspace is NULL */
        /* Descriptors cfg's binds borrow (corral_jail_config_add_bind_fd):
         * taken over by session_host_start() (each set to -1 in fds), even
         * on failure, and closed when the session ends. */
        int *fds;
        size_t n_fds;
};

CORRAL_HIDDEN int session_host_new(const struct session_host_options *opt, struct session_host **ret,
                                   corral_error **ret_err);
/* Stop every session (after its running step: session_host_cancel_all()
 * first to end them at once), drop the warm pool's hold and free h.  No
 * other call on h may be running or follow. */
CORRAL_HIDDEN void session_host_free(struct session_host *h);

/* Start session id (not in use) and wait until its interpreter is ready.
 * ret_started: {"id", "workspace", "warm", "notice" (a cold session
 * instead of a warm one, in words), "from"}.  A refused archive sets
 * *ret_refused and leaves nothing. */
CORRAL_HIDDEN int session_host_start(struct session_host *h, const char *id, struct session_spec *spec,
                                     json_t **ret_started, bool *ret_refused, corral_error **ret_err);

/* Run one step; lim's zero fields take the session's defaults (its jail's
 * timeout and output limit).  on_begin (optional) is called once the step
 * has the session (an earlier step has ended): false gives up, nothing runs
 * and *ret_result is NULL.  *ret_result: session_result_to_json() with
 * "session" and each figure's "host_path". */
CORRAL_HIDDEN int session_host_exec(struct session_host *h, const char *id, const char *code, size_t len,
                                    const struct session_step_limits *lim, const struct session_callbacks *cb,
                                    bool (*on_begin)(void *userdata), json_t **ret_result, corral_error **ret_err);

/* Archive the workspace to path between steps (session_archive()); with
 * stop the session ends once it is written.  confirm (optional) is asked
 * once no step runs: false writes nothing (returns 1).  0 written, 1 not
 * confirmed, -1 with err. */
CORRAL_HIDDEN int session_host_archive(struct session_host *h, const char *id, const char *path, bool stop,
                                       bool (*confirm)(void *userdata), void *userdata, json_t **ret_report,
                                       corral_error **ret_err);

/* Stop a session (after its running step) and remove everything of it. */
CORRAL_HIDDEN int session_host_stop(struct session_host *h, const char *id, corral_error **ret_err);
/* The session ends seconds from now (session_set_expiry()), after a running
 * step; *ret_granted (may be NULL) what could be granted.  The caller
 * that runs session_host_expire() should look again. */
CORRAL_HIDDEN int session_host_set_expiry(struct session_host *h, const char *id, double seconds,
                                          double *ret_granted, corral_error **ret_err);
/* The same, cancelling a running step first (status cancelled): its
 * client is gone. */
CORRAL_HIDDEN int session_host_stop_now(struct session_host *h, const char *id, corral_error **ret_err);
/* Cancel every running step (the host is ending); the sessions stay. */
CORRAL_HIDDEN void session_host_cancel_all(struct session_host *h);

/* A session's {"id", "started", "workspace", "steps", "alive", "busy",
 * "expires_in_s", "expires_by", "from", "warm", "usage": {"cpu_ms" (its
 * steps' CPU time in all), "memory_peak_bytes" (the highest of its steps'
 * peaks)}, "recent": [{"step", "started_at", "status", "exit_code",
 * "wall_ms", "cpu_ms", "memory_peak_bytes"}] (its last SESSION_RECENT_MAX
 * steps, newest first)}; NULL with err (usage) when there is none. */
#define SESSION_RECENT_MAX 10
CORRAL_HIDDEN json_t *session_host_info(struct session_host *h, const char *id, corral_error **ret_err);
/* Every ready session's info, oldest first. */
CORRAL_HIDDEN json_t *session_host_list(struct session_host *h);
/* {"sessions", "warm", "zygote_pid", "pool"}. */
CORRAL_HIDDEN json_t *session_host_status(struct session_host *h);

/* End the sessions whose idle timeout or lifetime has passed (one running
 * a step ends after it); returns the CLOCK_MONOTONIC ms of the next expiry
 * (1e18: none). */
CORRAL_HIDDEN double session_host_expire(struct session_host *h);
/* Start the zygote now, on a thread of its own, and hold it until the host
 * is freed: a warm start to come (corral run's first step) finds it ready. */
CORRAL_HIDDEN void session_host_prewarm(struct session_host *h);
/* Sessions being started or alive, and since when (CLOCK_MONOTONIC ms)
 * there have been none; whether the host holds the zygote. */
CORRAL_HIDDEN int session_host_count(struct session_host *h, double *ret_idle_since_ms, bool *ret_warm);

/* Whether id is a well-formed session name. */
CORRAL_HIDDEN bool session_id_valid(const char *id);
/* A new random id (SESSION_ID_LEN + 1 bytes). */
CORRAL_HIDDEN int session_id_make(char *id, corral_error **ret_err);

#endif
