/* health.h: what this host offers corral, as one JSON report (`corral
 * doctor`, `corral doctor --json`, a server's GET /health):
 *
 *   {"host": {"system", "release", "uid"},
 *    "checks": [{"name", "ok", "state", "detail", "advice"?, ...}, ...],
 *    "can_run": bool}
 *
 * The checks, in order: the jail's mechanisms and a real jail
 * (lib/probe.h); when that jail ran, Python and its data libraries in a
 * jail; libcurl and libarchive (loaded on first use); the model a run
 * would use (model.h); the session host (session/client.h).  "can_run":
 * the jail ran, so corral can run code here.
 *
 * Threads: thread-safe; a report runs jails and asks the model's endpoint
 * (seconds; up to a minute when Python's imports are slow).
 */
#ifndef CORRAL_AGENT_HEALTH_H
#define CORRAL_AGENT_HEALTH_H

#include <jansson.h>

#include "../lib/util.h"

/* The report; NULL when out of memory. */
CORRAL_HIDDEN json_t *health_report(void);

#endif
