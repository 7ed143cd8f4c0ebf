/* digest.c: SHA-256 of a file (digest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <unistd.h>

#include "digest.h"

int digest_sha256_fd(int fd, char hex[DIGEST_HEX_LEN + 1])
{
        struct sha256_ctx ctx;
        sha256_init(&ctx);
        static const size_t chunk = 1u << 16;
        cleanup_free uint8_t *buf = malloc(chunk);
        if (buf == NULL)
                return -1;
        for (off_t off = 0;;) {
                ssize_t n = pread(fd, buf, chunk, off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -1;
                if (n == 0)
                        break;
                sha256_update(&ctx, (size_t)n, buf);
                off += n;
        }
        uint8_t d[SHA256_DIGEST_SIZE];
        sha256_digest(&ctx, sizeof(d), d);
        for (size_t i = 0; i < sizeof(d); i++)
                snprintf(hex + 2 * i, 3, "%02x", d[i]);
        return 0;
}
