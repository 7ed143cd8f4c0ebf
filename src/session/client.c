/* client.c: requests to the session daemon (client.h, docs/sessions.md).
 *
 * A daemon is started on demand: double-forked and setsid, then exec'd
 * afresh from /proc/self/exe as `corral session host --ready-fd 3` with a
 * short allowlist of environment variables, so that it holds nothing of
 * the client's (an API key, its memory), and reports on the ready pipe.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "exec-pool.h"
#include "host.h"
#include "wire.h"
#include "../lib/probe.h"

/* What the daemon keeps of our environment: where things are and how to
 * find corral's parts, nothing else (an API key stays with the client). */
static const char *const daemon_env_keep[] = {
        "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME",
        "CORRAL_CACHE_DIR", "CORRAL_INIT", "CORRAL_SESSION_DRIVER", "CORRAL_ZYGOTE", "CORRAL_WARM_POOL", "CORRAL_EXEC_POOL",
        "CORRAL_EXEC_POOL_QUIET_MS", "CORRAL_SESSION_LINGER", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
};

/* Start a daemon: 0 started, 1 busy (another one holds the directory), -1
 * with err, as it reported on the ready pipe. */
static int daemon_spawn(corral_error **ret_err)
{
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return corral_fail(ret_err, errno, "cannot start the session host");
        char *env[ARRAY_SIZE(daemon_env_keep) + 1];
        size_t n = 0;
        for (size_t i = 0; i < ARRAY_SIZE(daemon_env_keep); i++) {
                const char *v = getenv(daemon_env_keep[i]);
                if (v && asprintf(&env[n], "%s=%s", daemon_env_keep[i], v) >= 0)
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
                        _exit(grandchild < 0 ? 125 : 0);
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
                return corral_fail(ret_err, errno, "cannot start the session host");
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
                return corral_make_error(ret_err, kind, 0, "%s", buf + off);
        return corral_fail(ret_err, 0, "the session host ended before it was ready");
}

int session_client_connect_host(bool spawn, corral_error **ret_err)
{
        cleanup_free char *dir = wire_runtime_dir(spawn, ret_err);
        if (dir == NULL)
                return spawn || (ret_err && *ret_err) ? -1 : corral_usage(ret_err, "no session host is running");
        struct sockaddr_un sa;
        if (wire_socket_path(dir, "host", &sa, ret_err) < 0)
                return -1;
        /* A daemon may be ending (its socket gone, its lock still held) or
         * two clients may start one at once: try for a while. */
        double deadline = monotonic_ms() + 15000;
        for (;;) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return corral_fail(ret_err, errno, "cannot create a socket");
                if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                        return fd;
                int e = errno;
                close(fd);
                if (e != ENOENT && e != ECONNREFUSED)
                        return corral_fail(ret_err, e, "cannot connect to the session host '%s'", sa.sun_path);
                if (!spawn)
                        return corral_usage(ret_err, "no session host is running");
                if (monotonic_ms() > deadline)
                        return corral_fail(ret_err, ETIMEDOUT, "the session host '%s' does not answer", sa.sun_path);
                int r = daemon_spawn(ret_err);
                if (r < 0)
                        return -1;
                if (r == 1) {
                        struct timespec ts = { 0, 20 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
        }
}

/* Connect to session id's socket: the fd, or -1 with err (usage for an
 * unknown session). */
static int connect_session(const char *id, corral_error **ret_err)
{
        if (!session_id_valid(id))
                return corral_usage(ret_err,
                                    "no session '%s': a session ID is %d hex digits (see 'corral session list')", id,
                                    SESSION_ID_LEN);
        corral_error *e = NULL;
        cleanup_free char *dir = wire_runtime_dir(false, &e);
        if (dir == NULL) {
                if (e == NULL)
                        return corral_usage(ret_err, "no session '%s' (see 'corral session list')", id);
                if (ret_err)
                        *ret_err = e;
                else
                        corral_error_free(e);
                return -1;
        }
        struct sockaddr_un sa;
        if (wire_socket_path(dir, id, &sa, ret_err) < 0)
                return -1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return corral_fail(ret_err, errno, "cannot create a socket");
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int en = errno;
                close(fd);
                if (en == ENOENT || en == ECONNREFUSED)
                        return corral_usage(ret_err, "no session '%s' (see 'corral session list')", id);
                return corral_fail(ret_err, en, "cannot connect to session '%s'", id);
        }
        return fd;
}

/* One request, one answer. */
static json_t *ask(int fd, json_t *req, int timeout_ms)
{
        json_t *r = req && wire_write(fd, req) == 0 ? wire_read(fd, timeout_ms) : NULL;
        json_decref(req);
        return r;
}

/* The daemon's error answer as err; false when r is not one. */
static bool answer_error(json_t *r, corral_error **ret_err)
{
        const char *t = json_string_value(json_object_get(r, "t"));
        if (t == NULL || strcmp(t, "error") != 0)
                return false;
        const char *msg = json_string_value(json_object_get(r, "message"));
        json_t *kind = json_object_get(r, "kind");
        corral_make_error(ret_err, json_is_integer(kind) ? (int)json_integer_value(kind) : CORRAL_ERR_INTERNAL, 0,
                          "%s", msg ? msg : "unknown error");
        return true;
}

/* path made absolute against our directory, for the daemon runs in "/";
 * nothing resolved (a symbolic link stays one for the daemon to judge). */
static char *joined(const char *path)
{
        char *out = NULL;
        if (path[0] == '/')
                return strdup(path);
        cleanup_free char *cwd = getcwd(NULL, 0);
        if (cwd == NULL || asprintf(&out, "%s/%s", cwd, path) < 0)
                return NULL;
        return out;
}

static bool dir_empty(const char *path)
{
        DIR *dp = opendir(path);
        if (dp == NULL)
                return false;
        bool empty = true;
        struct dirent *de;
        while (empty && (de = readdir(dp)) != NULL)
                empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        closedir(dp);
        return empty;
}

/* The copy's host paths absolute.  The workspace must exist, except when
 * resuming, where it must be new or empty (the archive is extracted into
 * it): *ret_existed says which. */
static int absolute_paths(corral_jail_config *copy, bool resuming, bool *ret_existed, corral_error **ret_err)
{
        char **paths[1 + copy->n_binds];
        size_t n = 0;
        paths[n++] = &copy->rootfs;
        for (size_t i = 0; i < copy->n_binds; i++)
                paths[n++] = &copy->binds[i].src;
        /* A missing one is left as it is, for the jail to report. */
        for (size_t i = 0; i < n; i++) {
                char *abs = *paths[i] && (*paths[i])[0] != '/' ? realpath(*paths[i], NULL) : NULL;
                if (abs) {
                        free(*paths[i]);
                        *paths[i] = abs;
                }
        }
        *ret_existed = false;
        if (copy->workspace == NULL)
                return 0;
        struct stat st;
        const char *given = copy->workspace;
        cleanup_free char *ws = NULL;
        *ret_existed = lstat(given, &st) == 0;
        if (!*ret_existed && !(resuming && errno == ENOENT))
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "workspace '%s'", given);
        if ((ws = *ret_existed ? realpath(given, NULL) : joined(given)) == NULL)
                return corral_make_error(ret_err, *ret_existed ? CORRAL_ERR_USAGE : CORRAL_ERR_INTERNAL, errno,
                                         "workspace '%s'", given);
        if (resuming && *ret_existed && !(S_ISDIR(st.st_mode) && dir_empty(ws)))
                return corral_usage(ret_err, "cannot resume into '%s': resuming from an archive needs a new or "
                                             "empty workspace directory", given);
        free(copy->workspace);
        copy->workspace = TAKE_PTR(ws);
        return 0;
}

/* Brokered credentials, which a profile does not carry: "secrets" as
 * [{"host","header","value"}] and "upstream_ca" as an absolute path.  The
 * values cross to the session host, a process of our uid, over its socket
 * (0600, SO_PEERCRED), once; wire_wipe_credentials() clears them from req. */
static int add_credentials(json_t *req, const corral_jail_config *cfg)
{
        if (cfg->n_net_secrets > 0) {
                json_t *a = json_array();
                if (a == NULL || json_object_set_new(req, "secrets", a) < 0)
                        return -1;
                for (size_t i = 0; i < cfg->n_net_secrets; i++) {
                        const struct corral_net_secret *sec = &cfg->net_secrets[i];
                        if (json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "host", sec->host, "header",
                                                               sec->header, "value", sec->value)) < 0)
                                return -1;
                }
        }
        if (cfg->net_upstream_ca) {
                cleanup_free char *abs = joined(cfg->net_upstream_ca);
                if (abs == NULL || json_object_set_new(req, "upstream_ca", json_string(abs)) < 0)
                        return -1;
        }
        return 0;
}

/* cfg as the start request's profile, its host paths absolute and its
 * descriptor binds taken out into fds and "fd_binds" (a profile names
 * paths, and these are bound by fd). */
static json_t *start_request(const char *id, const struct session_client_start *s, int *fds, size_t *ret_n,
                             corral_error **ret_err)
{
        corral_jail_config copy;
        bool ws_existed;
        if (corral_jail_config_copy(&copy, s->cfg, ret_err) < 0)
                return NULL;
        cleanup_free char *from = s->from ? joined(s->from) : NULL;
        if (s->from && from == NULL) {
                corral_fail(ret_err, errno, "cannot resolve '%s'", s->from);
                corral_jail_config_release(&copy);
                return NULL;
        }
        if (absolute_paths(&copy, s->from != NULL, &ws_existed, ret_err) < 0) {
                corral_jail_config_release(&copy);
                return NULL;
        }
        json_t *fd_binds = json_array();
        size_t n = 0, kept = 0;
        for (size_t i = 0; i < copy.n_binds; i++) {
                struct corral_bind *b = &copy.binds[i];
                if (b->src_fd < 0) {
                        copy.binds[kept++] = *b;
                        continue;
                }
                if (n < WIRE_MAX_FDS) {
                        json_array_append_new(fd_binds, json_pack("{s:I,s:s,s:s}", "fd", (json_int_t)n, "name",
                                                                  b->src, "dest", b->dst));
                        fds[n++] = b->src_fd;
                } else {
                        n = WIRE_MAX_FDS + 1;
                }
                free(b->src);
                free(b->dst);
        }
        copy.n_binds = kept;
        cleanup_free char *profile = n <= WIRE_MAX_FDS ? corral_jail_config_to_profile_json(&copy) : NULL;
        corral_jail_config_release(&copy);
        json_t *req = profile ? json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:b,s:b,s:s?,s:b,s:s,s:o,s:b}", "op",
                                          "start", "id", id, "profile", profile, "uid_base",
                                          (json_int_t)s->cfg->uid_base, "uid_count", (json_int_t)s->cfg->uid_count,
                                          "idle_timeout", s->opt->idle_timeout_s, "lifetime", s->opt->lifetime_s,
                                          "grace", s->opt->grace_s, "warm", s->opt->warm, "warm_asked",
                                          s->warm_asked, "from", from, "ws_existed", ws_existed, "tmpdir",
                                          s->tmpdir ? s->tmpdir : "/tmp", "fd_binds", fd_binds, "hold", s->hold)
                              : NULL;
        if (req == NULL) {
                if (profile == NULL)
                        json_decref(fd_binds);
                corral_fail(ret_err, n > WIRE_MAX_FDS ? E2BIG : ENOMEM, "cannot start the session");
                return NULL;
        }
        if (add_credentials(req, s->cfg) < 0) {
                wire_wipe_credentials(req);
                json_decref(req);
                corral_fail(ret_err, ENOMEM, "cannot start the session");
                return NULL;
        }
        *ret_n = n;
        return req;
}

json_t *session_client_start(const char *id, const struct session_client_start *s, void (*on_slow)(void *userdata),
                             void *userdata, int *ret_hold, bool *ret_refused, corral_error **ret_err)
{
        if (ret_hold)
                *ret_hold = -1;
        *ret_refused = false;
        int fds[WIRE_MAX_FDS];
        size_t nfds = 0;
        json_t *req = start_request(id, s, fds, &nfds, ret_err);
        if (req == NULL)
                return NULL;
        json_t *reply = NULL;
        /* A daemon that was ending when we connected closes without an
         * answer before it ever read the request: ask a new one, once. */
        for (int attempt = 0; attempt < 2 && reply == NULL; attempt++) {
                int fd = session_client_connect_host(true, ret_err);
                if (fd < 0) {
                        wire_wipe_credentials(req);
                        json_decref(req);
                        return NULL;
                }
                if (wire_write_fds(fd, req, fds, nfds) == 0) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        if (on_slow && poll(&p, 1, 700) == 0)
                                on_slow(userdata);
                        reply = wire_read(fd, -1);
                }
                const char *t = json_string_value(json_object_get(reply, "t"));
                if (s->hold && ret_hold && t && strcmp(t, "started") == 0)
                        *ret_hold = fd;
                else
                        close(fd);
        }
        wire_wipe_credentials(req);
        json_decref(req);
        const char *t = json_string_value(json_object_get(reply, "t"));
        if (t && strcmp(t, "started") == 0)
                return reply;
        if (answer_error(reply, ret_err))
                *ret_refused = json_is_true(json_object_get(reply, "refused"));
        else
                corral_fail(ret_err, 0, "the session host ended before the session was ready");
        json_decref(reply);
        return NULL;
}

int session_client_prewarm(corral_error **ret_err)
{
        int fd = session_client_connect_host(true, ret_err);
        if (fd < 0)
                return -1;
        json_t *r = ask(fd, json_pack("{s:s}", "op", "prewarm"), 10000);
        close(fd);
        const char *t = json_string_value(json_object_get(r, "t"));
        int rc = t && strcmp(t, "prewarming") == 0 ? 0 : -1;
        if (rc < 0 && !answer_error(r, ret_err))
                corral_fail(ret_err, 0, "the session host did not answer the prewarm request");
        json_decref(r);
        return rc;
}

int session_client_exec(const char *id, const char *code, const struct session_client_exec *x, json_t **ret_result,
                        corral_error **ret_err)
{
        *ret_result = NULL;
        int fd = connect_session(id, ret_err);
        if (fd < 0)
                return -1;
        int rc = -1;
        json_t *req = json_pack("{s:s,s:s}", "op", "exec", "code", code);
        if (req && x->timeout_s > 0)
                json_object_set_new(req, "timeout", json_real(x->timeout_s));
        if (req && x->output_limit > 0)
                json_object_set_new(req, "output_limit", json_integer((json_int_t)x->output_limit));
        if (req && x->figure_png)
                json_object_set_new(req, "figure_png", json_true());
        if (req && x->preview_count > 0) {
                json_object_set_new(req, "preview_count", json_integer(x->preview_count));
                json_object_set_new(req, "preview_side", json_integer(x->preview_side));
                json_object_set_new(req, "preview_bytes", json_integer((json_int_t)x->preview_bytes));
        }
        if (req == NULL || wire_write(fd, req) < 0) {
                corral_fail(ret_err, errno, "cannot send the step to session '%s'", id);
                goto out;
        }
        bool running = false, waiting = false, interrupting = false;
        for (;;) {
                /* The cancel fd is watched, never read: its caller sees it
                 * readable too (a run ends cancelled); once the interrupt is
                 * sent, it is not watched any more. */
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                                       { .fd = interrupting ? -1 : x->cancel_fd, .events = POLLIN } };
                int n = poll(p, 2, running || waiting ? -1 : 1000);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0) {
                        waiting = true;
                        if (x->on_event)
                                x->on_event(x->userdata, SESSION_CLIENT_WAITING);
                        continue;
                }
                if (n > 0 && (p[1].revents & POLLIN)) {
                        if (!running) {
                                rc = 1; /* our hang-up tells the daemon not to run it */
                                goto out;
                        }
                        if (!interrupting) {
                                json_t *intr = json_pack("{s:s}", "op", "interrupt");
                                if (intr && wire_write(fd, intr) == 0 && x->on_event)
                                        x->on_event(x->userdata, SESSION_CLIENT_INTERRUPTING);
                                json_decref(intr);
                                interrupting = true;
                        }
                        continue;
                }
                json_t *f = wire_read(fd, -1);
                if (f == NULL) {
                        corral_fail(ret_err, 0, "session '%s' ended during the step (see 'corral session list')", id);
                        goto out;
                }
                const char *t = json_string_value(json_object_get(f, "t"));
                if (t && strcmp(t, "running") == 0) {
                        running = true;
                } else if (t && strcmp(t, "out") == 0 && x->on_output) {
                        json_t *d = json_object_get(f, "data");
                        const char *s = json_string_value(json_object_get(f, "stream"));
                        x->on_output(x->userdata, s && strcmp(s, "stderr") == 0 ? 2 : 1,
                                     json_string_value(d) ? json_string_value(d) : "", json_string_length(d));
                } else if (t && strcmp(t, "result") == 0) {
                        *ret_result = json_incref(json_object_get(f, "result"));
                        json_decref(f);
                        rc = 0;
                        goto out;
                } else if (answer_error(f, ret_err)) {
                        corral_error_prefix(ret_err, "session '%s'", id);
                        json_decref(f);
                        goto out;
                }
                json_decref(f);
        }
out:
        json_decref(req);
        close(fd);
        return rc;
}

int session_client_archive(const char *id, const char *path, bool stop, double wait_s,
                           void (*on_waiting)(void *userdata), void *userdata, json_t **ret_report,
                           corral_error **ret_err)
{
        *ret_report = NULL;
        int fd = connect_session(id, ret_err);
        if (fd < 0)
                return -1;
        int rc = -1;
        json_t *r = NULL;
        cleanup_free char *abs = joined(path);
        json_t *req = abs ? json_pack("{s:s,s:s,s:b}", "op", "archive", "path", abs, "stop", stop) : NULL;
        if (req == NULL || wire_write(fd, req) < 0) {
                corral_fail(ret_err, errno, "cannot send the request to session '%s'", id);
                goto out;
        }
        /* The daemon answers "idle" once no step runs; we confirm with
         * "go".  Past the wait, our hang-up means nothing is written. */
        double deadline = wait_s > 0 ? monotonic_ms() + wait_s * 1000 : 0;
        bool noted = false;
        for (;;) {
                int t = 1000;
                if (deadline > 0) {
                        double left = deadline - monotonic_ms();
                        if (left <= 0) {
                                rc = 1;
                                goto out;
                        }
                        if (left < t)
                                t = (int)left + 1;
                }
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, t);
                if (n < 0 && errno != EINTR)
                        break;
                if (n > 0)
                        break;
                if (n == 0 && !noted && on_waiting) {
                        on_waiting(userdata);
                        noted = true;
                }
        }
        r = wire_read(fd, 10000);
        const char *t = json_string_value(json_object_get(r, "t"));
        if (t && strcmp(t, "idle") == 0) {
                json_decref(r);
                r = ask(fd, json_pack("{s:s}", "op", "go"), -1);
                t = json_string_value(json_object_get(r, "t"));
        }
        if (t && strcmp(t, "archived") == 0) {
                *ret_report = json_incref(json_object_get(r, "report"));
                rc = 0;
                /* With stop, EOF: everything of the session is gone. */
                char b;
                while (stop && read(fd, &b, 1) > 0)
                        ;
        } else if (!answer_error(r, ret_err)) {
                corral_fail(ret_err, 0, "session '%s' did not answer the archive request (see 'corral session list')",
                            id);
        }
out:
        json_decref(req);
        json_decref(r);
        close(fd);
        return rc;
}

int session_client_stop(const char *id, corral_error **ret_err)
{
        int fd = connect_session(id, ret_err);
        if (fd < 0)
                return -1;
        json_t *r = ask(fd, json_pack("{s:s}", "op", "stop"), -1);
        const char *t = json_string_value(json_object_get(r, "t"));
        int rc = 0;
        if (t == NULL || strcmp(t, "stopped") != 0) {
                if (!answer_error(r, ret_err))
                        corral_fail(ret_err, 0, "session '%s' did not confirm that it stopped", id);
                rc = -1;
        }
        json_decref(r);
        close(fd);
        return rc;
}

/* op to the running daemon: its answer, or NULL with err (usage: none
 * runs).  A daemon killed or ending hangs up without an answer while its
 * last threads exit: asked once more, the question finds no daemon (or
 * the next one). */
static json_t *ask_host(const char *op, corral_error **ret_err)
{
        for (int attempt = 0; attempt < 2; attempt++) {
                int fd = session_client_connect_host(false, ret_err);
                if (fd < 0)
                        return NULL;
                json_t *r = ask(fd, json_pack("{s:s}", "op", op), 10000);
                close(fd);
                if (r)
                        return r;
        }
        corral_fail(ret_err, 0, "the session host did not answer the %s request", op);
        return NULL;
}

json_t *session_client_list(corral_error **ret_err)
{
        corral_error *err = NULL;
        json_t *r = ask_host("list", &err);
        if (r == NULL && err && err->kind == CORRAL_ERR_USAGE) {
                corral_error_free(err); /* none runs: no sessions */
                return json_array();
        }
        json_t *all = json_object_get(r, "sessions");
        if (!json_is_array(all)) {
                if (r == NULL && ret_err)
                        *ret_err = TAKE_PTR(err);
                else if (!answer_error(r, ret_err))
                        corral_fail(ret_err, 0, "the session host did not answer the list request");
                corral_error_free(err);
                json_decref(r);
                return NULL;
        }
        json_incref(all);
        json_decref(r);
        return all;
}

json_t *session_client_status(corral_error **ret_err)
{
        corral_error *err = NULL;
        json_t *r = ask_host("info", &err);
        if (r)
                json_object_del(r, "t");
        else if (err && err->kind != CORRAL_ERR_USAGE && ret_err)
                *ret_err = TAKE_PTR(err);
        corral_error_free(err);
        return r;
}

int session_client_shutdown(corral_error **ret_err)
{
        corral_error *err = NULL;
        json_t *info = session_client_status(&err);
        if (info == NULL) {
                if (err == NULL)
                        return 0; /* none runs */
                if (ret_err)
                        *ret_err = err;
                else
                        corral_error_free(err);
                return -1;
        }
        int pid = (int)json_integer_value(json_object_get(info, "pid"));
        json_decref(info);
        int fd = session_client_connect_host(false, NULL);
        json_t *r = fd >= 0 ? ask(fd, json_pack("{s:s}", "op", "shutdown"), 10000) : NULL;
        if (fd >= 0)
                close(fd);
        const char *t = json_string_value(json_object_get(r, "t"));
        bool ok = t && strcmp(t, "stopping") == 0;
        json_decref(r);
        /* Wait until it has cleaned up and exited (its sessions' steps
         * are cancelled, so this is quick). */
        int pidfd = ok && pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                ok = poll(&p, 1, 60000) == 1;
                close(pidfd);
        }
        if (!ok)
                return corral_fail(ret_err, 0, "the session host did not confirm that it stopped");
        return 0;
}

void session_client_probe(json_t *checks)
{
        corral_error *err = NULL;
        int fd = session_client_connect_host(false, &err);
        if (fd >= 0) {
                close(fd);
                probe_add(checks, "session host", true, "ok", "running (corral session status says more)", NULL);
        } else {
                probe_add(checks, "session host", false, "none",
                          "not running: the first `corral session start` launches it (with its zygote, ~1.5 s)",
                          NULL);
        }
        corral_error_free(err);
}

int session_client_exec_claim(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret,
                              int *ret_conn, corral_error **ret_err)
{
        return exec_pool_claim(cfg, io, ret, ret_conn, ret_err);
}
