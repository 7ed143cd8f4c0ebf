/* metrics.c: the Prometheus registry (metrics.h).
 *
 * Families are kept in definition order and found by name, series in
 * first-use order and found by label value, both by a linear search: a
 * server has a few dozen families of at most 64 series, and a search is
 * cheaper than the request it counts.  One mutex guards everything;
 * metrics_render() holds it while it writes the text, so a scrape sees
 * one consistent moment.  A histogram keeps a count per bucket and adds
 * them up when rendered (an observation touches one bucket, not all).
 * Numbers are written by printf and read back by strtod, both in the C
 * locale (the library never calls setlocale()).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"

#define METRICS_MAX_SERIES 64
#define METRICS_MAX_LABEL_VALUE 256 /* bytes; a longer value is counted as OTHER */
#define OTHER "other"

static const double default_buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                                          5, 10 };

struct series {
        char *label_value;      /* NULL in a family without a label */
        double value;           /* a counter's or a gauge's */
        double sum;             /* a histogram's: the sum of its observations, */
        uint64_t count;         /* their number, */
        uint64_t *bucket_count; /* and how many fell in each bucket (not cumulative; the last is +Inf) */
};

struct family {
        char *name;
        char *help;
        char *label;            /* NULL: one series, made by metrics_define() */
        enum metric_type type;
        double *buckets;        /* histograms: n_buckets upper bounds, +Inf not among them */
        size_t n_buckets;
        struct series *series;  /* n_series of them, room for alloc_series */
        size_t n_series, alloc_series;
};

struct metrics {
        pthread_mutex_t lock;
        struct family **families;
        size_t n_families, alloc_families;
};

struct metrics *metrics_new(void)
{
        struct metrics *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return NULL;
        pthread_mutex_init(&m->lock, NULL);
        return m;
}

static void family_free(struct family *f)
{
        if (f == NULL)
                return;
        for (size_t i = 0; i < f->n_series; i++) {
                free(f->series[i].label_value);
                free(f->series[i].bucket_count);
        }
        free(f->series);
        free(f->buckets);
        free(f->label);
        free(f->help);
        free(f->name);
        free(f);
}

void metrics_free(struct metrics *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->n_families; i++)
                family_free(m->families[i]);
        free(m->families);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for a metric name (colon true), [a-zA-Z_][a-zA-Z0-9_]* for a label name. */
static bool valid_name(const char *s, bool colon)
{
        if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++) {
                char c = *s;
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                          (colon && c == ':');
                if (!ok)
                        return false;
        }
        return true;
}

static struct family *family_find(struct metrics *m, const char *name)
{
        if (name == NULL)
                return NULL;
        for (size_t i = 0; i < m->n_families; i++)
                if (strcmp(m->families[i]->name, name) == 0)
                        return m->families[i];
        return NULL;
}

/* A new series at the end of f (label_value copied; NULL for none), or NULL
 * when out of memory or f is full. */
static struct series *series_add(struct family *f, const char *label_value)
{
        if (f->n_series >= METRICS_MAX_SERIES)
                return NULL;
        if (f->n_series == f->alloc_series) {
                size_t want = f->alloc_series ? f->alloc_series * 2 : 4;
                if (want > METRICS_MAX_SERIES)
                        want = METRICS_MAX_SERIES;
                struct series *v = realloc(f->series, want * sizeof(*v));
                if (v == NULL)
                        return NULL;
                f->series = v;
                f->alloc_series = want;
        }
        struct series s = { 0 };
        if (label_value != NULL && (s.label_value = strdup(label_value)) == NULL)
                return NULL;
        if (f->type == METRIC_HISTOGRAM && (s.bucket_count = calloc(f->n_buckets + 1, sizeof(uint64_t))) == NULL) {
                free(s.label_value);
                return NULL;
        }
        f->series[f->n_series] = s;
        return &f->series[f->n_series++];
}

static struct series *series_find(struct family *f, const char *label_value)
{
        for (size_t i = 0; i < f->n_series; i++)
                if (strcmp(f->series[i].label_value, label_value) == 0)
                        return &f->series[i];
        return NULL;
}

/* The series of f for label_value, made on first use; NULL when out of memory. */
static struct series *series_get(struct family *f, const char *label_value)
{
        if (f->label == NULL)
                return f->n_series > 0 ? &f->series[0] : NULL;
        if (label_value == NULL)
                label_value = "";
        size_t len = strnlen(label_value, METRICS_MAX_LABEL_VALUE + 1);
        /* too long, or not UTF-8 (the format's encoding): no name a dashboard would show */
        if (len > METRICS_MAX_LABEL_VALUE || !utf8_valid(label_value, len))
                label_value = OTHER;
        struct series *s = series_find(f, label_value);
        if (s != NULL)
                return s;
        /* the last slot is OTHER's, so the family never holds more than METRICS_MAX_SERIES */
        if (f->n_series >= METRICS_MAX_SERIES - 1 && strcmp(label_value, OTHER) != 0) {
                s = series_find(f, OTHER);
                if (s != NULL)
                        return s;
                label_value = OTHER;
        }
        return series_add(f, label_value);
}

int metrics_define(struct metrics *m, const char *name, enum metric_type type, const char *help, const char *label,
                   const double *buckets, size_t n_buckets)
{
        if (m == NULL || !valid_name(name, /* colon= */ true) || help == NULL)
                return -1;
        if (type != METRIC_COUNTER && type != METRIC_GAUGE && type != METRIC_HISTOGRAM)
                return -1;
        /* "__" names are Prometheus's own; "le" is a histogram's bucket label */
        if (label != NULL && (!valid_name(label, /* colon= */ false) || strncmp(label, "__", 2) == 0 ||
                              (type == METRIC_HISTOGRAM && strcmp(label, "le") == 0)))
                return -1;
        if (type == METRIC_HISTOGRAM) {
                if (buckets == NULL) {
                        buckets = default_buckets;
                        n_buckets = ARRAY_SIZE(default_buckets);
                }
                for (size_t i = 0; i < n_buckets; i++)
                        if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
                                return -1;
        } else {
                n_buckets = 0;
        }

        struct family *f = calloc(1, sizeof(*f));
        if (f == NULL)
                return -1;
        f->type = type;
        f->n_buckets = n_buckets;
        f->name = strdup(name);
        f->help = strdup(help);
        f->label = label ? strdup(label) : NULL;
        f->buckets = n_buckets > 0 ? calloc(n_buckets, sizeof(double)) : NULL;
        if (f->name == NULL || f->help == NULL || (label && f->label == NULL) || (n_buckets > 0 && f->buckets == NULL) ||
            (label == NULL && series_add(f, NULL) == NULL)) {
                family_free(f);
                return -1;
        }
        if (n_buckets > 0)
                memcpy(f->buckets, buckets, n_buckets * sizeof(double));

        pthread_mutex_lock(&m->lock);
        int ret = -1;
        if (family_find(m, name) != NULL)
                goto out;
        if (m->n_families == m->alloc_families) {
                size_t want = m->alloc_families ? m->alloc_families * 2 : 16;
                struct family **v = realloc(m->families, want * sizeof(*v));
                if (v == NULL)
                        goto out;
                m->families = v;
                m->alloc_families = want;
        }
        m->families[m->n_families++] = TAKE_PTR(f);
        ret = 0;
out:
        pthread_mutex_unlock(&m->lock);
        family_free(f);
        return ret;
}

/* The family name when it is of type, else NULL.  Called with the lock held. */
static struct family *family_of_type(struct metrics *m, const char *name, enum metric_type type)
{
        struct family *f = family_find(m, name);
        return f != NULL && f->type == type ? f : NULL;
}

void metrics_add(struct metrics *m, const char *name, const char *label_value, double n)
{
        if (m == NULL)
                return;
        pthread_mutex_lock(&m->lock);
        struct family *f = family_find(m, name);
        /* a counter only goes up: n >= 0 is false for a negative n and for NaN */
        if (f != NULL && (f->type == METRIC_GAUGE || (f->type == METRIC_COUNTER && n >= 0))) {
                struct series *s = series_get(f, label_value);
                if (s != NULL)
                        s->value += n;
        }
        pthread_mutex_unlock(&m->lock);
}

void metrics_set(struct metrics *m, const char *name, const char *label_value, double v)
{
        if (m == NULL)
                return;
        pthread_mutex_lock(&m->lock);
        struct family *f = family_of_type(m, name, METRIC_GAUGE);
        struct series *s = f ? series_get(f, label_value) : NULL;
        if (s != NULL)
                s->value = v;
        pthread_mutex_unlock(&m->lock);
}

void metrics_observe(struct metrics *m, const char *name, const char *label_value, double v)
{
        if (m == NULL || isnan(v))
                return;
        pthread_mutex_lock(&m->lock);
        struct family *f = family_of_type(m, name, METRIC_HISTOGRAM);
        struct series *s = f ? series_get(f, label_value) : NULL;
        if (s != NULL) {
                /* le: "less than or equal"; past every bound is the +Inf bucket */
                size_t i = 0;
                while (i < f->n_buckets && v > f->buckets[i])
                        i++;
                s->bucket_count[i]++;
                s->count++;
                s->sum += v;
        }
        pthread_mutex_unlock(&m->lock);
}

/* A sample value or an le bound as Prometheus writes it: integers whole,
 * others in the fewest digits that read back exactly (0.1, not
 * 0.10000000000000001), and +Inf, -Inf, NaN. */
static void format_number(char *buf, size_t size, double v)
{
        if (isnan(v)) {
                snprintf(buf, size, "NaN");
                return;
        }
        if (isinf(v)) {
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        if (v == 0) {
                snprintf(buf, size, "0"); /* and not "-0" */
                return;
        }
        /* below 1e17 %.0f is exact and short; above, %g's exponent is shorter than 17+ digits */
        if (v == trunc(v) && fabs(v) < 1e17) {
                snprintf(buf, size, "%.0f", v);
                return;
        }
        /* 15 digits always read back when fewer could: start there */
        for (int prec = 15; prec <= 17; prec++) {
                snprintf(buf, size, "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        return;
        }
}

/* s with the escapes that help (backslash, newline) or a label value (those
 * and the double quote) needs. */
static void put_escaped(FILE *out, const char *s, bool quote)
{
        for (; *s; s++) {
                if (*s == '\\')
                        fputs("\\\\", out);
                else if (*s == '\n')
                        fputs("\\n", out);
                else if (*s == '"' && quote)
                        fputs("\\\"", out);
                else
                        fputc(*s, out);
        }
}

/* name{label="value",le="bound"}, the braces only when there are labels. */
static void put_sample_name(FILE *out, const struct family *f, const struct series *s, const char *suffix,
                            const char *le)
{
        fprintf(out, "%s%s", f->name, suffix);
        if (s->label_value == NULL && le == NULL)
                return;
        fputc('{', out);
        if (s->label_value != NULL) {
                fprintf(out, "%s=\"", f->label);
                put_escaped(out, s->label_value, /* quote= */ true);
                fputc('"', out);
        }
        if (le != NULL)
                fprintf(out, "%sle=\"%s\"", s->label_value != NULL ? "," : "", le);
        fputc('}', out);
}

static const char *type_name(enum metric_type t)
{
        switch (t) {
        case METRIC_COUNTER:
                return "counter";
        case METRIC_GAUGE:
                return "gauge";
        case METRIC_HISTOGRAM:
                return "histogram";
        default:
                return "untyped";
        }
}

static void render_family(FILE *out, const struct family *f)
{
        char num[64];
        fprintf(out, "# HELP %s ", f->name);
        put_escaped(out, f->help, /* quote= */ false);
        fprintf(out, "\n# TYPE %s %s\n", f->name, type_name(f->type));
        for (size_t i = 0; i < f->n_series; i++) {
                const struct series *s = &f->series[i];
                if (f->type != METRIC_HISTOGRAM) {
                        put_sample_name(out, f, s, "", NULL);
                        format_number(num, sizeof(num), s->value);
                        fprintf(out, " %s\n", num);
                        continue;
                }
                uint64_t cumulative = 0;
                for (size_t b = 0; b <= f->n_buckets; b++) {
                        cumulative += s->bucket_count[b];
                        format_number(num, sizeof(num), b < f->n_buckets ? f->buckets[b] : INFINITY);
                        put_sample_name(out, f, s, "_bucket", num);
                        fprintf(out, " %" PRIu64 "\n", cumulative);
                }
                put_sample_name(out, f, s, "_sum", NULL);
                format_number(num, sizeof(num), s->sum);
                fprintf(out, " %s\n", num);
                put_sample_name(out, f, s, "_count", NULL);
                fprintf(out, " %" PRIu64 "\n", s->count);
        }
}

char *metrics_render(struct metrics *m)
{
        if (m == NULL)
                return NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);
        if (out == NULL)
                return NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_families; i++)
                render_family(out, m->families[i]);
        pthread_mutex_unlock(&m->lock);
        /* a write that failed for want of memory shows here */
        bool failed = ferror(out) != 0;
        if (fclose(out) != 0 || failed) {
                free(buf);
                return NULL;
        }
        return buf;
}
