/* wire.h: the framing, runtime directory and sockets shared by the session
 * daemon (daemon.c) and its clients (client.c).
 *
 * <runtime dir> is $XDG_RUNTIME_DIR/corral/sessions, else
 * /tmp/corral-$UID/sessions: a private 0700 directory holding host.sock
 * (the daemon, one per user and runtime directory), host.lock and one
 * <ID>.sock per session.  Thread-safe.
 *
 * Internal to src/session/: other modules go through client.h and host.h.
 */
#ifndef CORRAL_SESSION_WIRE_H
#define CORRAL_SESSION_WIRE_H

#include <stdbool.h>
#include <sys/un.h>

#include <corral/error.h>
#include <jansson.h>

#include "../lib/util.h"

#define CLIENT_FRAME_MAX (128u << 20)
#define WIRE_MAX_FDS 64      /* descriptors one frame may carry */

/* One frame on a socket: 0, or -1 when it could not be written whole (never
 * SIGPIPE). */
CORRAL_HIDDEN int wire_write(int fd, json_t *obj);
/* The same with descriptors passed along (SCM_RIGHTS), at most WIRE_MAX_FDS. */
CORRAL_HIDDEN int wire_write_fds(int fd, json_t *obj, const int *fds, size_t nfds);
/* One frame holding a JSON object, within timeout_ms (< 0: forever); NULL
 * on EOF, error, timeout, an oversized frame or anything but an object.
 * Descriptors sent with it are closed. */
CORRAL_HIDDEN json_t *wire_read(int fd, int timeout_ms);
/* The same keeping up to max descriptors sent with it (close-on-exec) in
 * fds, *ret_n of them; more than max fails the read (none kept). */
CORRAL_HIDDEN json_t *wire_read_fds(int fd, int timeout_ms, int *fds, size_t max, size_t *ret_n);
/* Clear a start request's credential values ("secrets": [{"value"}]) in
 * place, before the request is freed: both ends hold them only as long as
 * they must. */
CORRAL_HIDDEN void wire_wipe_credentials(json_t *req);
/* The runtime directory; NULL with err set.  Without create, a missing
 * directory gives NULL with errno ENOENT and no error. */
CORRAL_HIDDEN char *wire_runtime_dir(bool create, corral_error **err);
/* <dir>/<name>.sock into sa. */
CORRAL_HIDDEN int wire_socket_path(const char *dir, const char *name, struct sockaddr_un *sa, corral_error **err);

#endif
