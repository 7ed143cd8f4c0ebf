/* session-host.h: the session host (session-host.c), the process that
 * holds every `corral session` of a user and runtime directory. */
#ifndef CORRAL_CLI_SESSION_HOST_H
#define CORRAL_CLI_SESSION_HOST_H

#include <stdbool.h>

#include <corral/error.h>

/* `corral session host --ready-fd N`: run the host; never returns. */
__attribute__((noreturn)) int session_host_main(int ready_fd);

/* A connection to the host's socket; with spawn, a host is started when
 * none answers.  -1 with err. */
int session_host_connect(bool spawn, corral_error **err);

#endif
