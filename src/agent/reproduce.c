/* reproduce.c: reproducible results (docs/modes.md, "Reproducible results").
 *
 * After the run, the code of its steps runs again, in order, in a fresh
 * workspace on the same inputs (the caller stages it), through a toolbox of
 * its own: new jails, a new session.  Then every file under output/ of the
 * run is compared with the one the code made again: text and CSV (every
 * format but PNG) byte for byte; PNG byte for byte, else pixel by pixel in
 * a jail (decoding an image made by jailed code never happens on the host)
 * within the tolerance of docs/modes.md.  Files whose last writer was the
 * model's write_file are model-authored: listed, never counted as
 * reproduced.  The answer's numbers are looked for in what the code printed
 * and wrote again: one found nowhere is a number the code never computed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../workspace/artifact.h"
#include "agent-internal.h"
#include "toolbox.h"

#define REPRO_FILE_MAX (8u << 20)     /* bytes of a file compared */
#define REPRO_PNG_MAX (4u << 20)      /* a PNG compared pixel by pixel */
#define REPRO_TEXT_SCAN (1u << 20)    /* bytes of a text file searched for the answer's numbers */
#define REPRO_NUMBERS_MAX 20000
#define REPRO_ORIG_DIR ".corral-reproduce"

/* PNG tolerance: same width, height and channels; mean absolute difference
 * of the channel values (0..1) at most 0.01, and at most 1% of the values
 * off by more than 0.1 (anti-aliasing and font hinting move edges, not
 * bars). */
static const char png_compare_code[] =
        "import json, numpy as np, matplotlib.image as mi\n"
        "a = mi.imread('" REPRO_ORIG_DIR "/orig.png'); b = mi.imread(%s)\n"
        "r = {'shape': list(a.shape), 'shape_now': list(b.shape)}\n"
        "if a.shape == b.shape:\n"
        "    d = np.abs(a.astype('float64') - b.astype('float64'))\n"
        "    r['mean'] = float(d.mean()); r['over'] = float((d > 0.1).mean())\n"
        "print('CORRAL-PNG ' + json.dumps(r))\n";

/* ---- numbers ---- */

struct numbers {
        double *v;
        size_t n, cap;
};

static void numbers_add(struct numbers *ns, double x)
{
        if (ns->n >= REPRO_NUMBERS_MAX)
                return;
        if (ns->n == ns->cap) {
                size_t cap = ns->cap ? ns->cap * 2 : 256;
                double *v = realloc(ns->v, cap * sizeof(*v));
                if (v == NULL)
                        return;
                ns->v = v;
                ns->cap = cap;
        }
        ns->v[ns->n++] = x;
}

/* The numbers written in text: digits with an optional sign, thousands
 * commas and decimals, not part of a word or a path ("top5.csv", "v2").
 * Each with its text (commas dropped) and decimals.  fn per number. */
static void scan_numbers(const char *s, size_t len, void (*fn)(void *ud, const char *text, double x, int decimals),
                         void *ud)
{
        for (size_t i = 0; i < len;) {
                bool start = isdigit((unsigned char)s[i]) &&
                             (i == 0 || !(isalnum((unsigned char)s[i - 1]) || strchr("_/.", s[i - 1])));
                if (!start) {
                        i++;
                        continue;
                }
                char buf[64];
                size_t k = 0, j = i;
                int decimals = -1;
                if (i > 0 && s[i - 1] == '-')
                        buf[k++] = '-';
                while (j < len && k < sizeof(buf) - 1) {
                        char c = s[j];
                        if (isdigit((unsigned char)c)) {
                                buf[k++] = c;
                                if (decimals >= 0)
                                        decimals++;
                        } else if (c == ',' && decimals < 0 && j + 3 < len + 0 && isdigit((unsigned char)s[j + 1]) &&
                                   isdigit((unsigned char)s[j + 2]) && isdigit((unsigned char)s[j + 3])) {
                                /* a thousands separator */
                        } else if (c == '.' && decimals < 0 && j + 1 < len && isdigit((unsigned char)s[j + 1])) {
                                buf[k++] = c;
                                decimals = 0;
                        } else {
                                break;
                        }
                        j++;
                }
                buf[k] = '\0';
                bool word = j < len && (isalpha((unsigned char)s[j]) || s[j] == '_');
                if (!word)
                        fn(ud, buf, strtod(buf, NULL), decimals < 0 ? 0 : decimals);
                i = j;
        }
}

static void collect(void *ud, const char *text, double x, int decimals)
{
        (void)text;
        (void)decimals;
        numbers_add(ud, x);
}

struct answer_check {
        const struct numbers *found;
        const struct numbers *task;
        json_t *unsupported;
};

/* Whether some y rounds to x at x's decimals (300.0 matches 300.00 and
 * 299.996; 1,234 matches 1234.2). */
static bool matches(const struct numbers *ns, double x, int decimals)
{
        double scale = 1; /* 10^|decimals|, exact to 10^22 (no libm's pow) */
        for (int i = 0; i < (decimals < 0 ? -decimals : decimals) && i < 308; i++)
                scale *= 10;
        double half = (decimals >= 0 ? 0.5 / scale : 0.5 * scale) + 1e-9 * fabs(x);
        for (size_t i = 0; i < ns->n; i++)
                if (fabs(ns->v[i] - x) <= half || fabs(fabs(ns->v[i]) - fabs(x)) <= half)
                        return true;
        return false;
}

static void check_number(void *ud, const char *text, double x, int decimals)
{
        struct answer_check *c = ud;
        /* Small whole numbers (counts, "top 5", list items) and the task's
         * own numbers say nothing about what the code computed. */
        if (decimals == 0 && fabs(x) <= 10)
                return;
        if (matches(c->task, x, decimals) || matches(c->found, x, decimals))
                return;
        for (size_t i = 0; i < json_array_size(c->unsupported); i++)
                if (strcmp(json_string_value(json_array_get(c->unsupported, i)), text) == 0)
                        return;
        if (json_array_size(c->unsupported) < 20)
                json_array_append_new(c->unsupported, json_string(text));
}

/* ---- the replay ---- */

static bool under_output(const char *path)
{
        return path && strncmp(path, "output/", 7) == 0;
}

/* Who wrote each file last: {path: "code"|"model"}. */
static json_t *last_writers(const json_t *steps)
{
        json_t *w = json_object(), *s, *p;
        size_t i, k;
        json_array_foreach (steps, i, s) {
                const char *tool = json_string_value(json_object_get(s, "tool"));
                bool model = tool && strcmp(tool, "write_file") == 0;
                json_array_foreach (json_object_get(s, "changed"), k, p)
                        if (json_is_string(p))
                                json_object_set_new(w, json_string_value(p), json_string(model ? "model" : "code"));
        }
        return w;
}

/* Compare a PNG that differs in bytes pixel by pixel, in a jail.  NULL:
 * within tolerance; else what differs. */
static char *compare_png(struct toolbox *tb, struct workspace *fresh, const char *orig, size_t orig_len,
                         const char *path)
{
        corral_error *err = NULL;
        char *why = NULL;
        if (orig_len > REPRO_PNG_MAX)
                return strdup("a PNG too large to compare pixel by pixel");
        if (workspace_write_file(fresh, REPRO_ORIG_DIR "/orig.png", orig, orig_len, &err) < 0) {
                if (asprintf(&why, "cannot compare: %s", err->msg) < 0)
                        why = NULL;
                corral_error_free(err);
                return why;
        }
        json_t *lit = json_string(path);
        cleanup_free char *quoted = lit ? json_dumps(lit, JSON_ENCODE_ANY) : NULL;
        json_decref(lit);
        cleanup_free char *code = NULL;
        if (quoted == NULL || asprintf(&code, png_compare_code, quoted) < 0)
                return strdup("cannot compare: out of memory");
        struct tool_result s = { .name = "run_python" };
        toolbox_exec_code(tb, "python", code, &s);
        const char *out = json_string_value(json_object_get(s.exec, "stdout"));
        const char *tag = out ? strstr(out, "CORRAL-PNG ") : NULL;
        json_t *r = tag ? json_loads(tag + 11, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
        if (r == NULL) {
                why = strdup("the pixels could not be compared");
        } else if (!json_equal(json_object_get(r, "shape"), json_object_get(r, "shape_now"))) {
                cleanup_free char *a = json_dumps(json_object_get(r, "shape"), JSON_COMPACT);
                cleanup_free char *b = json_dumps(json_object_get(r, "shape_now"), JSON_COMPACT);
                if (asprintf(&why, "a PNG of other dimensions (%s, now %s)", a ? a : "?", b ? b : "?") < 0)
                        why = NULL;
        } else {
                double mean = json_number_value(json_object_get(r, "mean"));
                double over = json_number_value(json_object_get(r, "over"));
                if ((mean > 0.01 || over > 0.01) &&
                    asprintf(&why, "pixels differ beyond the tolerance (mean difference %.4f, %.2f%% of values "
                                   "off by more than 0.1)", mean, over * 100) < 0)
                        why = strdup("pixels differ beyond the tolerance");
        }
        json_decref(r);
        tool_result_release(&s);
        return why;
}

json_t *agent_reproduce(const struct agent_config *cfg, struct workspace *orig, const json_t *steps,
                        const char *answer, corral_error **ret_err)
{
        struct toolbox *tb = NULL;
        if (toolbox_new(cfg, &tb, ret_err) < 0)
                return NULL;
        double t0 = monotonic_ms();
        json_t *report = json_pack("{s:[], s:[], s:[]}", "files", "differences", "failed_steps");
        json_t *differences = json_object_get(report, "differences");
        struct numbers found = { 0 }, task = { 0 };
        scan_numbers(cfg->task, strlen(cfg->task), collect, &task);
        unsigned ran = 0;
        json_t *s;
        size_t i;
        /* Every step that ran code, in order: a session's state flows from
         * one to the next, so the steps that made the artifacts cannot run
         * without those before them.  write_file outside output/ is the
         * program's own (a script it then runs): written again; in output/
         * it is model-authored and not. */
        json_array_foreach (steps, i, s) {
                const char *tool = json_string_value(json_object_get(s, "tool"));
                const char *path = json_string_value(json_object_get(s, "path"));
                if (tool && strcmp(tool, "write_file") == 0) {
                        const char *content = json_string_value(json_object_get(s, "content"));
                        corral_error *err = NULL;
                        if (path && content && !under_output(path) &&
                            workspace_write_file(cfg->ws, path, content, json_string_length(json_object_get(s, "content")),
                                                 &err) < 0)
                                corral_error_free(err);
                        continue;
                }
                const char *lang = json_string_value(json_object_get(s, "lang"));
                const char *code = json_string_value(json_object_get(s, "code"));
                if (lang == NULL || code == NULL || !json_is_true(json_object_get(s, "ran")))
                        continue;
                struct tool_result r = { .name = strcmp(lang, "python") == 0 ? "run_python" : "run_shell" };
                toolbox_set_turn(tb, (unsigned)i + 1, 0);
                toolbox_exec_code(tb, lang, code, &r);
                ran++;
                const char *out = json_string_value(json_object_get(r.exec, "stdout"));
                if (out)
                        scan_numbers(out, strlen(out), collect, &found);
                bool failed_then = !json_is_true(json_object_get(s, "ok"));
                if (!r.ok && !failed_then)
                        json_array_append_new(json_object_get(report, "failed_steps"),
                                              json_pack("{s:i, s:s}", "step", (int)i + 1, "error",
                                                        r.content ? r.content : ""));
                bool fatal = r.fatal || r.cancelled;
                tool_result_release(&r);
                if (fatal) {
                        json_array_append_new(differences, json_string("the reproduction stopped: a jail could not "
                                                                       "be set up, or the run was cancelled"));
                        break;
                }
        }

        /* The files of output/ at the end of the run. */
        json_t *writers = last_writers(steps), *list = NULL, *e;
        if (workspace_list_files(orig, "output", 16, 10000, &list, NULL) < 0)
                list = json_array();
        unsigned same = 0, compared = 0;
        json_array_foreach (list, i, e) {
                const char *path = json_string_value(json_object_get(e, "path"));
                const char *type = json_string_value(json_object_get(e, "type"));
                if (path == NULL || type == NULL || strcmp(type, "file") != 0)
                        continue;
                const char *writer = json_string_value(json_object_get(writers, path));
                json_t *f = json_pack("{s:s}", "path", path);
                char *why = NULL;
                const char *status;
                cleanup_free char *a = NULL, *b = NULL;
                size_t alen = 0, blen = 0;
                bool atrunc = false, btrunc = false;
                corral_error *err = NULL;
                (void)artifact_detect_at(orig->root_fd, path, ARTIFACT_HEAD_MAX, f);
                const char *format = json_string_value(json_object_get(f, "format"));
                if (writer && strcmp(writer, "model") == 0) {
                        status = "model_authored";
                        if (asprintf(&why, "%s: written by the model (write_file), not by code: not reproduced",
                                     path) < 0)
                                why = NULL;
                } else if (workspace_read_file(orig, path, REPRO_FILE_MAX, &a, &alen, &atrunc, &err) < 0) {
                        status = "not_compared";
                        if (asprintf(&why, "%s: cannot read it: %s", path, err->msg) < 0)
                                why = NULL;
                } else if (workspace_read_file(cfg->ws, path, REPRO_FILE_MAX, &b, &blen, &btrunc, NULL) < 0) {
                        status = "missing";
                        if (asprintf(&why, "%s: the code did not make it again", path) < 0)
                                why = NULL;
                } else if (atrunc || btrunc) {
                        status = "not_compared";
                        if (asprintf(&why, "%s: larger than %u MiB, not compared", path, REPRO_FILE_MAX >> 20) < 0)
                                why = NULL;
                } else if (alen == blen && memcmp(a, b, alen) == 0) {
                        status = "same";
                } else if (format && strcmp(format, "png") == 0) {
                        char *png = compare_png(tb, cfg->ws, a, alen, path);
                        status = png ? "differs" : "within_tolerance";
                        if (png && asprintf(&why, "%s: %s", path, png) < 0)
                                why = NULL;
                        free(png);
                } else {
                        size_t at = 0;
                        while (at < alen && at < blen && a[at] == b[at])
                                at++;
                        status = "differs";
                        if (asprintf(&why, "%s: differs from byte %zu (%zu bytes then, %zu now)", path, at, alen,
                                     blen) < 0)
                                why = NULL;
                }
                if (b && (format == NULL || strcmp(format, "png") != 0))
                        scan_numbers(b, blen < REPRO_TEXT_SCAN ? blen : REPRO_TEXT_SCAN, collect, &found);
                corral_error_free(err);
                compared++;
                same += strcmp(status, "same") == 0 || strcmp(status, "within_tolerance") == 0;
                json_object_set_new(f, "status", json_string(status));
                json_array_append_new(json_object_get(report, "files"), f);
                if (why)
                        json_array_append_new(differences, json_string(why));
                free(why);
        }
        json_decref(list);
        json_decref(writers);

        /* The answer's numbers, in what the code printed and wrote again. */
        struct answer_check ac = { .found = &found, .task = &task, .unsupported = json_array() };
        if (answer)
                scan_numbers(answer, strlen(answer), check_number, &ac);
        json_t *n;
        json_array_foreach (ac.unsupported, i, n) {
                cleanup_free char *line = NULL;
                if (asprintf(&line, "the answer states %s, which no step printed and no output file holds when the "
                                    "code runs again", json_string_value(n)) >= 0)
                        json_array_append_new(differences, json_string(line));
        }
        json_object_set_new(report, "unsupported_numbers", ac.unsupported);
        free(found.v);
        free(task.v);
        toolbox_free(tb);
        bool ok = json_array_size(differences) == 0 && json_array_size(json_object_get(report, "failed_steps")) == 0;
        json_object_set_new(report, "result", json_string(ok ? "reproduced" : "not_reproduced"));
        json_object_set_new(report, "steps", json_integer(ran));
        json_object_set_new(report, "files_compared", json_integer(compared));
        json_object_set_new(report, "files_reproduced", json_integer(same));
        json_object_set_new(report, "wall_ms", json_real(round_ms(monotonic_ms() - t0)));
        return report;
}
