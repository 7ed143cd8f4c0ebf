/* client.h: the client of the session daemon (daemon.h), as `corral session`
 * and `corral doctor` use it: each call is one request over the user's
 * runtime directory (wire.h), returning the daemon's answer as JSON
 * (docs/sessions.md); nothing is printed.  Errors of kind usage mean an
 * unknown session or no daemon; other kinds, a failure of corral.
 * Thread-safe (each call has its own connection); the daemon is started
 * on demand by session_client_start() only.
 */
#ifndef CORRAL_SESSION_CLIENT_H
#define CORRAL_SESSION_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"
#include "session.h"

/* A connection to the daemon's host.sock; with spawn, a daemon is started
 * when none answers.  -1 with err (usage: none runs, without spawn). */
CORRAL_HIDDEN int session_client_connect_host(bool spawn, corral_error **ret_err);

/* What a session is started from.  Host paths may be relative to the
 * caller's directory: the request carries them absolute (the daemon runs
 * in /). */
struct session_client_start {
        const corral_jail_config *cfg; /* a workspace must exist, or with from be new or empty */
        const struct session_options *opt; /* limits and warm; from is the field below */
        bool warm_asked;         /* no cold session instead of a warm one */
        const char *from;        /* an archive to resume from, or NULL */
        const char *tmpdir;      /* where a temporary workspace goes */
        /* The session lives only while the start's connection is open
         * (*ret_hold: close it, or the process's end, stops the session). */
        bool hold;
};

/* Start session id, starting a daemon when none runs.  cfg's binds by
 * descriptor (corral_jail_config_add_bind_fd) go as descriptors.  on_slow
 * (optional) is called once when no answer came within 0.7 s (the first
 * warm start imports the data libraries).  The answer {"t": "started",
 * "workspace", "socket", "warm", "notice", "pid"}, or NULL with err (the
 * daemon's kind and message; *ret_refused when it was the archive of from
 * that was refused).  With s->hold, *ret_hold is the connection that holds
 * the session (else -1). */
CORRAL_HIDDEN json_t *session_client_start(const char *id, const struct session_client_start *s,
                                           void (*on_slow)(void *userdata), void *userdata, int *ret_hold,
                                           bool *ret_refused, corral_error **ret_err);
/* Have the daemon (started when none runs) start its zygote now, so that a
 * warm start to come finds it ready. */
CORRAL_HIDDEN int session_client_prewarm(corral_error **ret_err);

enum session_client_event {
        SESSION_CLIENT_WAITING,      /* another step runs in the session: ours waits */
        SESSION_CLIENT_INTERRUPTING, /* cancel_fd fired during our step: it is being interrupted */
};

struct session_client_exec {
        double timeout_s;        /* 0: the session's default */
        uint64_t output_limit;   /* 0: the session's default */
        bool figure_png;         /* each figure's PNG bytes in the result (session_step_limits) */
        /* Readable: interrupt the step (KeyboardInterrupt, the state kept;
         * a second time does nothing more), or before it began, give up:
         * nothing runs.  -1: none. */
        int cancel_fd;
        void (*on_output)(void *userdata, int stream, const char *data, size_t len);
        void (*on_event)(void *userdata, enum session_client_event ev);
        void *userdata;
        /* Renderings of the figures for a model (session.h,
         * session_step_limits); 0: none. */
        unsigned preview_count, preview_side;
        uint64_t preview_bytes;
};

/* Run a step in session id.  0 with its result (docs/sessions.md), 1 when
 * cancel_fd fired before the step began (nothing ran), -1 with err. */
CORRAL_HIDDEN int session_client_exec(const char *id, const char *code, const struct session_client_exec *x,
                                      json_t **ret_result, corral_error **ret_err);

/* Archive session id's workspace to path (relative to our directory) between steps; with
 * stop the session ends once it is written.  A step running past wait_s
 * (> 0) leaves everything as it was: 1.  on_waiting (optional) once when a
 * step is running.  0 with the report, -1 with err (usage: an unknown
 * session or a refused destination). */
CORRAL_HIDDEN int session_client_archive(const char *id, const char *path, bool stop, double wait_s,
                                         void (*on_waiting)(void *userdata), void *userdata, json_t **ret_report,
                                         corral_error **ret_err);

/* Stop session id (after a running step) once everything of it is gone. */
CORRAL_HIDDEN int session_client_stop(const char *id, corral_error **ret_err);

/* Every session's info (an empty array when no daemon runs); NULL with err. */
CORRAL_HIDDEN json_t *session_client_list(corral_error **ret_err);
/* The daemon's {"pid", "sessions", "warm", "zygote_pid", "pool",
 * "linger_s"}; NULL with no err when none runs. */
CORRAL_HIDDEN json_t *session_client_status(corral_error **ret_err);
/* Stop the daemon and every session, and wait until it has exited; 0 also
 * when none runs. */
CORRAL_HIDDEN int session_client_shutdown(corral_error **ret_err);
/* The check "session host" for a host report (lib/probe.h): whether one
 * runs (state "ok"), else "none"; never starts one. */
CORRAL_HIDDEN void session_client_probe(json_t *checks);

/* `corral exec` from a jail of the session host's pool (exec-pool.h,
 * docs/exec-pool.md): 0 ran (ret filled as corral_jail_run() fills it), 1
 * did not (nothing ran: start a direct jail), -1 with ret_err (the host
 * ended while the program ran; it is never run again).  On 0, *ret_conn is
 * the host's connection, to close once the result is passed on. */
CORRAL_HIDDEN int session_client_exec_claim(const corral_jail_config *cfg, const corral_jail_io *io,
                                            corral_jail_result *ret, int *ret_conn, corral_error **ret_err);

#endif
