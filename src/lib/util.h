/* util.h: small helpers shared by the library: cleanup attributes, error
 * construction, capped buffers and monotonic time.  Every module may use it;
 * not installed.
 * Threads: thread-safe (no shared state); a capbuf is one caller's at a time. */
#ifndef CORRAL_UTIL_H
#define CORRAL_UTIL_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <corral/error.h>

#define CORRAL_HIDDEN __attribute__((visibility("hidden")))
#define CORRAL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void cleanup_freep(void *p)
{
        free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}
#define cleanup_free __attribute__((cleanup(cleanup_freep)))
#define cleanup_close __attribute__((cleanup(cleanup_closep)))

/* Hand ownership over: returns the value and clears the variable. */
#define TAKE_PTR(p)                                                                                                    \
        ({                                                                                                             \
                __typeof__(p) _p = (p);                                                                                \
                (p) = NULL;                                                                                            \
                _p;                                                                                                    \
        })
#define TAKE_FD(fd)                                                                                                    \
        ({                                                                                                             \
                int _fd = (fd);                                                                                        \
                (fd) = -1;                                                                                             \
                _fd;                                                                                                   \
        })

/* Fill *ret_err (when not NULL) and return -1.  errnum 0 means no errno;
 * otherwise ": strerror" is appended. */
CORRAL_HIDDEN int corral_make_error(corral_error **ret_err, int kind, int errnum, const char *fmt, ...)
        CORRAL_PRINTF(4, 5);
#define corral_fail(err, errnum, ...) corral_make_error(err, CORRAL_ERR_INTERNAL, errnum, __VA_ARGS__)
#define corral_usage(err, ...) corral_make_error(err, CORRAL_ERR_USAGE, 0, __VA_ARGS__)
/* Name the config field at fault in *err (a static string, see
 * corral_error.field); returns -1.  corral_usage_field() makes a usage error
 * about one field: its message names the field in words, never a flag. */
CORRAL_HIDDEN int corral_error_set_field(corral_error **err, const char *field);
#define corral_usage_field(err, field, ...) (corral_usage(err, __VA_ARGS__), corral_error_set_field(err, field))
/* Prepend "context: " to an existing error message. */
CORRAL_HIDDEN int corral_error_prefix(corral_error **err, const char *fmt, ...) CORRAL_PRINTF(2, 3);

/* A growable byte buffer with a hard cap.  Invariants: data is NULL or NUL-
 * terminated; len <= cap; bytes past cap are counted in `total` and dropped,
 * `truncated` is set.  The owner frees data with free(). */
struct capbuf {
        char *data;
        size_t len;
        size_t alloc;
        size_t cap;
        uint64_t total;
        bool truncated;
        bool count_only; /* keep nothing, only account (len counts what would be kept) */
};
/* Append; returns how many bytes were kept, or (size_t)-1 on ENOMEM. */
CORRAL_HIDDEN size_t capbuf_append(struct capbuf *b, const char *data, size_t len);
CORRAL_HIDDEN char *capbuf_detach(struct capbuf *b, size_t *ret_len);
CORRAL_HIDDEN void capbuf_release(struct capbuf *b);

CORRAL_HIDDEN double monotonic_ms(void);
/* A time in ms rounded to 0.01 ms, as every JSON result and event carries
 * times (17 digits say nothing a reader can use). */
CORRAL_HIDDEN double round_ms(double ms);
/* round() (halves away from zero) and fmod() for a >= 0 and b > 0, here
 * rather than from libm: corral links no libm, a library less to load
 * (and fault in) at every start, corral exec's included. */
CORRAL_HIDDEN double round_half_away(double x);
CORRAL_HIDDEN double fmod_positive(double a, double b);
/* fmin() for numbers that are never NaN (times, limits). */
static inline double min_double(double a, double b)
{
        return a < b ? a : b;
}
/* write() all of buf, retrying on EINTR/short writes; -1 on error. */
CORRAL_HIDDEN int write_all(int fd, const void *buf, size_t len);

/* Close every descriptor above 2 but the n of keep (-1s ignored; keep is
 * sorted in place).  System calls only: a child between clone and exec may
 * call it. */
CORRAL_HIDDEN void close_fds_except(int *keep, size_t n);

/* One message on a unix socket with up to UNIX_MAX_FDS descriptors
 * (SCM_RIGHTS).  unix_recv_fds_until() waits until the monotonic deadline
 * (ms), keeps at most max_fds of the descriptors it gets (CLOEXEC; the
 * rest are closed), their count in *ret_nfds, and the sender's
 * credentials in *ret_cred when given and sent; -1 with errno (ETIMEDOUT).
 * unix_send_fds() sends all of buf or fails (-1, errno; never SIGPIPE). */
#define UNIX_MAX_FDS 68
struct ucred;
CORRAL_HIDDEN ssize_t unix_recv_fds_until(int fd, void *buf, size_t len, int *fds, int max_fds, int *ret_nfds,
                                          struct ucred *ret_cred, double deadline);
CORRAL_HIDDEN int unix_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);

/* SIGPIPE without a process-wide setting (a library must not change the
 * caller's signal dispositions).  Sockets: send(..., MSG_NOSIGNAL).  Pipes:
 * a write whose reader is gone raises SIGPIPE in the writing thread, so
 * sigpipe_block() blocks it in this thread (the write then fails with
 * EPIPE) and sigpipe_unblock() discards one raised meanwhile and restores
 * the thread's mask.  Pairs on one thread; nothing shared. */
struct sigpipe_guard {
        sigset_t old;
        bool was_pending;
};
CORRAL_HIDDEN void sigpipe_block(struct sigpipe_guard *g);
CORRAL_HIDDEN void sigpipe_unblock(struct sigpipe_guard *g);
/* Read a small file into a NUL-terminated malloc'd string (at most max bytes). */
CORRAL_HIDDEN char *read_file_at(int dirfd, const char *path, size_t max);
/* The same for a file that must be read whole: NULL with errno EFBIG when
 * it holds more than max bytes. */
CORRAL_HIDDEN char *read_whole_file_at(int dirfd, const char *path, size_t max);
/* Replace the malloc'd string *dst by a formatted one (NULL when out of memory). */
CORRAL_HIDDEN void str_vsetf(char **dst, const char *fmt, va_list ap) CORRAL_PRINTF(2, 0);

/* mkdir -p: path and its missing parents with mode; -1 with errno. */
CORRAL_HIDDEN int mkdir_p(const char *path, mode_t mode);
CORRAL_HIDDEN int write_file_at(int dirfd, const char *path, const char *text);

/* The name of names (NULL-terminated) closest to word, for "did you mean":
 * equal but for case, or within two edits (insert, delete, replace, swap of
 * neighbours) and not more than a third of its length; else NULL. */
CORRAL_HIDDEN const char *nearest_name(const char *word, const char *const *names);

/* Escape bytes as valid UTF-8: invalid sequences and NUL become U+FFFD. */
CORRAL_HIDDEN char *utf8_sanitize(const char *data, size_t len, size_t *ret_len);
CORRAL_HIDDEN bool utf8_valid(const char *data, size_t len);

/* Last, after every system header this file pulls in. */
#include "banned.h"

#endif
