/* auth.h: who may call `corral serve` (docs/api.md, "Protection").
 *
 * A code-execution service is a remote shell: nothing is anonymous.  Each
 * token is a principal that sees only its own sandboxes.  Tokens come from
 * a file (`--tokens FILE`: one "TOKEN [NAME]" a line, the file not readable
 * by others) or, without one, from a random token the server makes and
 * writes to a 0600 file.  A presented token is compared with every known
 * one in constant time.
 *
 * Threads: an auth is built once and then only read: auth_check() is
 * thread-safe.
 */
#ifndef CORRAL_SERVER_AUTH_H
#define CORRAL_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "../lib/util.h"

/* A token is 16 to 256 printable ASCII characters without spaces. */
#define AUTH_TOKEN_MIN 16
#define AUTH_TOKEN_MAX 256

struct auth;

/* The principals of a tokens file: refused when group or others may read
 * it, when a line is malformed (the line number said) or a token repeats. */
CORRAL_HIDDEN int auth_load(const char *path, struct auth **ret, corral_error **ret_err);
/* One random token (64 hex digits) named "default", written to path (made
 * 0600, replacing an older one atomically); *ret_token is borrowed from
 * the auth. */
CORRAL_HIDDEN int auth_generate(const char *path, struct auth **ret, const char **ret_token, corral_error **ret_err);
CORRAL_HIDDEN void auth_free(struct auth *a);

/* The principal of token (len bytes), or -1.  The time taken does not
 * depend on where a wrong token differs from a right one. */
CORRAL_HIDDEN int auth_check(const struct auth *a, const char *token, size_t len);
/* known == given, in a time that does not depend on where they differ. */
CORRAL_HIDDEN bool auth_equal(const char *known, size_t known_len, const char *given, size_t given_len);
/* bytes (at most 64) random bytes as 2*bytes hex digits and a NUL in out. */
CORRAL_HIDDEN int auth_random_hex(char *out, size_t bytes);
/* A principal's name ("default", or the file's NAME; else "token-N"). */
CORRAL_HIDDEN const char *auth_name(const struct auth *a, int principal);
CORRAL_HIDDEN size_t auth_count(const struct auth *a);

#endif
