/* review.c: what the safety review of one step costs.
 *
 *   build/bench/review [--runs N] [--md FILE] [PY_FILE]
 *
 * Reviews a 200-line data-analysis script (default bench/review-sample.py,
 * found beside this source) under the standard policy --runs times (default
 * 2000), after 50 untimed warm-up runs, and a shell script of the same kind;
 * each review is the whole of review_code() on the same code: the parse (with
 * the thread's reused parser, as in corral) and the policy walk.  Then the
 * parse alone, the same way (ts_parser_parse_string() and ts_tree_delete()),
 * to show what the parser costs without the policy.  Prints p50, p99, mean
 * and max of the wall time and p50, p99 of the thread's CPU time in ms; --md
 * writes the table as markdown.  A figure, not a pass/fail test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tree_sitter/api.h>

#include "../src/review/review.h"
#include "stats.h"

const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_bash(void);

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "bench"
#endif

static const char shell_sample[] =
        "set -euo pipefail\n"
        "mkdir -p output/figures output/tables\n"
        "ls -la input/ | head -n 20\n"
        "wc -l input/*.csv > output/tables/line-counts.txt\n"
        "for f in input/*.csv; do\n"
        "  name=$(basename \"$f\" .csv)\n"
        "  head -n 1 \"$f\" | tr ',' '\\n' > \"output/tables/${name}-columns.txt\"\n"
        "  tail -n +2 \"$f\" | cut -d, -f2 | sort -n | uniq -c | sort -rn | head -n 5\n"
        "done\n"
        "grep -c ',North,' input/sales.csv || true\n"
        "awk -F, 'NR > 1 { s += $2 } END { printf \"%.2f\\n\", s }' input/sales.csv | tee output/total.txt\n"
        "python3 -c 'import pandas as pd; print(pd.read_csv(\"input/sales.csv\").describe())'\n"
        "find output -type f -name '*.txt' -newer input/sales.csv -print\n"
        "du -sh output && rm -rf output/tmp\n";

struct figures {
        double p50, p99, mean, max, cpu_p50, cpu_p99;
        size_t lines, bytes;
};

/* One timed run: the whole review (parser NULL) or the parse alone. */
static int run_once(enum review_lang lang, const char *code, size_t len, const struct review_policy *policy,
                    TSParser *parser, bool first)
{
        if (parser) {
                ts_parser_reset(parser);
                TSTree *t = ts_parser_parse_string(parser, NULL, code, (uint32_t)len);
                if (t == NULL) {
                        fprintf(stderr, "review: the parse failed\n");
                        return -1;
                }
                ts_tree_delete(t);
                return 0;
        }
        struct review_result r;
        corral_error *err = NULL;
        if (review_code(lang, code, len, policy, &r, &err) < 0) {
                fprintf(stderr, "review: %s\n", err->msg);
                corral_error_free(err);
                return -1;
        }
        if (first && r.n_findings)
                fprintf(stderr, "note: the sample has %zu finding(s); first: %s\n", r.n_findings,
                        r.findings[0].message);
        review_result_release(&r);
        return 0;
}

static int measure(enum review_lang lang, const char *code, size_t runs, const struct review_policy *policy,
                   TSParser *parser, struct figures *f)
{
        double *t = calloc(runs, sizeof(*t)), *cpu = calloc(runs, sizeof(*cpu));
        if (t == NULL || cpu == NULL) {
                free(t);
                free(cpu);
                return -1;
        }
        size_t len = strlen(code);
        for (size_t i = 0; i < runs + 50; i++) {
                double t0 = now_ms(), c0 = cpu_ms();
                if (run_once(lang, code, len, policy, parser, i == 0) < 0) {
                        free(t);
                        free(cpu);
                        return -1;
                }
                double dt = now_ms() - t0, dc = cpu_ms() - c0;
                if (i >= 50) {
                        t[i - 50] = dt;
                        cpu[i - 50] = dc;
                }
        }
        qsort(t, runs, sizeof(*t), cmp_double);
        qsort(cpu, runs, sizeof(*cpu), cmp_double);
        f->cpu_p50 = pct(cpu, runs, 50);
        f->cpu_p99 = pct(cpu, runs, 99);
        double sum = 0;
        for (size_t i = 0; i < runs; i++)
                sum += t[i];
        f->p50 = pct(t, runs, 50);
        f->p99 = pct(t, runs, 99);
        f->mean = sum / (double)runs;
        f->max = t[runs - 1];
        f->bytes = len;
        f->lines = 0;
        for (const char *p = code; *p; p++)
                f->lines += *p == '\n';
        free(t);
        free(cpu);
        return 0;
}

int main(int argc, char **argv)
{
        size_t runs = 2000;
        const char *md = NULL, *path = BENCH_SOURCE_DIR "/review-sample.py";
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
                        runs = strtoul(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--md") == 0 && i + 1 < argc) {
                        md = argv[++i];
                } else if (argv[i][0] != '-') {
                        path = argv[i];
                } else {
                        fprintf(stderr, "usage: %s [--runs N] [--md FILE] [PY_FILE]\n", argv[0]);
                        return 2;
                }
        }
        if (runs == 0)
                runs = 1;
        char *code = read_whole_file_at(AT_FDCWD, path, 1 << 20);
        if (code == NULL) {
                fprintf(stderr, "cannot read '%s': %s\n", path, strerror(errno));
                return 1;
        }
        struct review_policy *policy = review_policy_new(REVIEW_LEVEL_STANDARD);
        TSParser *pyp = ts_parser_new(), *shp = ts_parser_new();
        struct figures py, sh, pyparse, shparse;
        int rc = 1;
        if (policy == NULL || pyp == NULL || shp == NULL || !ts_parser_set_language(pyp, tree_sitter_python()) ||
            !ts_parser_set_language(shp, tree_sitter_bash()) ||
            measure(REVIEW_PYTHON, code, runs, policy, NULL, &py) < 0 ||
            measure(REVIEW_BASH, shell_sample, runs, policy, NULL, &sh) < 0 ||
            measure(REVIEW_PYTHON, code, runs, policy, pyp, &pyparse) < 0 ||
            measure(REVIEW_BASH, shell_sample, runs, policy, shp, &shparse) < 0)
                goto out;
        char table[2048];
#define ROW "| %s | %zu | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n"
        int o = snprintf(table, sizeof(table),
                         "| input | lines | p50 ms | p99 ms | mean ms | max ms | CPU p50 ms | CPU p99 ms |\n"
                         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        const struct {
                const char *what;
                const struct figures *f;
        } rows[] = { { "Python (bench/review-sample.py), parse + policy", &py },
                     { "Python, the parse alone", &pyparse },
                     { "bash (bench/review.c), parse + policy", &sh },
                     { "bash, the parse alone", &shparse } };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && o > 0 && (size_t)o < sizeof(table); i++)
                o += snprintf(table + o, sizeof(table) - (size_t)o, ROW, rows[i].what, rows[i].f->lines,
                              rows[i].f->p50, rows[i].f->p99, rows[i].f->mean, rows[i].f->max, rows[i].f->cpu_p50,
                              rows[i].f->cpu_p99);
        printf("safety review, standard policy, %zu runs each (the thread's parser reused, as in corral):\n%s",
               runs, table);
        if (md) {
                FILE *f = fopen(md, "w");
                if (f == NULL) {
                        fprintf(stderr, "cannot write '%s': %s\n", md, strerror(errno));
                } else {
                        fprintf(f, "### Safety review per step (`bench/review.c`)\n\n"
                                   "`review_code()` under the standard policy, %zu runs after 50 warm-up runs: the "
                                   "parse (the thread's tree-sitter parser, reused) and the policy walk; then the "
                                   "parse alone.\n\n%s",
                                runs, table);
                        fclose(f);
                }
        }
        rc = 0;
out:
        if (pyp)
                ts_parser_delete(pyp);
        if (shp)
                ts_parser_delete(shp);
        free(code);
        review_policy_free(policy);
        return rc;
}
