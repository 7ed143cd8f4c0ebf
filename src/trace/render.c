/* render.c: the terminal view of a run, live or replayed from a trace.
 *
 * A trace subscriber: each event becomes a few lines on the output stream
 * (see render.h for the look).  Everything that came from the model or a
 * program (text, code, output, even tool names and paths) passes through
 * term_sanitize() (src/lib/termsafe.c) first, so nothing in a trace can drive
 * the terminal.
 * The spinner runs in its own thread, drawing under the same mutex as the
 * events.  Does not read or write traces, and knows nothing of jails or
 * models beyond the fields of the events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "render.h"

#define RULE_WIDTH 72          /* columns of a step's header rule */
#define MAX_LINE_BYTES 500     /* program output lines are cut here */
#define KEY_WIDTH 11           /* "  iterations " */

/* SGR codes (the highlighter's own are in highlight.c). */
#define C_BOLD "1"
#define C_DIM "2"
#define C_RED "31"
#define C_GREEN "32"
#define C_YELLOW "33"

struct render {
        struct render_options o;
        pthread_mutex_t lock;   /* output and everything below */
        pthread_cond_t cond;    /* wakes the spinner early */
        bool printed_any;
        bool at_bol;            /* the cursor is at the start of a line */
        long long iteration;    /* of the last model_request; -1 none */
        bool delta_printed;     /* text of `iteration` was streamed */
        char pending[4];        /* the unfinished end of the last delta (a split UTF-8 sequence, a CR) */
        size_t npending;
        char *last_text;        /* the last model text shown, to not repeat it as the answer */
        char *run_id;           /* of run_start: where to find the run again, in the summary */
        char *last_code;        /* of the last run_python/run_shell call, for the review's excerpts */
        char *trace_file;
        unsigned steps;
        json_t *calls;          /* tool call id -> {"step", "name"} */
        /* The spinner: */
        bool waiting;           /* between model_request and the reply */
        double wait_start;
        bool spin_running;
        bool spin_drawn;
        unsigned spin_gen;      /* changed to tell the running thread to stop */
        pthread_t spin_thread;
};

void render_options_default(struct render_options *o, FILE *out, bool live)
{
        memset(o, 0, sizeof(*o));
        o->out = out ? out : stderr;
        const char *term = getenv("TERM");
        const char *no_color = getenv("NO_COLOR");
        bool tty = isatty(fileno(o->out)) == 1;
        bool dumb = term != NULL && strcmp(term, "dumb") == 0;
        o->color = tty && !dumb && (no_color == NULL || no_color[0] == '\0');
        o->spinner = live && tty && !dumb;
        o->quiet = false;
        o->max_output_lines = 40;
}

render *render_new(const struct render_options *o)
{
        render *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return NULL;
        r->o = *o;
        if (r->o.out == NULL)
                r->o.out = stderr;
        if (r->o.max_output_lines == 0)
                r->o.max_output_lines = 40;
        r->at_bol = true;
        r->iteration = -1;
        r->calls = json_object();
        pthread_mutex_init(&r->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&r->cond, &ca);
        pthread_condattr_destroy(&ca);
        if (r->calls == NULL) {
                render_free(r);
                return NULL;
        }
        return r;
}

/* -- output helpers (all with r->lock held) -- */

static void out_raw(render *r, const char *s, size_t n)
{
        if (n == 0)
                return;
        fwrite(s, 1, n, r->o.out);
        r->at_bol = s[n - 1] == '\n';
        r->printed_any = true;
}

static void out_str(render *r, const char *s)
{
        out_raw(r, s, strlen(s));
}

static void out_fmt(render *r, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void out_fmt(render *r, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n > 0)
                out_raw(r, s, (size_t)n);
        free(s);
}

static void color_on(render *r, const char *code)
{
        if (r->o.color && code)
                fprintf(r->o.out, "\033[%sm", code);
}

static void color_off(render *r, const char *code)
{
        if (r->o.color && code)
                fputs("\033[0m", r->o.out);
}

/* Untrusted text, sanitised, optionally in colour (per line, so colour
 * never leaks past a newline). */
static void out_text(render *r, const char *color, const char *s, size_t n)
{
        size_t clen = 0;
        cleanup_free char *clean = term_sanitize(s, n, &clen);
        if (clean == NULL || clen == 0)
                return;
        if (!r->o.color || color == NULL) {
                out_raw(r, clean, clen);
                return;
        }
        for (size_t i = 0; i < clen;) {
                const char *nl = memchr(clean + i, '\n', clen - i);
                size_t seg = nl ? (size_t)(nl - (clean + i)) : clen - i;
                if (seg > 0) {
                        color_on(r, color);
                        out_raw(r, clean + i, seg);
                        color_off(r, color);
                }
                i += seg;
                if (nl) {
                        out_raw(r, "\n", 1);
                        i++;
                }
        }
}

static void out_cstr(render *r, const char *color, const char *s)
{
        if (s)
                out_text(r, color, s, strlen(s));
}

static void ensure_bol(render *r)
{
        if (!r->at_bol)
                out_str(r, "\n");
}

/* A new block: on a fresh line, after a blank one (except at the top). */
static void begin_block(render *r)
{
        ensure_bol(r);
        if (r->printed_any)
                out_str(r, "\n");
}

/* Columns of a UTF-8 string, roughly: code points. */
static size_t text_width(const char *s)
{
        size_t w = 0;
        for (; *s; s++)
                if (((unsigned char)*s & 0xc0) != 0x80)
                        w++;
        return w;
}

/* "── label ─────…" to RULE_WIDTH columns; label is trusted (already sanitised). */
static void out_rule(render *r, const char *dash, const char *label, const char *label_color)
{
        color_on(r, C_DIM);
        out_fmt(r, "%s%s ", dash, dash);
        color_off(r, C_DIM);
        color_on(r, label_color);
        out_str(r, label);
        color_off(r, label_color);
        size_t w = 3 + text_width(label) + 1;
        color_on(r, C_DIM);
        out_str(r, " ");
        for (; w < RULE_WIDTH; w++)
                out_str(r, dash);
        color_off(r, C_DIM);
        out_str(r, "\n");
}

/* "  key        value": value untrusted, continuation lines indented. */
static void out_kv(render *r, const char *key, const char *value, const char *color)
{
        if (value == NULL)
                return;
        size_t clen = 0;
        cleanup_free char *clean = term_sanitize(value, strlen(value), &clen);
        if (clean == NULL)
                return;
        while (clen > 0 && clean[clen - 1] == '\n')
                clean[--clen] = '\0';
        color_on(r, C_DIM);
        out_fmt(r, "  %-*s ", KEY_WIDTH - 1, key);
        color_off(r, C_DIM);
        char *line = clean;
        for (bool first = true;; first = false) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                if (!first)
                        out_fmt(r, "  %-*s ", KEY_WIDTH - 1, "");
                color_on(r, color);
                out_str(r, line);
                color_off(r, color);
                out_str(r, "\n");
                if (nl == NULL)
                        break;
                line = nl + 1;
        }
}

/* -- formatting -- */

/* -- the spinner -- */

struct spin_arg {
        render *r;
        unsigned gen; /* the thread runs while r->spin_gen equals this */
};

/* The spinner thread: redraw every 100 ms until spin_gen changes.  Its
 * generation is fixed at creation (not read when the thread first gets the
 * lock, by which time a stop may already have changed it). */
static void *spin_main(void *arg)
{
        static const char *const frames[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
        struct spin_arg *sa = arg;
        render *r = sa->r;
        unsigned gen = sa->gen;
        free(sa);
        pthread_mutex_lock(&r->lock);
        for (unsigned frame = 0; r->spin_gen == gen; frame++) {
                double s = (monotonic_ms() - r->wait_start) / 1000;
                fprintf(r->o.out, "\r%s waiting for the model… %.1fs\033[K", frames[frame % ARRAY_SIZE(frames)], s);
                fflush(r->o.out);
                r->spin_drawn = true;
                struct timespec dl;
                clock_gettime(CLOCK_MONOTONIC, &dl);
                dl.tv_nsec += 100 * 1000000L;
                if (dl.tv_nsec >= 1000000000L) {
                        dl.tv_sec++;
                        dl.tv_nsec -= 1000000000L;
                }
                while (r->spin_gen == gen && pthread_cond_timedwait(&r->cond, &r->lock, &dl) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

/* Start the spinner for a wait (live, not quiet, not already running);
 * with r->lock held. */
static void spinner_start(render *r)
{
        if (!r->o.spinner || r->o.quiet || r->spin_running)
                return;
        struct spin_arg *sa = malloc(sizeof(*sa));
        if (sa == NULL)
                return;
        ensure_bol(r);
        fflush(r->o.out);
        *sa = (struct spin_arg){ r, ++r->spin_gen };
        if (pthread_create(&r->spin_thread, NULL, spin_main, sa) == 0)
                r->spin_running = true;
        else
                free(sa);
}

/* Stop and join the spinner thread, then erase its line.  The lock is
 * dropped while joining (the thread needs it to see the stop). */
static void spinner_stop(render *r)
{
        if (!r->spin_running)
                return;
        pthread_t th = r->spin_thread;
        r->spin_running = false;
        r->spin_gen++;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        pthread_join(th, NULL);
        pthread_mutex_lock(&r->lock);
        if (r->spin_drawn) {
                fputs("\r\033[K", r->o.out);
                r->spin_drawn = false;
        }
}

/* -- events -- */

/* One limit of run_start: "memory 512 MiB", "timeout 30 s", "pids 128". */
static void fmt_limit(FILE *f, const char *key, const json_t *v)
{
        size_t n = strlen(key);
        bool suffix_bytes = n > 6 && strcmp(key + n - 6, "_bytes") == 0;
        bool output_limit = strcmp(key, "output_limit") == 0;
        bool bytes = suffix_bytes || output_limit;
        bool secs = n > 2 && strcmp(key + n - 2, "_s") == 0;
        bool ms = n > 3 && strcmp(key + n - 3, "_ms") == 0;
        int klen = suffix_bytes ? (int)n - 6 : output_limit ? 6 : secs ? (int)n - 2 : ms ? (int)n - 3 : (int)n;
        fprintf(f, "%.*s ", klen, key);
        if (json_is_number(v)) {
                char buf[48];
                double d = json_number_value(v);
                if (bytes)
                        trace_fmt_size(buf, sizeof(buf), d);
                else if (secs)
                        trace_fmt_ms(buf, sizeof(buf), d * 1000);
                else if (ms)
                        trace_fmt_ms(buf, sizeof(buf), d);
                else
                        snprintf(buf, sizeof(buf), "%g", d);
                fputs(buf, f);
        } else if (json_is_string(v)) {
                fputs(json_string_value(v), f);
        } else {
                char *d = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                fputs(d ? d : "?", f);
                free(d);
        }
}

/* "input/sales.csv ← data/sales.csv (1.2 MiB)" or, for a directory,
 * "(3 files, 20.1 KiB)". */
static char *input_summary(const json_t *in)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (f == NULL)
                return NULL;
        const char *dest = trace_jstr(in, "dest"), *src = trace_jstr(in, "source"), *type = trace_jstr(in, "type");
        fputs(dest ? dest : src ? src : "?", f);
        if (dest && src)
                fprintf(f, " ← %s", src);
        double bytes, files;
        bool has_bytes = trace_jnum(in, "bytes", &bytes);
        bool has_files = type && strcmp(type, "dir") == 0 && trace_jnum(in, "files", &files);
        if (has_bytes || has_files) {
                char sz[32];
                fputs(" (", f);
                if (has_files)
                        fprintf(f, "%.0f file%s%s", files, files == 1 ? "" : "s", has_bytes ? ", " : "");
                if (has_bytes) {
                        trace_fmt_size(sz, sizeof(sz), bytes);
                        fputs(sz, f);
                }
                fputs(")", f);
        }
        size_t skipped = json_array_size(json_object_get(in, "skipped"));
        if (skipped > 0)
                fprintf(f, ", %zu skipped", skipped);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* A long task in the header: its first lines, and how much there is (the
 * trace keeps it whole). */
static char *task_head(const char *task)
{
        size_t len = strlen(task), cut = 0;
        unsigned lines = 0;
        while (cut < len && cut < 400 && lines < 5)
                if (task[cut++] == '\n')
                        lines++;
        if (cut >= len)
                return strdup(task);
        while (cut > 0 && ((unsigned char)task[cut] & 0xc0) == 0x80)
                cut--; /* not inside a UTF-8 character */
        char size[32];
        trace_fmt_count(size, sizeof(size), (unsigned long long)len);
        char *out = NULL;
        if (asprintf(&out, "%.*s… (%s bytes in all)", (int)cut, task, size) < 0)
                return NULL;
        return out;
}

static void render_run_start(render *r, const json_t *ev)
{
        begin_block(r);
        out_rule(r, "─", "corral run", C_BOLD);
        const char *task = trace_jstr(ev, "task");
        cleanup_free char *head = task ? task_head(task) : NULL;
        out_kv(r, "task", head, C_BOLD);
        const char *model = trace_jstr(ev, "model");
        if (model) {
                char *line = NULL;
                const char *prov = trace_jstr(ev, "provider"), *proto = trace_jstr(ev, "protocol");
                if (asprintf(&line, "%s%s%s%s%s", model, prov ? " · " : "", prov ? prov : "",
                             proto ? " · protocol " : "", proto ? proto : "") >= 0) {
                        out_kv(r, "model", line, NULL);
                        free(line);
                }
        }
        out_kv(r, "endpoint", trace_jstr(ev, "base_url"), NULL);
        /* A replay on other data says so before anything else happens. */
        json_t *replay = json_object_get(ev, "replay");
        const char *same = trace_jstr(replay, "inputs");
        if (same && strcmp(same, "same") != 0) {
                const char *first = json_string_value(json_array_get(json_object_get(replay, "input_changes"), 0));
                char *line = NULL;
                if (asprintf(&line, "%s: its text speaks of the recorded data, not of this run's",
                             strcmp(same, "different") == 0 ? (first ? first : "other inputs")
                                                             : "the transcript does not record its inputs") >= 0)
                        out_kv(r, "replay", line, C_RED);
                free(line);
        }
        json_t *inputs = json_object_get(ev, "inputs");
        size_t i;
        json_t *in;
        json_array_foreach (inputs, i, in) {
                char *line = NULL;
                if (json_is_string(in)) {
                        line = strdup(json_string_value(in));
                } else if (json_is_object(in)) {
                        line = input_summary(in);
                }
                if (line)
                        out_kv(r, i == 0 ? "inputs" : "", line, NULL);
                free(line);
        }
        json_t *limits = json_object_get(ev, "limits");
        if (json_is_object(limits) && json_object_size(limits) > 0) {
                char *buf = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&buf, &size);
                if (f) {
                        const char *key;
                        json_t *v;
                        bool first = true;
                        json_object_foreach (limits, key, v) {
                                fprintf(f, "%s", first ? "" : " · ");
                                fmt_limit(f, key, v);
                                first = false;
                        }
                        fclose(f);
                        out_kv(r, "limits", buf, NULL);
                }
                free(buf);
        }
        out_kv(r, "workspace", trace_jstr(ev, "workspace"), NULL);
}

static void render_model_request(render *r, const json_t *ev)
{
        json_t *it = json_object_get(ev, "iteration");
        r->iteration = json_is_integer(it) ? (long long)json_integer_value(it) : r->iteration + 1;
        r->delta_printed = false;
        r->npending = 0;
        r->waiting = true;
        r->wait_start = monotonic_ms();
        spinner_start(r);
}

static void render_model_retry(render *r, const json_t *ev)
{
        spinner_stop(r);
        ensure_bol(r);
        double attempt = 0, delay = 0;
        trace_jnum(ev, "attempt", &attempt);
        trace_jnum(ev, "delay_s", &delay);
        const char *reason = trace_jstr(ev, "reason");
        char *line = NULL;
        if (asprintf(&line, "! model request failed%s%s; retry %.0f in %.1f s\n", reason ? ": " : "",
                     reason ? reason : "", attempt, delay) >= 0)
                out_text(r, C_YELLOW, line, strlen(line));
        free(line);
        if (r->waiting)
                spinner_start(r);
}

/* Print a head + tail of lines[0..n) with a marker for the middle. */
static void out_lines_cut(render *r, const char *prefix, const char *color, char **lines, size_t n, unsigned max)
{
        size_t head = n, tail = 0;
        if (n > max) {
                head = (max + 1) / 2;
                tail = max / 2;
        }
        for (size_t k = 0; k < n; k++) {
                if (k == head && tail > 0) {
                        color_on(r, C_DIM);
                        out_fmt(r, "%s… %zu lines cut …", prefix, n - head - tail);
                        color_off(r, C_DIM);
                        out_str(r, "\n");
                        k = n - tail;
                }
                color_on(r, C_DIM);
                out_str(r, prefix);
                color_off(r, C_DIM);
                size_t len = strlen(lines[k]);
                size_t keep = len;
                if (keep > MAX_LINE_BYTES) {
                        keep = MAX_LINE_BYTES;
                        while (keep > 0 && ((unsigned char)lines[k][keep] & 0xc0) == 0x80)
                                keep--; /* do not split a UTF-8 sequence */
                }
                color_on(r, color);
                out_raw(r, lines[k], keep);
                color_off(r, color);
                if (keep < len) {
                        color_on(r, C_DIM);
                        out_fmt(r, " … (%zu more bytes)", len - keep);
                        color_off(r, C_DIM);
                }
                out_str(r, "\n");
        }
}

/* Split sanitised text into lines in place (a final newline ends the last
 * line rather than starting an empty one); *ret_n lines. */
static char **split_lines(char *text, size_t *ret_n)
{
        size_t len = strlen(text), n = 1;
        if (len > 0 && text[len - 1] == '\n')
                text[--len] = '\0';
        for (size_t i = 0; i < len; i++)
                n += text[i] == '\n';
        char **lines = calloc(n, sizeof(*lines));
        if (lines == NULL)
                return NULL;
        size_t k = 0;
        lines[k++] = text;
        for (char *p = text; (p = strchr(p, '\n')) != NULL; p++) {
                *p = '\0';
                lines[k++] = p + 1;
        }
        *ret_n = k;
        return lines;
}

/* The lines of one stream, cut to head + tail. */
static void out_stream_lines(render *r, const char *label, const char *color, const json_t *text)
{
        size_t clen;
        cleanup_free char *clean = term_sanitize(json_string_value(text), json_string_length(text), &clen);
        if (clean == NULL)
                return;
        size_t n = 0;
        cleanup_free char **lines = split_lines(clean, &n);
        if (lines == NULL)
                return;
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "  %s │ ", label);
        out_lines_cut(r, prefix, color, lines, n, r->o.max_output_lines);
}

/* One stream of a program's output: "  out │ line", cut to head + tail,
 * and a marker when the jail dropped the rest. */
static void out_stream(render *r, const char *label, const char *color, const json_t *text, bool truncated)
{
        if (json_is_string(text) && json_string_length(text) > 0)
                out_stream_lines(r, label, color, text);
        if (truncated) {
                color_on(r, C_DIM);
                out_fmt(r, "  %s │ … the output went past the limit; the rest was dropped", label);
                color_off(r, C_DIM);
                out_str(r, "\n");
        }
}

/* Code in a box: "   3 │ print(x)", highlighted when in colour. */
static void out_code(render *r, const char *code, const char *lang)
{
        size_t clen;
        cleanup_free char *clean = term_sanitize(code, strlen(code), &clen);
        if (clean == NULL)
                return;
        cleanup_free char *hl = r->o.color ? render_highlight(clean, lang) : NULL;
        char *text = hl ? hl : clean;
        size_t n = 0;
        cleanup_free char **lines = split_lines(text, &n);
        if (lines == NULL)
                return;
        int width = n >= 1000 ? 4 : n >= 100 ? 3 : 2;
        for (size_t k = 0; k < n; k++) {
                color_on(r, C_DIM);
                out_fmt(r, lines[k][0] ? "  %*zu │ " : "  %*zu │", width, k + 1);
                color_off(r, C_DIM);
                out_str(r, lines[k]);
                out_str(r, "\n");
        }
}

/* A shell command: "  $ ls -la", continuation lines indented. */
static void out_command(render *r, const char *cmd)
{
        size_t clen;
        cleanup_free char *clean = term_sanitize(cmd, strlen(cmd), &clen);
        if (clean == NULL)
                return;
        cleanup_free char *hl = r->o.color ? render_highlight(clean, "bash") : NULL;
        char *text = hl ? hl : clean;
        size_t n = 0;
        cleanup_free char **lines = split_lines(text, &n);
        if (lines == NULL)
                return;
        for (size_t k = 0; k < n; k++) {
                color_on(r, C_DIM);
                out_str(r, k == 0 ? "  $ " : "    ");
                color_off(r, C_DIM);
                out_str(r, lines[k]);
                out_str(r, "\n");
        }
}

/* The argument of a file tool worth a line: its path, and a size for writes. */
static char *tool_summary(const json_t *args)
{
        if (json_is_object(args)) {
                const char *path = trace_jstr(args, "path");
                if (path == NULL)
                        path = trace_jstr(args, "file");
                if (path == NULL)
                        path = trace_jstr(args, "dir");
                json_t *content = json_object_get(args, "content");
                char *s = NULL;
                if (path && json_is_string(content)) {
                        char sz[32];
                        trace_fmt_size(sz, sizeof(sz), (double)json_string_length(content));
                        if (asprintf(&s, "%s (%s)", path, sz) < 0)
                                s = NULL;
                        return s;
                }
                if (path)
                        return strdup(path);
                if (json_object_size(args) == 0)
                        return strdup("");
        }
        if (json_is_string(args))
                return strndup(json_string_value(args), 120);
        char *s = json_dumps(args, JSON_ENCODE_ANY | JSON_COMPACT);
        if (s && strlen(s) > 120) {
                s[117] = '\0';
                char *t = NULL;
                if (asprintf(&t, "%s…", s) >= 0) {
                        free(s);
                        s = t;
                }
        }
        return s;
}

static const char *tool_lang(const char *name)
{
        if (name && strcmp(name, "run_python") == 0)
                return "python";
        if (name && strcmp(name, "run_shell") == 0)
                return "bash";
        return NULL;
}

static void render_tool_call(render *r, const json_t *ev)
{
        const char *name = trace_jstr(ev, "name");
        const char *id = trace_jstr(ev, "id");
        if (trace_is_answer_tool(name))
                return;
        r->steps++;
        if (id) {
                json_t *c = json_pack("{s:I, s:s?}", "step", (json_int_t)r->steps, "name", name);
                if (c)
                        json_object_set_new(r->calls, id, c);
        }
        cleanup_free char *sname = term_sanitize(name ? name : "?", strlen(name ? name : "?"), NULL);
        json_t *args = json_object_get(ev, "arguments");
        const char *lang = tool_lang(name);
        begin_block(r);
        char label[256];
        snprintf(label, sizeof(label), "step %u · %s", r->steps, sname ? sname : "?");
        if (lang != NULL) {
                const char *key = strcmp(lang, "python") == 0 ? "code" : "command";
                const char *code = trace_jstr(ev, key);
                if (code == NULL)
                        code = trace_jstr(args, key);
                if (code == NULL)
                        code = json_is_string(args) ? json_string_value(args) : "";
                free(r->last_code);
                r->last_code = strdup(code);
                out_rule(r, "─", label, C_BOLD);
                /* Text protocol ("text-N" ids): the code block was just shown
                 * in the model's own text. */
                if (id && strncmp(id, "text-", 5) == 0)
                        return;
                if (strcmp(lang, "python") == 0)
                        out_code(r, code, lang);
                else
                        out_command(r, code);
                return;
        }
        /* A file tool (or any other): one line. */
        cleanup_free char *summary = tool_summary(args);
        color_on(r, C_DIM);
        out_str(r, "── ");
        color_off(r, C_DIM);
        color_on(r, C_BOLD);
        out_str(r, label);
        color_off(r, C_BOLD);
        if (summary && summary[0]) {
                out_str(r, " ");
                out_cstr(r, NULL, summary);
        }
        out_str(r, "\n");
}

/* "+ output/top5.csv (312 B, CSV 5 rows × 2 columns)" for each entry of a
 * workspace diff or an artifact list (objects with path/change/size or
 * bytes and the fields of artifact.h, or strings). */
static void out_artifacts(render *r, const json_t *list, const char *first_indent, const char *indent)
{
        size_t i;
        json_t *a;
        json_array_foreach (list, i, a) {
                const char *change = NULL;
                char *line = trace_artifact_line(a, &change);
                if (line == NULL)
                        continue;
                const char *color = strcmp(change, "modified") == 0  ? C_YELLOW
                                    : strcmp(change, "deleted") == 0 ? C_RED
                                                                     : C_GREEN;
                if (i == 0 && first_indent) {
                        color_on(r, C_DIM);
                        out_str(r, first_indent);
                        color_off(r, C_DIM);
                } else {
                        out_str(r, indent);
                }
                out_cstr(r, color, line);
                out_str(r, "\n");
                free(line);
        }
}

/* The first line of text, cut at 200 bytes, sanitised on output. */
static void out_first_line(render *r, const char *color, const char *text)
{
        if (text == NULL)
                return;
        size_t n = strcspn(text, "\n");
        if (n > 200) {
                n = 200;
                while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
                        n--;
        }
        out_text(r, color, text, n);
}

/* Line n (from 1) of text, without its newline; NULL past the end. */
static char *nth_line(const char *text, long long n)
{
        for (const char *p = text; p && n > 0; n--) {
                const char *nl = strchr(p, '\n');
                if (n == 1)
                        return strndup(p, nl ? (size_t)(nl - p) : strlen(p));
                p = nl ? nl + 1 : NULL;
        }
        return NULL;
}

/* The safety review of the step just shown, as `corral review` shows it:
 * the verdict, then each finding's line, rule and message under the line
 * of code it is about.  Nothing for a step it allowed without a word. */
static void render_review(render *r, const json_t *ev)
{
        const char *verdict = trace_jstr(ev, "verdict");
        json_t *findings = json_object_get(ev, "findings"), *f;
        const json_t *llm = json_object_get(ev, "llm");
        if (verdict == NULL || (json_array_size(findings) == 0 && !json_is_object(llm)))
                return;
        bool reject = strcmp(verdict, "reject") == 0;
        /* Team mode: the team's reviewer looked at every step. */
        const char *role = trace_jstr(ev, "role");
        bool team = role && strcmp(role, "reviewer") == 0;
        ensure_bol(r);
        out_kv(r, team ? "reviewer" : "review",
               reject                                  ? "rejected: the step did not run"
               : team && json_array_size(findings) == 0 ? "approved: the step runs"
                                                        : "warnings: the step runs",
               reject ? C_RED : team && json_array_size(findings) == 0 ? "32" : C_YELLOW);
        size_t i;
        json_array_foreach (findings, i, f) {
                double line = 0;
                trace_jnum(f, "line", &line);
                const char *rule = trace_jstr(f, "rule"), *msg = trace_jstr(f, "message");
                const char *sev = trace_jstr(f, "severity");
                cleanup_free char *head = NULL;
                if (asprintf(&head, "line %.0f · %s%s%s", line, rule ? rule : "?", sev ? " · " : "", sev ? sev : "") <
                    0)
                        head = NULL;
                out_kv(r, "", head, sev && strcmp(sev, "reject") == 0 ? C_RED : C_YELLOW);
                cleanup_free char *code = r->last_code ? nth_line(r->last_code, (long long)line) : NULL;
                if (code) {
                        cleanup_free char *ex = NULL;
                        if (asprintf(&ex, "%4.0f │ %s", line, code) >= 0)
                                out_kv(r, "", ex, C_DIM);
                }
                out_kv(r, "", msg, NULL);
        }
        if (json_is_object(llm)) {
                const char *model = trace_jstr(llm, "model"), *v = trace_jstr(llm, "verdict");
                const char *why = trace_jstr(llm, "reasons");
                if (why && !*why)
                        why = NULL;
                cleanup_free char *line = NULL;
                if (asprintf(&line, "reviewer model %s: %s%s%s", model ? model : "", v ? v : "?", why ? ": " : "",
                             why ? why : "") >= 0)
                        out_kv(r, "", line, v && strcmp(v, "reject") == 0 ? C_RED : NULL);
        }
}

/* The team's executor summarised a step's long output for the writer
 * (docs/modes.md, "Team"). */
static void render_team_summary(render *r, const json_t *ev)
{
        double bytes = 0;
        trace_jnum(ev, "bytes", &bytes);
        const char *summary = trace_jstr(ev, "summary"), *error = trace_jstr(ev, "error");
        char n[64];
        trace_fmt_count(n, sizeof(n), (unsigned long long)bytes);
        cleanup_free char *head = NULL;
        if (asprintf(&head, "%s %s bytes of output for the writer", error ? "could not summarise" : "summarised",
                     n) < 0)
                head = NULL;
        ensure_bol(r);
        out_kv(r, "executor", head, error ? C_YELLOW : NULL);
        if (summary)
                out_kv(r, "", summary, C_DIM);
        if (error)
                out_kv(r, "", error, C_DIM);
}

/* Each role's model and tokens at the end of a team run. */
static void render_team_roles(render *r, const json_t *team)
{
        static const char *const roles[] = { "writer", "reviewer", "executor" };
        for (size_t i = 0; i < ARRAY_SIZE(roles); i++) {
                const json_t *role = json_object_get(json_object_get(team, "roles"), roles[i]);
                const json_t *u = json_object_get(role, "usage");
                if (!json_is_object(role))
                        continue;
                double pt = 0, ct = 0, req = 0;
                trace_jnum(u, "prompt_tokens", &pt);
                trace_jnum(u, "completion_tokens", &ct);
                trace_jnum(u, "requests", &req);
                char a[64], b[64];
                trace_fmt_count(a, sizeof(a), (unsigned long long)pt);
                trace_fmt_count(b, sizeof(b), (unsigned long long)ct);
                const char *model = trace_jstr(role, "model");
                cleanup_free char *line = NULL;
                if (asprintf(&line, "%s · %s prompt · %s completion · %.0f request%s", model ? model : "?", a, b,
                             req, req == 1 ? "" : "s") >= 0)
                        out_kv(r, roles[i], line, NULL);
        }
}

/* A completion check's verdict (docs/modes.md): what was found missing, and
 * what the run does with it. */
static void render_verify(render *r, const json_t *ev)
{
        const json_t *complete = json_object_get(ev, "complete");
        const char *action = trace_jstr(ev, "action"), *error = trace_jstr(ev, "error");
        double round = 0;
        trace_jnum(ev, "round", &round);
        cleanup_free char *head = NULL;
        const char *what = json_is_true(complete)     ? "complete"
                           : json_is_false(complete) ? (action && strcmp(action, "sent_back") == 0
                                                                ? "incomplete: sent back to the model"
                                                                : "incomplete: no round left, the answer stands")
                                                     : "no verdict, the answer stands";
        if (asprintf(&head, "round %.0f: %s", round, what) < 0)
                head = NULL;
        ensure_bol(r);
        out_kv(r, "check", head, json_is_true(complete) ? "32" : C_YELLOW);
        json_t *missing = json_object_get(ev, "missing"), *m;
        size_t i;
        json_array_foreach (missing, i, m) {
                cleanup_free char *line = NULL;
                if (asprintf(&line, "missing: %s", json_string_value(m) ? json_string_value(m) : "") >= 0)
                        out_kv(r, "", line, NULL);
        }
        if (error)
                out_kv(r, "", error, C_DIM);
}

/* Human approval (docs/modes.md): the answer, by whom, after how long; the
 * question itself is the step's code and review, shown already (and asked
 * on the terminal by the CLI). */
static void render_approval(render *r, const json_t *ev)
{
        const char *decision = trace_jstr(ev, "decision"), *who = trace_jstr(ev, "who");
        const char *reason = trace_jstr(ev, "reason"), *code = trace_jstr(ev, "code");
        double n = 0, wait_ms = 0;
        trace_jnum(ev, "n", &n);
        trace_jnum(ev, "wait_ms", &wait_ms);
        bool cancelled = json_is_true(json_object_get(ev, "cancelled"));
        const char *what = cancelled ? "not answered: cancelled"
                           : !decision ? "?"
                           : strcmp(decision, "approve") == 0 ? "approved"
                           : strcmp(decision, "deny") == 0 ? "denied: nothing ran"
                                                           : "edited: the edit runs";
        char ms[32];
        trace_fmt_ms(ms, sizeof(ms), wait_ms);
        cleanup_free char *head = NULL;
        if (asprintf(&head, "%.0f: %s by %s after %s", n, what, who ? who : "?", ms) < 0)
                head = NULL;
        ensure_bol(r);
        out_kv(r, "approval", head, decision && strcmp(decision, "approve") == 0 && !cancelled ? "32" : C_YELLOW);
        if (reason)
                out_kv(r, "", reason, NULL);
        if (code)
                out_kv(r, "", code, C_DIM);
}

/* A plan (docs/modes.md): why it was made, and its lines. */
static void render_plan(render *r, const json_t *ev)
{
        const char *reason = trace_jstr(ev, "reason"), *stuck = trace_jstr(ev, "stuck");
        const char *plan = trace_jstr(ev, "plan"), *error = trace_jstr(ev, "error");
        cleanup_free char *head = NULL;
        if (asprintf(&head, "%s%s%s", reason && strcmp(reason, "initial") == 0 ? "the plan"
                                      : stuck                                  ? "replanned: stuck: "
                                                                               : "revised",
                     stuck ? stuck : "", error ? " (none: the model did not answer)" : "") < 0)
                head = NULL;
        ensure_bol(r);
        out_kv(r, "plan", head, stuck ? C_YELLOW : NULL);
        for (const char *p = plan; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                cleanup_free char *line = strndup(p, n);
                if (line && line[strspn(line, " \t\r")])
                        out_kv(r, "", line, C_DIM);
                p = nl ? nl + 1 : p + n;
        }
        if (error)
                out_kv(r, "", error, C_DIM);
}

/* A compaction (docs/modes.md): how much was summarised. */
static void render_compact(render *r, const json_t *ev)
{
        double n = 0, before = 0;
        trace_jnum(ev, "messages", &n);
        trace_jnum(ev, "est_tokens_before", &before);
        const char *error = trace_jstr(ev, "error");
        cleanup_free char *line = NULL;
        if (asprintf(&line, "%s %.0f older messages (about %.0f tokens before)%s%s",
                     error ? "could not summarise" : "summarised", n, before, error ? ": " : "", error ? error : "") < 0)
                line = NULL;
        ensure_bol(r);
        out_kv(r, "context", line, error ? C_YELLOW : C_DIM);
}

/* The test-driven mode (docs/modes.md): a phase, a run of the tests, a
 * refusal, a change asked for, an answer held back: one "tests" line. */
static void render_tdd(render *r, const json_t *ev)
{
        const char *what = trace_jstr(ev, "event");
        cleanup_free char *line = NULL;
        const char *colour = C_DIM;
        double passed = 0, failed = 0, errors = 0, n = (double)json_array_size(json_object_get(ev, "tests"));
        trace_jnum(ev, "passed", &passed);
        trace_jnum(ev, "failed", &failed);
        trace_jnum(ev, "errors", &errors);
        const char *status = trace_jstr(ev, "status"), *reason = trace_jstr(ev, "reason");
        const char *path = trace_jstr(ev, "path"), *tool = trace_jstr(ev, "tool"), *phase = trace_jstr(ev, "phase");
        if (what == NULL)
                return;
        if (strcmp(what, "phase") == 0 && phase && strcmp(phase, "code") == 0) {
                if (asprintf(&line, "frozen: %.0f test file%s, read-only from now on", n, n == 1 ? "" : "s") < 0)
                        line = NULL;
        } else if (strcmp(what, "phase") == 0) {
                if (asprintf(&line, "test first: tests/ is read-only to the jail (%.0f test file%s there)", n,
                             n == 1 ? "" : "s") < 0)
                        line = NULL;
        } else if (strcmp(what, "check") == 0) {
                bool ok = status && strcmp(status, "passed") == 0;
                colour = ok ? "32" : C_YELLOW;
                if (asprintf(&line, "%s: %.0f passed, %.0f failed, %.0f errors", ok ? "pass" : status ? status : "?",
                             passed, failed, errors) < 0)
                        line = NULL;
        } else if (strcmp(what, "refused") == 0) {
                colour = C_YELLOW;
                if (asprintf(&line, "refused %s%s%s: %s", tool ? tool : "?", path ? " " : "", path ? path : "",
                             reason ? reason : "") < 0)
                        line = NULL;
        } else if (strcmp(what, "test_change") == 0) {
                colour = C_YELLOW;
                if (asprintf(&line, "change of %s asked (%s)%s%s", path ? path : "?",
                             json_is_true(json_object_get(ev, "allowed")) ? "allowed" : "refused",
                             reason ? ": " : "", reason ? reason : "") < 0)
                        line = NULL;
        } else if (strcmp(what, "answer_held") == 0) {
                colour = C_YELLOW;
                if (asprintf(&line, "answer %s: %s", strcmp(trace_jstr(ev, "action") ? trace_jstr(ev, "action") : "",
                                                            "sent_back") == 0 ? "sent back" : "stands, but",
                             reason ? reason : "") < 0)
                        line = NULL;
        } else {
                return;
        }
        ensure_bol(r);
        out_kv(r, "tests", line, colour);
}

/* A reproduction's report (docs/modes.md): the result, then what differed. */
static void render_reproduce(render *r, const json_t *ev)
{
        const char *result = trace_jstr(ev, "result"), *error = trace_jstr(ev, "error");
        double steps = 0, files = 0, same = 0;
        trace_jnum(ev, "steps", &steps);
        trace_jnum(ev, "files_compared", &files);
        trace_jnum(ev, "files_reproduced", &same);
        bool ok = result && strcmp(result, "reproduced") == 0;
        cleanup_free char *head = NULL;
        if (asprintf(&head, "%s: %.0f steps run again, %.0f of %.0f files the same", ok ? "reproduced" : "not reproduced",
                     steps, same, files) < 0)
                head = NULL;
        ensure_bol(r);
        out_kv(r, "reproduce", head, ok ? "32" : C_YELLOW);
        json_t *d;
        size_t i;
        json_array_foreach (json_object_get(ev, "differences"), i, d)
                out_kv(r, "", json_string_value(d), NULL);
        json_array_foreach (json_object_get(ev, "failed_steps"), i, d) {
                cleanup_free char *line = NULL;
                if (asprintf(&line, "step %" JSON_INTEGER_FORMAT " failed this time", json_integer_value(json_object_get(d, "step"))) >= 0)
                        out_kv(r, "", line, NULL);
        }
        if (error)
                out_kv(r, "", error, C_YELLOW);
}

static void render_tool_result(render *r, const json_t *ev)
{
        const char *name = trace_jstr(ev, "name");
        const char *id = trace_jstr(ev, "id");
        json_t *call = id ? json_object_get(r->calls, id) : NULL;
        if (name == NULL)
                name = trace_jstr(call, "name");
        if (trace_is_answer_tool(name))
                return;
        json_t *exec = json_object_get(ev, "exec");
        bool ok = json_is_true(json_object_get(ev, "ok"));
        ensure_bol(r);
        if (json_is_object(exec)) {
                const char *status = trace_jstr(exec, "status");
                bool good = status ? strcmp(status, "ok") == 0 : ok;
                double code = 0, wall = 0;
                char buf[256], ms[32];
                int o = snprintf(buf, sizeof(buf), "%s %s", good ? "✓" : "✗", status ? status : ok ? "ok" : "failed");
                if (trace_jnum(exec, "exit_code", &code))
                        o += snprintf(buf + o, sizeof(buf) - (size_t)o, " · exit %.0f", code);
                if (trace_jnum(exec, "wall_ms", &wall) || trace_jnum(ev, "ms", &wall)) {
                        trace_fmt_ms(ms, sizeof(ms), wall);
                        snprintf(buf + o, sizeof(buf) - (size_t)o, " · %s", ms);
                }
                out_str(r, "  ");
                out_cstr(r, good ? C_GREEN : C_RED, buf);
                const char *reason = trace_jstr(exec, "reason");
                if (reason && !good) {
                        out_cstr(r, C_RED, " · ");
                        out_first_line(r, C_RED, reason);
                }
                out_str(r, "\n");
                out_stream(r, "out", NULL, json_object_get(exec, "stdout"),
                           json_is_true(json_object_get(exec, "stdout_truncated")));
                out_stream(r, "err", C_RED, json_object_get(exec, "stderr"),
                           json_is_true(json_object_get(exec, "stderr_truncated")));
        } else if (!ok) {
                out_str(r, "  ");
                out_cstr(r, C_RED, "✗ ");
                out_first_line(r, C_RED, trace_jstr(ev, "content"));
                out_str(r, "\n");
        }
        out_artifacts(r, json_object_get(ev, "artifacts"), NULL, "  ");
}

static void render_model_reply(render *r, const json_t *ev)
{
        spinner_stop(r);
        r->waiting = false;
        json_t *it = json_object_get(ev, "iteration");
        bool same = !json_is_integer(it) || (long long)json_integer_value(it) == r->iteration;
        if (r->npending > 0) {
                out_text(r, NULL, r->pending, r->npending);
                r->npending = 0;
        }
        if (r->o.quiet)
                return;
        const char *content = trace_jstr(ev, "content");
        free(r->last_text);
        r->last_text = content ? strdup(content) : NULL;
        if (r->delta_printed && same) {
                ensure_bol(r);
                r->delta_printed = false;
                return;
        }
        const char *reasoning = trace_jstr(ev, "reasoning");
        if (reasoning && reasoning[0]) {
                size_t clen;
                cleanup_free char *clean = term_sanitize(reasoning, strlen(reasoning), &clen);
                size_t n = 0;
                cleanup_free char **lines = clean ? split_lines(clean, &n) : NULL;
                if (lines) {
                        begin_block(r);
                        out_lines_cut(r, "  ┆ ", C_DIM, lines, n, r->o.max_output_lines);
                }
        }
        if (content && content[strspn(content, " \t\r\n")] != '\0') {
                const char *start = content + strspn(content, "\r\n");
                size_t len = strlen(start);
                while (len > 0 && strchr(" \t\r\n", start[len - 1]))
                        len--;
                begin_block(r);
                out_text(r, NULL, start, len);
                ensure_bol(r);
        }
}

/* The event's text under key, with the front end's words for its "field". */
static char *field_text(render *r, const json_t *ev, const char *key)
{
        const char *msg = trace_jstr(ev, key);
        const char *field = trace_jstr(ev, "field");
        if (msg && field && r->o.field_text)
                return r->o.field_text(msg, field);
        return msg ? strdup(msg) : NULL;
}

static void render_notice(render *r, const json_t *ev)
{
        cleanup_free char *msg = field_text(r, ev, "message");
        ensure_bol(r);
        out_cstr(r, C_YELLOW, "! ");
        out_cstr(r, C_YELLOW, msg ? msg : "");
        out_str(r, "\n");
}

/* A connection through the --net allow proxy: one line, under its step;
 * a refused one in yellow with the proxy's reason.  Every string is the
 * jail's (host, method): through out_cstr(), which escapes. */
static void render_net(render *r, const json_t *ev)
{
        double port = 0, up = 0, down = 0, ms = 0;
        trace_jnum(ev, "port", &port);
        trace_jnum(ev, "bytes_up", &up);
        trace_jnum(ev, "bytes_down", &down);
        trace_jnum(ev, "ms", &ms);
        bool allowed = json_is_true(json_object_get(ev, "allowed"));
        const char *method = trace_jstr(ev, "method"), *host = trace_jstr(ev, "host");
        const char *reason = trace_jstr(ev, "reason");
        char nums[128];
        ensure_bol(r);
        out_cstr(r, allowed ? C_DIM : C_YELLOW, allowed ? "  net " : "  net refused ");
        out_cstr(r, allowed ? C_DIM : C_YELLOW, method && method[0] ? method : "?");
        out_cstr(r, allowed ? C_DIM : C_YELLOW, " ");
        out_cstr(r, allowed ? C_DIM : C_YELLOW, host && host[0] ? host : "?");
        snprintf(nums, sizeof(nums), ":%.0f  %.0f B up, %.0f B down, %.0f ms", port, up, down, ms);
        out_cstr(r, allowed ? C_DIM : C_YELLOW, nums);
        if (reason) {
                out_cstr(r, allowed ? C_DIM : C_YELLOW, ": ");
                out_cstr(r, allowed ? C_DIM : C_YELLOW, reason);
        }
        out_str(r, "\n");
}

/* a and b equal but for surrounding white space. */
static bool same_text(const char *a, const char *b)
{
        if (a == NULL || b == NULL)
                return false;
        a += strspn(a, " \t\r\n");
        b += strspn(b, " \t\r\n");
        size_t la = strlen(a), lb = strlen(b);
        while (la > 0 && strchr(" \t\r\n", a[la - 1]))
                la--;
        while (lb > 0 && strchr(" \t\r\n", b[lb - 1]))
                lb--;
        return la == lb && memcmp(a, b, la) == 0;
}

static const char *status_color(const char *status)
{
        if (status == NULL)
                return C_BOLD;
        if (strcmp(status, "answered") == 0)
                return "1;32";
        if (strcmp(status, "gave_up") == 0 || strcmp(status, "cancelled") == 0)
                return "1;33";
        return "1;31";
}

static void render_run_end(render *r, const json_t *ev)
{
        spinner_stop(r);
        r->waiting = false;
        begin_block(r);
        const char *status = trace_jstr(ev, "status");
        const char *label = status ? status : "ended";
        cleanup_free char *sstatus = term_sanitize(label, strlen(label), NULL);
        out_rule(r, "═", sstatus ? sstatus : "ended", status_color(status));
        /* The answer, unless it is the model text just shown above. */
        const char *answer = trace_jstr(ev, "answer");
        if (answer && answer[0] && !same_text(answer, r->last_text))
                out_kv(r, "answer", answer, NULL);
        cleanup_free char *reason = field_text(r, ev, "reason");
        if (reason && reason[0])
                out_kv(r, "reason", reason, status && strcmp(status, "answered") == 0 ? NULL : C_RED);
        double d;
        char buf[256], a[64], b[64];
        if (trace_jnum(ev, "iterations", &d)) {
                snprintf(buf, sizeof(buf), "%.0f", d);
                out_kv(r, "iterations", buf, NULL);
        }
        json_t *usage = json_object_get(ev, "usage");
        if (json_is_object(usage)) {
                bool est = json_is_true(json_object_get(usage, "estimated"));
                double pt = 0, ct = 0, req = 0, ret = 0, wait = 0;
                trace_jnum(usage, "prompt_tokens", &pt);
                trace_jnum(usage, "completion_tokens", &ct);
                trace_fmt_count(a, sizeof(a), (unsigned long long)pt);
                trace_fmt_count(b, sizeof(b), (unsigned long long)ct);
                int o = snprintf(buf, sizeof(buf), "%s%s prompt · %s%s completion", est ? "~" : "", a, est ? "~" : "",
                                 b);
                if (est)
                        o += snprintf(buf + o, sizeof(buf) - (size_t)o, " (estimated)");
                out_kv(r, "tokens", buf, NULL);
                o = 0;
                buf[0] = '\0';
                if (trace_jnum(usage, "wait_ms", &wait)) {
                        trace_fmt_ms(a, sizeof(a), wait);
                        o += snprintf(buf + o, sizeof(buf) - (size_t)o, "%s waiting", a);
                }
                if (trace_jnum(usage, "requests", &req))
                        o += snprintf(buf + o, sizeof(buf) - (size_t)o, "%s%.0f request%s", o ? " · " : "", req,
                                      req == 1 ? "" : "s");
                if (trace_jnum(usage, "retries", &ret) && ret > 0)
                        snprintf(buf + o, sizeof(buf) - (size_t)o, "%s%.0f retr%s", o ? " · " : "", ret,
                                 ret == 1 ? "y" : "ies");
                if (buf[0])
                        out_kv(r, "model", buf, NULL);
        }
        if (json_is_object(json_object_get(ev, "team")))
                render_team_roles(r, json_object_get(ev, "team"));
        if (trace_jnum(ev, "wall_ms", &d)) {
                trace_fmt_ms(buf, sizeof(buf), d);
                out_kv(r, "wall", buf, NULL);
        }
        json_t *arts = json_object_get(ev, "artifacts");
        if (json_array_size(arts) > 0) {
                char first[KEY_WIDTH + 8], rest[KEY_WIDTH + 8];
                snprintf(first, sizeof(first), "  %-*s ", KEY_WIDTH - 1, "artifacts");
                snprintf(rest, sizeof(rest), "  %-*s ", KEY_WIDTH - 1, "");
                out_artifacts(r, arts, first, rest);
        }
        out_kv(r, "output", trace_jstr(ev, "output_dir"), NULL);
        /* How to find it again: `corral trace show ID`, `corral runs`. */
        out_kv(r, "run", r->run_id, NULL);
        out_kv(r, "trace", r->trace_file, NULL);
}

void render_event(void *userdata, const json_t *event)
{
        render *r = userdata;
        if (r == NULL || !json_is_object(event))
                return;
        const char *type = trace_jstr(event, "type");
        if (type == NULL)
                return;
        pthread_mutex_lock(&r->lock);
        bool q = r->o.quiet;
        if (strcmp(type, "run_start") == 0) {
                free(r->run_id);
                free(r->trace_file);
                r->run_id = trace_jstr(event, "run_id") ? strdup(trace_jstr(event, "run_id")) : NULL;
                r->trace_file = trace_jstr(event, "trace") ? strdup(trace_jstr(event, "trace")) : NULL;
                if (!q)
                        render_run_start(r, event);
        } else if (strcmp(type, "model_request") == 0) {
                render_model_request(r, event);
        } else if (strcmp(type, "model_retry") == 0) {
                render_model_retry(r, event);
        } else if (strcmp(type, "model_reply") == 0) {
                render_model_reply(r, event);
        } else if (strcmp(type, "tool_call") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_tool_call(r, event);
                }
        } else if (strcmp(type, "review") == 0) {
                if (!q)
                        render_review(r, event);
        } else if (strcmp(type, "tool_result") == 0) {
                if (!q)
                        render_tool_result(r, event);
        } else if (strcmp(type, "net") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_net(r, event);
                }
        } else if (strcmp(type, "team_summary") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_team_summary(r, event);
                }
        } else if (strcmp(type, "verify") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_verify(r, event);
                }
        } else if (strcmp(type, "reproduce") == 0) {
                spinner_stop(r);
                render_reproduce(r, event);
        } else if (strcmp(type, "compact") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_compact(r, event);
                }
        } else if (strcmp(type, "plan") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_plan(r, event);
                }
        } else if (strcmp(type, "tdd") == 0) {
                if (!q) {
                        spinner_stop(r);
                        render_tdd(r, event);
                }
        } else if (strcmp(type, "approval") == 0) {
                spinner_stop(r);
                render_approval(r, event);
        } else if (strcmp(type, "notice") == 0) {
                spinner_stop(r);
                render_notice(r, event);
                if (r->waiting)
                        spinner_start(r);
        } else if (strcmp(type, "run_end") == 0) {
                render_run_end(r, event);
        }
        fflush(r->o.out);
        pthread_mutex_unlock(&r->lock);
}

/* How many bytes at the end of s[0..n) to hold back: an incomplete UTF-8
 * sequence or a CR whose LF may be in the next delta. */
static size_t unfinished_tail(const char *s, size_t n)
{
        if (n > 0 && s[n - 1] == '\r')
                return 1;
        for (size_t k = 1; k <= 3 && k <= n; k++) {
                unsigned char c = (unsigned char)s[n - k];
                if ((c & 0xc0) == 0x80)
                        continue;
                size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
                return need > k ? k : 0;
        }
        return 0;
}

void render_content_delta(render *r, const char *text, size_t len)
{
        if (r == NULL || text == NULL || len == 0)
                return;
        pthread_mutex_lock(&r->lock);
        spinner_stop(r);
        if (r->o.quiet) {
                pthread_mutex_unlock(&r->lock);
                return;
        }
        if (!r->delta_printed) {
                begin_block(r);
                r->delta_printed = true;
        }
        char *buf = malloc(r->npending + len);
        if (buf != NULL) {
                memcpy(buf, r->pending, r->npending);
                memcpy(buf + r->npending, text, len);
                size_t n = r->npending + len;
                size_t hold = unfinished_tail(buf, n);
                out_text(r, NULL, buf, n - hold);
                memcpy(r->pending, buf + n - hold, hold);
                r->npending = hold;
                free(buf);
        }
        fflush(r->o.out);
        pthread_mutex_unlock(&r->lock);
}

void render_free(render *r)
{
        if (r == NULL)
                return;
        pthread_mutex_lock(&r->lock);
        spinner_stop(r);
        if (r->npending > 0)
                out_text(r, NULL, r->pending, r->npending);
        ensure_bol(r);
        fflush(r->o.out);
        pthread_mutex_unlock(&r->lock);
        json_decref(r->calls);
        free(r->last_text);
        free(r->run_id);
        free(r->trace_file);
        free(r->last_code);
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
}
