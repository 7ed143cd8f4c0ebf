/* jailed.c: a third-party stdio MCP server in a jail (jailed.h).
 *
 * Two threads per server.  The caller's runs corral_jail_run(): its
 * supervision loop pumps the jail's stdin from a pipe of ours and hands the
 * server's output to on_output(), which writes stdout to the client at once
 * and stderr beside it.  A feeder thread copies the client's bytes into that
 * pipe and is the one that decides to stop the jail: the caller's cancel fd,
 * or the server still running MCP_JAIL_EOF_GRACE_S after the client closed
 * stdin.  Stopping is a write to an eventfd the jail watches as its cancel
 * fd, so every way of stopping ends in the jail's own tree kill and
 * teardown.  Nothing of the protocol is read or kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../lib/termsafe.h"
#include "../lib/util.h"
#include "jailed.h"

#define STR_(x) #x
#define STR(x) STR_(x)

void mcp_jail_config_init(corral_jail_config *cfg)
{
        corral_jail_config_init(cfg);
        cfg->no_timeout = true;
        cfg->stream_unlimited = true;
        cfg->memory_bytes = MCP_JAIL_MEMORY;
        cfg->address_space_bytes = MCP_JAIL_ADDRESS_SPACE;
        cfg->pids = 128;
        cfg->stdin_mode = CORRAL_STDIN_PIPE;
        cfg->net = CORRAL_NET_NONE;
}

/* Why corral stopped the server (the first reason wins). */
enum stop_why {
        STOP_NONE = 0,
        STOP_CANCELLED,
        STOP_STDIN_CLOSED,
        STOP_CLIENT_GONE,
};

struct proxy {
        int in_fd, out_fd, err_fd, cancel_fd; /* the caller's, borrowed */
        int pipe_w;          /* our end of the jail's stdin source; closed at in_fd's end */
        int stop_fd;         /* eventfd: the jail's cancel fd */
        int done_fd;         /* eventfd: the run is over, the feeder returns */
        atomic_int why;      /* enum stop_why */
        bool out_failed;     /* on_output's (the caller's thread) */
        bool err_tty;
        struct term_filter err_filter;
};

static void proxy_stop(struct proxy *p, enum stop_why why)
{
        int none = STOP_NONE;
        atomic_compare_exchange_strong(&p->why, &none, (int)why);
        uint64_t one = 1;
        ssize_t n = write(p->stop_fd, &one, sizeof(one));
        (void)n; /* an eventfd counter cannot overflow from a few writes */
}

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The feeder thread: in_fd -> pipe_w, never blocking on either (pipe_w is
 * non-blocking, in_fd read only when poll says so), and the stop decisions. */
static void *feeder(void *arg)
{
        struct proxy *p = arg;
        char buf[65536];
        size_t off = 0, len = 0;
        bool eof = false, watch_cancel = p->cancel_fd >= 0;
        double deadline = -1;
        for (;;) {
                struct pollfd pf[4];
                int n = 0, i_in = -1, i_pipe = -1, i_cancel = -1;
                pf[n++] = (struct pollfd){ .fd = p->done_fd, .events = POLLIN };
                if (!eof && len == 0) {
                        i_in = n;
                        pf[n++] = (struct pollfd){ .fd = p->in_fd, .events = POLLIN };
                }
                if (len > 0) {
                        i_pipe = n;
                        pf[n++] = (struct pollfd){ .fd = p->pipe_w, .events = POLLOUT };
                }
                if (watch_cancel) {
                        i_cancel = n;
                        pf[n++] = (struct pollfd){ .fd = p->cancel_fd, .events = POLLIN };
                }
                int timeout = -1;
                if (deadline >= 0) {
                        double left = deadline - now_ms();
                        timeout = left > 0 ? (int)left + 1 : 0;
                }
                int r = poll(pf, (nfds_t)n, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        proxy_stop(p, STOP_CANCELLED); /* cannot watch: end rather than run blind */
                        break;
                }
                if (pf[0].revents)
                        break;
                if (r == 0 && deadline >= 0) {
                        proxy_stop(p, STOP_STDIN_CLOSED);
                        deadline = -1;
                        continue;
                }
                if (i_cancel >= 0 && pf[i_cancel].revents) {
                        proxy_stop(p, STOP_CANCELLED);
                        watch_cancel = false;
                }
                if (i_in >= 0 && pf[i_in].revents) {
                        ssize_t got = read(p->in_fd, buf, sizeof(buf));
                        if (got > 0) {
                                off = 0;
                                len = (size_t)got;
                        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                                eof = true;
                        }
                }
                if (len > 0 && (i_pipe < 0 || pf[i_pipe].revents)) {
                        ssize_t w = write(p->pipe_w, buf + off, len);
                        if (w > 0) {
                                off += (size_t)w;
                                len -= (size_t)w;
                        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                                len = 0; /* nobody reads the server's stdin any more */
                                eof = true;
                        }
                }
                if (eof && len == 0 && p->pipe_w >= 0) {
                        /* The client is done: the server sees its stdin end and
                         * normally exits; it gets MCP_JAIL_EOF_GRACE_S to. */
                        close(p->pipe_w);
                        p->pipe_w = -1;
                        deadline = now_ms() + MCP_JAIL_EOF_GRACE_S * 1e3;
                }
        }
        return NULL;
}

/* All of data to fd, waiting while a non-blocking fd is full; -1 on error. */
static int write_out(int fd, const char *data, size_t len)
{
        struct sigpipe_guard g;
        sigpipe_block(&g);
        int rc = 0;
        while (len > 0) {
                ssize_t w = write(fd, data, len);
                if (w > 0) {
                        data += w;
                        len -= (size_t)w;
                } else if (w < 0 && errno == EAGAIN) {
                        struct pollfd pf = { .fd = fd, .events = POLLOUT };
                        if (poll(&pf, 1, -1) < 0 && errno != EINTR) {
                                rc = -1;
                                break;
                        }
                } else if (!(w < 0 && errno == EINTR)) {
                        rc = -1;
                        break;
                }
        }
        int e = errno;
        sigpipe_unblock(&g);
        errno = e;
        return rc;
}

static void on_output(void *userdata, int stream, const char *data, size_t len)
{
        struct proxy *p = userdata;
        if (stream == 1) {
                if (p->out_failed)
                        return;
                if (write_out(p->out_fd, data, len) < 0) {
                        p->out_failed = true;
                        proxy_stop(p, STOP_CLIENT_GONE);
                }
                return;
        }
        /* stderr that cannot be written is dropped: it is not the protocol */
        if (p->err_fd < 0)
                return;
        if (!p->err_tty) {
                write_out(p->err_fd, data, len);
                return;
        }
        struct sigpipe_guard g;
        sigpipe_block(&g);
        term_filter_write(&p->err_filter, p->err_fd, data, len);
        sigpipe_unblock(&g);
}

/* The reason of a run corral stopped, in words. */
static const char *stop_reason(enum stop_why why)
{
        switch (why) {
        case STOP_CANCELLED:
                return "cancelled: the server was stopped";
        case STOP_STDIN_CLOSED:
                return "the server was still running " STR(MCP_JAIL_EOF_GRACE_S)
                       " s after its stdin closed: it was stopped";
        case STOP_CLIENT_GONE:
                return "the client went away (the server's stdout could not be written): the server was stopped";
        case STOP_NONE:
        default:
                return NULL;
        }
}

int mcp_jail_run(const corral_jail_config *cfg, int in_fd, int out_fd, int err_fd, int cancel_fd,
                 corral_jail_result *ret_result, corral_error **ret_err)
{
        memset(ret_result, 0, sizeof(*ret_result));
        if (cfg->stdin_mode != CORRAL_STDIN_PIPE)
                return corral_usage(ret_err, "a jailed MCP server needs its stdin piped");
        struct proxy p = { .in_fd = in_fd, .out_fd = out_fd, .err_fd = err_fd, .cancel_fd = cancel_fd,
                           .pipe_w = -1, .stop_fd = -1, .done_fd = -1 };
        atomic_init(&p.why, STOP_NONE);
        p.err_tty = err_fd >= 0 && isatty(err_fd);
        int pipe_fds[2] = { -1, -1 };
        int rc = -1;
        if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
                corral_fail(ret_err, errno, "cannot create the server's stdin pipe");
                goto out;
        }
        p.pipe_w = pipe_fds[1];
        fcntl(p.pipe_w, F_SETFL, O_NONBLOCK);
        p.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p.stop_fd < 0 || p.done_fd < 0) {
                corral_fail(ret_err, errno, "cannot create the server's event fds");
                goto out;
        }
        pthread_t thread;
        int e = pthread_create(&thread, NULL, feeder, &p);
        if (e != 0) {
                corral_fail(ret_err, e, "cannot start the server's stdin thread");
                goto out;
        }
        corral_jail_io io = { .stdin_fd = pipe_fds[0], .on_output = on_output, .userdata = &p, .capture = false,
                              .cancel_fd = p.stop_fd };
        rc = corral_jail_run(cfg, &io, ret_result, ret_err);
        uint64_t one = 1;
        if (write(p.done_fd, &one, sizeof(one)) != sizeof(one))
                abort(); /* cannot happen to a fresh eventfd; the join would hang */
        pthread_join(thread, NULL);
        if (p.err_tty)
                term_filter_flush(&p.err_filter, err_fd);
        enum stop_why why = (enum stop_why)atomic_load(&p.why);
        if (rc == 0 && ret_result->limit == CORRAL_LIMIT_CANCELLED && stop_reason(why)) {
                char *reason = strdup(stop_reason(why));
                if (reason) {
                        free(ret_result->reason);
                        ret_result->reason = reason;
                }
        }
out:
        if (pipe_fds[0] >= 0)
                close(pipe_fds[0]);
        if (p.pipe_w >= 0)
                close(p.pipe_w);
        if (p.stop_fd >= 0)
                close(p.stop_fd);
        if (p.done_fd >= 0)
                close(p.done_fd);
        return rc;
}
