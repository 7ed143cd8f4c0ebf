/* fuzz-cgroup.c: cgroup_layout_detect_from() (src/lib/cgroup.c) on fuzzed
 * /proc/self/mountinfo and /proc/self/cgroup text.
 *
 * Input: mountinfo, a 0x00 byte, then /proc/self/cgroup (empty when there is
 * no 0x00).  Both go to memfds read by their /proc/self/fd paths.  The
 * detected layout may name real files under a fuzzed mount point (it reads
 * <v2_dir>/cgroup.controllers), which is harmless: reading only.
 *
 * Invariants: detection succeeds (both files exist); every path it returns
 * is a NUL-terminated string that starts with the mount point (field 5,
 * unescaped, trailing slashes dropped) of a line of the input mountinfo,
 * followed by '/' or its end; the v2 controller flags are only set with a
 * v2 directory; nothing leaks. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "jail-internal.h"

/* The mount points of mountinfo (a NUL-terminated copy), NULL-terminated. */
static char **mount_points(char *text)
{
        size_t n = 0;
        char **v = calloc(1, sizeof(char *));
        FUZZ_ASSERT(v != NULL);
        char *save_line = NULL;
        for (char *line = strtok_r(text, "\n", &save_line); line; line = strtok_r(NULL, "\n", &save_line)) {
                char *save = NULL, *tok = strtok_r(line, " ", &save);
                for (int i = 0; i < 4 && tok; i++)
                        tok = strtok_r(NULL, " ", &save);
                if (tok == NULL)
                        continue;
                mountinfo_unescape(tok);
                size_t l = strlen(tok);
                while (l > 1 && tok[l - 1] == '/')
                        tok[--l] = '\0';
                v = realloc(v, (n + 2) * sizeof(char *));
                FUZZ_ASSERT(v != NULL);
                v[n++] = tok;
                v[n] = NULL;
        }
        return v;
}

static void check_path(const char *what, const char *path, char **mounts)
{
        if (path == NULL)
                return;
        size_t len = strlen(path); /* ASan: the string ends inside its allocation */
        for (size_t i = 0; mounts[i]; i++) {
                size_t n = strlen(mounts[i]);
                if (n <= len && strncmp(path, mounts[i], n) == 0 &&
                    (n == 0 || mounts[i][n - 1] == '/' || path[n] == '/' || path[n] == '\0'))
                        return;
        }
        fuzz_fail(__FILE__, __LINE__, what, " '%s' is not beneath any mount point of the input", path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *zero = memchr(data, 0, size);
        size_t mi_len = zero ? (size_t)(zero - data) : size;
        const uint8_t *cg = zero ? zero + 1 : data + size;
        size_t cg_len = (size_t)(data + size - cg);

        char mi_path[64], cg_path[64];
        int mi_fd = fuzz_memfd("mountinfo", data, mi_len, mi_path, sizeof(mi_path));
        int cg_fd = fuzz_memfd("cgroup", cg, cg_len, cg_path, sizeof(cg_path));

        struct cgroup_layout l;
        int r = cgroup_layout_detect_from(&l, mi_path, cg_path);
        FUZZ_ASSERT(r == 0, "cgroup_layout_detect_from returned %d", r);

        char *text = malloc(mi_len + 1);
        FUZZ_ASSERT(text != NULL);
        memcpy(text, data, mi_len);
        text[mi_len] = '\0';
        char **mounts = mount_points(text);
        check_path("v2_dir", l.v2_dir, mounts);
        check_path("v1_memory", l.v1_memory, mounts);
        check_path("v1_pids", l.v1_pids, mounts);
        check_path("v1_cpu", l.v1_cpu, mounts);
        check_path("v1_cpuacct", l.v1_cpuacct, mounts);
        FUZZ_ASSERT(l.v2_dir != NULL || !(l.v2_memory || l.v2_pids || l.v2_cpu), "v2 controllers without a v2 dir");
        FUZZ_ASSERT(!l.v2_moved_self && !l.test_tree);

        free(mounts);
        free(text);
        cgroup_layout_release(&l);
        close(mi_fd);
        close(cg_fd);
        return 0;
}
