/* exec-pool.h: the session host's pool of pre-made one-shot jails for
 * `corral exec` (docs/exec-pool.md).
 *
 * exec_pool_new() starts a background thread that keeps up to `target`
 * jails made in advance (jail_premade_make(), the library's default
 * configuration) and replaces one idle for EXEC_POOL_IDLE_MS; it never
 * makes one on a caller's path.  exec_pool_take() hands one that fits a
 * configuration to its caller (who claims it with jail_premade_claim()) and
 * wakes the thread to refill (once no claim came for
 * EXEC_POOL_REFILL_DEFER_MS), or says why there is none (counted as a
 * fallback).  exec_pool_status() is what `corral session status` shows.
 * Thread-safe.
 *
 * Internal to src/session/: the daemon owns the pool.
 */
#ifndef CORRAL_SESSION_EXEC_POOL_H
#define CORRAL_SESSION_EXEC_POOL_H

#include <corral/jail.h>
#include <jansson.h>

/* Two by default: a claimed jail starts 4-5 ms sooner than a direct one,
 * and under a steady stream of claims the pool steps aside (exec-pool.c,
 * refill_wait_ms()); docs/exec-pool.md has the figures. */
#define EXEC_POOL_DEFAULT 2
#define EXEC_POOL_MAX 16
#define EXEC_POOL_IDLE_MS (10 * 60 * 1000.0)
/* A refill waits until no claim came for this long (exec-pool.c says why). */
#define EXEC_POOL_REFILL_DEFER_MS 100.0

/* The socket (EXEC_POOL_SOCKET.sock) the host listens on beside host.sock
 * while its pool is on, served by a thread waiting in accept() (daemon.c):
 * corral exec claims there, and with no pool (the default) finds nothing
 * to connect to and starts its jail directly at once.  host.sock serves
 * the same exec-claim. */
#define EXEC_POOL_SOCKET "exec-pool"

struct exec_pool;
struct jail_premade;

struct exec_pool_options {
        int target;      /* jails kept ready: CORRAL_EXEC_POOL, EXEC_POOL_DEFAULT when unset, 0 (off) to
                          * EXEC_POOL_MAX */
        double quiet_ms; /* a refill waits until no claim came for this long: CORRAL_EXEC_POOL_QUIET_MS,
                          * EXEC_POOL_REFILL_DEFER_MS when unset, 0 (at once) to 60000 */
};
/* The options from the environment: 0, or -1 (error set) for a value out
 * of range. */
int exec_pool_options_from_env(struct exec_pool_options *ret, corral_error **ret_err);
/* NULL when its target is 0 or the thread cannot start (error set then). */
struct exec_pool *exec_pool_new(const struct exec_pool_options *opt, corral_error **ret_err);
/* A ready jail for cfg, or NULL with *ret_why (static) saying why not. */
struct jail_premade *exec_pool_take(struct exec_pool *p, const corral_jail_config *cfg, const char **ret_why);
/* {"size", "target", "made", "claimed", "failed", "replaced", "fallbacks": {WHY: N}} */
json_t *exec_pool_status(struct exec_pool *p);
/* Serve {"op": "exec-claim", "profile": {...}, "argv": [...], "ticket": K}
 * (with "stdin": true, the caller's stdin goes through; with "script":
 * {"name", "fd": K}, the program text is the sealed memfd fds[K] of the
 * request) on the client's connection fd (p may be NULL: no pool).  The
 * ticket fds[K] is a pipe holding one byte (exec-pool.c, ticket_take()):
 * the host runs the program only once it took the byte, and a client that
 * gave up waiting takes it back first.  Answers {"t": "fallback", "why"}
 * when no jail of the pool fits, or the claim has no ticket (an older
 * corral's; nothing ran: the client starts a direct jail); nothing when
 * the client took its ticket back; else it starts the program and answers
 * {"t": "claimed"} carrying the read ends of the jail's stdout and stderr
 * (SCM_RIGHTS, for the client to read and cap), runs the jail with the
 * connection as its cancel (the client's hang-up kills it at once), then
 * answers {"t": "result", "result": {...}} (the output fields empty: the
 * client has the output), {"t": "fallback"} when the claim failed before
 * the program started, or {"t": "error"}. */
void exec_pool_serve_claim(struct exec_pool *p, int fd, const json_t *req, const int *fds, size_t nfds);
/* `corral exec`'s side: run cfg in a jail of the user's session host's
 * pool (docs/exec-pool.md, "When corral exec uses the pool"): 0 with ret
 * (output read and capped here, with io's callbacks), 1 when it did not
 * (no host, no jail that fits within CORRAL_EXEC_POOL_WAIT_MS, default 50
 * ms, or CORRAL_EXEC_POOL=0: nothing ran; start a direct jail), -1 with
 * ret_err once the program may have run (the host ended meanwhile: never
 * run it again).  On 0, *ret_conn is the connection to the host, for the
 * caller to close once it has passed the result on: the host tears the
 * jail down at that hang-up, off the caller's path. */
int exec_pool_claim(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret, int *ret_conn,
                    corral_error **ret_err);
/* Stop the thread and tear down every jail never claimed; accepts NULL. */
void exec_pool_free(struct exec_pool *p);

#endif
