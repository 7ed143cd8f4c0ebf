/* replay.c: main() for fuzz targets built without libFuzzer.
 *
 *   fuzz-NAME PATH...
 *
 * Runs LLVMFuzzerTestOneInput() once on every regular file named, and on
 * every regular file directly inside each directory named (in name order).
 * Each input is copied into a heap buffer of exactly its size, so ASan sees
 * any read past its end.  Exits 0 after the last input, or non-zero when a
 * path cannot be read or no input was found at all (a mistyped corpus path
 * must not pass as an empty run); a broken invariant aborts (see fuzz.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Optional, as in libFuzzer. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int replay_file(int dirfd, const char *name, const char *shown)
{
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                fprintf(stderr, "replay: cannot open '%s': %s\n", shown, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        size_t size = (size_t)st.st_size;
        uint8_t *data = malloc(size ? size : 1);
        size_t got = 0;
        while (data != NULL && got < size) {
                ssize_t n = read(fd, data + got, size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t)n;
        }
        close(fd);
        if (data == NULL || got != size) {
                fprintf(stderr, "replay: cannot read '%s'\n", shown);
                free(data);
                return -1;
        }
        fprintf(stderr, "replay: %s (%zu bytes)\n", shown, size);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replay the regular files in dir; returns how many, or -1. */
static long replay_dir(const char *dir)
{
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent **names = NULL;
        int n = dfd < 0 ? -1 : scandir(dir, &names, NULL, by_name);
        if (n < 0) {
                fprintf(stderr, "replay: cannot list '%s': %s\n", dir, strerror(errno));
                if (dfd >= 0)
                        close(dfd);
                return -1;
        }
        long count = 0;
        int bad = 0;
        for (int i = 0; i < n; i++) {
                struct stat st;
                if (fstatat(dfd, names[i]->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
                        char shown[4096];
                        snprintf(shown, sizeof(shown), "%s/%s", dir, names[i]->d_name);
                        if (replay_file(dfd, names[i]->d_name, shown) < 0)
                                bad = 1;
                        else
                                count++;
                }
                free(names[i]);
        }
        free(names);
        close(dfd);
        return bad ? -1 : count;
}

int main(int argc, char **argv)
{
        if (LLVMFuzzerInitialize)
                LLVMFuzzerInitialize(&argc, &argv);
        if (argc < 2) {
                fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
                return 2;
        }
        long total = 0;
        int bad = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                long n;
                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                        n = replay_dir(argv[i]);
                else
                        n = replay_file(AT_FDCWD, argv[i], argv[i]) < 0 ? -1 : 1;
                if (n < 0)
                        bad = 1;
                else
                        total += n;
        }
        printf("replayed %ld inputs\n", total);
        if (total == 0)
                fprintf(stderr, "replay: no inputs found\n");
        return bad || total == 0 ? 1 : 0;
}
