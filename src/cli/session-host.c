/* session-host.c: the session host, the process that holds every session
 * of `corral session` for one user and runtime directory (docs/sessions.md,
 * "The session host").
 *
 * `corral session start` connects to <runtime dir>/host.sock and sends the
 * session's jail configuration (a profile, paths already absolute, -e
 * values already resolved); when nobody answers it starts a host first:
 * double-forked and setsid, then exec'd afresh from /proc/self/exe with a
 * short allowlist of environment variables, so that the host holds nothing
 * of the client's (an API key, its memory).  Each session gets a thread of
 * its own that starts the interpreter, binds <ID>.sock and serves it as the
 * one-process-per-session supervisor did; sessions share the process and
 * thus one zygote and warm pool (src/session/warm.h): a warm `start` after
 * the first costs a claim from the pool.  Peers must be of our uid
 * (SO_PEERCRED) and the directory is private (session-wire.c).
 *
 * The host ends when its last session has ended: at once when it holds no
 * zygote, after CORRAL_SESSION_LINGER seconds (default 300) when it does,
 * so that the next warm start finds the zygote ready; on SIGTERM, SIGINT,
 * SIGHUP or `corral session shutdown`, every session is stopped and cleaned
 * up first.  host.lock (flock) makes it one host per directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"
#include "../session/session.h"
#include "../session/warm.h"
#include "../workspace/workspace.h"
#include "cli.h"
#include "session-host.h"
#include "session-wire.h"

#define LINGER_DEFAULT_S 300.0
#define FIRST_REQUEST_S 30.0

/* The host's state shared by its threads. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t ended;    /* a session ended (live went down) */
        int live;                /* sessions being started or served */
        bool warm_held;          /* we hold a warm_ref(): the zygote outlives sessions */
        bool served;             /* a session has been started */
        double idle_since_ms;    /* when live last became 0 */
        int stop_fd;             /* readable: the host is ending (signals, shutdown) */
        int wake_fd;             /* eventfd: the main loop recomputes its deadline */
        double linger_s;
} H = { .lock = PTHREAD_MUTEX_INITIALIZER, .ended = PTHREAD_COND_INITIALIZER, .stop_fd = -1, .wake_fd = -1 };

static void host_wake(void)
{
        uint64_t one = 1;
        ssize_t r = write(H.wake_fd, &one, sizeof(one));
        (void)r;
}

/* ---- one session ---- */

struct daemon {
        char id[ID_LEN + 1];
        struct session *s;
        struct workspace *ws;    /* our temporary workspace, or NULL */
        char *ws_root;
        char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
        int listen_fd;
        double default_timeout;
        uint64_t default_output;
        time_t started;
        int client;              /* the connection of the step running now */
        bool client_gone;
        char *from;              /* --from: the archive (absolute) */
        bool ws_root_given;      /* -w DIR */
        bool ws_existed;         /* -w DIR was there before --from extracted into it */
        char *tmpdir;            /* where the client's TMPDIR puts a temporary workspace */
        int ws_lock;             /* holds a temporary workspace (workspace_make_temporary), or -1 */
        corral_jail_config cfg;
        struct session_options sopt;
        bool warm_asked;         /* --warm: no cold session instead */
        char *notice;            /* said to `start` (a cold session instead of a warm one) */
        int start_fd;            /* the `start` connection, until it is answered */
};

static void daemon_cleanup(struct daemon *d)
{
        session_free(d->s);
        d->s = NULL;
        if (d->listen_fd >= 0)
                close(d->listen_fd);
        d->listen_fd = -1;
        if (d->sock[0])
                unlink(d->sock);
        d->sock[0] = '\0';
        workspace_close(d->ws, true);
        d->ws = NULL;
        if (d->ws_lock >= 0)
                close(d->ws_lock);
        d->ws_lock = -1;
}

static void daemon_on_output(void *userdata, int stream, const char *data, size_t len)
{
        struct daemon *d = userdata;
        if (d->client_gone)
                return;
        /* A chunk cut at the step's cap may end inside a UTF-8 sequence. */
        size_t n = 0;
        cleanup_free char *text = utf8_sanitize(data, len, &n);
        json_t *f = text ? json_pack("{s:s,s:s,s:s%}", "t", "out", "stream", stream == 2 ? "stderr" : "stdout",
                                     "data", text, n)
                         : NULL;
        if (f && wire_write(d->client, f) < 0)
                d->client_gone = true;
        json_decref(f);
}

/* Add the host path of each figure in our workspace. */
static void figures_host_paths(struct daemon *d, json_t *figures)
{
        size_t i;
        json_t *f;
        json_array_foreach(figures, i, f) {
                const char *p = json_string_value(json_object_get(f, "path"));
                if (p && strncmp(p, "/workspace/", 11) == 0 && strstr(p, "..") == NULL) {
                        char *h = NULL;
                        if (asprintf(&h, "%s/%s", d->ws_root, p + 11) >= 0) {
                                json_object_set_new(f, "host_path", json_string(h));
                                free(h);
                        }
                }
        }
}

/* The client wrote during its step: {"op": "interrupt"} (its Ctrl-C)
 * interrupts the step; anything else, or a client gone, does not (the step
 * runs on, as before). */
static bool daemon_on_client(void *userdata)
{
        struct daemon *d = userdata;
        json_t *m = wire_read(d->client, 1000);
        const char *op = json_string_value(json_object_get(m, "op"));
        bool interrupt = op && strcmp(op, "interrupt") == 0;
        json_decref(m);
        return interrupt;
}

static void daemon_exec(struct daemon *d, int fd, json_t *req)
{
        json_t *code = json_object_get(req, "code");
        json_t *reply = NULL;
        if (!json_is_string(code)) {
                reply = json_pack("{s:s,s:s}", "t", "error", "message", "exec needs \"code\" (a string)");
                goto out;
        }
        struct session_step_limits lim = { .timeout_s = d->default_timeout, .output_limit = d->default_output,
                                           .cancel_fd = H.stop_fd };
        json_t *t = json_object_get(req, "timeout");
        if (json_is_number(t) && json_number_value(t) > 0 && json_number_value(t) <= 31536000)
                lim.timeout_s = json_number_value(t);
        json_t *o = json_object_get(req, "output_limit");
        if (json_is_integer(o) && json_integer_value(o) > 0 && json_integer_value(o) <= (1 << 30))
                lim.output_limit = (uint64_t)json_integer_value(o);
        /* A client that gave up while an earlier step ran (its Ctrl-C) does
         * not get its step run later; one that waits learns it has begun. */
        struct pollfd hup = { .fd = fd, .events = POLLRDHUP };
        if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                return;
        json_t *running = json_pack("{s:s}", "t", "running");
        if (running)
                wire_write(fd, running);
        json_decref(running);
        d->client = fd;
        d->client_gone = false;
        struct session_callbacks cb = { .on_output = daemon_on_output, .interrupt_fd = fd,
                                        .on_interrupt_fd = daemon_on_client, .userdata = d };
        struct session_result res;
        corral_error *err = NULL;
        if (session_exec(d->s, json_string_value(code), json_string_length(code), &lim, &cb, &res, &err) < 0) {
                reply = json_pack("{s:s,s:s}", "t", "error", "message", err ? err->msg : "cannot run the step");
                corral_error_free(err);
                goto out;
        }
        json_t *r = session_result_to_json(&res);
        session_result_release(&res);
        if (r) {
                json_object_set_new(r, "session", json_string(d->id));
                figures_host_paths(d, json_object_get(r, "figures"));
                reply = json_pack("{s:s,s:o}", "t", "result", "result", r);
        }
out:
        if (reply)
                wire_write(fd, reply);
        json_decref(reply);
}

static json_t *daemon_info(struct daemon *d)
{
        const char *why = NULL;
        double left = (session_deadline_ms(d->s, &why) - monotonic_ms()) / 1000;
        return json_pack("{s:s,s:s,s:i,s:I,s:s?,s:s,s:I,s:b,s:f,s:s,s:O?,s:b}", "t", "info", "id", d->id, "pid",
                         (int)getpid(), "started", (json_int_t)d->started, "workspace", d->ws_root, "socket", d->sock,
                         "steps", (json_int_t)session_steps(d->s), "alive", session_alive(d->s), "expires_in_s",
                         left > 0 ? left : 0, "expires_by", why, "from", session_from(d->s), "warm", d->sopt.warm);
}

static void reply_error(int fd, const corral_error *err, const char *fallback)
{
        json_t *r = json_pack("{s:s,s:s,s:i}", "t", "error", "message", err ? err->msg : fallback, "kind",
                              err ? err->kind : CORRAL_ERR_INTERNAL);
        if (r)
                wire_write(fd, r);
        json_decref(r);
}

/* Archive the workspace, between steps: a session serves one request at
 * a time, so no step runs and none starts until the answer.  The client
 * may have stopped waiting while a step ran (--wait): it confirms with a
 * "go" after our "idle", and without it nothing is written.  With stop,
 * the session ends only once the archive is written.  True when the
 * session must end. */
static bool daemon_archive(struct daemon *d, int fd, json_t *req)
{
        const char *path = json_string_value(json_object_get(req, "path"));
        bool stop = json_is_true(json_object_get(req, "stop"));
        if (path == NULL || path[0] != '/') {
                corral_error e = { .kind = CORRAL_ERR_USAGE, .msg = (char *)"archive needs an absolute \"path\"" };
                reply_error(fd, &e, NULL);
                return false;
        }
        json_t *idle = json_pack("{s:s}", "t", "idle");
        int sent = idle ? wire_write(fd, idle) : -1;
        json_decref(idle);
        json_t *go = sent == 0 ? wire_read(fd, 5000) : NULL;
        const char *op = json_string_value(json_object_get(go, "op"));
        bool confirmed = op && strcmp(op, "go") == 0;
        json_decref(go);
        if (!confirmed)
                return false; /* the client gave up: nothing is written */
        /* A path inside the workspace (which stop would remove, and which
         * the jail can write) is refused by session_archive(). */
        corral_error *err = NULL;
        json_t *report = NULL;
        if (session_archive(d->s, path, d->id, &report, &err) < 0) {
                reply_error(fd, err, "cannot archive the session");
                corral_error_free(err);
                return false;
        }
        json_object_set_new(report, "session", json_string(d->id));
        json_object_set_new(report, "stopped", json_boolean(stop));
        if (stop)
                daemon_cleanup(d);
        json_t *r = json_pack("{s:s,s:o}", "t", "archived", "report", report);
        if (r)
                wire_write(fd, r);
        json_decref(r);
        return stop;
}

/* Serve one connection; true when the session must end. */
static bool daemon_serve(struct daemon *d, int fd)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid())
                return false; /* another user: not even an answer */
        json_t *req = wire_read(fd, 5000);
        const char *op = json_string_value(json_object_get(req, "op"));
        bool end = false;
        if (op && strcmp(op, "exec") == 0) {
                daemon_exec(d, fd, req);
        } else if (op && strcmp(op, "info") == 0) {
                json_t *info = daemon_info(d);
                if (info)
                        wire_write(fd, info);
                json_decref(info);
        } else if (op && strcmp(op, "archive") == 0) {
                end = daemon_archive(d, fd, req);
        } else if (op && strcmp(op, "stop") == 0) {
                /* Everything is gone before the answer. */
                daemon_cleanup(d);
                json_t *r = json_pack("{s:s}", "t", "stopped");
                if (r)
                        wire_write(fd, r);
                json_decref(r);
                end = true;
        } else if (req) {
                json_t *r = json_pack("{s:s,s:s}", "t", "error", "message", "unknown request");
                if (r)
                        wire_write(fd, r);
                json_decref(r);
        }
        json_decref(req);
        return end;
}

/* Serve the session's socket until it ends: stop, its idle timeout or
 * lifetime limit, or the host's own end. */
static void daemon_loop(struct daemon *d, int cancel_fd)
{
        for (;;) {
                double left = session_deadline_ms(d->s, NULL) - monotonic_ms();
                if (left <= 0)
                        return;
                struct pollfd p[2] = { { .fd = d->listen_fd, .events = POLLIN }, { .fd = cancel_fd, .events = POLLIN } };
                int n = poll(p, 2, left > 60000 ? 60000 : (int)left + 1);
                if (n < 0 && errno != EINTR)
                        return;
                if (n > 0 && p[1].revents)
                        return;
                if (n > 0 && (p[0].revents & POLLIN)) {
                        int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd < 0)
                                continue;
                        bool end = daemon_serve(d, fd);
                        close(fd);
                        if (end)
                                return;
                }
        }
}

static void daemon_free(struct daemon *d)
{
        if (d->start_fd >= 0)
                close(d->start_fd);
        corral_jail_config_release(&d->cfg);
        free(d->notice);
        free(d->from);
        free(d->tmpdir);
        free(d);
}

/* Answer `start`: {"t": "started", "pid", "workspace"}, or {"t": "error",
 * "kind", "message", "refused"} (refused: --from's archive was). */
static void start_reply(struct daemon *d, const corral_error *err, bool refused)
{
        json_t *r = err ? json_pack("{s:s,s:i,s:s,s:b}", "t", "error", "kind", err->kind, "message", err->msg,
                                    "refused", refused)
                        : json_pack("{s:s,s:i,s:s,s:b,s:s?}", "t", "started", "pid", (int)getpid(), "workspace",
                                    d->ws_root, "warm", d->sopt.warm, "notice", d->notice);
        if (r)
                wire_write(d->start_fd, r);
        json_decref(r);
        close(d->start_fd);
        d->start_fd = -1;
}

/* A temporary workspace where the client's TMPDIR says, held (flock) by
 * the host until it is removed; those a SIGKILLed host left there first go. */
static int temporary_workspace(struct daemon *d, corral_error **err)
{
        workspace_sweep(d->tmpdir);
        return workspace_make_temporary(d->tmpdir, &d->cfg.workspace, &d->ws_lock, err);
}

/* One session's thread: start it, answer `start`, serve its socket to the
 * end, clean up.  Owns d. */
static void *session_thread(void *arg)
{
        struct daemon *d = arg;
        corral_jail_config *cfg = &d->cfg;
        corral_error *err = NULL;
        char *dir = NULL;
        bool refused = false;    /* --from's archive was refused */
        bool restored = false;
        struct sockaddr_un sa;
        struct session_options sopt = d->sopt;
        if (d->from) {
                /* Resume: the archive is extracted here, before the
                 * session, so that a refusal is told apart (exit 1). */
                if (cfg->workspace == NULL && temporary_workspace(d, &err) < 0)
                        goto fail;
                if (session_restore(d->from, cfg->workspace, NULL, &err) < 0) {
                        refused = true;
                        /* Ours (a temporary one, or -w DIR made for it):
                         * the extraction left it as it was. */
                        if (!d->ws_existed)
                                (void)rmdir(cfg->workspace);
                        goto fail;
                }
                restored = true;
                sopt.from = d->from;
                sopt.from_extracted = true;
                if (!d->ws_root_given)
                        (void)chmod(cfg->workspace, 0700); /* the archive's mode is not ours */
        } else if (cfg->workspace == NULL && temporary_workspace(d, &err) < 0) {
                goto fail;
        }
        /* A temporary workspace is removed with the session. */
        if (!d->ws_root_given && workspace_open(cfg->workspace, &d->ws, &err) < 0)
                goto fail;
        d->ws_root = cfg->workspace;
        if (session_start(cfg, &sopt, &d->s, &err) < 0 && sopt.warm && !d->warm_asked &&
            (err == NULL || err->kind != CORRAL_ERR_USAGE)) {
                /* Warm was only the default: a session that cannot start
                 * so (a memory limit under rlimits below what the zygote's
                 * imports map, a zygote that does not start) starts cold. */
                cleanup_free char *why = strdup(err ? err->msg : "?");
                if (asprintf(&d->notice, "no warm session (%s): a cold one instead", why ? why : "?") < 0)
                        d->notice = NULL;
                corral_error_clear(&err);
                sopt.warm = d->sopt.warm = false;
                if (session_start(cfg, &sopt, &d->s, &err) < 0)
                        corral_error_prefix(&err, "no warm session (%s), and a cold one", why ? why : "?");
        }
        if (d->s == NULL) {
                if (restored && d->ws_root_given)
                        session_restore_undo(cfg->workspace, d->ws_existed);
                goto fail;
        }
        d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        dir = wire_runtime_dir(true, &err);
        if (dir == NULL || wire_socket_path(dir, d->id, &sa, &err) < 0)
                goto fail;
        if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                corral_fail(&err, errno, errno == EADDRINUSE ? "session '%s' exists already" :
                                                               "cannot create the session's socket '%s'",
                            errno == EADDRINUSE ? d->id : sa.sun_path);
                goto fail;
        }
        memcpy(d->sock, sa.sun_path, sizeof(d->sock));
        if (chmod(d->sock, 0600) < 0 || listen(d->listen_fd, 16) < 0) {
                corral_fail(&err, errno, "cannot listen on '%s'", d->sock);
                goto fail;
        }
        free(dir);
        dir = NULL;
        start_reply(d, NULL, false);
        daemon_loop(d, H.stop_fd);
        daemon_cleanup(d);
        goto out;
fail:
        /* Clean first: when `start` says it failed, nothing is left. */
        if (!d->ws && cfg->workspace && !d->ws_root_given && !refused)
                (void)rmdir(cfg->workspace); /* made here, never used */
        daemon_cleanup(d);
        start_reply(d, err, refused);
        corral_error_free(err);
        free(dir);
out:
        daemon_free(d);
        pthread_mutex_lock(&H.lock);
        if (--H.live == 0)
                H.idle_since_ms = monotonic_ms();
        pthread_cond_broadcast(&H.ended);
        pthread_mutex_unlock(&H.lock);
        host_wake();
        return NULL;
}

/* A `start` request: the session's configuration from the client, checked
 * again here (it crossed a socket), then a thread.  Takes fd. */
static void host_start(int fd, json_t *req)
{
        corral_error *err = NULL;
        struct daemon *d = calloc(1, sizeof(*d));
        if (d == NULL) {
                close(fd);
                return;
        }
        d->listen_fd = -1;
        d->ws_lock = -1;
        d->client = -1;
        d->start_fd = fd;
        d->started = time(NULL);
        corral_jail_config_init(&d->cfg);
        session_options_init(&d->sopt);
        const char *id = json_string_value(json_object_get(req, "id"));
        const char *profile = json_string_value(json_object_get(req, "profile"));
        const char *from = json_string_value(json_object_get(req, "from"));
        const char *tmpdir = json_string_value(json_object_get(req, "tmpdir"));
        char *placeholder[] = { "python3", NULL };
        if (id == NULL || !wire_id_valid(id) || profile == NULL) {
                corral_usage(&err, "a start request needs \"id\" and \"profile\"");
                goto fail;
        }
        memcpy(d->id, id, ID_LEN + 1);
        if (corral_jail_config_set_argv(&d->cfg, placeholder, &err) < 0 ||
            corral_jail_config_load_profile_text(&d->cfg, profile, strlen(profile), "start request", &err) < 0)
                goto fail;
        json_t *v;
        if (json_is_integer(v = json_object_get(req, "uid_base")))
                d->cfg.uid_base = (uint32_t)json_integer_value(v);
        if (json_is_integer(v = json_object_get(req, "uid_count")))
                d->cfg.uid_count = (uint32_t)json_integer_value(v);
        if (json_is_number(v = json_object_get(req, "idle_timeout")))
                d->sopt.idle_timeout_s = json_number_value(v);
        if (json_is_number(v = json_object_get(req, "lifetime")))
                d->sopt.lifetime_s = json_number_value(v);
        if (json_is_number(v = json_object_get(req, "grace")))
                d->sopt.grace_s = json_number_value(v);
        d->sopt.warm = json_is_true(json_object_get(req, "warm"));
        d->warm_asked = json_is_true(json_object_get(req, "warm_asked"));
        d->ws_root_given = d->cfg.workspace != NULL;
        d->ws_existed = json_is_true(json_object_get(req, "ws_existed"));
        if (from && from[0] != '/') {
                corral_usage(&err, "a start request's \"from\" must be an absolute path");
                goto fail;
        }
        if ((from && (d->from = strdup(from)) == NULL) || (tmpdir && (d->tmpdir = strdup(tmpdir)) == NULL)) {
                corral_fail(&err, ENOMEM, "cannot start the session");
                goto fail;
        }
        if (!(d->sopt.lifetime_s > 0) || d->sopt.idle_timeout_s < 0 || d->sopt.grace_s < 0) {
                corral_usage(&err, "a start request's idle timeout, lifetime and grace must be positive");
                goto fail;
        }
        if (corral_jail_config_validate(&d->cfg, &err) < 0 || (d->sopt.warm && warm_supported(&d->cfg, &err) < 0))
                goto fail;
        d->default_timeout = d->cfg.timeout_s;
        d->default_output = d->cfg.output_limit;
        pthread_mutex_lock(&H.lock);
        H.live++;
        if (d->sopt.warm && !H.warm_held) {
                /* From now on the zygote outlives each session (the
                 * linger above); released when the host ends. */
                warm_ref();
                H.warm_held = true;
        }
        pthread_mutex_unlock(&H.lock);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &attr, session_thread, d);
        pthread_attr_destroy(&attr);
        if (e == 0)
                return;
        pthread_mutex_lock(&H.lock);
        if (--H.live == 0)
                H.idle_since_ms = monotonic_ms();
        pthread_mutex_unlock(&H.lock);
        corral_fail(&err, e, "cannot start the session's thread");
fail:
        start_reply(d, err, false);
        corral_error_free(err);
        daemon_free(d);
}

static json_t *host_info(void)
{
        pthread_mutex_lock(&H.lock);
        int live = H.live;
        bool warm = H.warm_held;
        pthread_mutex_unlock(&H.lock);
        return json_pack("{s:s,s:i,s:i,s:b,s:i,s:i,s:f}", "t", "host", "pid", (int)getpid(), "sessions", live,
                         "warm", warm, "zygote_pid", (int)warm_zygote_pid(), "pool", warm_pool_size(), "linger_s",
                         H.linger_s);
}

/* Serve one connection to host.sock; takes fd. */
static void host_serve(int fd)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
                close(fd); /* another user: not even an answer */
                return;
        }
        json_t *req = wire_read(fd, 5000);
        const char *op = json_string_value(json_object_get(req, "op"));
        json_t *r = NULL;
        if (op && strcmp(op, "start") == 0) {
                pthread_mutex_lock(&H.lock);
                H.served = true; /* from now on the host ends with its last session */
                pthread_mutex_unlock(&H.lock);
                host_start(fd, req);
                json_decref(req);
                return;
        }
        if (op && strcmp(op, "info") == 0) {
                r = host_info();
        } else if (op && strcmp(op, "shutdown") == 0) {
                uint64_t one = 1;
                ssize_t n = write(H.stop_fd, &one, sizeof(one));
                (void)n;
                r = json_pack("{s:s}", "t", "stopping");
        } else if (req) {
                r = json_pack("{s:s,s:s}", "t", "error", "message", "unknown request");
        }
        if (r)
                wire_write(fd, r);
        json_decref(r);
        json_decref(req);
        close(fd);
}

/* Milliseconds until the host may end (< 0: now): never while sessions
 * live; after the last, at once, or after the linger when the zygote is
 * worth keeping; a new host waits for its first request a little. */
static double linger_left_ms(void)
{
        pthread_mutex_lock(&H.lock);
        double wait_s = !H.served ? FIRST_REQUEST_S : H.warm_held && warm_zygote_pid() > 0 ? H.linger_s : 0;
        double left = H.live > 0 ? 1e18 : H.idle_since_ms + wait_s * 1000 - monotonic_ms();
        pthread_mutex_unlock(&H.lock);
        return left;
}

/* Report to the client that started us through the ready pipe: "ok PID",
 * "busy" (another host holds the lock) or "error KIND MESSAGE". */
static void host_ready(int fd, const corral_error *err, bool busy)
{
        char buf[4096];
        int n = busy  ? snprintf(buf, sizeof(buf), "busy")
                : err ? snprintf(buf, sizeof(buf), "error %d %s", err->kind, err->msg)
                      : snprintf(buf, sizeof(buf), "ok %d", (int)getpid());
        if (n > 0)
                write_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
        close(fd);
}

static double linger_from_env(void)
{
        const char *s = getenv("CORRAL_SESSION_LINGER");
        double v = LINGER_DEFAULT_S;
        if (s && s[0] && corral_parse_seconds(s, &v, NULL) < 0)
                v = LINGER_DEFAULT_S;
        if (s && strcmp(s, "0") == 0)
                v = 0;
        return v;
}

int session_host_main(int ready_fd)
{
        corral_error *err = NULL;
        char *dir = NULL, *lock = NULL;
        int lock_fd = -1, listen_fd = -1;
        struct sockaddr_un sa = { 0 };
        if (ready_fd > 3)
                syscall(SYS_close_range, 3, ready_fd - 1, 0);
        syscall(SYS_close_range, ready_fd + 1, ~0U, 0);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                if (null > 2)
                        close(null);
        }
        umask(077);
        if (chdir("/") < 0)
                goto fail_errno;
        H.linger_s = linger_from_env();
        H.stop_fd = cli_catch_signals();
        H.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (H.stop_fd < 0 || H.wake_fd < 0)
                goto fail_errno;
        dir = wire_runtime_dir(true, &err);
        if (dir == NULL)
                goto fail;
        if (asprintf(&lock, "%s/host.lock", dir) < 0) {
                lock = NULL;
                goto fail_errno;
        }
        lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd < 0) {
                corral_fail(&err, errno, "cannot open '%s'", lock);
                goto fail;
        }
        /* Ours only if the name still holds what we locked: an ending
         * host unlinks it while it holds it. */
        struct stat held, named;
        if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        goto fail_errno;
                host_ready(ready_fd, NULL, true);
                _exit(0);
        }
        if (fstat(lock_fd, &held) < 0 || stat(lock, &named) < 0 || held.st_ino != named.st_ino ||
            held.st_dev != named.st_dev) {
                host_ready(ready_fd, NULL, true);
                _exit(0);
        }
        /* The lock is ours: a host.sock left by a host that was killed is
         * stale, and nobody else binds one while we hold it. */
        if (wire_socket_path(dir, "host", &sa, &err) < 0)
                goto fail;
        unlink(sa.sun_path);
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            chmod(sa.sun_path, 0600) < 0 || listen(listen_fd, 64) < 0) {
                corral_fail(&err, errno, "cannot listen on '%s'", sa.sun_path);
                goto fail;
        }
        H.idle_since_ms = monotonic_ms();
        host_ready(ready_fd, NULL, false);
        for (;;) {
                double left = linger_left_ms();
                if (left < 0)
                        break;
                struct pollfd p[3] = { { .fd = listen_fd, .events = POLLIN },
                                       { .fd = H.stop_fd, .events = POLLIN },
                                       { .fd = H.wake_fd, .events = POLLIN } };
                int n = poll(p, 3, left > 60000 ? 60000 : (int)left + 1);
                if (n < 0 && errno != EINTR)
                        break;
                if (n <= 0)
                        continue;
                if (p[1].revents)
                        break;
                if (p[2].revents) {
                        uint64_t v;
                        ssize_t k = read(H.wake_fd, &v, sizeof(v));
                        (void)k;
                }
                if (p[0].revents & POLLIN) {
                        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd >= 0)
                                host_serve(fd);
                }
        }
        /* Ending: no new session, every live one stopped and cleaned up
         * (their loops and steps watch stop_fd), then the zygote. */
        unlink(sa.sun_path);
        close(listen_fd);
        uint64_t one = 1;
        ssize_t k = write(H.stop_fd, &one, sizeof(one));
        (void)k;
        pthread_mutex_lock(&H.lock);
        while (H.live > 0)
                pthread_cond_wait(&H.ended, &H.lock);
        bool was_warm = H.warm_held;
        H.warm_held = false;
        pthread_mutex_unlock(&H.lock);
        if (was_warm)
                warm_unref();
        unlink(lock); /* still locked: a host starting now retries */
        free(lock);
        free(dir);
        _exit(0);
fail_errno:
        corral_fail(&err, errno, "cannot start the session host");
fail:
        if (listen_fd >= 0 && sa.sun_path[0]) {
                unlink(sa.sun_path);
                close(listen_fd);
        }
        host_ready(ready_fd, err, false);
        corral_error_free(err);
        free(lock);
        free(dir);
        _exit(EXIT_CORRAL);
}

/* ---- the client's side ---- */

/* What the host keeps of our environment: where things are and how to
 * find corral's parts, nothing else (an API key stays with the client). */
static const char *const host_env_keep[] = {
        "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME",
        "CORRAL_CACHE_DIR", "CORRAL_INIT", "CORRAL_SESSION_DRIVER", "CORRAL_ZYGOTE", "CORRAL_WARM_POOL",
        "CORRAL_SESSION_LINGER", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
};

/* Start a host: "ok", "busy" or an error, as host_ready() reported it.
 * 0 started, 1 busy, -1 with err. */
static int host_spawn(corral_error **err)
{
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return corral_fail(err, errno, "cannot start the session host");
        char *env[sizeof(host_env_keep) / sizeof(host_env_keep[0]) + 1];
        size_t n = 0;
        for (size_t i = 0; i < sizeof(host_env_keep) / sizeof(host_env_keep[0]); i++) {
                const char *v = getenv(host_env_keep[i]);
                if (v && asprintf(&env[n], "%s=%s", host_env_keep[i], v) >= 0)
                        n++;
        }
        env[n] = NULL;
        /* By its name, so that ps shows "corral", not "exe". */
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (len <= 0 || (size_t)len >= sizeof(self) - 1)
                snprintf(self, sizeof(self), "/proc/self/exe");
        else
                self[len] = '\0';
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
                setsid();
                pid_t grandchild = fork();
                if (grandchild != 0)
                        _exit(grandchild < 0 ? EXIT_CORRAL : 0);
                /* The ready pipe as fd 3, nothing else of ours. */
                int fd = ready[1] == 3 ? 3 : dup2(ready[1], 3);
                if (fd == 3) {
                        syscall(SYS_close_range, 4, ~0U, 0);
                        char *argv[] = { "corral", "session", "host", "--ready-fd", "3", NULL };
                        execve(self, argv, env);
                }
                _exit(127);
        }
        for (size_t i = 0; i < n; i++)
                free(env[i]);
        close(ready[1]);
        if (pid < 0) {
                close(ready[0]);
                return corral_fail(err, errno, "cannot start the session host");
        }
        waitpid(pid, NULL, 0);
        char buf[4096];
        size_t got = 0;
        while (got < sizeof(buf) - 1) {
                ssize_t k = read(ready[0], buf + got, sizeof(buf) - 1 - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t)k;
        }
        close(ready[0]);
        buf[got] = '\0';
        int kind = 0, off = 0;
        if (strncmp(buf, "ok ", 3) == 0)
                return 0;
        if (strcmp(buf, "busy") == 0)
                return 1;
        if (sscanf(buf, "error %d %n", &kind, &off) >= 1 && off > 0)
                return corral_make_error(err, kind, 0, "%s", buf + off);
        return corral_fail(err, 0, "the session host ended before it was ready");
}

int session_host_connect(bool spawn, corral_error **err)
{
        cleanup_free char *dir = wire_runtime_dir(spawn, err);
        if (dir == NULL)
                return spawn || (err && *err) ? -1 : corral_usage(err, "no session host is running");
        struct sockaddr_un sa;
        if (wire_socket_path(dir, "host", &sa, err) < 0)
                return -1;
        /* A host may be ending (its socket gone, its lock still held) or
         * two clients may start one at once: try for a while. */
        double deadline = monotonic_ms() + 15000;
        for (;;) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return corral_fail(err, errno, "cannot create a socket");
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return fd;
                int e = errno;
                close(fd);
                if (e != ENOENT && e != ECONNREFUSED)
                        return corral_fail(err, e, "cannot connect to the session host '%s'", sa.sun_path);
                if (!spawn)
                        return corral_usage(err, "no session host is running");
                if (monotonic_ms() > deadline)
                        return corral_fail(err, ETIMEDOUT, "the session host '%s' does not answer", sa.sun_path);
                int r = host_spawn(err);
                if (r < 0)
                        return -1;
                if (r == 1) {
                        struct timespec ts = { 0, 20 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
        }
}
