/* errors.c: the flags behind the settings a library error names.
 *
 * The library speaks of a setting in words ("the request timeout") and names
 * its config field in corral_error.field ("request_timeout"), because a
 * server's caller has no flags.  The CLI adds the flag that sets it, so that
 * its user knows what to change: "... within 0.5 s, the request timeout
 * (--request-timeout)".  One table, for error messages, run outcomes and the
 * live view's notices (docs/errors.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct {
        const char *field;
        const char *flag;
} field_flags[] = {
        { "approve_timeout", "--approve-timeout" },
        { "archive", "--archive" },
        { "base_url", "--base-url" },
        { "context_tokens", "--context-tokens" },
        { "data_dir", "--data" },
        { "executor_model", "--executor-model" },
        { "input_limit", "--input-limit" },
        { "inputs", "--input" },
        { "listen", "--listen" },
        { "max_iterations", "--max-iterations" },
        { "mode", "--mode" },
        { "model", "--model" },
        { "out_dir", "--out" },
        { "mode", "--mode" },
        { "provider", "--provider" },
        { "record", "--record" },
        { "replan_every", "--replan-every" },
        { "reproduce", "--reproduce" },
        { "request_timeout", "--request-timeout" },
        { "reviewer_model", "--reviewer-model" },
        { "rootfs", "--rootfs" },
        { "socket_path", "--socket" },
        { "tdd_test_changes", "--tdd-test-changes" },
        { "token_budget", "--token-budget" },
        { "tokens_file", "--tokens" },
        { "trace", "--trace" },
        { "uid_range", "--uid-range" },
        { "verifier_model", "--verifier-model" },
        { "verify_rounds", "--verify-rounds" },
        { "wall_budget", "--wall-budget" },
};

/* The flag of the field in fields[0..len), or NULL. */
static const char *field_flag(const char *field, size_t len)
{
        for (size_t i = 0; i < sizeof(field_flags) / sizeof(field_flags[0]); i++)
                if (strlen(field_flags[i].field) == len && memcmp(field_flags[i].field, field, len) == 0)
                        return field_flags[i].flag;
        return NULL;
}

/* flag as a word of msg, not part of a longer option ("--model" in
 * "--reviewer-model" or "--model-x" does not count). */
static bool names_flag(const char *msg, const char *flag)
{
        size_t n = strlen(flag);
        for (const char *p = strstr(msg, flag); p; p = strstr(p + 1, flag)) {
                bool starts = p == msg || !(p[-1] == '-' || p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'));
                bool ends = !(p[n] == '-' || p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z'));
                if (starts && ends)
                        return true;
        }
        return false;
}

char *cli_field_text(const char *msg, const char *fields)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        fputs(msg ? msg : "", f);
        unsigned n = 0;
        for (const char *p = fields; p && *p;) {
                size_t l = strcspn(p, ",");
                const char *flag = field_flag(p, l);
                if (flag && !(msg && names_flag(msg, flag)))
                        fprintf(f, "%s%s", n++ ? ", " : " (", flag);
                p += l + (p[l] == ',');
        }
        if (n)
                fputc(')', f);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}
