/* init-orders.h: reading init's orders (protocol.h, fd 3 of init) and
 * starting the program they name.  Two programs do it: corral-init, which
 * forks the program and starts it (src/init/init.c, libc-free), and the
 * program's own process in a pre-made jail, forked by the setup child
 * before the claim (enter.c).  One copy of the format's parser and of the
 * PATH search, so that both read the same orders the same way.
 *
 * Freestanding: no libc beyond what the compiler's builtins need (memcpy,
 * strlen, which corral-init defines itself).  Errors are -errno values.
 *
 * Threads: pure functions.
 */
#ifndef CORRAL_INIT_ORDERS_H
#define CORRAL_INIT_ORDERS_H

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define CORRAL_ORDERS_EINVAL 22
#define CORRAL_ORDERS_ENOENT 2
#define CORRAL_ORDERS_EACCES 13
#define CORRAL_ORDERS_ENOEXEC 8

/* The orders parsed in place: the pointers point into the buffer read. */
struct corral_orders {
        struct init_header hdr;
        const struct init_rlimit *rlimits;
        struct sock_filter *bpf; /* not const: struct sock_fprog takes it so */
        char **argv; /* argc of them, then NULL */
        char **envp; /* envc of them, then NULL */
        const char *cwd;
};

/* The header of size bytes of orders, checked: 0, or -EINVAL.  On 0, the
 * caller gives corral_orders_parse() room for argc + envc + 2 pointers. */
static inline long corral_orders_header(const char *buf, size_t size, struct init_header *h)
{
        if (size < sizeof(*h) || size > CORRAL_INIT_MAX_CONFIG)
                return -CORRAL_ORDERS_EINVAL;
        __builtin_memcpy(h, buf, sizeof(*h));
        if (h->magic != CORRAL_INIT_MAGIC || h->version != CORRAL_INIT_VERSION || h->argc == 0 || h->bpf_len == 0 ||
            h->n_rlimits > 64 || h->argc > (1u << 20) || h->envc > (1u << 20))
                return -CORRAL_ORDERS_EINVAL;
        size_t need = sizeof(*h) + (size_t)h->n_rlimits * sizeof(struct init_rlimit) +
                      (size_t)h->bpf_len * sizeof(struct sock_filter) + h->strings_len;
        return need == size ? 0 : -CORRAL_ORDERS_EINVAL;
}

/* buf: size bytes of orders whose header passed corral_orders_header(),
 * with a NUL at buf[size]; vec: zeroed room for argc + envc + 2 pointers.
 * 0, or -EINVAL when the strings do not match the header. */
static inline long corral_orders_parse(char *buf, size_t size, char **vec, struct corral_orders *o)
{
        long r = corral_orders_header(buf, size, &o->hdr);
        if (r < 0)
                return r;
        size_t off = sizeof(o->hdr);
        o->rlimits = (const struct init_rlimit *)(buf + off);
        off += o->hdr.n_rlimits * sizeof(struct init_rlimit);
        o->bpf = (struct sock_filter *)(buf + off);
        off += o->hdr.bpf_len * sizeof(struct sock_filter);
        o->argv = vec;
        o->envp = vec + o->hdr.argc + 1; /* argv's NULL sits between the two */
        char *s = buf + off, *end = buf + size;
        for (uint32_t i = 0; i < o->hdr.argc + o->hdr.envc + 1; i++) {
                char *z = s;
                while (z < end && *z)
                        z++;
                if (z >= end)
                        return -CORRAL_ORDERS_EINVAL;
                if (i < o->hdr.argc)
                        o->argv[i] = s;
                else if (i < o->hdr.argc + o->hdr.envc)
                        o->envp[i - o->hdr.argc] = s;
                else
                        o->cwd = s;
                s = z + 1;
        }
        return 0;
}

/* An rlimit of the orders made no higher than the one in force (its hard
 * limit now_max): raising a hard limit needs a privilege the jail does not
 * have, and a lower host limit is stricter anyway. */
static inline void corral_orders_lower(uint64_t *cur, uint64_t *max, uint64_t now_max, uint64_t infinity)
{
        if (now_max == infinity)
                return;
        if (*max > now_max)
                *max = now_max;
        if (*cur > *max)
                *cur = *max;
}

/* execve argv[0] with exec (which returns -errno), searching the jail's
 * PATH (from the program's own environment) when it has no slash.
 * Returns the most telling errno (positive) when nothing could be run. */
static inline int corral_orders_exec(char **argv, char **envp,
                                     long (*exec)(const char *path, char *const *argv, char *const *envp))
{
        const char *name = argv[0];
        for (const char *c = name; *c; c++)
                if (*c == '/')
                        return (int)-exec(name, argv, envp);
        const char *path = "/usr/local/bin:/usr/bin:/bin";
        for (char **e = envp; *e; e++)
                if ((*e)[0] == 'P' && (*e)[1] == 'A' && (*e)[2] == 'T' && (*e)[3] == 'H' && (*e)[4] == '=')
                        path = *e + 5;
        int best = CORRAL_ORDERS_ENOENT;
        size_t nlen = __builtin_strlen(name);
        while (*path) {
                const char *colon = path;
                while (*colon && *colon != ':')
                        colon++;
                size_t dlen = (size_t)(colon - path);
                char full[4096];
                if (dlen + 1 + nlen + 1 <= sizeof(full)) {
                        __builtin_memcpy(full, path, dlen);
                        full[dlen] = '/';
                        __builtin_memcpy(full + dlen + 1, name, nlen + 1);
                        long r = exec(full, argv, envp);
                        if (r == -CORRAL_ORDERS_EACCES || r == -CORRAL_ORDERS_ENOEXEC)
                                best = (int)-r;
                }
                path = *colon ? colon + 1 : colon;
        }
        return best;
}

/* In corral-init's environment: it adopts the program's process PID
 * (a pre-made jail), and fd 3 is their socket. */
#define CORRAL_INIT_ADOPT_VAR "CORRAL_INIT_ADOPT"
/* ... and in its program process, corral-init in program mode
 * (protocol.h), CORRAL_INIT_PROGRAM_VAR=1. */
#define CORRAL_INIT_PROGRAM_VAR "CORRAL_INIT_PROGRAM"

/* Messages on the socket between the program's process and init (a
 * SOCK_SEQPACKET pair made before the program's process starts): the
 * first byte says which. */
#define CORRAL_ORDERS_MSG_LISTENER 'L' /* + SCM_RIGHTS: the filter's user-notification listener */
#define CORRAL_ORDERS_MSG_EXEC_ERR 'E' /* + int: execve's errno; the process then exits */
#define CORRAL_ORDERS_MSG_ORDERS 'O'   /* + SCM_RIGHTS: the orders (a pre-made jail's init gets them late) */

#endif
