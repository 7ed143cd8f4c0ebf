/* review.c: `corral review FILE`: the safety review of a file, without
 * running it (docs/review.md).
 *
 * Exit statuses: 0 the code may run (no findings, or warnings only), 1 it is
 * rejected, 2 usage errors (bad options, unreadable file or policy).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../lib/util.h"
#include "../review/review.h"
#include "cli.h"


static void usage(FILE *f)
{
        fprintf(f, "usage: corral review FILE [--policy strict|standard|off|POLICY.json] [--lang python|bash] [--json]\n"
                   "\n"
                   "Review FILE (- for stdin) as corral run reviews every step, and print the findings.\n"
                   "\n"
                   "  --policy P     the policy: a level or a JSON policy file (default: standard)\n"
                   "  --lang L       python or bash (default: from the file name; .sh/.bash is bash,\n"
                   "                 anything else python)\n"
                   "  --json         print the result as JSON: {verdict, findings[], ms}\n"
                   "\n"
                   "exit statuses: 0 the code may run (warnings at most), 1 rejected, 2 usage error\n"
                   "The rules and the policy format: docs/review.md.\n");
}

/* Review code with policy and print; shared with exec's --review through
 * cli.h. */
int cmd_review(int argc, char **argv)
{
        static const struct option opts[] = {
                { "policy", required_argument, NULL, 'p' },
                { "lang", required_argument, NULL, 'l' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        const char *policy_spec = "standard";
        int lang = -1;
        bool json = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        policy_spec = optarg;
                        break;
                case 'l':
                        lang = review_lang_from_string(optarg);
                        if (lang < 0) {
                                cli_error("review", "--lang must be python or bash, not '%s'", optarg);
                                return EXIT_USAGE_SUBCOMMAND;
                        }
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        usage(stdout);
                        return EXIT_OK;
                default:
                        usage(stderr);
                        return EXIT_USAGE_SUBCOMMAND;
                }
        }
        if (optind + 1 != argc) {
                cli_error("review", optind == argc ? "which file? (corral review FILE)" : "one file at a time");
                return EXIT_USAGE_SUBCOMMAND;
        }
        const char *file = argv[optind];
        if (lang < 0) {
                const char *dot = strrchr(file, '.');
                lang = dot && (strcmp(dot, ".sh") == 0 || strcmp(dot, ".bash") == 0) ? REVIEW_BASH : REVIEW_PYTHON;
        }
        corral_error *err = NULL;
        struct review_policy *policy = NULL;
        if (review_policy_load(policy_spec, &policy, &err) < 0) {
                cli_error_obj("review", err);
                corral_error_free(err);
                return EXIT_USAGE_SUBCOMMAND;
        }
        char *code = cli_read_code(file, NULL, &err);
        if (code == NULL) {
                cli_error_obj("review", err);
                corral_error_free(err);
                review_policy_free(policy);
                return EXIT_USAGE_SUBCOMMAND;
        }
        struct review_result res;
        int rc = review_code((enum review_lang)lang, code, strlen(code), policy, &res, &err);
        free(code);
        review_policy_free(policy);
        if (rc < 0) {
                cli_error_obj("review", err);
                corral_error_free(err);
                return EXIT_USAGE_SUBCOMMAND;
        }
        if (json) {
                json_t *j = review_result_to_json(&res);
                cli_print_json(stdout, j, false);
                json_decref(j);
        } else {
                char *text = review_result_text(&res);
                if (text) /* it quotes the code */
                        cli_print_untrusted(stdout, text, strlen(text));
                free(text);
                if (res.rejected)
                        printf("%s: rejected (%u finding%s)\n", file, res.n_reject + res.n_warn,
                               res.n_reject + res.n_warn == 1 ? "" : "s");
                else if (res.n_findings == 0)
                        printf("%s: ok (no findings)\n", file);
                else
                        printf("%s: ok (%zu warning%s)\n", file, res.n_findings, res.n_findings == 1 ? "" : "s");
        }
        int status = res.rejected ? 1 : 0;
        review_result_release(&res);
        return status;
}
