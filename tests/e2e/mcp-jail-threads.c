/* mcp-jail-threads.c: mcp_jail_run() (src/mcp/jailed.h) as an MCP client
 * in a server process holds it: several jailed servers at once, each on a
 * thread of its own over socketpairs, from one process
 * (tests/e2e/test_mcp_jail.py).
 *
 *   mcp-jail-threads N    N echo servers (python3 in the jail, a line
 *                         back for each line in) proxied at once, each
 *                         given 50 lines and then its stdin's end; one more
 *                         that never reads, stopped through its cancel fd
 *
 * Checks that every line comes back in order on its own connection, that
 * each echo server exits 0 on stdin's end, that the cancelled one ends with
 * limit "cancelled", and that a second round leaves no file descriptor open.  Prints
 * "ok" and exits 0, or says what failed and exits 1. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../src/mcp/jailed.h"

#define LINES 50

static const char echo_server[] = "import sys\n"
                                  "for line in sys.stdin:\n"
                                  "    sys.stdout.write('echo ' + line)\n"
                                  "    sys.stdout.flush()\n";

struct server {
        int id;
        bool cancel;
        int client;      /* the client's end of the socketpair */
        int server_end;  /* mcp_jail_run's (in and out both) */
        int cancel_fd;
        int rc;
        corral_jail_result res;
        char err[512];
};

static void *run_server(void *arg)
{
        struct server *s = arg;
        corral_jail_config cfg;
        mcp_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *const echo_argv[] = { "python3", "-c", (char *)echo_server, NULL };
        char *const sleep_argv[] = { "sleep", "600", NULL };
        if (corral_jail_config_set_argv(&cfg, s->cancel ? sleep_argv : echo_argv, &err) < 0) {
                s->rc = -1;
        } else {
                s->rc = mcp_jail_run(&cfg, s->server_end, s->server_end, -1, s->cancel_fd, &s->res, &err);
        }
        if (err)
                snprintf(s->err, sizeof(s->err), "%s", err->msg);
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        /* The run is over: the client's reads end. */
        shutdown(s->server_end, SHUT_RDWR);
        return NULL;
}

static int count_fds(void)
{
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return -1;
        for (struct dirent *e; (e = readdir(d)) != NULL;)
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* the DIR's own */
}

/* Read one line (at most len-1 bytes) from fd; -1 at the end. */
static int read_line(int fd, char *buf, size_t len)
{
        size_t n = 0;
        while (n + 1 < len) {
                ssize_t r = read(fd, buf + n, 1);
                if (r <= 0)
                        return -1;
                if (buf[n++] == '\n')
                        break;
        }
        buf[n] = '\0';
        return (int)n;
}

static void *client(void *arg)
{
        struct server *s = arg;
        for (int i = 0; i < LINES; i++) {
                char line[64], back[128], want[128];
                int n = snprintf(line, sizeof(line), "server %d line %d\n", s->id, i);
                if (write(s->client, line, (size_t)n) != n) {
                        snprintf(s->err, sizeof(s->err), "client %d: cannot write", s->id);
                        return NULL;
                }
                snprintf(want, sizeof(want), "echo %s", line);
                if (read_line(s->client, back, sizeof(back)) < 0 || strcmp(back, want) != 0) {
                        snprintf(s->err, sizeof(s->err), "client %d: line %d came back as '%s'", s->id, i, back);
                        return NULL;
                }
        }
        shutdown(s->client, SHUT_WR); /* the server's stdin ends */
        return NULL;
}

/* One round: n echo servers and one cancelled; the number of failures. */
static int run_round(int n)
{
        struct server *s = calloc((size_t)n + 1, sizeof(*s));
        pthread_t *run = calloc((size_t)n + 1, sizeof(*run)), *cl = calloc((size_t)n, sizeof(*cl));
        if (s == NULL || run == NULL || cl == NULL)
                return 1;
        for (int i = 0; i <= n; i++) {
                int sv[2];
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                        return perror("socketpair"), 1;
                s[i] = (struct server){ .id = i, .cancel = i == n, .client = sv[0], .server_end = sv[1],
                                        .cancel_fd = eventfd(0, EFD_CLOEXEC) };
                pthread_create(&run[i], NULL, run_server, &s[i]);
        }
        for (int i = 0; i < n; i++)
                pthread_create(&cl[i], NULL, client, &s[i]);
        for (int i = 0; i < n; i++)
                pthread_join(cl[i], NULL);
        /* The echo servers answered, so jails work: cancel the one that
         * never reads. */
        uint64_t one = 1;
        if (write(s[n].cancel_fd, &one, sizeof(one)) != sizeof(one))
                return perror("eventfd"), 1;
        int bad = 0;
        for (int i = 0; i <= n; i++) {
                pthread_join(run[i], NULL);
                const corral_jail_result *r = &s[i].res;
                if (s[i].rc < 0 || s[i].err[0]) {
                        printf("server %d: %s\n", i, s[i].err[0] ? s[i].err : "failed");
                        bad++;
                } else if (!s[i].cancel && (r->status != CORRAL_STATUS_OK || r->exit_code != 0)) {
                        printf("server %d: exit %d, %s\n", i, r->exit_code, r->reason ? r->reason : "");
                        bad++;
                } else if (s[i].cancel && r->limit != CORRAL_LIMIT_CANCELLED) {
                        printf("server %d: not cancelled: %s\n", i, corral_limit_to_string(r->limit));
                        bad++;
                }
                corral_jail_result_release(&s[i].res);
                close(s[i].client);
                close(s[i].server_end);
                close(s[i].cancel_fd);
        }
        free(s);
        free(run);
        free(cl);
        return bad;
}

int main(int argc, char **argv)
{
        int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 4;
        if (n < 1 || n > 64) {
                fprintf(stderr, "usage: mcp-jail-threads N (1-64)\n");
                return 2;
        }
        /* The first round opens what the library keeps for the process
         * (corral-init's fd, caches); the second must leave nothing. */
        int bad = run_round(n);
        int fds_before = count_fds();
        bad += run_round(n);
        int fds_after = count_fds();
        if (fds_after != fds_before) {
                printf("file descriptors: %d before, %d after\n", fds_before, fds_after);
                bad++;
        }
        if (bad)
                return 1;
        puts("ok");
        return 0;
}
