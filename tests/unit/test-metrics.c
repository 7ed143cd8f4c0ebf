/* test-metrics.c: the Prometheus registry (src/server/metrics.h).
 *
 * What a scraper reads is the contract, so most checks compare the whole
 * rendered text: samples in order, cumulative buckets, the escapes, the
 * numbers.  Then what must not happen: names refused, series past the cap,
 * increments lost between threads. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/server/metrics.h"
#include "harness.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* Render m and compare with expected (the whole text). */
#define CHECK_RENDER(m, expected)                                                                                     \
        do {                                                                                                          \
                char *_text = metrics_render(m);                                                                      \
                CHECK_STR(_text, expected);                                                                           \
                free(_text);                                                                                          \
        } while (0)

static size_t count_lines(const char *text, const char *prefix)
{
        size_t n = 0, len = strlen(prefix);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, prefix, len) == 0)
                        n++;
        return n;
}

TEST(counter_with_labels)
{
        struct metrics *m = metrics_new();
        CHECK(m != NULL);
        CHECK_INT(metrics_define(m, "corral_http_requests_total", METRIC_COUNTER, "HTTP requests answered.", "route",
                                 NULL, 0),
                  0);
        CHECK_INT(metrics_define(m, "corral_runs_total", METRIC_COUNTER, "Runs started.", NULL, NULL, 0), 0);
        /* defined, never used: HELP and TYPE, and no sample */
        CHECK_INT(metrics_define(m, "corral_errors_total", METRIC_COUNTER, "Errors by kind.", "kind", NULL, 0), 0);
        metrics_add(m, "corral_http_requests_total", "/v1/runs", 1);
        metrics_add(m, "corral_http_requests_total", "/health", 2);
        metrics_add(m, "corral_http_requests_total", "/v1/runs", 3);
        metrics_add(m, "corral_http_requests_total", NULL, 1); /* no value: "" */
        /* a counter only goes up; the other calls are for other types */
        metrics_add(m, "corral_http_requests_total", "/health", -1);
        metrics_add(m, "corral_http_requests_total", "/health", NAN);
        metrics_set(m, "corral_http_requests_total", "/health", 100);
        metrics_observe(m, "corral_http_requests_total", "/health", 1);
        /* a family without a label ignores a value */
        metrics_add(m, "corral_runs_total", "ignored", 0.5);
        CHECK_RENDER(m, "# HELP corral_http_requests_total HTTP requests answered.\n"
                        "# TYPE corral_http_requests_total counter\n"
                        "corral_http_requests_total{route=\"/v1/runs\"} 4\n"
                        "corral_http_requests_total{route=\"/health\"} 2\n"
                        "corral_http_requests_total{route=\"\"} 1\n"
                        "# HELP corral_runs_total Runs started.\n"
                        "# TYPE corral_runs_total counter\n"
                        "corral_runs_total 0.5\n"
                        "# HELP corral_errors_total Errors by kind.\n"
                        "# TYPE corral_errors_total counter\n");
        metrics_free(m);
}

TEST(gauge)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "corral_sessions", METRIC_GAUGE, "Sessions open.", NULL, NULL, 0), 0);
        CHECK_INT(metrics_define(m, "corral_pool_free", METRIC_GAUGE, "Free slots.", "pool", NULL, 0), 0);
        /* an unlabelled family is at 0 before its first use */
        CHECK_RENDER(m, "# HELP corral_sessions Sessions open.\n"
                        "# TYPE corral_sessions gauge\n"
                        "corral_sessions 0\n"
                        "# HELP corral_pool_free Free slots.\n"
                        "# TYPE corral_pool_free gauge\n");
        metrics_set(m, "corral_sessions", NULL, 3);
        metrics_add(m, "corral_sessions", NULL, -1);
        metrics_add(m, "corral_sessions", NULL, 0.5);
        metrics_set(m, "corral_pool_free", "warm", 7);
        metrics_set(m, "corral_pool_free", "cold", -2);
        metrics_set(m, "corral_pool_free", "warm", 6);
        metrics_observe(m, "corral_sessions", NULL, 1); /* wrong type */
        CHECK_RENDER(m, "# HELP corral_sessions Sessions open.\n"
                        "# TYPE corral_sessions gauge\n"
                        "corral_sessions 2.5\n"
                        "# HELP corral_pool_free Free slots.\n"
                        "# TYPE corral_pool_free gauge\n"
                        "corral_pool_free{pool=\"warm\"} 6\n"
                        "corral_pool_free{pool=\"cold\"} -2\n");
        metrics_free(m);
}

TEST(histogram_custom_buckets)
{
        struct metrics *m = metrics_new();
        const double b[] = { 0.25, 0.5, 1 };
        CHECK_INT(metrics_define(m, "corral_step_seconds", METRIC_HISTOGRAM, "Step time.", "lang", b, 3), 0);
        /* binary fractions, so the sum is exact: 3.625 */
        metrics_observe(m, "corral_step_seconds", "python", 0.25); /* le is "less than or equal" */
        metrics_observe(m, "corral_step_seconds", "python", 0.125);
        metrics_observe(m, "corral_step_seconds", "python", 0.5);
        metrics_observe(m, "corral_step_seconds", "python", 0.75);
        metrics_observe(m, "corral_step_seconds", "python", 2);
        metrics_observe(m, "corral_step_seconds", "python", NAN); /* ignored */
        metrics_observe(m, "corral_step_seconds", "shell", 0.0625);
        metrics_add(m, "corral_step_seconds", "shell", 1); /* wrong type */
        metrics_set(m, "corral_step_seconds", "shell", 1);
        CHECK_RENDER(m, "# HELP corral_step_seconds Step time.\n"
                        "# TYPE corral_step_seconds histogram\n"
                        "corral_step_seconds_bucket{lang=\"python\",le=\"0.25\"} 2\n"
                        "corral_step_seconds_bucket{lang=\"python\",le=\"0.5\"} 3\n"
                        "corral_step_seconds_bucket{lang=\"python\",le=\"1\"} 4\n"
                        "corral_step_seconds_bucket{lang=\"python\",le=\"+Inf\"} 5\n"
                        "corral_step_seconds_sum{lang=\"python\"} 3.625\n"
                        "corral_step_seconds_count{lang=\"python\"} 5\n"
                        "corral_step_seconds_bucket{lang=\"shell\",le=\"0.25\"} 1\n"
                        "corral_step_seconds_bucket{lang=\"shell\",le=\"0.5\"} 1\n"
                        "corral_step_seconds_bucket{lang=\"shell\",le=\"1\"} 1\n"
                        "corral_step_seconds_bucket{lang=\"shell\",le=\"+Inf\"} 1\n"
                        "corral_step_seconds_sum{lang=\"shell\"} 0.0625\n"
                        "corral_step_seconds_count{lang=\"shell\"} 1\n");
        metrics_free(m);
}

TEST(histogram_default_buckets)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "req_seconds", METRIC_HISTOGRAM, "Request time.", NULL, NULL, 0), 0);
        metrics_observe(m, "req_seconds", NULL, 0.003);
        metrics_observe(m, "req_seconds", NULL, 30);
        char *text = metrics_render(m);
        CHECK(text != NULL);
        if (text == NULL)
                text = strdup("");
        /* 14 bounds and +Inf, in the shortest form that reads back */
        CHECK_INT(count_lines(text, "req_seconds_bucket{le="), 15);
        CHECK(strstr(text, "req_seconds_bucket{le=\"0.0005\"} 0\n"
                           "req_seconds_bucket{le=\"0.001\"} 0\n"
                           "req_seconds_bucket{le=\"0.0025\"} 0\n"
                           "req_seconds_bucket{le=\"0.005\"} 1\n") != NULL);
        CHECK(strstr(text, "req_seconds_bucket{le=\"10\"} 1\n"
                           "req_seconds_bucket{le=\"+Inf\"} 2\n"
                           "req_seconds_sum 30.003\n"
                           "req_seconds_count 2\n") != NULL);
        free(text);
        metrics_free(m);
}

TEST(escaping)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "odd_total", METRIC_COUNTER, "Back\\slash and\nnewline \"kept\".", "v", NULL, 0),
                  0);
        metrics_add(m, "odd_total", "a\"b\\c\nd", 1);
        /* HELP escapes backslash and newline; a label value the double quote too */
        CHECK_RENDER(m, "# HELP odd_total Back\\\\slash and\\nnewline \"kept\".\n"
                        "# TYPE odd_total counter\n"
                        "odd_total{v=\"a\\\"b\\\\c\\nd\"} 1\n");
        metrics_free(m);
}

TEST(numbers)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "g", METRIC_GAUGE, "n", "x", NULL, 0), 0);
        metrics_set(m, "g", "tenth", 0.1);
        metrics_set(m, "g", "third", 1.0 / 3);
        metrics_set(m, "g", "big", 123456789012345);
        metrics_set(m, "g", "huge", 1e20);
        metrics_set(m, "g", "negzero", -0.0);
        metrics_set(m, "g", "inf", INFINITY);
        metrics_set(m, "g", "-inf", -INFINITY);
        metrics_set(m, "g", "nan", NAN);
        CHECK_RENDER(m, "# HELP g n\n"
                        "# TYPE g gauge\n"
                        "g{x=\"tenth\"} 0.1\n"
                        "g{x=\"third\"} 0.3333333333333333\n"
                        "g{x=\"big\"} 123456789012345\n"
                        "g{x=\"huge\"} 1e+20\n"
                        "g{x=\"negzero\"} 0\n"
                        "g{x=\"inf\"} +Inf\n"
                        "g{x=\"-inf\"} -Inf\n"
                        "g{x=\"nan\"} NaN\n");
        metrics_free(m);
}

TEST(refused)
{
        struct metrics *m = metrics_new();
        const double down[] = { 1, 0.5 }, same[] = { 0.5, 0.5 }, nan[] = { NAN }, inf[] = { 1, INFINITY };
        CHECK_INT(metrics_define(m, "a:b_c9", METRIC_COUNTER, "ok", NULL, NULL, 0), 0);
        CHECK_INT(metrics_define(m, "_x", METRIC_GAUGE, "ok", "_y9", NULL, 0), 0);
        /* a name once, whatever the type */
        CHECK_INT(metrics_define(m, "a:b_c9", METRIC_COUNTER, "again", NULL, NULL, 0), -1);
        CHECK_INT(metrics_define(m, "_x", METRIC_HISTOGRAM, "again", NULL, NULL, 0), -1);
        const char *bad_names[] = { "", "9lives", "a-b", "a b", "é", "a.b", "a{b}" };
        for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
                CHECK_INT(metrics_define(m, bad_names[i], METRIC_COUNTER, "bad", NULL, NULL, 0), -1);
        CHECK_INT(metrics_define(m, NULL, METRIC_COUNTER, "bad", NULL, NULL, 0), -1);
        CHECK_INT(metrics_define(m, "no_help", METRIC_COUNTER, NULL, NULL, NULL, 0), -1);
        CHECK_INT(metrics_define(m, "bad_type", (enum metric_type)7, "bad", NULL, NULL, 0), -1);
        /* label names: no colon, no "__" prefix, no "le" on a histogram */
        CHECK_INT(metrics_define(m, "l1", METRIC_COUNTER, "bad", "a:b", NULL, 0), -1);
        CHECK_INT(metrics_define(m, "l2", METRIC_COUNTER, "bad", "__name", NULL, 0), -1);
        CHECK_INT(metrics_define(m, "l3", METRIC_COUNTER, "bad", "", NULL, 0), -1);
        CHECK_INT(metrics_define(m, "l4", METRIC_HISTOGRAM, "bad", "le", NULL, 0), -1);
        /* buckets: finite, strictly ascending */
        CHECK_INT(metrics_define(m, "h1", METRIC_HISTOGRAM, "bad", NULL, down, 2), -1);
        CHECK_INT(metrics_define(m, "h2", METRIC_HISTOGRAM, "bad", NULL, same, 2), -1);
        CHECK_INT(metrics_define(m, "h3", METRIC_HISTOGRAM, "bad", NULL, nan, 1), -1);
        CHECK_INT(metrics_define(m, "h4", METRIC_HISTOGRAM, "bad", NULL, inf, 2), -1);
        /* nothing refused left a trace; using what was never defined does nothing */
        metrics_add(m, "h1", NULL, 1);
        metrics_set(m, "nothing", "x", 1);
        metrics_observe(m, "nothing", NULL, 1);
        metrics_add(m, NULL, NULL, 1);
        CHECK_RENDER(m, "# HELP a:b_c9 ok\n"
                        "# TYPE a:b_c9 counter\n"
                        "a:b_c9 0\n"
                        "# HELP _x ok\n"
                        "# TYPE _x gauge\n");
        metrics_free(m);
        /* NULL everywhere: nothing happens */
        CHECK_INT(metrics_define(NULL, "x", METRIC_COUNTER, "x", NULL, NULL, 0), -1);
        metrics_add(NULL, "x", NULL, 1);
        metrics_set(NULL, "x", NULL, 1);
        metrics_observe(NULL, "x", NULL, 1);
        CHECK(metrics_render(NULL) == NULL);
        metrics_free(NULL);
}

TEST(series_cap)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "hits_total", METRIC_COUNTER, "Hits.", "path", NULL, 0), 0);
        char v[32];
        for (int i = 0; i < 100; i++) {
                snprintf(v, sizeof(v), "/p%d", i);
                metrics_add(m, "hits_total", v, 1);
        }
        /* a value that has its series keeps it after the cap */
        metrics_add(m, "hits_total", "/p0", 1);
        /* too long, or not UTF-8: counted as "other" even before the cap */
        char long_value[300];
        memset(long_value, 'x', sizeof(long_value) - 1);
        long_value[sizeof(long_value) - 1] = '\0';
        metrics_add(m, "hits_total", long_value, 1);
        metrics_add(m, "hits_total", "\xff\xfe", 1);
        char *text = metrics_render(m);
        CHECK(text != NULL);
        if (text == NULL)
                text = strdup("");
        /* 64 series: /p0 ... /p62, then "other" with the 37 values after them and the 2 odd ones */
        CHECK_INT(count_lines(text, "hits_total{"), 64);
        CHECK(strstr(text, "hits_total{path=\"/p0\"} 2\n") != NULL);
        CHECK(strstr(text, "hits_total{path=\"/p62\"} 1\n") != NULL);
        CHECK(strstr(text, "/p63") == NULL);
        CHECK(strstr(text, "xxx") == NULL);
        CHECK(strstr(text, "hits_total{path=\"/p62\"} 1\nhits_total{path=\"other\"} 39\n") != NULL);
        free(text);

        /* the odd values alone: "other" is a series like any, made on first use */
        CHECK_INT(metrics_define(m, "odd_total", METRIC_COUNTER, "Odd.", "v", NULL, 0), 0);
        metrics_add(m, "odd_total", "\xc3", 1);
        metrics_add(m, "odd_total", "ok", 1);
        metrics_add(m, "odd_total", "other", 1);
        text = metrics_render(m);
        CHECK(text != NULL && strstr(text, "# TYPE odd_total counter\n"
                                           "odd_total{v=\"other\"} 2\n"
                                           "odd_total{v=\"ok\"} 1\n") != NULL);
        free(text);
        metrics_free(m);
}

#define THREADS 8
#define PER_THREAD 10000

static void *hammer(void *arg)
{
        struct metrics *m = arg;
        char label[8];
        for (int i = 0; i < PER_THREAD; i++) {
                /* every thread makes new series of the same family as it goes */
                snprintf(label, sizeof(label), "s%d", i % 100);
                metrics_add(m, "work_total", NULL, 1);
                metrics_add(m, "by_label_total", label, 1);
                metrics_observe(m, "work_seconds", NULL, 0.5);
        }
        return NULL;
}

TEST(threads)
{
        struct metrics *m = metrics_new();
        CHECK_INT(metrics_define(m, "work_total", METRIC_COUNTER, "Work.", NULL, NULL, 0), 0);
        CHECK_INT(metrics_define(m, "by_label_total", METRIC_COUNTER, "Work by label.", "l", NULL, 0), 0);
        CHECK_INT(metrics_define(m, "work_seconds", METRIC_HISTOGRAM, "Work time.", NULL, NULL, 0), 0);
        pthread_t t[THREADS];
        int started = 0;
        for (int i = 0; i < THREADS; i++)
                if (pthread_create(&t[i], NULL, hammer, m) == 0)
                        started++;
        CHECK_INT(started, THREADS);
        /* scrapes while they count */
        for (int i = 0; i < 20; i++)
                free(metrics_render(m));
        for (int i = 0; i < started; i++)
                pthread_join(t[i], NULL);
        char *text = metrics_render(m);
        CHECK(text != NULL);
        if (text == NULL)
                text = strdup("");
        CHECK(strstr(text, "\nwork_total 80000\n") != NULL);
        CHECK(strstr(text, "\nwork_seconds_count 80000\n") != NULL);
        CHECK(strstr(text, "\nwork_seconds_sum 40000\n") != NULL);
        CHECK(strstr(text, "\nwork_seconds_bucket{le=\"0.25\"} 0\nwork_seconds_bucket{le=\"0.5\"} 80000\n") != NULL);
        /* 63 labels of 800 each, the other 37 folded: 29,600 */
        CHECK_INT(count_lines(text, "by_label_total{"), 64);
        CHECK(strstr(text, "by_label_total{l=\"other\"} 29600\n") != NULL);
        free(text);
        metrics_free(m);
}

int main(void)
{
        RUN(counter_with_labels);
        RUN(gauge);
        RUN(histogram_custom_buckets);
        RUN(histogram_default_buckets);
        RUN(escaping);
        RUN(numbers);
        RUN(refused);
        RUN(series_cap);
        RUN(threads);
        return DONE();
}
