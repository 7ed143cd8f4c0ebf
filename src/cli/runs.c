/* runs.c: `corral runs`, and where `corral run` keeps its records.
 *
 * A run's trace and (without -o or -w) its output live in
 * $XDG_STATE_HOME/corral/runs/ID/ (~/.local/state/corral/runs/ID/ when the
 * variable is unset), never in the directory the run was started from: that
 * directory may be a workspace a jail wrote (`-w .`), where code could have
 * planted `.corral` as a link to anywhere.  The trace's run_start records
 * the directory the run started from ("cwd") and its workspace.
 *
 *   corral runs [-n N | --all] [--json]   the recent runs, newest first
 *
 * `corral trace show|export` take a run's ID, or `last`, for its trace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/util.h"
#include "../agent/records.h"
#include "../agent/run.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral runs [-n N | --all] [--json]\n"
        "\n"
        "The runs of `corral run`, newest first: ID, when it started (UTC), its status, model\n"
        "turns, artifacts and task.  Their records (trace, output without -o or -w) are in\n"
        "$XDG_STATE_HOME/corral/runs/ID (default ~/.local/state/corral/runs/ID).  Give an ID,\n"
        "or `last`, to `corral trace show` and `corral trace export`.\n"
        "\n"
        "  -n N         at most N runs (default 20)\n"
        "      --all    every run\n"
        "      --json   one JSON array: [{\"run_id\", \"started\", \"status\", \"iterations\",\n"
        "               \"artifacts\", \"task\", \"model\", \"cwd\", \"workspace\", \"trace\",\n"
        "               \"output_dir\"}]\n"
        "  -h, --help   show this help\n"
        "\n"
        "exit statuses: 0 listed (also when there are none); 2 usage error.\n";

char *cli_trace_path(const char *arg, corral_error **err)
{
        struct stat st;
        if (stat(arg, &st) == 0 || (strcmp(arg, "last") != 0 && !records_is_run_id(arg))) {
                char *path = strdup(arg);
                if (path == NULL)
                        corral_fail(err, ENOMEM, "out of memory");
                return path;
        }
        return records_trace_path(NULL, arg, err);
}

/* A cell of the table: the text on one line, cut to width columns. */
static void cell(const char *s, int width)
{
        cleanup_free char *clean = term_sanitize(s ? s : "-", strlen(s ? s : "-"), NULL);
        for (char *p = clean; p && *p; p++)
                if (*p == '\n' || *p == '\t')
                        *p = ' ';
        int cols = 0;
        const char *p = clean ? clean : "";
        for (; *p && (width <= 0 || cols < width); p++) {
                if (((unsigned char)*p & 0xc0) != 0x80)
                        cols++;
                fputc(*p, stdout);
        }
        while (*p && ((unsigned char)*p & 0xc0) == 0x80)
                fputc(*p++, stdout);
        if (*p)
                fputs("…", stdout);
}

int cmd_runs(int argc, char **argv)
{
        static const struct option opts[] = {
                { "all", no_argument, NULL, 'a' }, { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
        };
        long max = 20;
        bool json = false;
        int c;
        opterr = 0;
        optind = 1;
        while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'n': {
                        char *end = NULL;
                        errno = 0;
                        max = strtol(optarg, &end, 10);
                        if (errno || end == optarg || *end || max < 1)
                                return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "-n takes a count of 1 or more, not '%s'",
                                                       optarg);
                        break;
                }
                case 'a':
                        max = -1;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        fputs(help_text, stdout);
                        return EXIT_OK;
                default:
                        return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "unknown option or missing value '%s'",
                                               argv[optind - 1]);
                }
        }
        if (optind < argc)
                return cli_usage_error("runs", EXIT_USAGE_SUBCOMMAND, "unexpected argument '%s'", argv[optind]);
        cleanup_free char *dir = run_records_dir();
        corral_error *err = NULL;
        json_t *rows = dir ? records_list(dir, max, &err) : NULL;
        if (rows == NULL) {
                if (dir == NULL)
                        cli_error("runs", "cannot tell where the runs are kept: set $XDG_STATE_HOME or $HOME");
                else
                        cli_error_obj("runs", err);
                corral_error_free(err);
                return dir ? EXIT_CORRAL : EXIT_USAGE_SUBCOMMAND;
        }
        if (json) {
                cli_print_json(stdout, rows, true);
        } else if (json_array_size(rows) == 0) {
                printf("no runs recorded in '%s'\n", dir);
        } else {
                printf("%-22s  %-19s  %-10s  %5s  %9s  %s\n", "ID", "STARTED (UTC)", "STATUS", "TURNS", "ARTIFACTS",
                       "TASK");
                size_t i;
                json_t *row;
                json_array_foreach (rows, i, row) {
                        /* "2026-12-01T16:12:00.123Z" -> "2026-12-01 16:12:00" */
                        char when[20] = "-";
                        const char *ts = json_string_value(json_object_get(row, "started"));
                        if (ts && strlen(ts) >= 19 && strspn(ts, "0123456789-:T") >= 19)
                                snprintf(when, sizeof(when), "%.10s %.8s", ts, ts + 11);
                        printf("%-22s  %-19s  ", json_string_value(json_object_get(row, "run_id")), when);
                        const char *status = json_string_value(json_object_get(row, "status"));
                        printf("%-10.10s  ", status ? status : "-");
                        json_t *it = json_object_get(row, "iterations");
                        if (json_is_integer(it))
                                printf("%5" JSON_INTEGER_FORMAT "  ", json_integer_value(it));
                        else
                                printf("%5s  ", "-");
                        printf("%9zu  ", json_array_size(json_object_get(row, "artifacts")));
                        cell(json_string_value(json_object_get(row, "task")), 60);
                        fputc('\n', stdout);
                }
        }
        json_decref(rows);
        return EXIT_OK;
}
