/* warm.h: warm sessions, forked from a zygote (docs/sessions.md, "Warm
 * sessions").
 *
 * One zygote per corral process: a jail running corral-zygote (numpy,
 * pandas, matplotlib, scipy and the driver imported), started on the first
 * warm session and stopped when the last one ends.  A pool of pre-forked
 * sessions (namespaces made, waiting for their workspace) is refilled by a
 * thread of its own, so that taking one costs a cgroup, a mount and a fork.
 *
 * warm_claim() hands out a session; warm_run() then supervises it to its end
 * exactly as corral_jail_run() supervises a jail (same io callbacks, same
 * result), so session.c drives both the same way.
 *
 * Threads: every function is thread-safe (the pool under one lock; several
 * threads may prestart, claim and end at once); a struct warm is one
 * caller's at a time.
 */
#ifndef CORRAL_WARM_H
#define CORRAL_WARM_H

#include <corral/jail.h>

#include "../lib/util.h"

struct warm;

/* Why cfg cannot run warm (a usage error in ret_err), or 0. */
CORRAL_HIDDEN int warm_supported(const corral_jail_config *cfg, corral_error **ret_err);
/* Take a session from the pool (starting the zygote if needed) and give it
 * cfg's workspace, limits and environment; within timeout_s. */
CORRAL_HIDDEN int warm_claim(const corral_jail_config *cfg, double timeout_s, struct warm **ret,
                             corral_error **ret_err);
/* The session's frame socket (requests in, frames out), borrowed. */
CORRAL_HIDDEN int warm_frames_fd(struct warm *w);
/* Supervise the session to its end (the wall limit cfg->timeout_s, the
 * cancel fd, its init's reports) and tear it down; then free w. */
CORRAL_HIDDEN int warm_run(struct warm *w, const corral_jail_config *cfg, const corral_jail_io *io,
                           corral_jail_result *ret, corral_error **ret_err);
/* Release a claimed session that was never run. */
CORRAL_HIDDEN void warm_release(struct warm *w);
/* A session holds the zygote while it lives (restarts included); the last
 * warm_unref() stops it and empties the pool. */
CORRAL_HIDDEN void warm_ref(void);
CORRAL_HIDDEN void warm_unref(void);
/* Start the zygote now on a thread of our own, holding it (warm_ref()), so
 * that a warm claim to come finds it ready: for a caller that knows it
 * will want one (corral run, during its first model request).  A failure
 * is left for the claim to report.  warm_prestart_end(), after the last
 * warm session ended, drops the hold; the last one of several prestarts
 * waits for that thread (first stopping a zygote still starting when no
 * one else holds it). */
CORRAL_HIDDEN void warm_prestart(void);
CORRAL_HIDDEN void warm_prestart_end(void);
/* The zygote's pid on the host, 0 when none runs (tests, benchmarks). */
CORRAL_HIDDEN pid_t warm_zygote_pid(void);
/* Sessions waiting in the pool now. */
CORRAL_HIDDEN int warm_pool_size(void);

#endif
