/* daemon.h: the session daemon, the process behind `corral session` that
 * serves a session host (host.h) on unix sockets in the user's runtime
 * directory (wire.h; docs/sessions.md, "The session host").  Clients start
 * it on demand (client.h).
 */
#ifndef CORRAL_SESSION_DAEMON_H
#define CORRAL_SESSION_DAEMON_H

#include "../lib/util.h"

/* Run the daemon: report to ready_fd ("ok PID", "busy" when another holds
 * the runtime directory, or "error KIND MESSAGE"), serve until the last
 * session has ended (after CORRAL_SESSION_LINGER seconds when it holds the
 * zygote), a shutdown request, or cancel_fd becomes readable (the caller's
 * signals); then stop every session and exit.  Never returns. */
CORRAL_HIDDEN __attribute__((noreturn)) void session_daemon_main(int ready_fd, int cancel_fd);

#endif
