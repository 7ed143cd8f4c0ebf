/* util.c: capped buffers, file helpers, UTF-8 checks, time. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "util.h"

size_t capbuf_append(struct capbuf *b, const char *data, size_t len)
{
        b->total += len;
        size_t room = b->cap > b->len ? b->cap - b->len : 0;
        size_t keep = len < room ? len : room;
        if (keep < len)
                b->truncated = true;
        if (keep == 0)
                return 0;
        if (b->count_only) {
                b->len += keep;
                return keep;
        }
        if (b->len + keep + 1 > b->alloc) {
                size_t want = b->alloc ? b->alloc : 4096;
                while (want < b->len + keep + 1)
                        want *= 2;
                size_t most = b->cap < SIZE_MAX ? b->cap + 1 : SIZE_MAX;
                if (want > most)
                        want = most;
                char *p = realloc(b->data, want);
                if (p == NULL)
                        return (size_t)-1;
                b->data = p;
                b->alloc = want;
        }
        memcpy(b->data + b->len, data, keep);
        b->len += keep;
        b->data[b->len] = '\0';
        return keep;
}

char *capbuf_detach(struct capbuf *b, size_t *ret_len)
{
        char *d = b->data ? b->data : strdup("");
        if (ret_len)
                *ret_len = b->data ? b->len : 0;
        b->data = NULL;
        b->len = b->alloc = 0;
        return d;
}

void capbuf_release(struct capbuf *b)
{
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

double monotonic_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

void sigpipe_block(struct sigpipe_guard *g)
{
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
        /* One already pending is not ours to discard. */
        g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

void sigpipe_unblock(struct sigpipe_guard *g)
{
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
                struct timespec zero = { 0, 0 };
                while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR)
                        ;
        }
        pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Read up to max bytes; with whole, a file longer than that is an error
 * (EFBIG) rather than silently cut. */
static char *read_upto_at(int dirfd, const char *path, size_t max, bool whole)
{
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = malloc(max + 1);
        size_t len = 0;
        while (buf != NULL && len < max) {
                ssize_t n = read(fd, buf + len, max - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n < 0) {
                                free(buf);
                                buf = NULL;
                        }
                        break;
                }
                len += (size_t)n;
        }
        int saved = errno;
        if (buf != NULL && whole && len == max) {
                char more;
                ssize_t n;
                while ((n = read(fd, &more, 1)) < 0 && errno == EINTR)
                        ;
                if (n != 0) {
                        saved = n > 0 ? EFBIG : errno;
                        free(buf);
                        buf = NULL;
                }
        }
        close(fd);
        if (buf)
                buf[len] = '\0';
        errno = saved;
        return buf;
}

char *read_file_at(int dirfd, const char *path, size_t max)
{
        return read_upto_at(dirfd, path, max, false);
}

char *read_whole_file_at(int dirfd, const char *path, size_t max)
{
        return read_upto_at(dirfd, path, max, true);
}

void str_vsetf(char **dst, const char *fmt, va_list ap)
{
        free(*dst);
        if (vasprintf(dst, fmt, ap) < 0)
                *dst = NULL;
}

int mkdir_p(const char *path, mode_t mode)
{
        cleanup_free char *p = strdup(path);
        if (p == NULL)
                return -1;
        for (char *s = p + 1;; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char saved = *s;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -1;
                if (saved == '\0')
                        return 0;
                *s = saved;
        }
}

int write_file_at(int dirfd, const char *path, const char *text)
{
        int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_TRUNC);
        if (fd < 0)
                return -1;
        int r = write_all(fd, text, strlen(text));
        int saved = errno;
        if (close(fd) < 0 && r == 0) /* cgroupfs reports write errors at close too */
                r = -1;
        else
                errno = saved;
        return r;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
        unsigned char c = p[0];
        if (c >= 0x01 && c < 0x80)
                return 1;
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if (left < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

bool utf8_valid(const char *data, size_t len)
{
        const unsigned char *p = (const unsigned char *)data;
        size_t i = 0;
        while (i < len) {
                size_t n = utf8_seq(p + i, len - i);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

char *utf8_sanitize(const char *data, size_t len, size_t *ret_len)
{
        /* Worst case every byte becomes the 3-byte U+FFFD. */
        if (len > (SIZE_MAX - 1) / 3)
                return NULL;
        char *out = malloc(len * 3 + 1);
        if (out == NULL)
                return NULL;
        const unsigned char *p = (const unsigned char *)data;
        size_t i = 0, o = 0;
        while (i < len) {
                size_t n = utf8_seq(p + i, len - i);
                if (n == 0) {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                } else {
                        memcpy(out + o, p + i, n);
                        o += n;
                        i += n;
                }
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

/* Edits from a to b (optimal string alignment), at most 64 bytes each. */
static size_t edits(const char *a, const char *b)
{
        size_t n = strlen(a), m = strlen(b);
        if (n > 64 || m > 64)
                return SIZE_MAX;
        size_t d[65][65];
        for (size_t i = 0; i <= n; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= m; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= n; i++)
                for (size_t j = 1; j <= m; j++) {
                        size_t cost = a[i - 1] == b[j - 1] ? 0 : 1, best = d[i - 1][j - 1] + cost;
                        if (d[i - 1][j] + 1 < best)
                                best = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < best)
                                best = d[i][j - 1] + 1;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                                best = d[i - 2][j - 2] + 1;
                        d[i][j] = best;
                }
        return d[n][m];
}

const char *nearest_name(const char *word, const char *const *names)
{
        const char *best = NULL;
        size_t best_d = SIZE_MAX, len = strlen(word);
        for (size_t i = 0; names[i]; i++) {
                if (strcasecmp(word, names[i]) == 0)
                        return names[i];
                size_t d = edits(word, names[i]);
                if (d < best_d) {
                        best_d = d;
                        best = names[i];
                }
        }
        return best_d <= 2 && best_d * 3 <= len ? best : NULL;
}

double round_ms(double ms)
{
        return round_half_away(ms * 100.0) / 100.0;
}

double round_half_away(double x)
{
        if (!(fabs(x) < 4503599627370496.0)) /* 2^52: whole already (or NaN, inf) */
                return x;
        double t = (double)(long long)x; /* toward zero */
        if (x - t >= 0.5)
                t += 1.0;
        else if (x - t <= -0.5)
                t -= 1.0;
        return t;
}

double fmod_positive(double a, double b)
{
        double q = a / b;
        if (!(q < 9223372036854775807.0))
                return 0;
        return a - b * (double)(long long)q;
}

void close_fds_except(int *keep, size_t n)
{
        for (size_t i = 1; i < n; i++) /* ascending; -1s first */
                for (size_t k = i; k > 0 && keep[k - 1] > keep[k]; k--) {
                        int x = keep[k];
                        keep[k] = keep[k - 1];
                        keep[k - 1] = x;
                }
        unsigned from = 3;
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < (int)from)
                        continue;
                if ((unsigned)keep[i] > from)
                        syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
                from = (unsigned)keep[i] + 1;
        }
        syscall(SYS_close_range, from, ~0U, 0);
}

/* Wait for one message on fd (monotonic deadline); -1 with errno. */
ssize_t unix_recv_fds_until(int fd, void *buf, size_t len, int *fds, int max_fds, int *ret_nfds,
                            struct ucred *ret_cred, double deadline)
{
        for (;;) {
                double left = deadline - monotonic_ms();
                if (left <= 0) {
                        errno = ETIMEDOUT;
                        return -1;
                }
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = poll(&p, 1, (int)ceil(left));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -1;
                if (r == 0)
                        continue;
                break;
        }
        union {
                char buf[CMSG_SPACE(sizeof(int) * (UNIX_MAX_FDS)) + CMSG_SPACE(sizeof(struct ucred))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { buf, len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (ret_nfds)
                *ret_nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n >= 0 && c; c = CMSG_NXTHDR(&m, c)) {
                if (c->cmsg_level != SOL_SOCKET)
                        continue;
                if (c->cmsg_type == SCM_CREDENTIALS && ret_cred)
                        memcpy(ret_cred, CMSG_DATA(c), sizeof(*ret_cred));
                if (c->cmsg_type == SCM_RIGHTS) {
                        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                        for (int i = 0; i < k; i++) {
                                int f;
                                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (fds && ret_nfds && *ret_nfds < max_fds)
                                        fds[(*ret_nfds)++] = f;
                                else
                                        close(f);
                        }
                }
        }
        return n;
}

int unix_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * (UNIX_MAX_FDS))];
                struct cmsghdr align;
        } u;
        if (nfds > UNIX_MAX_FDS) {
                errno = EINVAL;
                return -1;
        }
        memset(&u, 0, sizeof(u));
        struct iovec iov = { (void *)buf, len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (nfds > 0) {
                m.msg_control = u.buf;
                m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
        }
        ssize_t n;
        do
                n = sendmsg(sock, &m, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n == (ssize_t)len ? 0 : -1;
}
