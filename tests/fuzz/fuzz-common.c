/* fuzz-common.c: what every fuzz target links besides its own file (see
 * fuzz.h): the invariant failure path, memfd files and the UBSan options. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

/* UBSan only prints by default; a report must end the run as a crash. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "fuzz invariant failed: %s:%d: (%s)", file, line, cond);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
        abort();
}

int fuzz_memfd(const char *name, const void *data, size_t len, char *ret_path, size_t path_len)
{
        int fd = memfd_create(name, MFD_CLOEXEC);
        FUZZ_ASSERT(fd >= 0, "memfd_create failed");
        const char *p = data;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                FUZZ_ASSERT(n > 0, "write to memfd failed");
                p += n;
                len -= (size_t)n;
        }
        snprintf(ret_path, path_len, "/proc/self/fd/%d", fd);
        return fd;
}
