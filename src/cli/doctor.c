/* doctor.c: `corral doctor`, what this host offers and what corral will use.
 *
 * The report is the library's (src/agent/health.h): this file prints each
 * check as one line (the mechanism, its state, what was found and, when it
 * is missing, what to do), with the CLI's flags where the report names a
 * setting in words; --json prints the report itself.  Exit status: 0 when
 * corral can run code here, 1 when it cannot, 2 on usage errors. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/health.h"
#include "../server/server.h"
#include "cli.h"

static const char help_text[] =
        "usage: corral doctor [--json]\n"
        "\n"
        "Show which isolation and limit mechanisms this host offers,\n"
        "which ones corral will use, and what to do about missing ones.\n"
        "  --json   print the report as one JSON object: {\"host\", \"checks\": [{\"name\", \"ok\",\n"
        "           \"state\", \"detail\", \"advice\"}], \"can_run\"}\n"
        "Exit status: 0 corral can run code here, 1 it cannot, 2 usage error.\n";

/* What the report says in words, said with the CLI's flags. */
static const struct {
        const char *name, *advice;
} flag_advice[] = {
        { "limits backend", "without a cgroup, memory is capped per process, not per tree; --require-cgroups "
                            "refuses instead" },
        { "jail", "corral refuses to run code here; fix the MISSING lines above" },
        { "libarchive", "apt-get install libarchive13 (for --archive, --from and corral workspace)" },
        { "model", "check --base-url, $OPENAI_BASE_URL and the config file (docs/providers.md)" },
};

static const char *str(const json_t *check, const char *key)
{
        const char *s = json_string_value(json_object_get(check, key));
        return s ? s : "";
}

/* The model's line when none is configured: what to give corral run. */
static const char *model_detail(const json_t *check, char *buf, size_t len)
{
        const json_t *ollama = json_object_get(check, "ollama");
        if (ollama == NULL)
                return "none configured and no Ollama on localhost:11434: give --model and --base-url, set "
                       "$CORRAL_MODEL or the config file (docs/providers.md); replay:FILE works offline";
        json_int_t n = json_integer_value(json_object_get(ollama, "models"));
        snprintf(buf, len, "none configured; Ollama answers at %s with %" JSON_INTEGER_FORMAT
                           " model%s: corral run --provider ollama --model NAME",
                 str(ollama, "base_url"), n, n == 1 ? "" : "s");
        return buf;
}

static void print_check(const json_t *check)
{
        const char *name = str(check, "name"), *state = str(check, "state"), *detail = str(check, "detail");
        const char *advice = json_string_value(json_object_get(check, "advice"));
        char buf[512];
        for (size_t i = 0; advice && i < sizeof(flag_advice) / sizeof(flag_advice[0]); i++)
                if (strcmp(name, flag_advice[i].name) == 0)
                        advice = flag_advice[i].advice;
        if (strcmp(name, "model") == 0 && strcmp(state, "none") == 0)
                detail = model_detail(check, buf, sizeof(buf));
        if (strcmp(name, "python in a jail") == 0)
                printf("\nwhat `corral run` and sessions need:\n");
        bool missing = strcmp(state, "missing") == 0;
        printf("%-22s %-4s %s", name, missing ? "MISSING" : strcmp(state, "none") == 0 ? "-" : state, detail);
        if (missing && advice)
                printf("\n%-27s -> %s", "", advice);
        putchar('\n');
}

int cmd_doctor(int argc, char **argv)
{
        bool json = false;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        fputs(help_text, stdout);
                        return EXIT_OK;
                }
                if (strcmp(argv[i], "--json") != 0) {
                        cli_error("doctor", "unexpected argument '%s' (see 'corral doctor --help')", argv[i]);
                        return EXIT_USAGE_SUBCOMMAND;
                }
                json = true;
        }
        json_t *report = health_report();
        if (report)
                server_probe(json_object_get(report, "checks"));
        if (report == NULL) {
                cli_error("doctor", "out of memory");
                return EXIT_CORRAL;
        }
        bool can_run = json_is_true(json_object_get(report, "can_run"));
        if (json) {
                cli_print_json(stdout, report, true);
        } else {
                const json_t *host = json_object_get(report, "host");
                printf("corral doctor: %s %s, running as uid %d\n\n", str(host, "system"), str(host, "release"),
                       (int)json_integer_value(json_object_get(host, "uid")));
                size_t i;
                const json_t *check;
                json_array_foreach (json_object_get(report, "checks"), i, check)
                        print_check(check);
                printf("\n%s\n", can_run ? "corral can run code on this host." : "corral cannot run code on this host.");
        }
        json_decref(report);
        return can_run ? 0 : 1;
}
