/* session.c: `corral session start|exec|archive|stop|list`, sessions that
 * outlive the command (docs/sessions.md).  `archive`, `stop --archive` and
 * `start --from` pause and resume one through a workspace archive
 * (src/session/pause.c).
 *
 * `start` forks a supervisor per session: daemonised (setsid, double fork,
 * stdio on /dev/null), it holds the session (src/session/session.h) and
 * serves one unix socket, <runtime dir>/<ID>.sock, in a private 0700
 * directory ($XDG_RUNTIME_DIR/corral/sessions, else /tmp/corral-$UID/
 * sessions), accepting only peers of its own uid (SO_PEERCRED).  It ends on
 * `stop`, on the idle timeout, the lifetime limit or SIGTERM, and leaves
 * nothing behind: the jail is torn down, the socket unlinked and a
 * temporary workspace removed before it answers `stop`.  Client and
 * supervisor speak the driver's framing: a 4-byte big-endian length, then a
 * JSON object.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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
#include "../trace/render.h"
#include "../workspace/workspace.h"
#include "cli.h"

#define ID_LEN 12
#define CLIENT_FRAME_MAX (128u << 20)

static const char help_text[] =
        "usage: corral session start [JAIL OPTIONS] [-w DIR] [--idle-timeout S] [--lifetime S] [--grace S] [--warm]\n"
        "                            [--from FILE.tar] [--json]\n"
        "       corral session exec ID (-c CODE | FILE) [--timeout S] [--output-limit SIZE] [--json]\n"
        "       corral session archive ID FILE.tar [--wait S] [--json]\n"
        "       corral session stop ID [--archive FILE.tar [--wait S] [--json]]\n"
        "       corral session list [--json]\n"
        "\n"
        "A session is a Python interpreter in a jail that keeps its variables, imports and data\n"
        "from step to step.  `start` prints its ID; the session lives on in the background until\n"
        "`stop`, its idle timeout or its lifetime limit.\n"
        "\n"
        "start options:\n"
        "  -w, --workspace DIR     host directory at /workspace (default: a private temporary\n"
        "                          directory, removed when the session ends)\n"
        "  -t, --timeout SECONDS   default wall-clock limit of each step (default 30)\n"
        "  -m, --memory SIZE       memory limit of the whole session (default 512M); also --pids,\n"
        "                          --disk, --cpus, --cpu-time, --nofile, --net, --bind, --ro-bind,\n"
        "                          -e, --profile, --require-cgroups, --uid-range as for corral exec\n"
        "      --output-limit SIZE default cap on stdout and on stderr of each step (default 1M)\n"
        "      --idle-timeout S    end the session after S seconds without a step (default 600)\n"
        "      --lifetime S        end the session S seconds after it started (default 3600)\n"
        "      --grace S           after a step's time limit interrupts it (KeyboardInterrupt),\n"
        "                          wait S seconds before killing the interpreter (default 2)\n"
        "      --warm              fork the interpreter from a zygote with numpy, pandas, matplotlib\n"
        "                          and scipy already imported (docs/sessions.md)\n"
        "      --from FILE.tar     resume: the workspace starts as the archive's contents (corral\n"
        "                          session archive, corral run --archive); with -w, DIR must be\n"
        "                          new or empty.  Files come back, variables and imports do not.\n"
        "                          A refused archive (a path out of the tree, a symlink out, a\n"
        "                          device, a bomb: see corral workspace) leaves nothing behind\n"
        "      --json              print {\"id\", \"pid\", \"socket\", \"workspace\", \"from\"}\n"
        "exec options:\n"
        "  -c, --code CODE         the Python code of the step (or a FILE)\n"
        "  -t, --timeout SECONDS   this step's wall-clock limit\n"
        "      --output-limit SIZE this step's cap on stdout and on stderr\n"
        "      --json              print one JSON result object (docs/sessions.md)\n"
        "archive and stop --archive (pause):\n"
        "  write the workspace as it is between steps to FILE.tar (a pax tar, mode 0600, with\n"
        "  .corral/session.json saying which session it was); a running step is waited for,\n"
        "  and no step starts until the archive is written.  stop --archive stops the session\n"
        "  only once the archive is written.  The interpreter's state (variables) is not saved.\n"
        "      --wait S            wait at most S seconds for a running step (default: as long\n"
        "                          as it runs); then nothing is written, exit 1\n"
        "      --json              print {\"session\", \"path\", \"entries\", \"files\", \"bytes\",\n"
        "                          \"skipped\", \"excluded\", \"truncated\", \"stopped\"}\n"
        "\n"
        "exit statuses:\n"
        "  start/stop/list: 0 done; 2 usage error or unknown session; 125 corral failed.\n"
        "  start --from: also 1 the archive was refused or could not be read.\n"
        "  archive, stop --archive: 0 written; 1 a step was still running after --wait (nothing\n"
        "  written, the session goes on); 2 usage error, unknown session or a bad destination;\n"
        "  125 corral failed (the session goes on).\n"
        "  exec: 0 the step ran; 1 it raised an exception; 124 its time limit interrupted it\n"
        "  (state kept unless \"state_lost\"); 128+N the interpreter was killed by signal N (137 also\n"
        "  the memory limit); another status the interpreter exited with; 2 usage error or unknown\n"
        "  session; 125 corral failed.  Whenever the interpreter died, the next step starts a clean one.\n";

enum {
        OPT_JSON = 300,
        OPT_IDLE,
        OPT_LIFETIME,
        OPT_GRACE,
        OPT_WARM,
        OPT_FROM,
        OPT_ARCHIVE,
        OPT_WAIT,
};

enum {
        EXIT_START_REFUSED = 1,  /* start --from: the archive was refused or unreadable */
        EXIT_ARCHIVE_BUSY = 1,   /* archive: a step still ran after --wait */
};

/* ---- frames ---- */

static int frame_write(int fd, json_t *obj)
{
        cleanup_free char *body = json_dumps(obj, JSON_COMPACT);
        if (body == NULL)
                return -1;
        size_t n = strlen(body);
        unsigned char head[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                                  (unsigned char)n };
        if (write_all(fd, head, 4) < 0 || write_all(fd, body, n) < 0)
                return -1;
        return 0;
}

/* Read n bytes; timeout_ms < 0 waits forever.  -1 on EOF, error or timeout. */
static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
        size_t got = 0;
        while (got < n) {
                if (timeout_ms >= 0) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        int r = poll(&p, 1, timeout_ms);
                        if (r < 0 && errno == EINTR)
                                continue;
                        if (r <= 0)
                                return -1;
                }
                ssize_t k = read(fd, (char *)buf + got, n - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -1;
                got += (size_t)k;
        }
        return 0;
}

static json_t *frame_read(int fd, int timeout_ms)
{
        unsigned char head[4];
        if (read_full(fd, head, 4, timeout_ms) < 0)
                return NULL;
        uint32_t n = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
        if (n > CLIENT_FRAME_MAX)
                return NULL;
        cleanup_free char *body = malloc((size_t)n + 1);
        if (body == NULL || read_full(fd, body, n, timeout_ms) < 0)
                return NULL;
        json_t *j = json_loadb(body, n, 0, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

/* ---- the runtime directory ---- */

/* A directory that must be ours alone: created 0700 when missing, then
 * checked (not a symlink, our uid, no access for group or others), so that
 * nobody else can plant or read a socket in it. */
static int private_dir(const char *path, bool create, corral_error **err)
{
        if (create && mkdir(path, 0700) < 0 && errno != EEXIST)
                return corral_fail(err, errno, "cannot create '%s'", path);
        struct stat st;
        if (lstat(path, &st) < 0)
                return corral_fail(err, errno, "cannot use '%s'", path);
        if (!S_ISDIR(st.st_mode))
                return corral_fail(err, 0, "refusing to use '%s': not a directory", path);
        if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
                return corral_fail(err, 0,
                                   "refusing to use '%s': owned by uid %u with mode %03o; it must be a private "
                                   "directory (0700) of uid %u: remove it or fix its owner and mode",
                                   path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
        return 0;
}

/* The sessions directory; NULL with err set.  Without create, a missing
 * directory gives NULL with errno ENOENT and no error. */
static char *runtime_dir(bool create, corral_error **err)
{
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        char *parent = NULL, *dir = NULL;
        struct stat st;
        if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
                if (asprintf(&parent, "%s/corral", xdg) < 0)
                        parent = NULL;
        } else if (asprintf(&parent, "/tmp/corral-%u", (unsigned)geteuid()) < 0) {
                parent = NULL;
        }
        if (parent == NULL || asprintf(&dir, "%s/sessions", parent) < 0) {
                free(parent);
                corral_fail(err, ENOMEM, "out of memory");
                return NULL;
        }
        if (!create && lstat(dir, &st) < 0 && errno == ENOENT) {
                free(parent);
                free(dir);
                errno = ENOENT;
                return NULL;
        }
        if (private_dir(parent, create, err) < 0 || private_dir(dir, create, err) < 0) {
                free(parent);
                free(dir);
                errno = EPERM;
                return NULL;
        }
        free(parent);
        return dir;
}

static bool id_valid(const char *id)
{
        if (strlen(id) != ID_LEN)
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static int socket_path(const char *dir, const char *id, struct sockaddr_un *sa, corral_error **err)
{
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s.sock", dir, id);
        if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
                return corral_fail(err, ENAMETOOLONG, "the session socket path under '%s' is too long", dir);
        return 0;
}

/* Connect to session id: the fd, or -1 with err (kind usage for an
 * unknown session).  A socket nobody listens on any more is removed. */
static int session_connect(const char *id, corral_error **err)
{
        if (!id_valid(id))
                return corral_usage(err, "no session '%s': a session ID is %d hex digits (see 'corral session list')",
                                    id, ID_LEN);
        corral_error *e = NULL;
        cleanup_free char *dir = runtime_dir(false, &e);
        if (dir == NULL) {
                if (e == NULL)
                        return corral_usage(err, "no session '%s' (see 'corral session list')", id);
                if (err)
                        *err = e;
                else
                        corral_error_free(e);
                return -1;
        }
        struct sockaddr_un sa;
        if (socket_path(dir, id, &sa, err) < 0)
                return -1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return corral_fail(err, errno, "cannot create a socket");
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int en = errno;
                close(fd);
                if (en == ENOENT)
                        return corral_usage(err, "no session '%s' (see 'corral session list')", id);
                if (en == ECONNREFUSED) {
                        unlink(sa.sun_path);
                        return corral_usage(err, "no session '%s': its supervisor is gone", id);
                }
                return corral_fail(err, en, "cannot connect to session '%s'", id);
        }
        return fd;
}

/* ---- the supervisor ---- */

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
        const char *from;        /* --from: the archive (absolute) */
        bool ws_root_given;      /* -w DIR */
        bool ws_existed;         /* -w DIR was there before --from extracted into it */
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
        if (f && frame_write(d->client, f) < 0)
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

static void daemon_exec(struct daemon *d, int fd, json_t *req)
{
        json_t *code = json_object_get(req, "code");
        json_t *reply = NULL;
        if (!json_is_string(code)) {
                reply = json_pack("{s:s,s:s}", "t", "error", "message", "exec needs \"code\" (a string)");
                goto out;
        }
        struct session_step_limits lim = { .timeout_s = d->default_timeout, .output_limit = d->default_output,
                                           .cancel_fd = -1 };
        json_t *t = json_object_get(req, "timeout");
        if (json_is_number(t) && json_number_value(t) > 0 && json_number_value(t) <= 31536000)
                lim.timeout_s = json_number_value(t);
        json_t *o = json_object_get(req, "output_limit");
        if (json_is_integer(o) && json_integer_value(o) > 0 && json_integer_value(o) <= (1 << 30))
                lim.output_limit = (uint64_t)json_integer_value(o);
        d->client = fd;
        d->client_gone = false;
        struct session_callbacks cb = { .on_output = daemon_on_output, .userdata = d };
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
                frame_write(fd, reply);
        json_decref(reply);
}

static json_t *daemon_info(struct daemon *d)
{
        const char *why = NULL;
        double left = (session_deadline_ms(d->s, &why) - monotonic_ms()) / 1000;
        return json_pack("{s:s,s:s,s:i,s:I,s:s?,s:s,s:I,s:b,s:f,s:s,s:O?}", "t", "info", "id", d->id, "pid",
                         (int)getpid(), "started", (json_int_t)d->started, "workspace", d->ws_root, "socket", d->sock,
                         "steps", (json_int_t)session_steps(d->s), "alive", session_alive(d->s), "expires_in_s",
                         left > 0 ? left : 0, "expires_by", why, "from", session_from(d->s));
}

static void reply_error(int fd, const corral_error *err, const char *fallback)
{
        json_t *r = json_pack("{s:s,s:s,s:i}", "t", "error", "message", err ? err->msg : fallback, "kind",
                              err ? err->kind : CORRAL_ERR_INTERNAL);
        if (r)
                frame_write(fd, r);
        json_decref(r);
}

/* path (absolute; its last component need not exist) lies in dir. */
static bool inside_dir(const char *path, const char *dir)
{
        cleanup_free char *copy = strdup(path);
        char *slash = copy ? strrchr(copy, '/') : NULL;
        if (slash == NULL)
                return false;
        *slash = '\0';
        cleanup_free char *parent = realpath(copy[0] ? copy : "/", NULL);
        size_t n = strlen(dir);
        return parent && strncmp(parent, dir, n) == 0 && (parent[n] == '\0' || parent[n] == '/');
}

/* Archive the workspace, between steps: this process serves one request
 * at a time, so no step runs and none starts until the answer.  The client
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
        int sent = idle ? frame_write(fd, idle) : -1;
        json_decref(idle);
        json_t *go = sent == 0 ? frame_read(fd, 5000) : NULL;
        const char *op = json_string_value(json_object_get(go, "op"));
        bool confirmed = op && strcmp(op, "go") == 0;
        json_decref(go);
        if (!confirmed)
                return false; /* the client gave up: nothing is written */
        corral_error *err = NULL;
        if (stop && d->ws && inside_dir(path, d->ws_root)) {
                corral_usage(&err, "'%s' is inside the session's temporary workspace, which stop removes: write "
                                   "the archive elsewhere",
                             path);
                reply_error(fd, err, NULL);
                corral_error_free(err);
                return false;
        }
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
                frame_write(fd, r);
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
        json_t *req = frame_read(fd, 5000);
        const char *op = json_string_value(json_object_get(req, "op"));
        bool end = false;
        if (op && strcmp(op, "exec") == 0) {
                daemon_exec(d, fd, req);
        } else if (op && strcmp(op, "info") == 0) {
                json_t *info = daemon_info(d);
                if (info)
                        frame_write(fd, info);
                json_decref(info);
        } else if (op && strcmp(op, "archive") == 0) {
                end = daemon_archive(d, fd, req);
        } else if (op && strcmp(op, "stop") == 0) {
                /* Everything is gone before the answer; the connection
                 * closes when this process exits. */
                daemon_cleanup(d);
                json_t *r = json_pack("{s:s}", "t", "stopped");
                if (r)
                        frame_write(fd, r);
                json_decref(r);
                end = true;
        } else if (req) {
                json_t *r = json_pack("{s:s,s:s}", "t", "error", "message", "unknown request");
                if (r)
                        frame_write(fd, r);
                json_decref(r);
        }
        json_decref(req);
        return end;
}

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

/* Report to `start` through the ready pipe: "ok PID WORKSPACE", "error
 * KIND MESSAGE", or "refused KIND MESSAGE" when --from's archive was. */
static void ready_report(int fd, const corral_error *err, bool refused, const char *workspace)
{
        char buf[8192];
        int n = err ? snprintf(buf, sizeof(buf), "%s %d %s", refused ? "refused" : "error", err->kind, err->msg)
                    : snprintf(buf, sizeof(buf), "ok %d %s", (int)getpid(), workspace);
        if (n > 0)
                write_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
        close(fd);
}

static __attribute__((noreturn)) void daemon_main(struct daemon *d, corral_jail_config *cfg,
                                                  const struct session_options *opt, int ready_fd)
{
        corral_error *err = NULL;
        char *dir = NULL;
        bool refused = false;    /* --from's archive was refused */
        struct sockaddr_un sa;
        /* Nothing the caller left open (a pipe a test harness waits on, a
         * terminal) may stay open for the session's life. */
        if (ready_fd < 3)
                ready_fd = fcntl(ready_fd, F_DUPFD_CLOEXEC, 3); /* corral ran with stdio closed */
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
        int cancel_fd = cli_catch_signals();
        struct session_options sopt = *opt;
        bool restored = false;
        if (d->from) {
                /* Resume: the archive is extracted here, before the
                 * session, so that a refusal is told apart (exit 1). */
                if (cfg->workspace == NULL) {
                        const char *tmp = getenv("TMPDIR");
                        if (asprintf(&cfg->workspace, "%s/corral-run-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") <
                            0) {
                                cfg->workspace = NULL;
                                goto fail_errno;
                        }
                        if (mkdtemp(cfg->workspace) == NULL) {
                                corral_fail(&err, errno, "cannot create a workspace directory '%s'", cfg->workspace);
                                free(cfg->workspace);
                                cfg->workspace = NULL;
                                goto fail;
                        }
                }
                if (session_restore(d->from, cfg->workspace, NULL, &err) < 0) {
                        refused = true;
                        if (d->ws_existed)
                                goto fail;
                        /* Ours (a temporary one, or -w DIR made for it):
                         * the extraction left it as it was. */
                        (void)rmdir(cfg->workspace);
                        goto fail;
                }
                restored = true;
                sopt.from = d->from;
                sopt.from_extracted = true;
                if (!d->ws_root_given)
                        (void)chmod(cfg->workspace, 0700); /* a private temporary workspace */
        }
        if (cfg->workspace == NULL) {
                if (workspace_open(NULL, &d->ws, &err) < 0)
                        goto fail;
                cfg->workspace = strdup(d->ws->root);
                if (cfg->workspace == NULL)
                        goto fail_errno;
        } else if (restored && !d->ws_root_given) {
                /* Removed with the session, like any temporary workspace. */
                if (workspace_open(cfg->workspace, &d->ws, &err) < 0)
                        goto fail;
        }
        d->ws_root = cfg->workspace;
        if (session_start(cfg, &sopt, &d->s, &err) < 0) {
                if (restored && d->ws_root_given)
                        session_restore_undo(cfg->workspace, d->ws_existed);
                goto fail;
        }
        d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        dir = runtime_dir(true, &err);
        if (dir == NULL || socket_path(dir, d->id, &sa, &err) < 0)
                goto fail;
        if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                corral_fail(&err, errno, "cannot create the session's socket '%s'", sa.sun_path);
                goto fail;
        }
        memcpy(d->sock, sa.sun_path, sizeof(d->sock));
        if (chmod(d->sock, 0600) < 0 || listen(d->listen_fd, 16) < 0) {
                corral_fail(&err, errno, "cannot listen on '%s'", d->sock);
                goto fail;
        }
        free(dir);
        ready_report(ready_fd, NULL, false, d->ws_root);
        daemon_loop(d, cancel_fd);
        daemon_cleanup(d);
        _exit(0);
fail_errno:
        corral_fail(&err, errno, "cannot start the session's supervisor");
fail:
        /* Clean first: when `start` says it failed, nothing is left. */
        daemon_cleanup(d);
        ready_report(ready_fd, err, refused, NULL);
        corral_error_free(err);
        free(dir);
        _exit(EXIT_CORRAL);
}

/* The supervisor runs in "/" and starts interpreters again after a loss:
 * host paths given relative to the caller's directory are made absolute
 * now (a missing one is left for the jail to report). */
static void make_absolute(char **path)
{
        if (*path == NULL || (*path)[0] == '/')
                return;
        char *abs = realpath(*path, NULL);
        if (abs) {
                free(*path);
                *path = abs;
        }
}

static void absolute_paths(corral_jail_config *cfg)
{
        make_absolute(&cfg->rootfs);
        for (size_t i = 0; i < cfg->n_binds; i++)
                make_absolute(&cfg->binds[i].src);
}

struct start_opts {
        corral_jail_config *cfg;
        struct session_options sopt;
        bool json;
        const char *ws_arg;      /* -w DIR as given */
        const char *from;        /* --from FILE */
};

static int start_apply(int c, const char *arg, void *userdata, corral_error **err)
{
        struct start_opts *o = userdata;
        double *target = NULL;
        switch (c) {
        case 'w':
                /* Resolved once all options are known: --from may make it. */
                o->ws_arg = arg;
                return 0;
        case OPT_FROM:
                o->from = arg;
                return 0;
        case OPT_JSON:
                o->json = true;
                return 0;
        case OPT_WARM:
                o->sopt.warm = true;
                return 0;
        case OPT_IDLE:
                target = &o->sopt.idle_timeout_s;
                break;
        case OPT_LIFETIME:
                target = &o->sopt.lifetime_s;
                break;
        case OPT_GRACE:
                target = &o->sopt.grace_s;
                break;
        default:
                return 0;
        }
        if (corral_parse_seconds(arg, target, err) < 0)
                return corral_error_prefix(err, "%s", c == OPT_IDLE ? "--idle-timeout" : c == OPT_LIFETIME
                                                                                            ? "--lifetime"
                                                                                            : "--grace");
        return 0;
}

/* path made absolute against the current directory (it need not exist):
 * the supervisor runs in "/". */
static char *absolute(const char *path)
{
        if (path[0] == '/')
                return strdup(path);
        cleanup_free char *cwd = getcwd(NULL, 0);
        char *out = NULL;
        if (cwd == NULL || asprintf(&out, "%s/%s", cwd, path) < 0)
                return NULL;
        return out;
}

/* -w DIR: it must exist, except with --from, where it must be new or empty
 * (the archive is extracted into it). */
static int resolve_workspace(struct start_opts *o, bool *ret_existed, corral_error **err)
{
        const char *arg = o->ws_arg;
        if (arg == NULL)
                return 0;
        struct stat st;
        *ret_existed = lstat(arg, &st) == 0;
        if (o->from && !*ret_existed && errno == ENOENT) {
                o->cfg->workspace = absolute(arg);
                if (o->cfg->workspace == NULL)
                        return corral_fail(err, errno, "workspace '%s'", arg);
                return 0;
        }
        o->cfg->workspace = realpath(arg, NULL);
        if (o->cfg->workspace == NULL)
                return corral_make_error(err, CORRAL_ERR_USAGE, errno, "workspace '%s'", arg);
        if (o->from) {
                DIR *dp = S_ISDIR(st.st_mode) ? opendir(o->cfg->workspace) : NULL;
                struct dirent *de;
                bool empty = dp != NULL;
                while (dp && (de = readdir(dp)) != NULL)
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                empty = false;
                if (dp)
                        closedir(dp);
                if (!empty)
                        return corral_usage(err, "cannot resume into '%s': --from needs a new or empty workspace "
                                                 "directory",
                                            arg);
        }
        return 0;
}

/* Plain `start --from`: where the session came from, and what it lost. */
static void note_resumed(const json_t *from)
{
        const char *id = json_string_value(json_object_get(from, "session"));
        json_t *steps = json_object_get(from, "steps");
        fprintf(stderr, "corral session: resumed from an archive");
        if (id && id_valid(id))
                fprintf(stderr, " of session %s", id);
        if (json_is_integer(steps))
                fprintf(stderr, " (%" JSON_INTEGER_FORMAT " step%s)", json_integer_value(steps),
                        json_integer_value(steps) == 1 ? "" : "s");
        fprintf(stderr, ": its files are back; its variables and imports are not\n");
}

static int cmd_start(int argc, char **argv)
{
        static const struct option own[] = {
                { "workspace", required_argument, NULL, 'w' },   { "json", no_argument, NULL, OPT_JSON },
                { "idle-timeout", required_argument, NULL, OPT_IDLE }, { "lifetime", required_argument, NULL, OPT_LIFETIME },
                { "grace", required_argument, NULL, OPT_GRACE }, { "help", no_argument, NULL, 'h' },
                { "warm", no_argument, NULL, OPT_WARM }, { "from", required_argument, NULL, OPT_FROM },
                { NULL, 0, NULL, 0 },
        };
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        struct start_opts o = { .cfg = &cfg };
        session_options_init(&o.sopt);
        corral_error *err = NULL;
        int status = EXIT_CORRAL;
        cleanup_free char *dir = NULL, *from_abs = NULL;
        cleanup_free struct option *longopts = cli_merge_options(own);
        /* The driver is the program; validate() wants one. */
        char *placeholder[] = { "python3", NULL };
        if (longopts == NULL) {
                corral_fail(&err, ENOMEM, "cannot parse options");
                goto fail;
        }
        if (corral_jail_config_set_argv(&cfg, placeholder, &err) < 0)
                goto fail;
        int r = jail_options_parse(argc, argv, "+w:t:m:e:h", longopts, "session", &cfg, start_apply, &o, &err);
        if (r > 0) {
                fputs(help_text, stdout);
                status = EXIT_OK;
                goto out;
        }
        if (r < 0 || (optind < argc && corral_usage(&err, "start takes no arguments ('%s')", argv[optind]) < 0))
                goto usage;
        if (!(o.sopt.lifetime_s > 0)) {
                corral_usage(&err, "--lifetime must be positive");
                goto usage;
        }
        if (corral_jail_config_validate(&cfg, &err) < 0)
                goto usage;
        bool ws_existed = false;
        if (resolve_workspace(&o, &ws_existed, &err) < 0)
                goto usage;
        if (o.from && (from_abs = absolute(o.from)) == NULL) {
                corral_fail(&err, errno, "cannot resolve '%s'", o.from);
                goto fail;
        }
        absolute_paths(&cfg);
        if (cfg.net == CORRAL_NET_HOST)
                fprintf(stderr, "corral session: warning: --net host gives the session the host's network\n");

        struct daemon d = { .listen_fd = -1, .client = -1, .default_timeout = cfg.timeout_s,
                            .default_output = cfg.output_limit, .started = time(NULL), .from = from_abs,
                            .ws_root_given = cfg.workspace != NULL, .ws_existed = ws_existed };
        unsigned char rnd[ID_LEN / 2];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
                corral_fail(&err, errno, "cannot make a session ID");
                goto fail;
        }
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(d.id + 2 * i, 3, "%02x", rnd[i]);
        dir = runtime_dir(true, &err);
        if (dir == NULL)
                goto fail;

        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0) {
                corral_fail(&err, errno, "cannot start the session's supervisor");
                goto fail;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                close(ready[0]);
                close(ready[1]);
                corral_fail(&err, errno, "cannot start the session's supervisor");
                goto fail;
        }
        if (pid == 0) {
                close(ready[0]);
                setsid();
                pid_t grandchild = fork();
                if (grandchild != 0)
                        _exit(grandchild < 0 ? EXIT_CORRAL : 0);
                daemon_main(&d, &cfg, &o.sopt, ready[1]);
        }
        close(ready[1]);
        waitpid(pid, NULL, 0);
        char buf[8192];
        size_t got = 0;
        while (got < sizeof(buf) - 1) {
                ssize_t n = read(ready[0], buf + got, sizeof(buf) - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        close(ready[0]);
        buf[got] = '\0';
        int dpid = 0, kind = 0, off = 0;
        if (sscanf(buf, "ok %d %n", &dpid, &off) >= 1 && off > 0) {
                const char *workspace = buf + off;
                /* No step has run yet: .corral/session.json is the archive's. */
                json_t *from = from_abs ? session_origin(from_abs, workspace) : NULL;
                if (from && !o.json)
                        note_resumed(from);
                if (o.json) {
                        char sock[sizeof(d.sock)];
                        snprintf(sock, sizeof(sock), "%s/%s.sock", dir, d.id);
                        json_t *j = json_pack("{s:s,s:i,s:s,s:s,s:o?}", "id", d.id, "pid", dpid, "socket", sock,
                                              "workspace", workspace, "from", from ? json_incref(from) : json_null());
                        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
                        if (s)
                                puts(s);
                        free(s);
                        json_decref(j);
                } else {
                        puts(d.id);
                }
                json_decref(from);
                status = EXIT_OK;
                goto out;
        }
        if (sscanf(buf, "refused %d %n", &kind, &off) >= 1 && off > 0) {
                /* As `corral workspace extract`: 1, or 125 without libarchive. */
                corral_make_error(&err, kind, 0, "%s", buf + off);
                cli_error_obj("session", err);
                status = kind == CORRAL_ERR_UNSUPPORTED ? EXIT_CORRAL : EXIT_START_REFUSED;
                goto out;
        }
        if (sscanf(buf, "error %d %n", &kind, &off) >= 1 && off > 0)
                corral_make_error(&err, kind, 0, "%s", buf + off);
        else
                corral_fail(&err, 0, "the session's supervisor ended before it was ready");
        if (kind == CORRAL_ERR_USAGE)
                goto usage;
fail:
        cli_error_obj("session", err);
        status = EXIT_CORRAL;
        goto out;
usage:
        cli_error_obj("session", err);
        status = EXIT_USAGE_SUBCOMMAND;
out:
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return status;
}

/* ---- the clients ---- */

static char *load_code(const char *path, corral_error **err)
{
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, path, 16u << 20);
        if (text == NULL) {
                if (errno == EFBIG)
                        corral_usage(err, "'%s' is larger than 16M", path);
                else
                        corral_make_error(err, CORRAL_ERR_USAGE, errno, "cannot read '%s'", path);
                return NULL;
        }
        return TAKE_PTR(text);
}

static void print_result(json_t *r)
{
        json_t *v = json_object_get(r, "value");
        const char *text = json_string_value(json_object_get(v, "text"));
        if (text)
                printf("%s\n", text);
        fflush(stdout);
        json_t *e = json_object_get(r, "error");
        const char *tb = json_string_value(json_object_get(e, "traceback"));
        const char *status = json_string_value(json_object_get(r, "status"));
        if (tb && *tb && status && strcmp(status, "error") == 0)
                fputs(tb, stderr);
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(r, "figures"), i, f) {
                const char *why = json_string_value(json_object_get(f, "error"));
                if (why) {
                        fprintf(stderr, "corral session: a figure was not saved: %s\n", why);
                        continue;
                }
                const char *p = json_string_value(json_object_get(f, "host_path"));
                if (p == NULL)
                        p = json_string_value(json_object_get(f, "path"));
                fprintf(stderr, "corral session: figure %s (%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT ")\n",
                        p ? p : "?", json_integer_value(json_object_get(f, "width")),
                        json_integer_value(json_object_get(f, "height")));
        }
        const char *reason = json_string_value(json_object_get(r, "reason"));
        if (status && strcmp(status, "ok") != 0 && strcmp(status, "error") != 0 && reason)
                fprintf(stderr, "corral session: %s: %s\n", status, reason);
        if (json_is_true(json_object_get(r, "state_lost")))
                fprintf(stderr, "corral session: the session's state is lost; the next step starts a clean "
                                "interpreter\n");
}

static int cmd_exec_step(int argc, char **argv)
{
        static const struct option opts[] = {
                { "code", required_argument, NULL, 'c' },   { "timeout", required_argument, NULL, 't' },
                { "output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT }, { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
        };
        const char *code_arg = NULL;
        bool json = false;
        double timeout = 0;
        uint64_t output = 0;
        corral_error *err = NULL;
        cleanup_free char *code = NULL;
        int fd = -1, status = EXIT_USAGE_SUBCOMMAND;
        json_t *req = NULL;
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "c:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        code_arg = optarg;
                        break;
                case 't':
                        if (corral_parse_seconds(optarg, &timeout, &err) < 0) {
                                corral_error_prefix(&err, "--timeout");
                                goto usage;
                        }
                        break;
                case OPT_OUTPUT_LIMIT:
                        if (corral_parse_size(optarg, &output, &err) < 0) {
                                corral_error_prefix(&err, "--output-limit");
                                goto usage;
                        }
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        corral_usage(&err, "unknown option or missing value: '%s' (see 'corral session --help')",
                                     argv[optind - 1]);
                        goto usage;
                }
        }
        if (optind >= argc) {
                corral_usage(&err, "exec needs a session ID (see 'corral session list')");
                goto usage;
        }
        const char *id = argv[optind++];
        if (code_arg && optind < argc) {
                corral_usage(&err, "give either -c CODE or a FILE, not both");
                goto usage;
        }
        if (code_arg == NULL && optind + 1 != argc) {
                corral_usage(&err, "nothing to run: give -c CODE or one FILE");
                goto usage;
        }
        code = code_arg ? strdup(code_arg) : load_code(argv[optind], &err);
        if (code == NULL)
                goto usage;
        if (!utf8_valid(code, strlen(code))) {
                corral_usage(&err, "the code is not valid UTF-8");
                goto usage;
        }
        fd = session_connect(id, &err);
        if (fd < 0)
                goto connect_failed;
        req = json_pack("{s:s,s:s}", "op", "exec", "code", code);
        if (req && timeout > 0)
                json_object_set_new(req, "timeout", json_real(timeout));
        if (req && output > 0)
                json_object_set_new(req, "output_limit", json_integer((json_int_t)output));
        signal(SIGPIPE, SIG_IGN);
        if (req == NULL || frame_write(fd, req) < 0) {
                corral_fail(&err, errno, "cannot send the step to session '%s'", id);
                goto fail;
        }
        for (;;) {
                json_t *f = frame_read(fd, -1);
                if (f == NULL) {
                        corral_fail(&err, 0, "session '%s' ended during the step (see 'corral session list')", id);
                        goto fail;
                }
                const char *t = json_string_value(json_object_get(f, "t"));
                if (t && strcmp(t, "out") == 0 && !json) {
                        json_t *d = json_object_get(f, "data");
                        const char *s = json_string_value(json_object_get(f, "stream"));
                        write_all(s && strcmp(s, "stderr") == 0 ? 2 : 1, json_string_value(d) ? json_string_value(d) : "",
                                  json_string_length(d));
                } else if (t && strcmp(t, "result") == 0) {
                        json_t *r = json_object_get(f, "result");
                        if (json) {
                                char *s = json_dumps(r, JSON_COMPACT);
                                if (s)
                                        puts(s);
                                free(s);
                        } else {
                                print_result(r);
                        }
                        json_t *ec = json_object_get(r, "exit_code");
                        status = json_is_integer(ec) ? (int)json_integer_value(ec) : EXIT_CORRAL;
                        json_decref(f);
                        goto out;
                } else if (t && strcmp(t, "error") == 0) {
                        corral_fail(&err, 0, "session '%s': %s", id,
                                    json_string_value(json_object_get(f, "message")) ?: "error");
                        json_decref(f);
                        goto fail;
                }
                json_decref(f);
        }
connect_failed:
        if (err && err->kind == CORRAL_ERR_USAGE)
                goto usage;
fail:
        cli_error_obj("session", err);
        status = EXIT_CORRAL;
        goto out;
usage:
        cli_error_obj("session", err);
        status = EXIT_USAGE_SUBCOMMAND;
out:
        json_decref(req);
        if (fd >= 0)
                close(fd);
        corral_error_free(err);
        return status;
}

/* One request, one answer. */
static json_t *ask(int fd, const char *op)
{
        json_t *req = json_pack("{s:s}", "op", op);
        json_t *r = NULL;
        if (req && frame_write(fd, req) == 0)
                r = frame_read(fd, 10000);
        json_decref(req);
        return r;
}

/* Print what an archive request wrote. */
static void print_archived(const char *id, json_t *report, bool json)
{
        if (json) {
                char *text = json_dumps(report, JSON_COMPACT);
                if (text)
                        puts(text);
                free(text);
                return;
        }
        const char *path = json_string_value(json_object_get(report, "path"));
        cleanup_free char *clean = path ? render_sanitize(path, strlen(path), NULL) : NULL;
        json_t *skipped = json_object_get(report, "skipped");
        fprintf(stderr,
                "corral session: session %s archived to '%s' (%" JSON_INTEGER_FORMAT " entries, %" JSON_INTEGER_FORMAT
                " files, %" JSON_INTEGER_FORMAT " bytes%s)%s\n",
                id, clean ? clean : "?", json_integer_value(json_object_get(report, "entries")),
                json_integer_value(json_object_get(report, "files")),
                json_integer_value(json_object_get(report, "bytes")),
                json_is_true(json_object_get(report, "truncated")) ? ", truncated at the entry or depth limit" : "",
                json_is_true(json_object_get(report, "stopped")) ? "; the session is stopped" : "");
        size_t i;
        json_t *e;
        json_array_foreach(skipped, i, e) {
                if (i == 10) {
                        fprintf(stderr, "corral session: ... and %zu more skipped (see --json)\n",
                                json_array_size(skipped) - 10);
                        break;
                }
                const char *p = json_string_value(json_object_get(e, "path"));
                const char *why = json_string_value(json_object_get(e, "reason"));
                /* Names from the jail: no terminal escapes. */
                cleanup_free char *cp = render_sanitize(p ? p : "?", strlen(p ? p : "?"), NULL);
                cleanup_free char *cw = render_sanitize(why ? why : "", strlen(why ? why : ""), NULL);
                fprintf(stderr, "corral session: skipped '%s': %s\n", cp ? cp : "?", cw ? cw : "");
        }
}

/* `archive ID FILE` and `stop ID --archive FILE`: the supervisor answers
 * "idle" when no step runs (it serves one request at a time, so a running
 * step is waited for), we confirm with "go", it writes the archive (and
 * with stop, ends).  Past wait_s (> 0) without "idle", nothing is written. */
static int archive_request(const char *id, const char *file, bool stop, double wait_s, bool json)
{
        corral_error *err = NULL;
        cleanup_free char *path = absolute(file);
        int status = EXIT_CORRAL;
        json_t *req = NULL, *r = NULL;
        if (path == NULL) {
                cli_error("session", "cannot resolve '%s': %s", file, strerror(errno));
                return EXIT_CORRAL;
        }
        signal(SIGPIPE, SIG_IGN);
        int fd = session_connect(id, &err);
        if (fd < 0) {
                cli_error_obj("session", err);
                status = err && err->kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
                goto out;
        }
        req = json_pack("{s:s,s:s,s:b}", "op", "archive", "path", path, "stop", stop);
        if (req == NULL || frame_write(fd, req) < 0) {
                cli_error("session", "cannot send the request to session '%s'", id);
                goto out;
        }
        double deadline = wait_s > 0 ? monotonic_ms() + wait_s * 1000 : 0;
        bool noted = false;
        for (;;) {
                int t = 1000;
                if (deadline > 0) {
                        double left = deadline - monotonic_ms();
                        if (left <= 0) {
                                cli_error("session",
                                          "session '%s' is still running a step after %g s: nothing was archived%s "
                                          "(try again, or give --wait more time)",
                                          id, wait_s, stop ? " and the session goes on" : "");
                                status = EXIT_ARCHIVE_BUSY;
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
                if (n == 0 && !noted) {
                        fprintf(stderr, "corral session: session %s is running a step; waiting for it to end\n", id);
                        noted = true;
                }
        }
        r = frame_read(fd, 10000);
        const char *t = json_string_value(json_object_get(r, "t"));
        if (t && strcmp(t, "idle") == 0) {
                json_decref(r);
                json_t *go = json_pack("{s:s}", "op", "go");
                r = go && frame_write(fd, go) == 0 ? frame_read(fd, -1) : NULL;
                json_decref(go);
                t = json_string_value(json_object_get(r, "t"));
        }
        if (t && strcmp(t, "archived") == 0) {
                print_archived(id, json_object_get(r, "report"), json);
                status = EXIT_OK;
                if (stop) {
                        /* EOF: the supervisor has exited (or is exiting). */
                        char b;
                        while (read(fd, &b, 1) > 0)
                                ;
                }
        } else if (t && strcmp(t, "error") == 0) {
                const char *msg = json_string_value(json_object_get(r, "message"));
                json_t *kind = json_object_get(r, "kind");
                cleanup_free char *clean = msg ? render_sanitize(msg, strlen(msg), NULL) : NULL;
                cli_error("session", "session '%s' was not archived%s: %s", id, stop ? " nor stopped" : "",
                          clean ? clean : "unknown error");
                status = json_integer_value(kind) == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
        } else {
                cli_error("session", "session '%s' did not answer the archive request (see 'corral session list')",
                          id);
        }
out:
        json_decref(req);
        json_decref(r);
        if (fd >= 0)
                close(fd);
        corral_error_free(err);
        return status;
}

static int cmd_archive(int argc, char **argv)
{
        static const struct option opts[] = {
                { "wait", required_argument, NULL, OPT_WAIT },       { "json", no_argument, NULL, OPT_JSON },
                { "archive", required_argument, NULL, OPT_ARCHIVE }, { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool stop = strcmp(argv[0], "stop") == 0, json = false;
        const char *file = NULL;
        double wait_s = 0;
        corral_error *err = NULL;
        opterr = 0;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_WAIT:
                        if (corral_parse_seconds(optarg, &wait_s, &err) < 0) {
                                cli_error("session", "--wait: %s", err ? err->msg : "invalid");
                                corral_error_free(err);
                                return EXIT_USAGE_SUBCOMMAND;
                        }
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_ARCHIVE:
                        if (stop) {
                                file = optarg;
                                break;
                        }
                        cli_error("session", "--archive is an option of stop (archive takes ID FILE.tar)");
                        return EXIT_USAGE_SUBCOMMAND;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        cli_error("session", "unknown option or missing value: '%s' (see 'corral session --help')",
                                  argv[optind - 1]);
                        return EXIT_USAGE_SUBCOMMAND;
                }
        }
        if (!stop && argc - optind == 2)
                file = argv[optind + 1];
        if (argc - optind != (stop ? 1 : 2) || file == NULL || file[0] == '\0') {
                cli_error("session", stop ? "usage: corral session stop ID --archive FILE.tar [--wait S] [--json]"
                                          : "usage: corral session archive ID FILE.tar [--wait S] [--json]");
                return EXIT_USAGE_SUBCOMMAND;
        }
        return archive_request(argv[optind], file, stop, wait_s, json);
}

static int cmd_stop(int argc, char **argv)
{
        corral_error *err = NULL;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--archive") == 0 || strncmp(argv[i], "--archive=", 10) == 0)
                        return cmd_archive(argc, argv);
        if (argc != 2 || argv[1][0] == '-') {
                if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                        fputs(help_text, stdout);
                        return EXIT_OK;
                }
                cli_error("session", "usage: corral session stop ID");
                return EXIT_USAGE_SUBCOMMAND;
        }
        signal(SIGPIPE, SIG_IGN);
        int fd = session_connect(argv[1], &err);
        if (fd < 0) {
                cli_error_obj("session", err);
                int kind = err ? err->kind : 0;
                corral_error_free(err);
                return kind == CORRAL_ERR_USAGE ? EXIT_USAGE_SUBCOMMAND : EXIT_CORRAL;
        }
        json_t *r = ask(fd, "stop");
        const char *t = json_string_value(json_object_get(r, "t"));
        bool ok = t && strcmp(t, "stopped") == 0;
        json_decref(r);
        /* EOF: the supervisor has exited (or is exiting) after cleaning up. */
        char b;
        while (ok && read(fd, &b, 1) > 0)
                ;
        close(fd);
        if (!ok) {
                cli_error("session", "session '%s' did not confirm that it stopped", argv[1]);
                return EXIT_CORRAL;
        }
        return EXIT_OK;
}

static int cmd_list(int argc, char **argv)
{
        bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
        if (argc > 2 || (argc == 2 && !json)) {
                if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                        fputs(help_text, stdout);
                        return EXIT_OK;
                }
                cli_error("session", "usage: corral session list [--json]");
                return EXIT_USAGE_SUBCOMMAND;
        }
        signal(SIGPIPE, SIG_IGN);
        corral_error *err = NULL;
        cleanup_free char *dir = runtime_dir(false, &err);
        json_t *all = json_array();
        if (dir == NULL && err) {
                cli_error_obj("session", err);
                corral_error_free(err);
                json_decref(all);
                return EXIT_CORRAL;
        }
        DIR *dp = dir ? opendir(dir) : NULL;
        struct dirent *de;
        while (dp && (de = readdir(dp)) != NULL) {
                size_t n = strlen(de->d_name);
                if (n != ID_LEN + 5 || strcmp(de->d_name + ID_LEN, ".sock") != 0)
                        continue;
                char id[ID_LEN + 1];
                memcpy(id, de->d_name, ID_LEN);
                id[ID_LEN] = '\0';
                int fd = session_connect(id, NULL);
                if (fd < 0)
                        continue;
                json_t *info = ask(fd, "info");
                close(fd);
                if (info) {
                        json_object_del(info, "t");
                        json_array_append_new(all, info);
                }
        }
        if (dp)
                closedir(dp);
        if (json) {
                char *s = json_dumps(all, JSON_COMPACT);
                if (s)
                        puts(s);
                free(s);
        } else {
                size_t i;
                json_t *e;
                if (json_array_size(all))
                        printf("%-12s %8s %6s %10s  %s\n", "ID", "PID", "STEPS", "EXPIRES", "WORKSPACE");
                json_array_foreach(all, i, e) {
                        printf("%-12s %8" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %9.0fs  %s\n",
                               json_string_value(json_object_get(e, "id")),
                               json_integer_value(json_object_get(e, "pid")),
                               json_integer_value(json_object_get(e, "steps")),
                               json_number_value(json_object_get(e, "expires_in_s")),
                               json_string_value(json_object_get(e, "workspace")) ?: "");
                }
        }
        json_decref(all);
        return EXIT_OK;
}

int cmd_session(int argc, char **argv)
{
        if (argc < 2) {
                fputs(help_text, stderr);
                return EXIT_USAGE_SUBCOMMAND;
        }
        const char *verb = argv[1];
        if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
                fputs(help_text, stdout);
                return EXIT_OK;
        }
        if (strcmp(verb, "start") == 0)
                return cmd_start(argc - 1, argv + 1);
        if (strcmp(verb, "exec") == 0)
                return cmd_exec_step(argc - 1, argv + 1);
        if (strcmp(verb, "stop") == 0)
                return cmd_stop(argc - 1, argv + 1);
        if (strcmp(verb, "archive") == 0)
                return cmd_archive(argc - 1, argv + 1);
        if (strcmp(verb, "list") == 0)
                return cmd_list(argc - 1, argv + 1);
        cli_error("session", "unknown subcommand '%s': expected start, exec, archive, stop or list", verb);
        return EXIT_USAGE_SUBCOMMAND;
}
