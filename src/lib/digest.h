/* digest.h: SHA-256 of a file, for telling whether two runs saw the same
 * data (a replay on other inputs: docs/providers.md, "Replay").  Computed
 * by nettle, linked statically.  Thread-safe. */
#ifndef CORRAL_DIGEST_H
#define CORRAL_DIGEST_H

#include "util.h"

#define DIGEST_HEX_LEN 64

/* The SHA-256 of everything fd reads from offset 0, as 64 lowercase hex
 * digits and a NUL in hex; 0, or -1 with errno. */
CORRAL_HIDDEN int digest_sha256_fd(int fd, char hex[DIGEST_HEX_LEN + 1]);

#endif
