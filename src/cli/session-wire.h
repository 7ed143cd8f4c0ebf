/* session-wire.h: the framing, runtime directory and sockets shared by
 * `corral session`'s clients (session.c) and its host (session-host.c).
 *
 * <runtime dir> is $XDG_RUNTIME_DIR/corral/sessions, else
 * /tmp/corral-$UID/sessions: a private 0700 directory holding host.sock
 * (the session host, one per user and runtime directory), host.lock and
 * one <ID>.sock per session.
 */
#ifndef CORRAL_CLI_SESSION_WIRE_H
#define CORRAL_CLI_SESSION_WIRE_H

#include <stdbool.h>
#include <sys/un.h>

#include <corral/error.h>
#include <jansson.h>

#define ID_LEN 12
#define CLIENT_FRAME_MAX (128u << 20)

/* One frame: 0, or -1 when it could not be written whole. */
int wire_write(int fd, json_t *obj);
/* One frame holding a JSON object, within timeout_ms (< 0: forever); NULL
 * on EOF, error, timeout, an oversized frame or anything but an object. */
json_t *wire_read(int fd, int timeout_ms);
/* The runtime directory; NULL with err set.  Without create, a missing
 * directory gives NULL with errno ENOENT and no error. */
char *wire_runtime_dir(bool create, corral_error **err);
/* ID_LEN lowercase hex digits. */
bool wire_id_valid(const char *id);
/* <dir>/<name>.sock into sa. */
int wire_socket_path(const char *dir, const char *name, struct sockaddr_un *sa, corral_error **err);
/* Connect to session id: the fd, or -1 with err (kind usage for an unknown
 * session).  A socket nobody listens on any more is removed. */
int wire_connect(const char *id, corral_error **err);

#endif
