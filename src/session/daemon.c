/* daemon.c: the session daemon (daemon.h; docs/sessions.md, "The session
 * host"): a session host (host.h) served on unix sockets, one process per
 * user and runtime directory.
 *
 * host.sock takes start, list, info and shutdown; each session is served on
 * <ID>.sock (exec, info, archive, stop), which exists exactly as long as the
 * session.  The main thread accepts and ends expired sessions; every
 * connection is served on a thread of its own, so a long step never delays
 * a `list` or another session.  Peers must be of our uid (SO_PEERCRED) and
 * the directory is private (wire.c).  A client was started from the caller's
 * environment filtered to a short allowlist (client.c), so the daemon holds
 * nothing of a client's (an API key, its memory).
 *
 * The daemon ends when its last session has ended: at once when it holds no
 * zygote, after CORRAL_SESSION_LINGER seconds (default 300) when it does, so
 * that the next warm start finds the zygote ready; on the caller's signals
 * or a shutdown request every session is stopped and cleaned up first.
 * host.lock (flock) makes it one daemon per directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/un.h>
#include <unistd.h>

#include <corral/jail.h>
#include <jansson.h>

#include "../lib/util.h"
#include "daemon.h"
#include "exec-pool.h"
#include "host.h"
#include "warm.h"
#include "wire.h"

#define LINGER_DEFAULT_S 300.0
#define FIRST_REQUEST_S 30.0
#define MAX_POLL 1024
#define SEND_TIMEOUT_S 60   /* a client that reads nothing for this long is gone */

/* A session's socket.  Closed by the main thread only (it polls them); the
 * end of the session unlinks the name at once. */
struct listener {
        char id[SESSION_ID_LEN + 1];
        int fd;
        bool ended;
        struct sockaddr_un sa;
        struct listener *next;
};

struct daemon {
        struct session_host *h;
        char *dir;
        int ending_fd;           /* eventfd: the daemon is ending; running steps are cancelled */
        int wake_fd;             /* eventfd: the main loop looks again */
        struct exec_pool *pool;  /* jails made in advance for `corral exec`, or NULL (exec-pool.h) */
        double linger_s;
        pthread_mutex_t lock;
        pthread_cond_t quiet;    /* conns went down */
        struct listener *listeners;
        int conns;               /* connections being served */
        bool served;             /* a start request came */
        int claim_fd;            /* exec-pool.sock while the pool is on, else -1 */
        int claimers;            /* claim threads alive (the daemon's end waits for them) */
        int waiting;             /* ... of which waiting in accept() */
};

struct conn {
        struct daemon *d;
        int fd;
        char id[SESSION_ID_LEN + 1]; /* "" on host.sock */
        bool client_gone;
        int fds[WIRE_MAX_FDS];   /* descriptors the request carried (a start's binds) */
        size_t nfds;
        bool claims_only;        /* on exec-pool.sock: an exec-claim and nothing else */
};

static void poke(int fd)
{
        uint64_t one = 1;
        ssize_t r = write(fd, &one, sizeof(one));
        (void)r;
}

static void reply(int fd, json_t *r)
{
        if (r)
                wire_write(fd, r);
        json_decref(r);
}

static void reply_error(int fd, const corral_error *err, const char *fallback)
{
        reply(fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message", err ? err->msg : fallback, "kind",
                            err ? err->kind : CORRAL_ERR_INTERNAL));
}

/* ---- a session's socket ---- */

static void on_session_end(void *userdata, const char *id)
{
        struct daemon *d = userdata;
        pthread_mutex_lock(&d->lock);
        for (struct listener *l = d->listeners; l; l = l->next) {
                if (!l->ended && strcmp(l->id, id) == 0) {
                        unlink(l->sa.sun_path);
                        l->ended = true;
                }
        }
        pthread_mutex_unlock(&d->lock);
        poke(d->wake_fd);
}

static int listen_session(struct daemon *d, const char *id, corral_error **ret_err)
{
        struct listener *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot listen for the session");
        memcpy(l->id, id, SESSION_ID_LEN + 1);
        l->fd = -1;
        if (wire_socket_path(d->dir, id, &l->sa, ret_err) < 0)
                goto fail;
        l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&l->sa, sizeof(l->sa)) < 0) {
                corral_fail(ret_err, errno, "cannot create the session's socket '%s'", l->sa.sun_path);
                goto fail;
        }
        if (chmod(l->sa.sun_path, 0600) < 0 || listen(l->fd, 16) < 0) {
                corral_fail(ret_err, errno, "cannot listen on '%s'", l->sa.sun_path);
                unlink(l->sa.sun_path);
                goto fail;
        }
        pthread_mutex_lock(&d->lock);
        l->next = d->listeners;
        d->listeners = l;
        pthread_mutex_unlock(&d->lock);
        poke(d->wake_fd);
        return 0;
fail:
        if (l->fd >= 0)
                close(l->fd);
        free(l);
        return -1;
}

/* ---- a step ---- */

static void exec_on_output(void *userdata, int stream, const char *data, size_t len)
{
        struct conn *c = userdata;
        if (c->client_gone)
                return;
        /* A chunk cut at the step's cap may end inside a UTF-8 sequence. */
        size_t n = 0;
        cleanup_free char *text = utf8_sanitize(data, len, &n);
        json_t *f = text ? json_pack("{s:s,s:s,s:s%}", "t", "out", "stream", stream == 2 ? "stderr" : "stdout",
                                     "data", text, n)
                         : NULL;
        if (f && wire_write(c->fd, f) < 0)
                c->client_gone = true;
        json_decref(f);
}

/* The step has the session: a client that gave up meanwhile (its Ctrl-C)
 * does not get it run; one that waits learns it has begun. */
static bool exec_on_begin(void *userdata)
{
        struct conn *c = userdata;
        struct pollfd hup = { .fd = c->fd, .events = POLLRDHUP };
        if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                return false;
        reply(c->fd, json_pack("{s:s}", "t", "running"));
        return true;
}

/* The client wrote during its step: {"op": "interrupt"} (its Ctrl-C)
 * interrupts the step; anything else, or a client gone, does not (the step
 * runs on). */
static bool exec_on_client(void *userdata)
{
        struct conn *c = userdata;
        json_t *m = wire_read(c->fd, 1000);
        const char *op = json_string_value(json_object_get(m, "op"));
        bool interrupt = op && strcmp(op, "interrupt") == 0;
        json_decref(m);
        return interrupt;
}

static void serve_exec(struct conn *c, json_t *req)
{
        json_t *code = json_object_get(req, "code");
        if (!json_is_string(code)) {
                reply(c->fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message", "exec needs \"code\" (a string)",
                                       "kind", CORRAL_ERR_USAGE));
                return;
        }
        struct session_step_limits lim = { .timeout_s = 0 };
        json_t *t = json_object_get(req, "timeout");
        if (json_is_number(t) && json_number_value(t) > 0 && json_number_value(t) <= 31536000)
                lim.timeout_s = json_number_value(t);
        json_t *o = json_object_get(req, "output_limit");
        if (json_is_integer(o) && json_integer_value(o) > 0 && json_integer_value(o) <= (1 << 30))
                lim.output_limit = (uint64_t)json_integer_value(o);
        lim.figure_png = json_is_true(json_object_get(req, "figure_png"));
        /* Renderings of the figures for a model (corral run's tools). */
        json_t *pc = json_object_get(req, "preview_count"), *ps = json_object_get(req, "preview_side"),
               *pb = json_object_get(req, "preview_bytes");
        if (json_is_integer(pc) && json_integer_value(pc) > 0 && json_integer_value(pc) <= 16 &&
            json_is_integer(ps) && json_integer_value(ps) >= 16 && json_integer_value(ps) <= 8192 &&
            json_is_integer(pb) && json_integer_value(pb) >= 1024 && json_integer_value(pb) <= (8 << 20)) {
                lim.preview_count = (unsigned)json_integer_value(pc);
                lim.preview_side = (unsigned)json_integer_value(ps);
                lim.preview_bytes = (uint64_t)json_integer_value(pb);
        }
        struct session_callbacks cb = { .on_output = exec_on_output, .interrupt_fd = c->fd,
                                        .on_interrupt_fd = exec_on_client, .userdata = c };
        json_t *r = NULL;
        corral_error *err = NULL;
        if (session_host_exec(c->d->h, c->id, json_string_value(code), json_string_length(code), &lim, &cb,
                              exec_on_begin, &r, &err) < 0)
                reply_error(c->fd, err, "cannot run the step");
        else if (r)
                reply(c->fd, json_pack("{s:s,s:o}", "t", "result", "result", r));
        corral_error_free(err);
}

/* ---- archive: between steps, confirmed by the client ---- */

/* No step runs now.  The client may have stopped waiting while one ran
 * (--wait): it confirms with a "go" after our "idle", and without it
 * nothing is written. */
static bool archive_confirm(void *userdata)
{
        struct conn *c = userdata;
        json_t *idle = json_pack("{s:s}", "t", "idle");
        int sent = idle ? wire_write(c->fd, idle) : -1;
        json_decref(idle);
        json_t *go = sent == 0 ? wire_read(c->fd, 5000) : NULL;
        const char *op = json_string_value(json_object_get(go, "op"));
        bool confirmed = op && strcmp(op, "go") == 0;
        json_decref(go);
        return confirmed;
}

static void serve_archive(struct conn *c, json_t *req)
{
        const char *path = json_string_value(json_object_get(req, "path"));
        bool stop = json_is_true(json_object_get(req, "stop"));
        json_t *report = NULL;
        corral_error *err = NULL;
        int r = session_host_archive(c->d->h, c->id, path, stop, archive_confirm, c, &report, &err);
        if (r < 0)
                reply_error(c->fd, err, "cannot archive the session");
        else if (r == 0)
                reply(c->fd, json_pack("{s:s,s:o}", "t", "archived", "report", report));
        corral_error_free(err);
}

/* ---- the requests ---- */

static json_t *with_socket(struct daemon *d, json_t *info)
{
        const char *id = json_string_value(json_object_get(info, "id"));
        struct sockaddr_un sa;
        if (id && wire_socket_path(d->dir, id, &sa, NULL) == 0)
                json_object_set_new(info, "socket", json_string(sa.sun_path));
        json_object_set_new(info, "pid", json_integer(getpid()));
        return info;
}

static void serve_session(struct conn *c, const char *op, json_t *req)
{
        corral_error *err = NULL;
        if (strcmp(op, "exec") == 0) {
                serve_exec(c, req);
        } else if (strcmp(op, "info") == 0) {
                json_t *info = session_host_info(c->d->h, c->id, &err);
                if (info == NULL) {
                        reply_error(c->fd, err, "no such session");
                } else {
                        json_object_set_new(with_socket(c->d, info), "t", json_string("info"));
                        reply(c->fd, info);
                }
        } else if (strcmp(op, "archive") == 0) {
                serve_archive(c, req);
        } else if (strcmp(op, "stop") == 0) {
                /* Everything is gone before the answer. */
                if (session_host_stop(c->d->h, c->id, &err) < 0)
                        reply_error(c->fd, err, "cannot stop the session");
                else
                        reply(c->fd, json_pack("{s:s}", "t", "stopped"));
        } else {
                reply(c->fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message", "unknown request", "kind",
                                       CORRAL_ERR_USAGE));
        }
        corral_error_free(err);
}

/* A session held by its start connection (corral run's): when the client
 * hangs up (it ended, or was killed), the session ends with it. */
static void hold(struct conn *c, const char *id)
{
        for (;;) {
                struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN | POLLRDHUP },
                                       { .fd = c->d->ending_fd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents)
                        return; /* the daemon is ending: it stops every session */
                if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        break;
                char b[64];
                if (p[0].revents & POLLIN && read(c->fd, b, sizeof(b)) <= 0)
                        break;
        }
        session_host_stop_now(c->d->h, id, NULL);
}

/* A `start` request: the session's configuration from the client, checked
 * again by the host (it crossed a socket). */
static void serve_start(struct conn *c, json_t *req)
{
        struct daemon *d = c->d;
        corral_error *err = NULL;
        struct session_spec spec = { 0 };
        corral_jail_config_init(&spec.cfg);
        session_options_init(&spec.opt);
        const char *id = json_string_value(json_object_get(req, "id"));
        const char *profile = json_string_value(json_object_get(req, "profile"));
        char *placeholder[] = { "python3", NULL };
        json_t *v, *started = NULL;
        bool refused = false;
        if (!session_id_valid(id) || profile == NULL) {
                corral_usage(&err, "a start request needs \"id\" and \"profile\"");
                goto fail;
        }
        if (corral_jail_config_set_argv(&spec.cfg, placeholder, &err) < 0 ||
            corral_jail_config_load_profile_text(&spec.cfg, profile, strlen(profile), "start request", &err) < 0)
                goto fail;
        /* Credentials come only as "secrets" below: a profile's would be
         * read from this host's environment. */
        if (spec.cfg.n_net_secrets > 0) {
                corral_usage(&err, "a start request's profile may not name credentials: send them as \"secrets\"");
                goto fail;
        }
        if (json_is_integer(v = json_object_get(req, "uid_base")))
                spec.cfg.uid_base = (uint32_t)json_integer_value(v);
        if (json_is_integer(v = json_object_get(req, "uid_count")))
                spec.cfg.uid_count = (uint32_t)json_integer_value(v);
        if (json_is_number(v = json_object_get(req, "idle_timeout")))
                spec.opt.idle_timeout_s = json_number_value(v);
        if (json_is_number(v = json_object_get(req, "lifetime")))
                spec.opt.lifetime_s = json_number_value(v);
        if (json_is_number(v = json_object_get(req, "grace")))
                spec.opt.grace_s = json_number_value(v);
        spec.opt.warm = json_is_true(json_object_get(req, "warm"));
        spec.warm_asked = json_is_true(json_object_get(req, "warm_asked"));
        spec.ws_existed = json_is_true(json_object_get(req, "ws_existed"));
        spec.from = json_string_value(json_object_get(req, "from"));
        spec.tmpdir = json_string_value(json_object_get(req, "tmpdir"));
        /* Read-only binds by the descriptors the client opened (corral run's
         * staged inputs: bound by fd, never by a path that could be swapped). */
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(req, "fd_binds"), i, b) {
                json_t *ix = json_object_get(b, "fd");
                const char *name = json_string_value(json_object_get(b, "name"));
                const char *dst = json_string_value(json_object_get(b, "dest"));
                json_int_t k = json_is_integer(ix) ? json_integer_value(ix) : -1;
                if (k < 0 || (size_t)k >= c->nfds || c->fds[k] < 0 || name == NULL || dst == NULL) {
                        corral_usage(&err, "a start request's \"fd_binds\" must name descriptors it carries");
                        goto fail;
                }
                if (corral_jail_config_add_bind_fd(&spec.cfg, c->fds[k], name, dst, &err) < 0)
                        goto fail;
        }
        /* Brokered credentials (client.c's add_credentials): into the
         * configuration, checked as `corral exec` checks them; the request's
         * copies are wiped by the caller. */
        json_array_foreach(json_object_get(req, "secrets"), i, b) {
                const char *host = json_string_value(json_object_get(b, "host"));
                const char *header = json_string_value(json_object_get(b, "header"));
                const char *value = json_string_value(json_object_get(b, "value"));
                if (host == NULL || header == NULL || value == NULL) {
                        corral_usage(&err, "a start request's \"secrets\" must be {host, header, value} objects");
                        goto fail;
                }
                if (corral_jail_config_add_net_secret(&spec.cfg, host, header, value, &err) < 0)
                        goto fail;
        }
        if (json_is_string(v = json_object_get(req, "upstream_ca")) &&
            (spec.cfg.net_upstream_ca = strdup(json_string_value(v))) == NULL) {
                corral_fail(&err, ENOMEM, "cannot start the session");
                goto fail;
        }
        spec.fds = c->fds;
        spec.n_fds = c->nfds;
        if (session_host_start(d->h, id, &spec, &started, &refused, &err) < 0)
                goto fail;
        if (listen_session(d, id, &err) < 0) {
                session_host_stop(d->h, id, NULL);
                json_decref(started);
                goto fail;
        }
        json_object_set_new(with_socket(d, started), "t", json_string("started"));
        reply(c->fd, started);
        if (json_is_true(json_object_get(req, "hold")))
                hold(c, id);
        return;
fail:
        corral_jail_config_release(&spec.cfg);
        reply(c->fd, json_pack("{s:s,s:i,s:s,s:b}", "t", "error", "kind", err ? err->kind : CORRAL_ERR_INTERNAL,
                               "message", err ? err->msg : "cannot start the session", "refused", refused));
        corral_error_free(err);
}

static void serve_host(struct conn *c, const char *op, json_t *req)
{
        struct daemon *d = c->d;
        if (strcmp(op, "start") == 0) {
                serve_start(c, req);
                /* the session's configuration holds its own copies, wiped
                 * at its release */
                wire_wipe_credentials(req);
        } else if (strcmp(op, "info") == 0) {
                json_t *r = session_host_status(d->h);
                if (r) {
                        json_object_set_new(r, "t", json_string("host"));
                        json_object_set_new(r, "pid", json_integer(getpid()));
                        json_object_set_new(r, "linger_s", json_real(d->linger_s));
                        json_object_set_new(r, "exec_pool", d->pool ? exec_pool_status(d->pool) : json_null());
                }
                reply(c->fd, r);
        } else if (strcmp(op, "list") == 0) {
                json_t *all = session_host_list(d->h);
                size_t i;
                json_t *e;
                json_array_foreach(all, i, e)
                        with_socket(d, e);
                reply(c->fd, all ? json_pack("{s:s,s:o}", "t", "list", "sessions", all) : NULL);
        } else if (strcmp(op, "exec-claim") == 0) {
                exec_pool_serve_claim(d->pool, c->fd, req, c->fds, c->nfds);
        } else if (strcmp(op, "prewarm") == 0) {
                session_host_prewarm(d->h);
                reply(c->fd, json_pack("{s:s}", "t", "prewarming"));
        } else if (strcmp(op, "shutdown") == 0) {
                poke(d->ending_fd);
                reply(c->fd, json_pack("{s:s}", "t", "stopping"));
        } else {
                reply(c->fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message", "unknown request", "kind",
                                       CORRAL_ERR_USAGE));
        }
}

/* Serve the connection's one request, then close and free it. */
static void serve_conn(struct conn *c)
{
        struct daemon *d = c->d;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        /* Another user gets not even an answer. */
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid()) {
                json_t *req = wire_read_fds(c->fd, 5000, c->fds, WIRE_MAX_FDS, &c->nfds);
                const char *op = json_string_value(json_object_get(req, "op"));
                if (op && c->claims_only && strcmp(op, "exec-claim") != 0)
                        reply(c->fd, json_pack("{s:s,s:s,s:i}", "t", "error", "message",
                                               "exec-pool.sock serves exec-claim only", "kind", CORRAL_ERR_USAGE));
                else if (op && c->id[0])
                        serve_session(c, op, req);
                else if (op)
                        serve_host(c, op, req);
                json_decref(req);
                /* What a request did not take. */
                for (size_t i = 0; i < c->nfds; i++)
                        if (c->fds[i] >= 0)
                                close(c->fds[i]);
        }
        close(c->fd);
        free(c);
        pthread_mutex_lock(&d->lock);
        d->conns--;
        pthread_cond_broadcast(&d->quiet);
        pthread_mutex_unlock(&d->lock);
        poke(d->wake_fd);
}

static void *conn_thread(void *arg)
{
        serve_conn(arg);
        return NULL;
}

static bool start_detached(void *(*fn)(void *), void *arg)
{
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        return e == 0;
}

/* ---- claims of pre-made jails (exec-pool.c) ----
 * Threads wait in accept() on exec-pool.sock, so that a claim wakes the
 * thread that serves it: no main loop to wake first, no thread to start on
 * the claim's path (it saved 0.5-1 ms a claim on 2 CPUs).  A thread serves
 * its claim and waits again; the last one waiting starts another when it
 * gets a client, so that a claim made meanwhile finds one (the threads are
 * as many as claims ever were at once, plus one). */

static void *claim_thread(void *arg);

static bool start_claim_thread(struct daemon *d)
{
        pthread_mutex_lock(&d->lock);
        d->claimers++; /* counted before it exists: the daemon's end waits for it */
        d->waiting++;
        pthread_mutex_unlock(&d->lock);
        if (start_detached(claim_thread, d))
                return true;
        pthread_mutex_lock(&d->lock);
        d->claimers--;
        d->waiting--;
        pthread_cond_broadcast(&d->quiet);
        pthread_mutex_unlock(&d->lock);
        return false;
}

static void *claim_thread(void *arg)
{
        struct daemon *d = arg;
        for (;;) {
                int fd = accept4(d->claim_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
                        continue;
                struct conn *c = fd >= 0 ? calloc(1, sizeof(*c)) : NULL;
                if (fd >= 0 && c == NULL) {
                        close(fd);
                        continue;
                }
                pthread_mutex_lock(&d->lock);
                d->waiting--;
                bool last = d->waiting == 0;
                if (c) {
                        d->conns++;
                        d->served = true;
                } else {
                        d->claimers--; /* shut down: the daemon is ending */
                }
                pthread_cond_broadcast(&d->quiet);
                pthread_mutex_unlock(&d->lock);
                if (c == NULL)
                        return NULL;
                c->d = d;
                c->fd = fd;
                c->claims_only = true;
                struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                /* Should none start, the next claim waits in the listen
                 * queue for this one to be done. */
                if (last)
                        start_claim_thread(d);
                serve_conn(c);
                pthread_mutex_lock(&d->lock);
                d->waiting++;
                pthread_mutex_unlock(&d->lock);
        }
}

static void accept_one(struct daemon *d, int listen_fd, const char *id)
{
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        struct conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
                close(fd);
                return;
        }
        c->d = d;
        c->fd = fd;
        snprintf(c->id, sizeof(c->id), "%s", id ? id : "");
        pthread_mutex_lock(&d->lock);
        d->conns++;
        if (id == NULL)
                d->served = true; /* from now on the daemon ends with its last session */
        pthread_mutex_unlock(&d->lock);
        if (!start_detached(conn_thread, c)) {
                close(fd);
                free(c);
                pthread_mutex_lock(&d->lock);
                d->conns--;
                pthread_mutex_unlock(&d->lock);
        }
}

/* ---- the process ---- */

/* Milliseconds until the daemon may end (< 0: now): never while sessions
 * live or a connection is served; after the last, at once, or after the
 * linger when the zygote is worth keeping; a new daemon waits for its
 * first request a little. */
static double linger_left_ms(struct daemon *d)
{
        double idle_since = 0;
        bool warm = false;
        int live = session_host_count(d->h, &idle_since, &warm);
        pthread_mutex_lock(&d->lock);
        bool busy = d->conns > 0, served = d->served;
        pthread_mutex_unlock(&d->lock);
        if (live > 0 || busy)
                return 1e18;
        /* A zygote held (or still starting, after a prewarm) is kept. */
        double wait_s = !served ? FIRST_REQUEST_S : warm ? d->linger_s : 0;
        return idle_since + wait_s * 1000 - monotonic_ms();
}

/* Report to the client that started us through the ready pipe: "ok PID",
 * "busy" (another daemon holds the lock) or "error KIND MESSAGE". */
static void report_ready(int fd, const corral_error *err, bool busy)
{
        char buf[4096];
        int n = busy  ? snprintf(buf, sizeof(buf), "busy")
                : err ? snprintf(buf, sizeof(buf), "error %d %s", err->kind, err->msg)
                      : snprintf(buf, sizeof(buf), "ok %d", (int)getpid());
        /* A pipe: the client that started us may be gone (killed). */
        struct sigpipe_guard g;
        sigpipe_block(&g);
        if (n > 0)
                write_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
        sigpipe_unblock(&g);
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

/* Sockets of sessions a killed daemon left: nobody listens on them (we
 * hold the lock). */
static void remove_stale_sockets(const char *dir)
{
        DIR *dp = opendir(dir);
        struct dirent *de;
        while (dp && (de = readdir(dp)) != NULL) {
                size_t n = strlen(de->d_name);
                if (n == SESSION_ID_LEN + 5 && strcmp(de->d_name + SESSION_ID_LEN, ".sock") == 0)
                        unlinkat(dirfd(dp), de->d_name, 0);
        }
        if (dp)
                closedir(dp);
}

static void serve(struct daemon *d, int host_fd, int cancel_fd)
{
        for (;;) {
                /* Sockets of ended sessions: their names are gone already. */
                pthread_mutex_lock(&d->lock);
                for (struct listener **p = &d->listeners; *p;) {
                        struct listener *l = *p;
                        if (l->ended) {
                                *p = l->next;
                                close(l->fd);
                                free(l);
                        } else {
                                p = &l->next;
                        }
                }
                pthread_mutex_unlock(&d->lock);
                double next = session_host_expire(d->h) - monotonic_ms();
                double left = linger_left_ms(d);
                if (left < 0)
                        return;
                if (next < left)
                        left = next < 0 ? 0 : next;
                struct pollfd p[MAX_POLL];
                char ids[MAX_POLL][SESSION_ID_LEN + 1];
                int n = 0;
                p[n++] = (struct pollfd){ .fd = host_fd, .events = POLLIN };
                p[n++] = (struct pollfd){ .fd = d->ending_fd, .events = POLLIN };
                p[n++] = (struct pollfd){ .fd = d->wake_fd, .events = POLLIN };
                p[n++] = (struct pollfd){ .fd = cancel_fd, .events = POLLIN };
                int fixed = n;
                pthread_mutex_lock(&d->lock);
                for (struct listener *l = d->listeners; l && n < MAX_POLL; l = l->next) {
                        memcpy(ids[n], l->id, sizeof(ids[n]));
                        p[n++] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
                }
                pthread_mutex_unlock(&d->lock);
                int r = poll(p, (nfds_t)n, left > 60000 ? 60000 : (int)left + 1);
                if (r < 0 && errno != EINTR)
                        return;
                if (r <= 0)
                        continue;
                if (p[1].revents || p[3].revents)
                        return;
                if (p[2].revents) {
                        uint64_t v;
                        ssize_t k = read(d->wake_fd, &v, sizeof(v));
                        (void)k;
                }
                if (p[0].revents & POLLIN)
                        accept_one(d, host_fd, NULL);
                for (int i = fixed; i < n; i++)
                        if (p[i].revents & POLLIN)
                                accept_one(d, p[i].fd, ids[i]);
        }
}

void session_daemon_main(int ready_fd, int cancel_fd)
{
        corral_error *err = NULL;
        char *lock = NULL;
        int lock_fd = -1, host_fd = -1;
        struct sockaddr_un sa = { 0 }, claim_sa = { 0 };
        struct daemon d = { .ending_fd = -1, .wake_fd = -1, .claim_fd = -1 };
        pthread_mutex_init(&d.lock, NULL);
        pthread_cond_init(&d.quiet, NULL);
        /* Nothing of the client's but the two fds we were given. */
        int keep[2] = { ready_fd, cancel_fd };
        close_fds_except(keep, 2);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                if (null > 2)
                        close(null);
        }
        umask(077);
        /* Every write to a client is send(MSG_NOSIGNAL) and every pipe
         * guarded (util.h, sigpipe_block): the default disposition proves
         * it, as a server embedding the host may keep it
         * (tests/e2e/test_session.py kills clients mid-step). */
        signal(SIGPIPE, SIG_DFL);
        if (chdir("/") < 0)
                goto fail_errno;
        d.linger_s = linger_from_env();
        d.ending_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        d.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d.ending_fd < 0 || d.wake_fd < 0)
                goto fail_errno;
        struct session_host_options hopt = { .on_session_end = on_session_end, .userdata = &d };
        if (session_host_new(&hopt, &d.h, &err) < 0)
                goto fail;
        struct exec_pool_options pool_opt;
        if (exec_pool_options_from_env(&pool_opt, &err) < 0)
                goto fail;
        d.dir = wire_runtime_dir(true, &err);
        if (d.dir == NULL)
                goto fail;
        if (asprintf(&lock, "%s/host.lock", d.dir) < 0) {
                lock = NULL;
                goto fail_errno;
        }
        lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd < 0) {
                corral_fail(&err, errno, "cannot open '%s'", lock);
                goto fail;
        }
        /* Ours only if the name still holds what we locked: an ending
         * daemon unlinks it while it holds it. */
        struct stat held, named;
        if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        goto fail_errno;
                report_ready(ready_fd, NULL, true);
                _exit(0);
        }
        if (fstat(lock_fd, &held) < 0 || stat(lock, &named) < 0 || held.st_ino != named.st_ino ||
            held.st_dev != named.st_dev) {
                report_ready(ready_fd, NULL, true);
                _exit(0);
        }
        /* The lock is ours: sockets left by a daemon that was killed are
         * stale, and nobody else binds one while we hold it. */
        remove_stale_sockets(d.dir);
        if (wire_socket_path(d.dir, "host", &sa, &err) < 0)
                goto fail;
        unlink(sa.sun_path);
        host_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (host_fd < 0 || bind(host_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 ||
            listen(host_fd, 64) < 0) {
                corral_fail(&err, errno, "cannot listen on '%s'", sa.sun_path);
                goto fail;
        }
        /* Jails made in advance once the host is ours (a host that lost
         * the race above made none), and the socket that sends corral exec
         * here for them (one a killed host left is stale). */
        if (wire_socket_path(d.dir, EXEC_POOL_SOCKET, &claim_sa, &err) < 0)
                goto fail;
        unlink(claim_sa.sun_path);
        d.pool = exec_pool_new(&pool_opt, &err);
        if (pool_opt.target > 0 && d.pool == NULL)
                goto fail;
        if (d.pool) {
                d.claim_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (d.claim_fd < 0 || bind(d.claim_fd, (struct sockaddr *)&claim_sa, sizeof(claim_sa)) < 0 ||
                    chmod(claim_sa.sun_path, 0600) < 0 || listen(d.claim_fd, 64) < 0) {
                        corral_fail(&err, errno, "cannot listen on '%s'", claim_sa.sun_path);
                        goto fail;
                }
                if (!start_claim_thread(&d)) {
                        corral_fail(&err, EAGAIN, "cannot start the thread that serves '%s'", claim_sa.sun_path);
                        goto fail;
                }
        }
        report_ready(ready_fd, NULL, false);
        serve(&d, host_fd, cancel_fd);
        /* Ending: no new connection; running steps cancelled; the
         * connections being served finish (quickly: their steps end);
         * then every session is stopped and cleaned up, then the zygote. */
        unlink(sa.sun_path);
        close(host_fd);
        if (d.claim_fd >= 0) {
                unlink(claim_sa.sun_path);
                shutdown(d.claim_fd, SHUT_RDWR); /* the waiting claim thread's accept() fails: it ends */
        }
        poke(d.ending_fd);
        session_host_cancel_all(d.h);
        pthread_mutex_lock(&d.lock);
        while (d.conns > 0 || d.claimers > 0)
                pthread_cond_wait(&d.quiet, &d.lock);
        pthread_mutex_unlock(&d.lock);
        if (d.claim_fd >= 0)
                close(d.claim_fd);
        exec_pool_free(d.pool);
        session_host_free(d.h);
        for (struct listener *l = d.listeners; l; l = l->next) {
                if (!l->ended)
                        unlink(l->sa.sun_path);
                close(l->fd);
        }
        unlink(lock); /* still locked: a daemon starting now retries */
        _exit(0);
fail_errno:
        corral_fail(&err, errno, "cannot start the session host");
fail:
        if (host_fd >= 0 && sa.sun_path[0]) {
                unlink(sa.sun_path);
                close(host_fd);
        }
        if (d.claim_fd >= 0 && claim_sa.sun_path[0]) /* no thread waits on it yet: its start failed */
                unlink(claim_sa.sun_path);
        report_ready(ready_fd, err, false);
        _exit(125); /* corral's own failure, as the CLI's */
}
