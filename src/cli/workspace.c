/* workspace.c: `corral workspace`, workspace archives from the command line.
 *
 * `list` shows an archive's entries and which of them extraction would
 * refuse; `extract` extracts it, all or nothing (src/workspace/archive.h).
 * Everything an archive names is passed through term_sanitize() before
 * it reaches a terminal: entry names are as hostile as the archive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../agent/agent.h"
#include "../lib/redact.h"
#include "../lib/util.h"
#include "../trace/render.h"
#include "../workspace/archive.h"
#include "cli.h"

#ifndef CORRAL_VERSION
#define CORRAL_VERSION "0.1.0"
#endif

enum {
        EXIT_WS_REFUSED = 1, /* the archive was refused or could not be read, or extraction failed */
        EXIT_WS_USAGE = EXIT_USAGE_SUBCOMMAND,
};

static const char help_text[] =
        "usage: corral workspace list [--json] FILE.tar\n"
        "       corral workspace extract FILE.tar DIR\n"
        "\n"
        "Read a workspace archive (corral run --archive) or any tar archive: ustar, pax or GNU\n"
        "tar, uncompressed or gzip- or zstd-compressed; no other format.\n"
        "\n"
        "list      show the entries (type, mode, size, mtime, path) and which of them\n"
        "          extraction would refuse, and why\n"
        "      --json              one JSON object: format, filters, entries, refused, ok\n"
        "extract   extract into DIR, which must not exist or be empty; all or nothing:\n"
        "          a refused archive leaves neither DIR nor anything else behind\n"
        "\n"
        "limits (both):\n"
        "      --max-entries N     at most N entries (default 100000)\n"
        "      --max-size SIZE     at most SIZE of file data in all (default 8G)\n"
        "      --max-ratio N       refuse an archive that expands more than N times its\n"
        "                          compressed size, past 16 MiB (default 200)\n"
        "  -h, --help              show this help\n"
        "\n"
        "Refused: absolute paths, '..', entries beneath a symlink, symlinks to absolute paths\n"
        "or out of the tree, hard links to anything but a file extracted before them, device\n"
        "files, FIFOs, sockets, other formats, and the limits above.  Owners are ignored;\n"
        "set-id and sticky bits are dropped.\n"
        "\n"
        "exit statuses:\n"
        "  0 done; 1 the archive was refused or could not be read (list: an entry would be\n"
        "  refused), or extraction failed; 2 usage error.\n";

enum { OPT_JSON = 300, OPT_MAX_ENTRIES, OPT_MAX_SIZE, OPT_MAX_RATIO };

static const struct option options[] = {
        { "json", no_argument, NULL, OPT_JSON },
        { "max-entries", required_argument, NULL, OPT_MAX_ENTRIES },
        { "max-size", required_argument, NULL, OPT_MAX_SIZE },
        { "max-ratio", required_argument, NULL, OPT_MAX_RATIO },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

#define usage_error(...) cli_usage_error("workspace", EXIT_WS_USAGE, __VA_ARGS__)

/* ---- corral workspace ---- */

/* Print s (from an archive) with control characters made harmless; a
 * newline or tab in a name is shown as ^J or ^I (it must not forge a line). */
static void put_clean(FILE *f, const char *s)
{
        cleanup_free char *c = term_sanitize(s, strlen(s), NULL);
        for (const char *p = c ? c : "?"; *p; p++) {
                if (*p == '\n' || *p == '\t')
                        fprintf(f, "^%c", *p + 0x40);
                else
                        fputc(*p, f);
        }
}

static void mode_string(const char *type, int mode, char *buf)
{
        buf[0] = strcmp(type, "dir") == 0       ? 'd'
                 : strcmp(type, "symlink") == 0 ? 'l'
                 : strcmp(type, "hardlink") == 0 ? 'h'
                 : strcmp(type, "file") == 0     ? '-'
                 : strcmp(type, "fifo") == 0     ? 'p'
                 : strcmp(type, "socket") == 0   ? 's'
                                                 : 'c';
        static const char rwx[] = "rwxrwxrwx";
        for (int i = 0; i < 9; i++)
                buf[1 + i] = mode & (0400 >> i) ? rwx[i] : '-';
        buf[10] = '\0';
}

static void print_list(const json_t *list)
{
        const json_t *e;
        size_t i;
        json_array_foreach(json_object_get(list, "entries"), i, e) {
                const char *type = json_string_value(json_object_get(e, "type"));
                const char *path = json_string_value(json_object_get(e, "path"));
                const char *target = json_string_value(json_object_get(e, "target"));
                const char *refused = json_string_value(json_object_get(e, "refused"));
                char mode[16], when[32] = "?";
                mode_string(type ? type : "", (int)json_integer_value(json_object_get(e, "mode")), mode);
                time_t t = (time_t)json_integer_value(json_object_get(e, "mtime"));
                struct tm tm;
                if (gmtime_r(&t, &tm))
                        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
                printf("%s %12" JSON_INTEGER_FORMAT " %s ", mode, json_integer_value(json_object_get(e, "size")),
                       when);
                put_clean(stdout, path && *path ? path : ".");
                if (type && strcmp(type, "dir") == 0)
                        fputc('/', stdout);
                if (target) {
                        fputs(strcmp(type, "symlink") == 0 ? " -> " : " link to ", stdout);
                        put_clean(stdout, target);
                }
                if (refused) {
                        fputs("  [refused: ", stdout);
                        put_clean(stdout, refused);
                        fputc(']', stdout);
                }
                fputc('\n', stdout);
        }
}

/* The first refusal, as one line on stderr. */
static void print_refusal(const char *file, const json_t *list)
{
        const json_t *r = json_array_get(json_object_get(list, "refused"), 0);
        const char *path = json_string_value(json_object_get(r, "path"));
        const char *reason = json_string_value(json_object_get(r, "reason"));
        size_t n = json_array_size(json_object_get(list, "refused"));
        fputs("corral workspace: ", stderr);
        put_clean(stderr, file);
        fputs(" would be refused: ", stderr);
        if (path && *path) {
                fputs("entry '", stderr);
                put_clean(stderr, path);
                fputs("' ", stderr);
        }
        put_clean(stderr, reason ? reason : "");
        if (n > 1)
                fprintf(stderr, " (and %zu more)", n - 1);
        fputc('\n', stderr);
}

static void print_error(const corral_error *err)
{
        fputs("corral workspace: ", stderr);
        put_clean(stderr, err ? err->msg : "unknown error");
        fputc('\n', stderr);
}

int cmd_workspace(int argc, char **argv)
{
        if (argc < 2)
                return usage_error("which command? list or extract");
        const char *sub = argv[1];
        if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
                fputs(help_text, stdout);
                return EXIT_OK;
        }
        bool list = strcmp(sub, "list") == 0;
        if (!list && strcmp(sub, "extract") != 0)
                return usage_error("unknown command '%s': list or extract", sub);
        argc--;
        argv++;

        struct archive_limits limits = { 0 };
        bool json = false;
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                corral_error *err = NULL;
                int r = 0;
                switch (c) {
                case OPT_JSON:
                        if (!list)
                                return usage_error("--json is an option of list");
                        json = true;
                        break;
                case OPT_MAX_ENTRIES:
                        r = corral_parse_count(optarg, &limits.max_entries, &err);
                        break;
                case OPT_MAX_SIZE:
                        r = corral_parse_size(optarg, &limits.max_bytes, &err);
                        break;
                case OPT_MAX_RATIO:
                        r = corral_parse_count(optarg, &limits.max_ratio, &err);
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        return usage_error("%s: unknown option or missing value '%s'", sub, argv[optind - 1]);
                }
                if (r < 0) {
                        int s = usage_error("%s: %s: %s", sub, argv[optind - 2 > 0 ? optind - 2 : 0],
                                            err ? err->msg : "invalid");
                        corral_error_free(err);
                        return s;
                }
        }
        int want = list ? 1 : 2;
        if (argc - optind != want)
                return usage_error(list ? "list: give one archive: corral workspace list FILE.tar"
                                        : "extract: give an archive and a directory: corral workspace extract "
                                          "FILE.tar DIR");
        const char *file = argv[optind];
        corral_error *err = NULL;

        if (list) {
                json_t *out = NULL;
                if (archive_list(file, NULL, 0, &limits, &out, &err) < 0) {
                        print_error(err);
                        int s = err && err->kind == CORRAL_ERR_UNSUPPORTED ? EXIT_CORRAL : EXIT_WS_REFUSED;
                        corral_error_free(err);
                        return s;
                }
                bool ok = json_is_true(json_object_get(out, "ok"));
                if (json) {
                        json_object_set_new(out, "archive", json_string(file));
                        cli_print_json(stdout, out, true);
                } else {
                        print_list(out);
                }
                if (!ok)
                        print_refusal(file, out);
                json_decref(out);
                fflush(stdout);
                return ok ? EXIT_OK : EXIT_WS_REFUSED;
        }

        /* What the user can fix before anything is read is usage: the
         * destination must be new or empty. */
        const char *dest = argv[optind + 1];
        struct stat st;
        if (lstat(dest, &st) == 0 && !S_ISDIR(st.st_mode))
                return usage_error("extract: '%s' exists and is not a directory", dest);
        json_t *report = NULL;
        if (archive_extract(file, dest, &limits, &report, &err) < 0) {
                print_error(err);
                bool dest_problem = err && err->kind == CORRAL_ERR_USAGE &&
                                    strncmp(err->msg, "cannot extract into", 19) == 0;
                int s = dest_problem ? EXIT_WS_USAGE
                        : err && err->kind == CORRAL_ERR_UNSUPPORTED ? EXIT_CORRAL
                                                                     : EXIT_WS_REFUSED;
                corral_error_free(err);
                return s;
        }
        double bytes = (double)json_integer_value(json_object_get(report, "bytes"));
        const char *unit = "B";
        for (const char *u = "KMGT"; bytes >= 1024 && *u; u++) {
                bytes /= 1024;
                unit = *u == 'K' ? "KiB" : *u == 'M' ? "MiB" : *u == 'G' ? "GiB" : "TiB";
        }
        fprintf(stderr, "corral workspace: extracted %" JSON_INTEGER_FORMAT " entries (%" JSON_INTEGER_FORMAT
                        " files, %.*f %s) to ",
                json_integer_value(json_object_get(report, "entries")),
                json_integer_value(json_object_get(report, "files")), unit[0] == 'B' ? 0 : 1, bytes, unit);
        put_clean(stderr, dest);
        fputc('\n', stderr);
        json_decref(report);
        return EXIT_OK;
}
