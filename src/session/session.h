/* session.h: a persistent Python interpreter in a jail (docs/sessions.md).
 *
 * A session is one jail started exactly as `corral exec` starts one
 * (corral_jail_run(): every namespace, the seccomp filter, the unprivileged
 * uid, the limits), running corral's driver (src/session/driver.py), which
 * executes steps of code in one namespace: variables, imports and loaded data
 * persist from step to step.  Each step is bounded on its own (wall time,
 * output); memory, processes and disk bound the whole session through the
 * jail's limits.
 *
 * Life cycle:
 *   struct session *s;
 *   session_options_init(&opt);
 *   session_start(&cfg, &opt, &s, &err);           interpreter ready
 *   session_exec(s, code, &lim, &cb, &res, &err);   as often as needed
 *   session_result_release(&res);
 *   session_free(s);                               kills and tears down
 *
 * When a step times out the driver gets a KeyboardInterrupt; when that does
 * not end the step within the grace period, or the interpreter dies (memory
 * limit, a crash, os._exit), the step's result says state_lost and the next
 * step starts a clean interpreter.  Expiry (idle, lifetime) is the caller's
 * to act on: session_deadline_ms() says when.  Not thread-safe: one caller
 * at a time per session; sessions are independent of each other.
 */
#ifndef CORRAL_SESSION_H
#define CORRAL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"

struct session_options {
        double idle_timeout_s;   /* no step for this long: expired (default 600; 0: never) */
        double lifetime_s;       /* since start: expired (default 3600) */
        double grace_s;          /* after the interrupt, before the hard stop (default 2) */
        double start_timeout_s;  /* interpreter ready within (default 30) */
        bool warm;               /* fork interpreters from the zygote (warm.h; default false) */
        /* Resume: an archive (session_archive(), corral run --archive)
         * extracted into cfg->workspace, which must be missing or empty,
         * before the interpreter starts (session_restore()); borrowed for
         * the call only.  NULL: none. */
        const char *from;
        bool from_extracted;     /* the caller has extracted it already: only record where it came from */
        /* The jail's notices (limits falling back to rlimits), as
         * corral_jail_io.on_notice; called on the session's own thread
         * while session_start() or session_exec() waits.  NULL: dropped. */
        void (*on_notice)(void *userdata, const char *message);
        void *notice_userdata;
};
CORRAL_HIDDEN void session_options_init(struct session_options *o);

/* Warm sessions to come (corral run): start their zygote now, in the
 * background, so that the first warm session_start() finds it ready.
 * session_prewarm_end() after the last session_free().  Thread-safe:
 * several runs may prewarm at once, each ending its own. */
CORRAL_HIDDEN void session_prewarm(void);
CORRAL_HIDDEN void session_prewarm_end(void);
/* Whether cfg can run warm: 0, or -1 and the reason (a usage error). */
CORRAL_HIDDEN int session_warm_supported(const corral_jail_config *cfg, corral_error **ret_err);

struct session_step_limits {
        double timeout_s;        /* wall time of the step (default 30) */
        uint64_t output_limit;   /* per stream per step; 0: the jail's output_limit */
        int cancel_fd;           /* readable: hard stop, status cancelled; -1 none */
        /* Smaller renderings of the first preview_count figures for a model
         * (docs/sessions.md, "Figures for the model"): PNG, long side at
         * most preview_side pixels, at most preview_bytes; 0: none. */
        unsigned preview_count;
        unsigned preview_side;
        uint64_t preview_bytes;
        /* Each figure's PNG file as base64 "png" in the result (at most
         * 8 MiB a figure, 32 MiB a step): for a caller that cannot read
         * the workspace, such as a server's client. */
        bool figure_png;
        /* The code is a bash script, not Python (NULL: Python): run by the
         * driver as a child of the interpreter in the session's jail, its
         * output streamed and its exit status the step's.  With background,
         * started and not waited for: the result's value is {"pid", "log"}
         * (docs/sessions.md, "Shell steps"). */
        const char *language;
        bool background;
        /* Variables for this step only ({"NAME": "VALUE"}; NULL: none):
         * a bash step's environment, os.environ while a Python step runs. */
        const json_t *env;
        /* A named context: a Python process of its own in the session's
         * jail, forked from the interpreter on first use (driver.py; NULL:
         * the interpreter's own namespace). */
        const char *context;
        /* The code may use IPython's "!cmd" lines and a few magics
         * (driver.py, docs/e2b.md): rewritten to Python before it runs. */
        bool ipython;
        /* No code runs: the named context's process is ended (its next
         * step starts a new one); the value says whether there was one. */
        bool end_context;
};

struct session_callbacks {
        /* Each chunk of the step's output as it arrives (kept bytes only);
         * stream is 1 or 2. */
        void (*on_output)(void *userdata, int stream, const char *data, size_t len);
        /* With on_interrupt_fd set: when interrupt_fd becomes readable (or
         * hangs up), on_interrupt_fd() is called: true interrupts the step as its time limit does
         * (KeyboardInterrupt in the interpreter, the state kept; killed after
         * the grace period), with status "interrupted"; false stops watching
         * the fd (a client that went away). */
        int interrupt_fd;
        bool (*on_interrupt_fd)(void *userdata);
        void *userdata;
};

enum session_status {
        SESSION_STEP_OK = 0,     /* ran to the end */
        SESSION_STEP_ERROR,      /* raised an exception (state kept) */
        SESSION_STEP_TIMEOUT,    /* the wall limit interrupted it */
        SESSION_STEP_LOST,       /* the interpreter died during the step */
        SESSION_STEP_CANCELLED,  /* the caller's cancel fd */
        SESSION_STEP_INTERRUPTED, /* interrupted on request (Ctrl-C): KeyboardInterrupt, state kept */
};
CORRAL_HIDDEN const char *session_status_to_string(enum session_status s);

struct session_result {
        enum session_status status;
        bool state_lost;         /* the interpreter is gone: the next step starts clean */
        bool restarted;          /* this step ran in a fresh interpreter after a loss */
        unsigned step;           /* 1, 2, ... over the session's life */
        int exit_code;           /* CLI status: 0, 1 exception, 124 timeout, 128+N, ... */
        char *reason;            /* in words, NULL when ok */
        enum corral_limit limit; /* wall time for a timeout; what ended a lost interpreter */
        int signal;              /* the signal that killed a lost interpreter, 0 none */
        char *syscall_name;      /* the forbidden call that killed it (limit seccomp), or NULL */
        char *jail_reason;       /* a lost interpreter's jail's reason (corral exec's words), or NULL */
        char *stdout_buf, *stderr_buf; /* NUL-terminated, capped per step */
        size_t stdout_len, stderr_len;
        bool stdout_truncated, stderr_truncated;
        uint64_t stdout_total, stderr_total;
        /* Everything below comes from the jail: user code can make it say
         * anything (docs/sessions.md, "What a step returns"). */
        json_t *value;           /* {"type", "text"} of a trailing expression, or NULL; when the
                                  * object has them, "html", "markdown" (strings) and "json" (an
                                  * object or array), each at most 1 MiB: untrusted markup, which a
                                  * front end that renders it must sanitise or sandbox */
        json_t *error;           /* {"type", "message", "traceback", "name", "value"} (name and value:
                                  * type and message under Jupyter's and E2B's names), or NULL */
        json_t *figures;         /* array of {"path", "width", "height", "bytes", "saved_by_code",
                                  * "error"} (never NULL after exec); with figure_png, "png" (base64
                                  * of a PNG: alphabet and signature checked) or "png_error"; with
                                  * preview_count, also "preview" (base64 PNG, unchecked), "preview_width",
                                  * "preview_height", "preview_bytes" or "preview_error" */
        /* --net allow: the connections through the session's proxy that
         * ended since the previous step's report, allowed or refused, as
         * the objects of `corral exec --json`'s "network" (docs/network.md),
         * at most CORRAL_NET_LOG_MAX, the rest counted in network_dropped;
         * NULL without an allow-list.  Made by the host's proxy, but the
         * host name and method are what the code asked for. */
        json_t *network;
        uint64_t network_dropped;
        double wall_ms;          /* round trip as the caller saw it */
        double exec_ms;          /* inside the interpreter */
        double cpu_ms;
        uint64_t peak_memory_bytes;
};
CORRAL_HIDDEN void session_result_release(struct session_result *r);
/* The result as the JSON object of docs/sessions.md; NULL when out of memory. */
CORRAL_HIDDEN json_t *session_result_to_json(const struct session_result *r);
/* Back from that object (a session run by the session host, client.h):
 * members of the wrong type are left out; -1 when j is not a result. */
CORRAL_HIDDEN int session_result_from_json(const json_t *j, struct session_result *r);

struct session;

/* Start the jail and its interpreter and wait until it is ready.  cfg gives
 * limits, binds, workspace and environment (argv and script are ignored). */
CORRAL_HIDDEN int session_start(const corral_jail_config *cfg, const struct session_options *opt,
                                struct session **ret, corral_error **ret_err);
/* Run one step.  Returns 0 whatever the step did (see ret); -1 only when no
 * interpreter could be started for it. */
CORRAL_HIDDEN int session_exec(struct session *s, const char *code, size_t len, const struct session_step_limits *lim,
                               const struct session_callbacks *cb, struct session_result *ret,
                               corral_error **ret_err);
/* CLOCK_MONOTONIC ms at which the session expires (idle or lifetime),
 * and in words why. */
/* End the session seconds from now, whatever its idle timeout and lifetime
 * said, at most when its interpreter's jail reaches its own wall limit
 * (set from the lifetime at the start); the seconds granted. */
CORRAL_HIDDEN double session_set_expiry(struct session *s, double seconds);
CORRAL_HIDDEN double session_deadline_ms(const struct session *s, const char **ret_why);
/* Steps run so far, and whether an interpreter is alive now. */
CORRAL_HIDDEN unsigned session_steps(const struct session *s);
CORRAL_HIDDEN bool session_alive(const struct session *s);
/* Kill the interpreter and tear the jail down; accepts NULL. */
CORRAL_HIDDEN void session_free(struct session *s);

/* ---- pause and resume (pause.c; docs/sessions.md, "Pause and resume") ---- */

/* The host directory at /workspace (NULL when the jail has a private
 * tmpfs), the session's start (wall clock), and where it was resumed from:
 * {"archive", and from the archive's .corral/session.json "session",
 * "created", "archived", "steps", "corral_version"}, or NULL. */
CORRAL_HIDDEN const char *session_workspace_dir(const struct session *s);
/* The configuration the session was started with (binds, limits). */
CORRAL_HIDDEN const corral_jail_config *session_config(const struct session *s);
CORRAL_HIDDEN time_t session_created(const struct session *s);
CORRAL_HIDDEN const json_t *session_from(const struct session *s);
/* Archive the session's workspace to path (workspace_archive(), all of it,
 * mode 0600, written beside path and renamed; a path in or through the
 * session's workspace or a writable bind is refused, workspace/dest.h) with
 * a first entry
 * .corral/session.json: {"schema","session" (id, may be NULL),"created",
 * "archived","steps","corral_version","resumed_from"}.  Call it between
 * steps (a session has one caller at a time, so no step runs); threads or
 * processes a step left running may still change files meanwhile.  The
 * interpreter's memory is not saved.  ret_report: workspace_archive()'s. */
CORRAL_HIDDEN int session_archive(struct session *s, const char *path, const char *id, json_t **ret_report,
                                  corral_error **ret_err);
/* Extract archive into dir (missing or empty) with archive_extract()'s
 * checks and limits: a refused archive is CORRAL_ERR_USAGE and leaves
 * nothing.  ret_from (optional): session_origin() of the result. */
CORRAL_HIDDEN int session_restore(const char *archive, const char *dir, json_t **ret_from, corral_error **ret_err);
/* {"archive": archive, ...} with the checked fields of dir's
 * .corral/session.json (read by fds, never through a symlink, strings
 * capped and without control characters); NULL when out of memory. */
CORRAL_HIDDEN json_t *session_origin(const char *archive, const char *dir);
/* Remove what session_restore() extracted into dir (and dir, unless
 * keep_dir), never following a symlink. */
CORRAL_HIDDEN void session_restore_undo(const char *dir, bool keep_dir);

/* For the supervisor and its fuzz target (tests/fuzz/fuzz-session-frames.c):
 * frames are untrusted input from the jail. */
/* Take one frame off the front of buf (*len bytes; the rest moves up):
 * 1 with a JSON object in *ret, 0 when no whole frame is there yet, -1 when
 * the stream is malformed (a frame over 64 MiB, or not a JSON object). */
CORRAL_HIDDEN int session_frame_take(char *buf, size_t *len, json_t **ret);
/* Fill r's status, value, error, figures, times and totals from the
 * driver's "result" frame: only documented keys of the right types are
 * kept, strings are capped, numbers bounded; a value's html, markdown and
 * json and a figure's png are kept whole or not at all (a cut one would
 * not render or decode). */
CORRAL_HIDDEN void session_result_from_frame(struct session_result *r, json_t *frame);

/* The driver's path on the host: $CORRAL_SESSION_DRIVER, the installed copy,
 * or the source tree's (uninstalled builds). */
CORRAL_HIDDEN const char *session_driver_path(corral_error **ret_err);

#endif
