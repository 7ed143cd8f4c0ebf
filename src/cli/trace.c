/* trace.c: `corral trace`, a recorded run shown again or exported.
 *
 *   corral trace show [--quiet] [--no-color] FILE   the terminal view (render.c)
 *   corral trace export --ipynb|--html [-o OUT] FILE  a notebook or a web page
 *
 * Reads the JSONL trace `corral run --trace` wrote; never runs anything.
 * Exit statuses: 0 ok, 1 the trace could not be read or the export not
 * written, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/util.h"
#include "../trace/export.h"
#include "../trace/render.h"
#include "../trace/trace.h"
#include "cli.h"

enum {
        EXIT_TRACE_FAILED = 1, /* the trace could not be read, or the export written */
        EXIT_TRACE_USAGE = EXIT_USAGE_SUBCOMMAND,
};

static const char help_text[] =
        "usage: corral trace show [--quiet] [--no-color] FILE|ID|last\n"
        "       corral trace export --ipynb|--html [-o OUT] FILE|ID|last\n"
        "\n"
        "Show or export the trace of a run: the JSONL file of `corral run --trace FILE`, or a\n"
        "run's ID (see `corral runs`), or `last` for the newest run's.\n"
        "\n"
        "show     print the run as `corral run` showed it: the model's text, each step's\n"
        "         code, output and status, the files it changed, and the summary\n"
        "  -q, --quiet      only notices, errors and the summary\n"
        "      --no-color   no colours (also when NO_COLOR is set, TERM is dumb, or stdout\n"
        "                   is not a terminal)\n"
        "\n"
        "export   write the run as something a colleague can open\n"
        "      --ipynb      a Jupyter notebook: the code as cells, their output as outputs\n"
        "      --html       one standalone page (no scripts, no external resources)\n"
        "  -o, --output OUT where to write (default: FILE with .jsonl replaced by .ipynb\n"
        "                   or .html); written to a temporary file, then renamed, mode 0600\n"
        "\n"
        "  -h, --help       show this help\n"
        "\n"
        "exit statuses:\n"
        "  0 ok; 1 the trace could not be read or the export could not be written; 2 usage error.\n";

#define usage_error(...) cli_usage_error("trace", EXIT_TRACE_USAGE, __VA_ARGS__)

/* The option getopt stopped at, for a message. */
static const char *bad_option(char **argv, int c)
{
        static char buf[3];
        if (c != '?' && c != ':')
                return argv[optind - 1];
        if (optopt != 0 && optopt < 256) {
                buf[0] = '-';
                buf[1] = (char)optopt;
                buf[2] = '\0';
                return buf;
        }
        return argv[optind - 1];
}

enum { OPT_NO_COLOR = 300, OPT_IPYNB, OPT_HTML };

/* render_event(), counting the events. */
struct show {
        render *r;
        size_t events;
};

static void show_event(void *userdata, const json_t *event)
{
        struct show *sh = userdata;
        sh->events++;
        render_event(sh->r, event);
}

static int trace_show(int argc, char **argv)
{
        static const struct option opts[] = {
                { "quiet", no_argument, NULL, 'q' },
                { "no-color", no_argument, NULL, OPT_NO_COLOR },
                { "no-colour", no_argument, NULL, OPT_NO_COLOR },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool quiet = false, no_color = false;
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
                switch (c) {
                case 'q':
                        quiet = true;
                        break;
                case OPT_NO_COLOR:
                        no_color = true;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        return usage_error("show: unknown option or missing value '%s'", bad_option(argv, c));
                }
        }
        if (argc == optind)
                return usage_error("show: which trace? give a FILE");
        if (argc - optind > 1)
                return usage_error("show: one FILE at a time ('%s' is extra)", argv[optind + 1]);
        corral_error *perr = NULL;
        cleanup_free char *path = cli_trace_path(argv[optind], &perr);
        if (path == NULL) {
                cli_error_obj("trace", perr);
                corral_error_free(perr);
                return EXIT_TRACE_FAILED;
        }

        struct render_options ro;
        render_options_default(&ro, stdout, /* live= */ false);
        ro.quiet = quiet;
        ro.field_text = cli_field_text;
        if (no_color)
                ro.color = false;
        render *r = render_new(&ro);
        if (r == NULL) {
                cli_error("trace", "out of memory");
                return EXIT_TRACE_FAILED;
        }
        corral_error *err = NULL;
        struct show sh = { .r = r };
        int rc = trace_read_file(path, show_event, &sh, &err);
        render_free(r);
        fflush(stdout);
        if (rc < 0) {
                cli_error_obj("trace", err);
                corral_error_free(err);
                return EXIT_TRACE_FAILED;
        }
        if (sh.events == 0) {
                cli_error("trace", "the trace '%s' holds no events (a run that ended before its first, or not "
                                   "a trace)", path);
                return EXIT_TRACE_FAILED;
        }
        return EXIT_OK;
}

static int trace_export_cmd(int argc, char **argv)
{
        static const struct option opts[] = {
                { "ipynb", no_argument, NULL, OPT_IPYNB },
                { "html", no_argument, NULL, OPT_HTML },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int fmt = -1;
        const char *out = NULL;
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_IPYNB:
                case OPT_HTML: {
                        int f = c == OPT_IPYNB ? EXPORT_IPYNB : EXPORT_HTML;
                        if (fmt >= 0 && fmt != f)
                                return usage_error("export: --ipynb and --html exclude each other");
                        fmt = f;
                        break;
                }
                case 'o':
                        if (optarg[0] == '\0')
                                return usage_error("export: -o needs a file name");
                        out = optarg;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        return usage_error("export: unknown option or missing value '%s'", bad_option(argv, c));
                }
        }
        if (fmt < 0)
                return usage_error("export: choose a format: --ipynb or --html");
        if (argc == optind)
                return usage_error("export: which trace? give a FILE");
        if (argc - optind > 1)
                return usage_error("export: one FILE at a time ('%s' is extra)", argv[optind + 1]);
        corral_error *perr = NULL;
        cleanup_free char *path = cli_trace_path(argv[optind], &perr);
        cleanup_free char *def = NULL;
        if (path == NULL) {
                cli_error_obj("trace", perr);
                corral_error_free(perr);
                return EXIT_TRACE_FAILED;
        }
        if (out == NULL) {
                def = export_default_path(path, (enum export_format)fmt);
                if (def == NULL) {
                        cli_error("trace", "out of memory");
                        return EXIT_TRACE_FAILED;
                }
                out = def;
        }
        struct stat st_in, st_out;
        if (strcmp(out, path) == 0 || (stat(path, &st_in) == 0 && stat(out, &st_out) == 0 &&
                                       st_in.st_dev == st_out.st_dev && st_in.st_ino == st_out.st_ino))
                return usage_error("export: the output '%s' would replace the trace", out);
        corral_error *err = NULL;
        if (trace_export(path, (enum export_format)fmt, out, &err) < 0) {
                cli_error_obj("trace", err);
                corral_error_free(err);
                return EXIT_TRACE_FAILED;
        }
        fprintf(stderr, "corral trace: wrote '%s'\n", out);
        return EXIT_OK;
}

int cmd_trace(int argc, char **argv)
{
        if (argc < 2)
                return usage_error("give a subcommand: show or export");
        const char *sub = argv[1];
        if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
                fputs(help_text, stdout);
                return EXIT_OK;
        }
        if (strcmp(sub, "show") == 0)
                return trace_show(argc - 1, argv + 1);
        if (strcmp(sub, "export") == 0)
                return trace_export_cmd(argc - 1, argv + 1);
        if (sub[0] == '-')
                return usage_error("unknown option '%s': give a subcommand first (show or export)", sub);
        return usage_error("unknown subcommand '%s': expected show or export", sub);
}
