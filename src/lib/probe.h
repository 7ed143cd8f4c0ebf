/* probe.h: what this host offers the jail, checked (`corral doctor`, a
 * server's GET /health).
 *
 * Each check is a JSON object appended to an array:
 *   {"name": "seccomp", "ok": true, "state": "ok", "detail": "...",
 *    "advice": "..." (what to do; only when not ok)}
 * "state" is one word: "ok", "missing" (needed and absent), "none" (absent
 * and not needed), or the check's own ("yes", "fast", "slow").  Messages
 * name settings in words; a front end adds its spelling (its flags).
 * Other modules add their checks with probe_add() (model, workspace,
 * session: agent/health.h gathers them all).
 *
 * Threads: thread-safe.  probe_jail(), probe_python() and probe_net_proxy() run jails (tens
 * of milliseconds, and up to a minute for Python's imports); probe_jail()
 * forks once to try a user namespace (the child only calls unshare()).
 */
#ifndef CORRAL_LIB_PROBE_H
#define CORRAL_LIB_PROBE_H

#include <stdbool.h>

#include <jansson.h>

#include "util.h"

/* Append {"name", "ok", "state", "detail"[, "advice"]} to checks (the
 * advice only when not ok); the check, borrowed, or NULL when out of
 * memory. */
CORRAL_HIDDEN json_t *probe_add(json_t *checks, const char *name, bool ok, const char *state, const char *detail,
                                const char *advice);

/* {"system", "release", "uid"}: the kernel and who asks. */
CORRAL_HIDDEN json_t *probe_host(void);

/* The jail's mechanisms: user namespaces, seccomp, no_new_privs, cgroup v2
 * and v1, the cost of cgroup v1 migration (when v1 controllers are used),
 * the limits backend, Landlock; then "jail": /bin/true run in a real jail.
 * True when that jail ran: corral can run code here. */
CORRAL_HIDDEN bool probe_jail(json_t *checks);

/* "python in a jail": Python and numpy, pandas, matplotlib, scipy as a
 * jail sees them (their versions, or which are missing). */
CORRAL_HIDDEN void probe_python(json_t *checks);
/* "libssl": OpenSSL's version when it loads (on first use, ssl-dl.h),
 * else what is missing and which package provides it. */
CORRAL_HIDDEN void probe_openssl(json_t *checks);
/* Does the --net allow proxy answer inside a jail?  A request for a host
 * not on the list, refused by the proxy: nothing leaves the host. */
CORRAL_HIDDEN void probe_net_proxy(json_t *checks);

#endif
