/* fuzz-archive.c: reading a tar archive someone else wrote
 * (src/workspace/archive.c): `corral workspace list|extract` and
 * `corral run --from` take archives from anywhere, so their bytes are
 * untrusted.
 *
 * The input is an archive (any bytes).  It is listed from memory
 * (archive_list), then extracted from a memfd into a fresh destination in
 * a private directory, with small limits.  Invariants: no crash, leak or
 * hang; extraction succeeds only when the listing found nothing to refuse
 * (extraction is at least as strict); a failed extraction leaves the
 * private directory exactly as it was (no destination, no temporary
 * directory); a successful one leaves only the destination, and a sentinel
 * file beside it is untouched. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/workspace/archive.h"
#include "../../src/workspace/workspace-internal.h"
#include "fuzz.h"

static char dir[64];

static void cleanup(void)
{
        (void)ws_remove_at(AT_FDCWD, dir);
}

static size_t entries_in(const char *path)
{
        struct ws_names names;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FUZZ_ASSERT(fd >= 0);
        FUZZ_ASSERT(ws_names_read(fd, 100, &names) == 0);
        size_t n = names.n;
        ws_names_release(&names);
        close(fd);
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (dir[0] == '\0') {
                snprintf(dir, sizeof(dir), "/tmp/corral-fuzz-archive-XXXXXX");
                FUZZ_ASSERT(mkdtemp(dir) != NULL);
                atexit(cleanup);
                char sentinel[128];
                snprintf(sentinel, sizeof(sentinel), "%s/sentinel", dir);
                FILE *f = fopen(sentinel, "w");
                FUZZ_ASSERT(f != NULL);
                fputs("untouched", f);
                fclose(f);
        }
        const struct archive_limits lim = { .max_entries = 2000, .max_bytes = 8u << 20, .max_ratio = 100,
                                            .ratio_min_bytes = 1u << 20 };
        json_t *list = NULL;
        corral_error *err = NULL;
        int lr = archive_list(NULL, data, size, &lim, &list, &err);
        FUZZ_ASSERT(lr == 0 || (err && err->kind == CORRAL_ERR_USAGE), "%s", err ? err->msg : "");
        bool list_ok = lr == 0 && json_is_true(json_object_get(list, "ok"));
        json_decref(list);
        corral_error_clear(&err);

        char path[64], dest[128];
        int fd = fuzz_memfd("archive", data, size, path, sizeof(path));
        snprintf(dest, sizeof(dest), "%s/dest", dir);
        json_t *report = NULL;
        int xr = archive_extract(path, dest, &lim, &report, &err);
        close(fd);
        if (xr == 0) {
                FUZZ_ASSERT(list_ok, "extracted what the listing refused");
                FUZZ_ASSERT(entries_in(dir) == 2);
                FUZZ_ASSERT(ws_remove_at(AT_FDCWD, dest) == 0);
        } else {
                FUZZ_ASSERT(err && err->kind != CORRAL_ERR_UNSUPPORTED, "%s", err ? err->msg : "");
                FUZZ_ASSERT(entries_in(dir) == 1, "left behind after: %s", err->msg);
        }
        char sentinel[128];
        snprintf(sentinel, sizeof(sentinel), "%s/sentinel", dir);
        struct stat st;
        FUZZ_ASSERT(lstat(sentinel, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 9);
        json_decref(report);
        corral_error_free(err);
        return 0;
}
