/* wire.c: what the session daemon and its clients share (wire.h): the
 * framing (a 4-byte big-endian length, then a JSON object, as the driver's),
 * the private runtime directory and the sockets in it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../lib/util.h"
#include "host.h"
#include "wire.h"

/* A peer that went away is an error here, not a SIGPIPE for the process. */
static int send_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        while (len > 0) {
                ssize_t k = send(fd, p, len, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -1;
                p += k;
                len -= (size_t)k;
        }
        return 0;
}

/* A frame's text, wiped and freed (NUL-terminated). */
static void wipe_body(char **p)
{
        if (*p) {
                explicit_bzero(*p, strlen(*p));
                free(*p);
        }
}

int wire_write_fds(int fd, json_t *obj, const int *fds, size_t nfds)
{
        if (nfds > WIRE_MAX_FDS)
                return -1;
        /* Wiped when freed: a start request carries brokered credentials. */
        __attribute__((cleanup(wipe_body))) char *body = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (body == NULL)
                return -1;
        size_t n = strlen(body);
        unsigned char head[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                                  (unsigned char)n };
        /* Header and body in one call (each is a system call less on a
         * claim's path); the descriptors ride on the header's first byte. */
        union {
                char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct iovec iov[2] = { { .iov_base = head, .iov_len = 4 }, { .iov_base = body, .iov_len = n } };
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
        if (nfds > 0) {
                m.msg_control = u.buf;
                m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        ssize_t k;
        do
                k = sendmsg(fd, &m, MSG_NOSIGNAL);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return -1;
        size_t sent = (size_t)k;
        if (sent < 4 && send_all(fd, head + sent, 4 - sent) < 0)
                return -1;
        size_t off = sent > 4 ? sent - 4 : 0;
        return off < n && send_all(fd, body + off, n - off) < 0 ? -1 : 0;
}

int wire_write(int fd, json_t *obj)
{
        return wire_write_fds(fd, obj, NULL, 0);
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

/* The header's first bytes with the descriptors sent on them (at most max;
 * more, or a cut control message, is an error and none are kept). */
static int read_head_fds(int fd, unsigned char *head, int timeout_ms, int *fds, size_t max, size_t *ret_n)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r;
        do
                r = timeout_ms >= 0 ? poll(&p, 1, timeout_ms) : 1;
        while (r < 0 && errno == EINTR);
        if (r <= 0)
                return -1;
        union {
                char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = head, .iov_len = 4 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t k;
        do
                k = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
        while (k < 0 && errno == EINTR);
        size_t n = 0;
        bool bad = k <= 0 || (m.msg_flags & MSG_CTRUNC);
        for (struct cmsghdr *c = k > 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                int *in = (int *)CMSG_DATA(c);
                for (size_t i = 0; i < got; i++) {
                        if (n < max && !bad)
                                fds[n++] = in[i];
                        else {
                                close(in[i]);
                                bad = true;
                        }
                }
        }
        if (bad || (k < 4 && read_full(fd, head + k, 4 - (size_t)k, timeout_ms) < 0)) {
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
                return -1;
        }
        *ret_n = n;
        return 0;
}

json_t *wire_read(int fd, int timeout_ms)
{
        return wire_read_fds(fd, timeout_ms, NULL, 0, NULL);
}

json_t *wire_read_fds(int fd, int timeout_ms, int *fds, size_t max, size_t *ret_n)
{
        unsigned char head[4];
        size_t nfds = 0;
        if (ret_n)
                *ret_n = 0;
        if (read_head_fds(fd, head, timeout_ms, fds, max, &nfds) < 0)
                return NULL;
        uint32_t n = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
        __attribute__((cleanup(wipe_body))) char *body = n <= CLIENT_FRAME_MAX ? calloc((size_t)n + 1, 1) : NULL;
        json_t *j = body && read_full(fd, body, n, timeout_ms) == 0 ? json_loadb(body, n, 0, NULL) : NULL;
        if (!json_is_object(j)) {
                json_decref(j);
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                return NULL;
        }
        if (ret_n)
                *ret_n = nfds;
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
char *wire_runtime_dir(bool create, corral_error **err)
{
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        char *parent = NULL, *dir = NULL, user_run[64];
        struct stat st;
        /* Unset (an MCP client starts its servers with a bare environment):
         * systemd's /run/user/UID when it is ours, so that such a client
         * finds the host that `corral session` in the user's shell uses. */
        snprintf(user_run, sizeof(user_run), "/run/user/%u", (unsigned)geteuid());
        if (xdg == NULL || xdg[0] == '\0')
                xdg = user_run;
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

int wire_socket_path(const char *dir, const char *id, struct sockaddr_un *sa, corral_error **err)
{
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s.sock", dir, id);
        if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
                return corral_fail(err, ENAMETOOLONG, "the session socket path under '%s' is too long", dir);
        return 0;
}

void wire_wipe_credentials(json_t *req)
{
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(req, "secrets"), i, e) {
                const char *v = json_string_value(json_object_get(e, "value"));
                if (v)
                        explicit_bzero((char *)v, strlen(v));
        }
}
