/* fuzz-artifact.c: the content detectors of src/workspace/artifact.c on
 * arbitrary bytes, as a jailed program may write them to a file.
 *
 * Input: byte 0 picks the file name (a hint among the text formats: .csv,
 * .tsv, .json, .md, .py, none, ...), byte 1 the mode (bit 0: a scan cap of
 * 300 bytes; bit 1: the bytes are only the head of a larger file), the rest
 * is the file.
 *
 * Invariants: detection succeeds with a known "format"; counts are
 * non-negative integers; a cut or capped scan never claims an exact count
 * ("rows"/"lines" become "..._at_least"); the entry serializes as JSON and
 * its description is valid UTF-8 without NUL; and, in whole-file mode, the
 * same bytes written to a real file and typed through artifact_detect_at()
 * (the path the workspace uses: opened beneath a directory fd, read with
 * pread) give exactly the same fields. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/workspace/artifact.h"
#include "fuzz.h"
#include "util.h"

static const char *const names[] = { "out.csv", "out.tsv",  "out.json", "out.jsonl", "report.md", "step.py",
                                     "noext",   "page.html", "plot.png", "data.txt",  "book.xlsx", "x.pdf" };

static const char *const formats[] = { "png",  "jpeg", "gif",  "svg",  "pdf",     "csv",  "tsv",  "json",
                                       "jsonl", "markdown", "html", "xml", "text", "xlsx", "docx", "pptx",
                                       "zip",  "parquet", "gzip", "zstd", "sqlite", "npy", "elf", "binary",
                                       "empty", "python", "shell", "yaml", "toml", "sql" };

static char dir[256];
static int dir_fd = -1;

static void cleanup(void)
{
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                unlinkat(dir_fd, names[i], 0);
        close(dir_fd);
        rmdir(dir);
}

/* A private directory for the file-path check, removed at exit. */
static int scratch_dir(void)
{
        if (dir_fd >= 0)
                return dir_fd;
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof(dir), "%s/fuzz-artifact-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
        FUZZ_ASSERT(mkdtemp(dir) != NULL, "cannot make a scratch directory");
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FUZZ_ASSERT(dir_fd >= 0);
        atexit(cleanup);
        return dir_fd;
}

static void check_entry(const json_t *e, bool exact_counts)
{
        const char *format = json_string_value(json_object_get(e, "format"));
        FUZZ_ASSERT(format != NULL, "no format");
        bool known = false;
        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
                known |= strcmp(format, formats[i]) == 0;
        FUZZ_ASSERT(known, "unknown format '%s'", format);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)e, key, v) {
                if (json_is_integer(v))
                        FUZZ_ASSERT(json_integer_value(v) >= 0, "%s is negative", key);
        }
        if (!exact_counts)
                FUZZ_ASSERT(!json_object_get(e, "rows") && !json_object_get(e, "lines") &&
                                    !json_object_get(e, "length") && !json_object_get(e, "keys"),
                            "an exact count from a partial scan");
        char *s = json_dumps(e, JSON_COMPACT);
        FUZZ_ASSERT(s != NULL, "the entry does not serialize");
        free(s);
        char buf[256];
        artifact_describe(e, buf, sizeof(buf));
        FUZZ_ASSERT(buf[0] != '\0' && utf8_valid(buf, strlen(buf)), "bad description");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 2)
                return 0;
        const char *name = names[data[0] % (sizeof(names) / sizeof(names[0]))];
        bool capped = data[1] & 1, head_only = data[1] & 2;
        data += 2;
        size -= 2;
        uint64_t cap = capped ? 300 : ARTIFACT_SCAN_MAX;
        uint64_t file_size = head_only ? (uint64_t)size + 1000 : size;

        json_t *mem = json_object();
        FUZZ_ASSERT(mem != NULL);
        FUZZ_ASSERT(artifact_detect_mem(data, size, file_size, name, cap, mem) == 0, "detection failed");
        /* Counts are exact only when the whole file was scanned. */
        check_entry(mem, !head_only && size <= cap);

        if (!head_only) {
                int dfd = scratch_dir();
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                FUZZ_ASSERT(fd >= 0);
                FUZZ_ASSERT(write_all(fd, data, size) == 0);
                close(fd);
                json_t *file = json_object();
                FUZZ_ASSERT(artifact_detect_at(dfd, name, cap, file) == 0, "typing the file failed");
                if (!json_equal(mem, file)) {
                        char *a = json_dumps(mem, JSON_COMPACT), *b = json_dumps(file, JSON_COMPACT);
                        FUZZ_ASSERT(false, "memory %s, file %s", a, b);
                }
                json_decref(file);
        }
        json_decref(mem);
        return 0;
}
