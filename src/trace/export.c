/* export.c: a trace turned into a Jupyter notebook or a standalone web page.
 *
 * Both exports read the whole trace (trace_read_file), pair each tool_call
 * with its tool_result (by id, in order), and walk the events once:
 *   ipynb  run_start -> a markdown cell (task, model, inputs); each
 *          model_reply's text -> markdown; run_python -> a code cell with
 *          stdout/stderr stream outputs (and the exit status as a stream for
 *          a failed step); run_shell -> a "%%bash" code cell; other tools
 *          and notices -> one markdown line; run_end -> a markdown summary.
 *          The run's facts also go to metadata.corral.
 *   html   the same order as sections of one page: inline CSS, no script,
 *          no external resource (a Content-Security-Policy says so too),
 *          every string sanitised (term_sanitize) and HTML-escaped.
 * The result is written to a temporary file beside `out` (O_EXCL, 0600)
 * and renamed over it.  Does not render to a terminal (render.c) and does
 * not write traces (trace.c).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "../workspace/artifact.h"
#include "../workspace/dest.h"
#include "../workspace/workspace.h"
#include "cmark-dl.h"
#include "export.h"
#include "format.h"
#include "render.h"
#include "trace.h"

/* ---- shared --------------------------------------------------------------- */

struct events {
        json_t *all;     /* array of events */
        bool *consumed;  /* tool_results already paired with a call */
        /* The run's output directory, where the exports find its figures
         * and files to embed: -1 when the trace does not say or it is gone. */
        int out_fd;
        size_t embedded; /* bytes of images embedded so far */
        json_t *shown;   /* paths of the images embedded already (as a step's figures) */
};

static bool is_type(const json_t *ev, const char *type);

/* ---- files of the run, embedded ------------------------------------------ */

/* A trace says where the output was copied; the files there are read back
 * (beneath the directory, never through a link) and embedded, within
 * limits: an export stays a file someone can mail. */
#define EMBED_IMAGE_MAX (2u << 20)   /* one image */
#define EMBED_TOTAL_MAX (16u << 20)  /* all images of an export */
#define PREVIEW_ROWS 20
#define PREVIEW_COLS 12
#define PREVIEW_CELL 200
#define REPORT_MAX (256u << 10)      /* a markdown file shown */

static void outputs_open(struct events *e)
{
        const json_t *start = NULL, *end = NULL, *ev;
        size_t i;
        json_array_foreach (e->all, i, ev) {
                if (start == NULL && is_type(ev, "run_start"))
                        start = ev;
                if (is_type(ev, "run_end"))
                        end = ev;
        }
        const char *dir = trace_jstr(end, "output_dir"), *cwd = trace_jstr(start, "cwd");
        if (dir == NULL)
                return;
        cleanup_free char *path = NULL;
        if (dir[0] != '/' && cwd && asprintf(&path, "%s/%s", cwd, dir) < 0)
                return;
        e->out_fd = open(path ? path : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* "output/a.png" or "/workspace/output/a.png" as a path in the output
 * directory ("a.png"), or NULL. */
static const char *in_output(const char *path)
{
        if (path && strncmp(path, "/workspace/", 11) == 0)
                path += 11;
        if (path == NULL || strncmp(path, "output/", 7) != 0 || path[7] == '\0' || strstr(path, ".."))
                return NULL;
        return path + 7;
}

/* A PNG or JPEG of the run as base64 (malloc'd) with its MIME type, or NULL
 * with why (static text) when it is not embedded. */
static char *image_b64(struct events *e, const char *path, const char **ret_mime, const char **ret_why)
{
        const char *rel = in_output(path);
        *ret_why = e->out_fd < 0 ? "the output directory is not there any more" : "not in the output directory";
        if (e->out_fd < 0 || rel == NULL)
                return NULL;
        cleanup_free char *data = NULL;
        size_t len = 0;
        if (ws_read_beneath(e->out_fd, rel, EMBED_IMAGE_MAX, &data, &len) < 0) {
                *ret_why = errno == EFBIG ? "larger than 2 MiB" : "cannot be read";
                return NULL;
        }
        if (len >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0)
                *ret_mime = "image/png";
        else if (len >= 3 && memcmp(data, "\xff\xd8\xff", 3) == 0)
                *ret_mime = "image/jpeg";
        else {
                *ret_why = "not a PNG or JPEG";
                return NULL;
        }
        if (e->embedded + len > EMBED_TOTAL_MAX) {
                *ret_why = "past the 16 MiB of images an export embeds";
                return NULL;
        }
        char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
        if (b64 == NULL)
                return NULL;
        base64_encode_raw(b64, len, (const uint8_t *)data);
        b64[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
        e->embedded += len;
        return b64;
}

/* The first rows of a CSV/TSV of the run, or NULL. */
static json_t *csv_rows(struct events *e, const json_t *art, bool *ret_more_cols)
{
        const char *rel = in_output(trace_jstr(art, "path"));
        cleanup_free char *data = NULL;
        size_t len = 0;
        if (e->out_fd < 0 || rel == NULL || ws_read_beneath(e->out_fd, rel, 64u << 20, &data, &len) < 0)
                return NULL;
        const char *d = trace_jstr(art, "delimiter");
        unsigned char delim = d && d[0] ? (unsigned char)d[0] : strcmp(trace_jstr(art, "format"), "tsv") ? ',' : '\t';
        return artifact_csv_preview(data, len, delim, PREVIEW_ROWS + 1, PREVIEW_COLS, PREVIEW_CELL, ret_more_cols);
}

/* A markdown file of the run (its report), or NULL. */
static char *markdown_text(struct events *e, const json_t *art)
{
        const char *rel = in_output(trace_jstr(art, "path"));
        char *data = NULL;
        size_t len = 0;
        if (e->out_fd < 0 || rel == NULL || ws_read_beneath(e->out_fd, rel, REPORT_MAX, &data, &len) < 0)
                return NULL;
        return data;
}

static void collect_event(void *userdata, const json_t *event)
{
        json_array_append((json_t *)userdata, (json_t *)event);
}

static bool is_type(const json_t *ev, const char *type)
{
        const char *t = trace_jstr(ev, "type");
        return t && strcmp(t, type) == 0;
}

/* The tool_result answering the tool_call at index i: the first unpaired
 * result after it with the same id (or, without ids, the same name). */
static const json_t *find_result(struct events *e, size_t i)
{
        const json_t *call = json_array_get(e->all, i);
        const char *id = trace_jstr(call, "id"), *name = trace_jstr(call, "name");
        bool by_id = id && id[0];
        for (size_t k = i + 1; k < json_array_size(e->all); k++) {
                const json_t *ev = json_array_get(e->all, k);
                if (e->consumed[k] || !is_type(ev, "tool_result"))
                        continue;
                const char *rid = trace_jstr(ev, "id"), *rname = trace_jstr(ev, "name");
                bool match = by_id ? rid && strcmp(rid, id) == 0 : !(rid && rid[0]) && rname && name &&
                                                                        strcmp(rname, name) == 0;
                if (match) {
                        e->consumed[k] = true;
                        return ev;
                }
        }
        return NULL;
}

/* The code of a run_python / run_shell call: the event's own field, else
 * the same key in the arguments, else raw arguments text. */
static const char *call_code(const json_t *call, bool *ret_shell)
{
        const char *name = trace_jstr(call, "name");
        *ret_shell = name && strcmp(name, "run_shell") == 0;
        const char *key = *ret_shell ? "command" : "code";
        json_t *args = json_object_get(call, "arguments");
        const char *code = trace_jstr(call, key);
        if (code == NULL)
                code = trace_jstr(args, key);
        if (code == NULL)
                code = json_is_string(args) ? json_string_value(args) : "";
        return code;
}

static bool is_code_tool(const char *name)
{
        return name && (strcmp(name, "run_python") == 0 || strcmp(name, "run_shell") == 0);
}

/* "ok · exit 0 · 412 ms" or "timeout · exit 124 · 30.0 s"; ret_ok: the step succeeded. */
static void step_status(const json_t *result, char *buf, size_t size, bool *ret_ok)
{
        json_t *exec = json_object_get(result, "exec");
        bool ok = json_is_true(json_object_get(result, "ok"));
        const char *status = trace_jstr(exec, "status");
        if (status)
                ok = strcmp(status, "ok") == 0;
        *ret_ok = ok;
        int o = snprintf(buf, size, "%s", status ? status : ok ? "ok" : "failed");
        double d;
        if (trace_jnum(exec, "exit_code", &d))
                o += snprintf(buf + o, size - (size_t)o, " · exit %.0f", d);
        if (trace_jnum(exec, "wall_ms", &d) || trace_jnum(result, "ms", &d)) {
                char ms[32];
                trace_fmt_ms(ms, sizeof(ms), d);
                snprintf(buf + o, size - (size_t)o, " · %s", ms);
        }
}

/* How a run_start input is named: a string, or its "dest", else "source". */
static const char *input_name(const json_t *in)
{
        const char *p = json_is_string(in) ? json_string_value(in) : trace_jstr(in, "dest");
        return p ? p : trace_jstr(in, "source");
}

/* A one-line summary of a file tool's arguments: the path, a size for writes. */
static void tool_args_line(const json_t *call, FILE *f)
{
        json_t *args = json_object_get(call, "arguments");
        const char *path = trace_jstr(args, "path");
        if (path == NULL)
                path = trace_jstr(args, "file");
        if (path == NULL)
                path = trace_jstr(args, "dir");
        if (path) {
                fputs(path, f);
                json_t *content = json_object_get(args, "content");
                if (json_is_string(content)) {
                        char sz[32];
                        trace_fmt_size(sz, sizeof(sz), (double)json_string_length(content));
                        fprintf(f, " (%s)", sz);
                }
                return;
        }
        if (json_is_object(args) && json_object_size(args) == 0)
                return;
        char *s = json_is_string(args) ? strdup(json_string_value(args))
                                        : json_dumps(args, JSON_ENCODE_ANY | JSON_COMPACT);
        if (s && strlen(s) > 200)
                memcpy(s + 197, "...", 4);
        fputs(s ? s : "", f);
        free(s);
}

/* The token/time summary of run_end, one line. */
static void usage_line(const json_t *end, FILE *f)
{
        json_t *usage = json_object_get(end, "usage");
        double d;
        bool first = true;
        if (trace_jnum(end, "iterations", &d)) {
                fprintf(f, "%.0f iteration%s", d, d == 1 ? "" : "s");
                first = false;
        }
        if (json_is_object(usage)) {
                bool est = json_is_true(json_object_get(usage, "estimated"));
                double pt = 0, ct = 0;
                trace_jnum(usage, "prompt_tokens", &pt);
                trace_jnum(usage, "completion_tokens", &ct);
                fprintf(f, "%s%s%.0f prompt + %s%.0f completion tokens%s", first ? "" : " · ", est ? "~" : "", pt,
                        est ? "~" : "", ct, est ? " (estimated)" : "");
                first = false;
                if (trace_jnum(usage, "wait_ms", &d)) {
                        char ms[32];
                        trace_fmt_ms(ms, sizeof(ms), d);
                        fprintf(f, " · model %s", ms);
                }
        }
        if (trace_jnum(end, "wall_ms", &d)) {
                char ms[32];
                trace_fmt_ms(ms, sizeof(ms), d);
                fprintf(f, "%swall %s", first ? "" : " · ", ms);
        }
}

/* Run f(ctx) over a memory stream; returns the text or NULL. */
static char *stream_text(void (*fn)(const json_t *, FILE *), const json_t *v)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (f == NULL)
                return NULL;
        fn(v, f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- ipynb ---------------------------------------------------------------- */

struct nb {
        json_t *cells;
        unsigned ncells;
        int exec_count;
};

/* "a\nb\n" -> ["a\n", "b\n"]; "" -> [] (nbformat's multiline string). */
static json_t *lines_array(const char *text)
{
        json_t *a = json_array();
        const char *p = text ? text : "";
        while (a && *p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
                json_array_append_new(a, json_stringn(p, n));
                p += n;
        }
        return a;
}

static json_t *nb_cell(struct nb *nb, const char *type)
{
        char id[32];
        snprintf(id, sizeof(id), "cell-%u", ++nb->ncells);
        json_t *c = json_pack("{s:s, s:s, s:{}}", "cell_type", type, "id", id, "metadata");
        if (c)
                json_array_append_new(nb->cells, c);
        return c;
}

static void nb_markdown(struct nb *nb, const char *text)
{
        json_t *c = nb_cell(nb, "markdown");
        if (c)
                json_object_set_new(c, "source", lines_array(text));
}

/* Markdown from untrusted strings.  Everything in a notebook came from a
 * trace (the model, the jail, a file someone sent): made inert for a
 * terminal first (term_sanitize), then escaped for where it goes, so that
 * no string can open a tag, a link, emphasis or a heading, or close the
 * code it sits in. */

static char *md_clean(const char *s)
{
        return term_sanitize(s ? s : "", s ? strlen(s) : 0, NULL);
}

/* Prose: every ASCII punctuation character backslash-escaped (CommonMark
 * shows each literally). */
static void md_text(FILE *f, const char *s)
{
        cleanup_free char *c = md_clean(s);
        for (const char *p = c ? c : ""; *p; p++) {
                if (ispunct((unsigned char)*p) && (unsigned char)*p < 0x80)
                        fputc('\\', f);
                fputc(*p, f);
        }
}

/* The longest run of ch in s. */
static size_t longest_run(const char *s, char ch)
{
        size_t run = 0, longest = 0;
        for (const char *p = s; *p; p++) {
                run = *p == ch ? run + 1 : 0;
                longest = run > longest ? run : longest;
        }
        return longest;
}

/* A code span that survives backticks in s. */
static void md_code(FILE *f, const char *s)
{
        cleanup_free char *c = md_clean(s);
        const char *t = c ? c : "";
        size_t longest = longest_run(t, '`');
        char ticks[8] = "`";
        size_t n = longest + 1 < sizeof(ticks) - 1 ? longest + 1 : sizeof(ticks) - 1;
        memset(ticks, '`', n);
        ticks[n] = '\0';
        bool pad = longest > 0 || t[0] == '`';
        fprintf(f, "%s%s%s%s%s", ticks, pad ? " " : "", t, pad ? " " : "", ticks);
}

/* A fenced block that s cannot close: a fence longer than any backtick run
 * in it. */
static void md_fence(FILE *f, const char *s)
{
        cleanup_free char *c = md_clean(s);
        const char *t = c ? c : "";
        size_t n = longest_run(t, '`') + 1;
        if (n < 3)
                n = 3;
        for (size_t i = 0; i < n; i++)
                fputc('`', f);
        fprintf(f, "\n%s%s", t, t[0] && t[strlen(t) - 1] == '\n' ? "" : "\n");
        for (size_t i = 0; i < n; i++)
                fputc('`', f);
}

/* The model's own markdown (its replies, its answer): kept as markdown,
 * but raw HTML and autolinks are shown as text ('<' as "&lt;") outside code
 * blocks and code spans, which keep their bytes. */
static void md_model(FILE *f, const char *s)
{
        cleanup_free char *c = md_clean(s);
        const char *p = c ? c : "";
        char fence_ch = 0;
        size_t fence_len = 0;
        while (*p) {
                const char *eol = strchr(p, '\n');
                size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
                const char *q = p + strspn(p, " ");
                size_t run = (*q == '`' || *q == '~') ? strspn(q, *q == '`' ? "`" : "~") : 0;
                if (q - p <= 3 && run >= 3 && (fence_ch == 0 || (*q == fence_ch && run >= fence_len))) {
                        /* a fence opens or closes: the line as it is */
                        fence_len = fence_ch ? 0 : run;
                        fence_ch = fence_ch ? 0 : *q;
                        fwrite(p, 1, len, f);
                } else if (fence_ch) {
                        fwrite(p, 1, len, f);
                } else {
                        for (size_t i = 0; i < len;) {
                                if (p[i] == '`') {
                                        /* a code span: to the next run of as many backticks */
                                        size_t k = strspn(p + i, "`"), j = i + k;
                                        while (j < len) {
                                                size_t m = strspn(p + j, "`");
                                                if (m == k)
                                                        break;
                                                j += m ? m : 1;
                                        }
                                        size_t end = j < len ? j + k : i + k;
                                        fwrite(p + i, 1, end - i, f);
                                        i = end;
                                } else if (p[i] == '<') {
                                        fputs("&lt;", f);
                                        i++;
                                } else {
                                        fputc(p[i++], f);
                                }
                        }
                }
                p += len;
        }
}

static void md_run_start(const json_t *ev, FILE *f)
{
        fputs("# corral run\n\n", f);
        const char *task = trace_jstr(ev, "task");
        if (task) {
                fputs("**Task:**\n\n", f);
                md_text(f, task);
                fputs("\n\n", f);
        }
        const char *model = trace_jstr(ev, "model");
        if (model) {
                fputs("- model: ", f);
                md_code(f, model);
                const char *prov = trace_jstr(ev, "provider"), *base = trace_jstr(ev, "base_url"), *proto = trace_jstr(ev, "protocol");
                if (prov) {
                        fputs(" (", f);
                        md_text(f, prov);
                        fputs(")", f);
                }
                if (base) {
                        fputs(" at ", f);
                        md_code(f, base);
                }
                if (proto) {
                        fputs(", ", f);
                        md_text(f, proto);
                        fputs(" protocol", f);
                }
                fputs("\n", f);
        }
        size_t i;
        json_t *in;
        json_array_foreach (json_object_get(ev, "inputs"), i, in) {
                const char *p = input_name(in);
                if (p == NULL)
                        continue;
                fputs(i == 0 ? "- inputs: " : ", ", f);
                md_code(f, p);
        }
        if (json_array_size(json_object_get(ev, "inputs")) > 0)
                fputs("\n", f);
        const char *version = trace_jstr(ev, "version"), *run_id = trace_jstr(ev, "run_id");
        if (run_id) {
                fputs("- run: ", f);
                md_code(f, run_id);
                fputs("\n", f);
        }
        if (version) {
                fputs("- corral ", f);
                md_text(f, version);
                fputs("\n", f);
        }
}

static void md_run_end(const json_t *ev, FILE *f)
{
        const char *status = trace_jstr(ev, "status"), *answer = trace_jstr(ev, "answer"), *reason = trace_jstr(ev, "reason");
        if (answer && answer[0]) {
                fputs("## Answer\n\n", f);
                md_model(f, answer);
                fputs("\n\n", f);
        }
        fputs("## Summary\n\n- status: **", f);
        md_text(f, status ? status : "unknown");
        fputs("**", f);
        if (reason && reason[0]) {
                fputs(" (", f);
                md_text(f, reason);
                fputs(")", f);
        }
        fputs("\n- ", f);
        usage_line(ev, f);
        fputs("\n", f);
        json_t *arts = json_object_get(ev, "artifacts");
        size_t i;
        json_t *a;
        json_array_foreach (arts, i, a) {
                const char *cls;
                cleanup_free char *line = trace_artifact_line(a, &cls);
                if (line) {
                        fputs(i == 0 ? "- artifacts:\n  - " : "  - ", f);
                        md_code(f, line);
                        fputs("\n", f);
                }
        }
        const char *dir = trace_jstr(ev, "output_dir");
        if (dir) {
                fputs("- output: ", f);
                md_code(f, dir);
                fputs("\n", f);
        }
}

static void md_file_tool(const json_t *call, FILE *f)
{
        const char *name = trace_jstr(call, "name");
        fputs("**", f);
        md_text(f, name ? name : "tool");
        fputs("** ", f);
        char *args = stream_text(tool_args_line, call);
        if (args && args[0])
                md_code(f, args);
        free(args);
}

static void nb_stream(json_t *outputs, const char *name, const char *text)
{
        if (text == NULL || text[0] == '\0')
                return;
        /* Jupyter renders ANSI sequences in outputs: none from the jail. */
        cleanup_free char *clean = md_clean(text);
        json_t *o = json_pack("{s:s, s:s, s:o}", "output_type", "stream", "name", name, "text",
                              lines_array(clean ? clean : ""));
        if (o)
                json_array_append_new(outputs, o);
}

/* A run_python / run_shell call and its result as one code cell. */
/* A figure of the run as a notebook output (display_data), or a line
 * saying why it is not there. */
static void nb_figure(struct events *e, json_t *outputs, const char *path)
{
        const char *mime = NULL, *why = NULL;
        char *b64 = image_b64(e, path, &mime, &why);
        json_t *o;
        if (b64) {
                o = json_pack("{s:s, s:{s:s, s:[s]}, s:{}}", "output_type", "display_data", "data", mime, b64,
                              "text/plain", path, "metadata");
                json_object_set_new(e->shown, path, json_true());
        } else {
                char *line = NULL;
                if (asprintf(&line, "[corral: %s: not embedded (%s)]\n", path, why) < 0)
                        line = NULL;
                o = line ? json_pack("{s:s, s:s, s:[s]}", "output_type", "stream", "name", "stderr", "text", line) : NULL;
                free(line);
        }
        free(b64);
        if (o)
                json_array_append_new(outputs, o);
}

static void nb_code_step(struct nb *nb, struct events *e, const json_t *call, const json_t *result)
{
        bool shell;
        const char *code = call_code(call, &shell);
        cleanup_free char *clean = md_clean(code);
        char *source = NULL;
        if (clean == NULL || asprintf(&source, "%s%s", shell ? "%%bash\n" : "", clean) < 0)
                return;
        json_t *c = nb_cell(nb, "code");
        if (c == NULL) {
                free(source);
                return;
        }
        json_object_set_new(c, "execution_count", json_integer(++nb->exec_count));
        json_object_set_new(c, "source", lines_array(source));
        free(source);
        json_t *outputs = json_array();
        json_object_set_new(c, "outputs", outputs);
        if (result == NULL)
                return;
        json_t *exec = json_object_get(result, "exec");
        nb_stream(outputs, "stdout", trace_jstr(exec, "stdout"));
        if (json_is_true(json_object_get(exec, "stdout_truncated")))
                nb_stream(outputs, "stdout", "\n[corral: stdout went past the output limit; the rest was dropped]\n");
        nb_stream(outputs, "stderr", trace_jstr(exec, "stderr"));
        if (json_is_true(json_object_get(exec, "stderr_truncated")))
                nb_stream(outputs, "stderr", "\n[corral: stderr went past the output limit; the rest was dropped]\n");
        char status[256];
        bool ok;
        step_status(result, status, sizeof(status), &ok);
        if (!ok) {
                char *msg = NULL;
                const char *reason = trace_jstr(exec, "reason");
                if (exec == NULL)
                        reason = trace_jstr(result, "content");
                if (asprintf(&msg, "[corral: %s%s%s]\n", status, reason ? ": " : "", reason ? reason : "") >= 0)
                        nb_stream(outputs, "stderr", msg);
                free(msg);
        }
        size_t k;
        json_t *fig;
        json_array_foreach (json_object_get(exec, "figures"), k, fig)
                if (in_output(trace_jstr(fig, "path")))
                        nb_figure(e, outputs, in_output(trace_jstr(fig, "path")) - 7);
        json_t *meta = json_object_get(c, "metadata");
        json_t *info = json_pack("{s:s, s:b}", "status", status, "ok", ok);
        if (info && json_object_get(result, "artifacts"))
                json_object_set(info, "artifacts", json_object_get(result, "artifacts"));
        if (info)
                json_object_set_new(meta, "corral", info);
}

/* "Files: `+ output/a.csv (12 B)`, ..." for a step's workspace diff. */
static void md_artifacts(const json_t *arts, FILE *f)
{
        size_t i;
        json_t *a;
        bool first = true;
        json_array_foreach (arts, i, a) {
                const char *cls;
                cleanup_free char *line = trace_artifact_line(a, &cls);
                if (line) {
                        fputs(first ? "Files: " : ", ", f);
                        md_code(f, line);
                        first = false;
                }
        }
}

/* The run's files after its summary, as the HTML export shows them: images
 * (not shown by a step) as markdown cells with the image attached, CSV as a
 * markdown table of its first rows (every cell escaped), a markdown report
 * as a markdown cell of its own (md_model: no raw HTML). */
static void nb_files(struct nb *nb, struct events *e, const json_t *arts)
{
        size_t i;
        json_t *a;
        json_array_foreach (arts, i, a) {
                const char *path = trace_jstr(a, "path"), *fmt = trace_jstr(a, "format");
                if (path == NULL || fmt == NULL)
                        continue;
                char *md = NULL;
                size_t mdlen = 0;
                FILE *f = open_memstream(&md, &mdlen);
                if (f == NULL)
                        return;
                json_t *attach = NULL;
                if ((strcmp(fmt, "png") == 0 || strcmp(fmt, "jpeg") == 0) && !json_object_get(e->shown, path)) {
                        const char *mime = NULL, *why = NULL;
                        cleanup_free char *b64 = image_b64(e, path, &mime, &why);
                        md_code(f, path);
                        if (b64) {
                                /* an attachment name of our own: safe in the link */
                                const char *ext = strcmp(mime, "image/png") == 0 ? "png" : "jpg";
                                fprintf(f, "\n\n![figure %zu](attachment:figure-%zu.%s)", i + 1, i + 1, ext);
                                char key[64];
                                snprintf(key, sizeof(key), "figure-%zu.%s", i + 1, ext);
                                attach = json_pack("{s:{s:s}}", key, mime, b64);
                        } else {
                                fputs(": not embedded (", f);
                                md_text(f, why);
                                fputs(")", f);
                        }
                } else if (strcmp(fmt, "csv") == 0 || strcmp(fmt, "tsv") == 0) {
                        bool more = false;
                        json_t *rows = csv_rows(e, a, &more), *row;
                        size_t r, c, cols = json_array_size(json_array_get(rows, 0));
                        if (cols == 0) {
                                json_decref(rows);
                                fclose(f);
                                free(md);
                                continue;
                        }
                        md_code(f, path);
                        fputs("\n\n", f);
                        json_array_foreach (rows, r, row) {
                                if (r == PREVIEW_ROWS + (size_t)1)
                                        break;
                                fputs("|", f);
                                for (c = 0; c < cols; c++) {
                                        fputs(" ", f);
                                        md_text(f, json_string_value(json_array_get(row, c)));
                                        fputs(" |", f);
                                }
                                fputs(more ? " … |\n" : "\n", f);
                                if (r == 0) {
                                        fputs("|", f);
                                        for (c = 0; c < cols + (more ? 1 : 0); c++)
                                                fputs(" --- |", f);
                                        fputs("\n", f);
                                }
                        }
                        json_decref(rows);
                } else if (strcmp(fmt, "markdown") == 0) {
                        cleanup_free char *text = markdown_text(e, a);
                        if (text) {
                                md_code(f, path);
                                fputs("\n\n", f);
                                md_model(f, text);
                        }
                }
                if (fclose(f) == 0 && md && md[0]) {
                        nb_markdown(nb, md);
                        if (attach)
                                json_object_set_new(json_array_get(nb->cells, json_array_size(nb->cells) - 1),
                                                    "attachments", attach);
                        else
                                json_decref(attach);
                } else {
                        json_decref(attach);
                }
                free(md);
        }
}

/* metadata.corral: what the run was and how it ended. */
static json_t *nb_run_info(const json_t *start, const json_t *end)
{
        static const char *const start_keys[] = { "run_id", "task", "model", "provider", "base_url", "protocol",
                                                  "version", "inputs", "limits", NULL };
        static const char *const end_keys[] = { "status", "reason", "iterations", "usage", "wall_ms", "artifacts",
                                                "output_dir", NULL };
        json_t *info = json_object();
        for (size_t i = 0; info && start && start_keys[i]; i++)
                if (json_object_get(start, start_keys[i]))
                        json_object_set_new(info, start_keys[i], json_deep_copy(json_object_get(start, start_keys[i])));
        for (size_t i = 0; info && end && end_keys[i]; i++)
                if (json_object_get(end, end_keys[i]))
                        json_object_set_new(info, end_keys[i], json_deep_copy(json_object_get(end, end_keys[i])));
        return info;
}

static char *build_ipynb(struct events *e)
{
        struct nb nb = { .cells = json_array() };
        const json_t *start = NULL, *end = NULL;
        size_t i;
        json_t *ev;
        json_array_foreach (e->all, i, ev) {
                if (is_type(ev, "run_start") && start == NULL)
                        start = ev;
                if (is_type(ev, "run_end"))
                        end = ev;
        }
        json_array_foreach (e->all, i, ev) {
                /* Each event's markdown cell, written into a memory stream. */
                char *md = NULL;
                size_t mdlen = 0;
                FILE *f = open_memstream(&md, &mdlen);
                if (f == NULL)
                        break;
                if (is_type(ev, "run_start")) {
                        md_run_start(ev, f);
                } else if (is_type(ev, "model_reply")) {
                        const char *content = trace_jstr(ev, "content");
                        if (content && content[strspn(content, " \t\r\n")] != '\0')
                                md_model(f, content);
                } else if (is_type(ev, "tool_call")) {
                        const char *name = trace_jstr(ev, "name");
                        const json_t *result = find_result(e, i);
                        if (trace_is_answer_tool(name)) {
                                /* the answer is in run_end */
                        } else if (is_code_tool(name)) {
                                nb_code_step(&nb, e, ev, result);
                                json_t *arts = json_object_get(result, "artifacts");
                                if (json_array_size(arts) > 0)
                                        md_artifacts(arts, f);
                        } else {
                                md_file_tool(ev, f);
                                bool ok = result == NULL || json_is_true(json_object_get(result, "ok"));
                                const char *err = ok ? NULL : trace_jstr(result, "content");
                                if (err) {
                                        fputs(strncmp(err, "error:", 6) == 0 ? "\n\n> " : "\n\n> error: ", f);
                                        md_text(f, err);
                                }
                        }
                } else if (is_type(ev, "tool_result") && !e->consumed[i]) {
                        /* A result without a call (a cut trace): what the model was told. */
                        const char *name = trace_jstr(ev, "name");
                        fputs("**", f);
                        md_text(f, name ? name : "tool");
                        fputs("** result:\n\n", f);
                        md_fence(f, trace_jstr(ev, "content"));
                } else if (is_type(ev, "notice")) {
                        fputs("> **notice:** ", f);
                        md_text(f, trace_jstr(ev, "message"));
                } else if (is_type(ev, "run_end")) {
                        md_run_end(ev, f);
                }
                if (fclose(f) == 0 && md && md[0])
                        nb_markdown(&nb, md);
                free(md);
                if (is_type(ev, "run_end"))
                        nb_files(&nb, e, json_object_get(ev, "artifacts"));
        }
        json_t *doc = json_pack("{s:i, s:i, s:{s:{s:s, s:s, s:s}, s:{s:s}, s:o}, s:o}", "nbformat", 4, "nbformat_minor",
                                5, "metadata", "kernelspec", "name", "python3", "display_name", "Python 3", "language",
                                "python", "language_info", "name", "python", "corral", nb_run_info(start, end),
                                "cells", nb.cells);
        if (doc == NULL)
                return NULL;
        char *text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
        json_decref(doc);
        if (text == NULL)
                return NULL;
        char *withnl = NULL;
        if (asprintf(&withnl, "%s\n", text) < 0)
                withnl = NULL;
        free(text);
        return withnl;
}

/* ---- html ----------------------------------------------------------------- */

/* Sanitised and escaped: nothing in s can open a tag, an attribute or an
 * entity, or put a control character on the page. */
static void h(FILE *f, const char *s)
{
        if (s == NULL)
                return;
        size_t n;
        cleanup_free char *clean = term_sanitize(s, strlen(s), &n);
        if (clean == NULL)
                return;
        for (size_t i = 0; i < n; i++) {
                switch (clean[i]) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&#39;", f);
                        break;
                default:
                        fputc(clean[i], f);
                }
        }
}

static const char html_css[] =
        ":root{--fg:#1f2328;--muted:#656d76;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--ok:#1a7f37;--bad:#cf222e;"
        "--warn:#9a6700}\n"
        "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#8d96a0;--bg:#0d1117;--panel:#161b22;"
        "--line:#30363d;--ok:#3fb950;--bad:#f85149;--warn:#d29922}}\n"
        "body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,sans-serif}\n"
        "main{max-width:960px;margin:0 auto;padding:24px}\n"
        "h1{font-size:22px;margin:0 0 8px}h2{font-size:16px;margin:0 0 8px}\n"
        "pre,code{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}\n"
        "pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 12px;"
        "overflow-x:auto;white-space:pre-wrap;word-break:break-word;margin:6px 0}\n"
        ".text{white-space:pre-wrap;margin:16px 0}\n"
        ".task{white-space:pre-wrap;font-weight:600;margin:8px 0}\n"
        "dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}\n"
        "dt{color:var(--muted)}dd{margin:0}\n"
        "section.step{border-left:3px solid var(--line);padding:4px 0 4px 14px;margin:18px 0}\n"
        "section.step.ok{border-color:var(--ok)}section.step.fail{border-color:var(--bad)}\n"
        ".n{color:var(--muted);font-weight:400}\n"
        ".badge{display:inline-block;font-size:12px;font-weight:600;padding:1px 8px;border-radius:10px;"
        "border:1px solid currentColor;margin-left:8px;vertical-align:1px}\n"
        ".badge.ok{color:var(--ok)}.badge.fail{color:var(--bad)}.badge.warn{color:var(--warn)}\n"
        "pre.err{color:var(--bad)}pre.out::before,pre.err::before{display:block;color:var(--muted);font-size:11px}\n"
        "pre.out::before{content:'stdout'}pre.err::before{content:'stderr'}\n"
        ".note{color:var(--muted);font-size:13px}\n"
        "ul.files{list-style:none;padding:0;margin:6px 0;font:13px ui-monospace,monospace}\n"
        ".created{color:var(--ok)}.modified{color:var(--warn)}.deleted{color:var(--bad)}\n"
        ".notice{color:var(--warn)}\n"
        "footer{border-top:1px solid var(--line);margin-top:28px;padding-top:16px}\n"
        "figure{margin:10px 0}figure img{max-width:100%;height:auto;border:1px solid var(--line)}\n"
        "figcaption{color:var(--muted);font:12px ui-monospace,monospace}\n"
        "table.csv{border-collapse:collapse;font:13px ui-monospace,monospace;margin:6px 0;display:block;"
        "overflow-x:auto}\n"
        "table.csv th,table.csv td{border:1px solid var(--line);padding:2px 8px;text-align:left}\n"
        ".report{border:1px solid var(--line);border-radius:6px;padding:4px 16px;margin:8px 0}\n";

static void html_artifacts(FILE *f, const json_t *arts)
{
        if (json_array_size(arts) == 0)
                return;
        fputs("<ul class=\"files\">\n", f);
        size_t i;
        json_t *a;
        json_array_foreach (arts, i, a) {
                const char *cls;
                cleanup_free char *line = trace_artifact_line(a, &cls);
                if (line) {
                        fprintf(f, "<li class=\"%s\">", cls);
                        h(f, line);
                        fputs("</li>\n", f);
                }
        }
        fputs("</ul>\n", f);
}

static void html_pre(FILE *f, const char *cls, const char *text)
{
        if (text == NULL || text[0] == '\0')
                return;
        fprintf(f, "<pre class=\"%s\">", cls);
        h(f, text);
        fputs("</pre>\n", f);
}

static void html_run_start(FILE *f, const json_t *ev)
{
        fputs("<header>\n<h1>corral run</h1>\n", f);
        if (trace_jstr(ev, "task")) {
                fputs("<div class=\"task\">", f);
                h(f, trace_jstr(ev, "task"));
                fputs("</div>\n", f);
        }
        fputs("<dl>\n", f);
        static const char *const keys[] = { "model", "provider", "base_url", "protocol", "workspace", "run_id",
                                            "version", NULL };
        static const char *const labels[] = { "model", "provider", "endpoint", "protocol", "workspace", "run",
                                              "corral", NULL };
        for (size_t k = 0; keys[k]; k++) {
                const char *v = trace_jstr(ev, keys[k]);
                if (v == NULL)
                        continue;
                fprintf(f, "<dt>%s</dt><dd>", labels[k]);
                h(f, v);
                fputs("</dd>\n", f);
        }
        size_t i;
        json_t *in;
        json_array_foreach (json_object_get(ev, "inputs"), i, in) {
                const char *p = input_name(in);
                if (p == NULL)
                        continue;
                fprintf(f, "<dt>%s</dt><dd><code>", i == 0 ? "inputs" : "");
                h(f, p);
                double bytes;
                if (trace_jnum(in, "bytes", &bytes)) {
                        char sz[32];
                        trace_fmt_size(sz, sizeof(sz), bytes);
                        fprintf(f, "</code> (%s)</dd>\n", sz);
                } else {
                        fputs("</code></dd>\n", f);
                }
        }
        fputs("</dl>\n</header>\n", f);
}

/* An image of the run inline (data: URI, allowed by the page's CSP for
 * images only), or a note saying why not. */
static void html_image(FILE *f, struct events *e, const char *path)
{
        const char *mime = NULL, *why = NULL;
        cleanup_free char *b64 = image_b64(e, path, &mime, &why);
        if (b64) {
                fputs("<figure><img alt=\"", f);
                h(f, path);
                fprintf(f, "\" src=\"data:%s;base64,%s\"><figcaption>", mime, b64);
                h(f, path);
                fputs("</figcaption></figure>\n", f);
                json_object_set_new(e->shown, path, json_true());
        } else {
                fputs("<p class=\"note\">", f);
                h(f, path);
                fputs(": not embedded (", f);
                h(f, why);
                fputs(")</p>\n", f);
        }
}

static void html_figures(FILE *f, struct events *e, const json_t *figures)
{
        size_t i;
        json_t *fig;
        json_array_foreach (figures, i, fig) {
                const char *path = trace_jstr(fig, "path");
                if (path && in_output(path))
                        html_image(f, e, in_output(path) - 7);
        }
}

/* The run's files at the end: images inline (those a step did not show),
 * CSV as a table of its first rows, markdown rendered (cmark, which leaves
 * out raw HTML and unsafe links by default). */
static void html_files(FILE *f, struct events *e, const json_t *arts)
{
        size_t i;
        json_t *a;
        json_array_foreach (arts, i, a) {
                const char *path = trace_jstr(a, "path"), *fmt = trace_jstr(a, "format");
                if (path == NULL || fmt == NULL)
                        continue;
                if ((strcmp(fmt, "png") == 0 || strcmp(fmt, "jpeg") == 0) && !json_object_get(e->shown, path)) {
                        html_image(f, e, path);
                } else if (strcmp(fmt, "csv") == 0 || strcmp(fmt, "tsv") == 0) {
                        bool more = false;
                        json_t *rows = csv_rows(e, a, &more), *row, *cell;
                        if (json_array_size(rows) == 0) {
                                json_decref(rows);
                                continue;
                        }
                        fputs("<figure><table class=\"csv\">\n", f);
                        size_t r, c;
                        json_array_foreach (rows, r, row) {
                                if (r == PREVIEW_ROWS + (size_t)1)
                                        break;
                                fputs("<tr>", f);
                                json_array_foreach (row, c, cell) {
                                        fputs(r == 0 ? "<th>" : "<td>", f);
                                        h(f, json_string_value(cell));
                                        fputs(r == 0 ? "</th>" : "</td>", f);
                                }
                                fputs(more ? "<td>…</td></tr>\n" : "</tr>\n", f);
                        }
                        fputs("</table><figcaption>", f);
                        h(f, path);
                        double rows_n = 0;
                        if (trace_jnum(a, "rows", &rows_n) && rows_n > PREVIEW_ROWS)
                                fprintf(f, " (the first %d of %.0f rows)", PREVIEW_ROWS, rows_n);
                        fputs("</figcaption></figure>\n", f);
                        json_decref(rows);
                } else if (strcmp(fmt, "markdown") == 0) {
                        cleanup_free char *text = markdown_text(e, a);
                        size_t n = 0;
                        cleanup_free char *clean = text ? term_sanitize(text, strlen(text), &n) : NULL;
                        corral_error *err = NULL;
                        cleanup_free char *html = clean ? markdown_to_html(clean, n, &err) : NULL;
                        if (html) {
                                fputs("<figure><div class=\"report\">\n", f);
                                fputs(html, f);
                                fputs("</div><figcaption>", f);
                                h(f, path);
                                fputs("</figcaption></figure>\n", f);
                        } else if (clean) {
                                /* Without libcmark: the text as it is, and why. */
                                fputs("<figure><pre>", f);
                                h(f, clean);
                                fputs("</pre><figcaption>", f);
                                h(f, path);
                                fputs(" (not rendered: ", f);
                                h(f, err ? err->msg : "cannot render the markdown");
                                fputs(")</figcaption></figure>\n", f);
                        }
                        corral_error_free(err);
                }
        }
}

static void html_step(FILE *f, struct events *e, unsigned step, const json_t *call, const json_t *result)
{
        const char *name = trace_jstr(call, "name");
        bool ok = true;
        char status[256] = "";
        if (result)
                step_status(result, status, sizeof(status), &ok);
        const char *cls = result == NULL ? "" : ok ? "ok" : "fail";
        fprintf(f, "<section class=\"step %s\">\n<h2><span class=\"n\">step %u</span> ", cls, step);
        h(f, name ? name : "tool");
        if (!is_code_tool(name)) {
                char *args = stream_text(tool_args_line, call);
                if (args && args[0]) {
                        fputs(" <code>", f);
                        h(f, args);
                        fputs("</code>", f);
                }
                free(args);
        }
        if (result) {
                fprintf(f, " <span class=\"badge %s\">", ok ? "ok" : "fail");
                h(f, status);
                fputs("</span>", f);
        }
        fputs("</h2>\n", f);
        if (is_code_tool(name)) {
                bool shell;
                const char *code = call_code(call, &shell);
                if (shell) {
                        fputs("<pre class=\"code\">$ ", f);
                        h(f, code);
                        fputs("</pre>\n", f);
                } else {
                        html_pre(f, "code", code);
                }
        }
        if (result) {
                json_t *exec = json_object_get(result, "exec");
                if (json_is_object(exec)) {
                        html_pre(f, "out", trace_jstr(exec, "stdout"));
                        if (json_is_true(json_object_get(exec, "stdout_truncated")))
                                fputs("<p class=\"note\">stdout went past the output limit; the rest was dropped</p>\n",
                                      f);
                        html_pre(f, "err", trace_jstr(exec, "stderr"));
                        if (json_is_true(json_object_get(exec, "stderr_truncated")))
                                fputs("<p class=\"note\">stderr went past the output limit; the rest was dropped</p>\n",
                                      f);
                        const char *reason = trace_jstr(exec, "reason");
                        if (!ok && reason) {
                                fputs("<p class=\"note\">", f);
                                h(f, reason);
                                fputs("</p>\n", f);
                        }
                } else if (!ok) {
                        html_pre(f, "err", trace_jstr(result, "content"));
                }
                html_artifacts(f, json_object_get(result, "artifacts"));
                html_figures(f, e, json_object_get(exec, "figures"));
        }
        fputs("</section>\n", f);
}

static void html_run_end(FILE *f, struct events *e, const json_t *ev)
{
        const char *status = trace_jstr(ev, "status");
        const char *cls = status == NULL                          ? "warn"
                          : strcmp(status, "answered") == 0       ? "ok"
                          : strcmp(status, "gave_up") == 0 || strcmp(status, "cancelled") == 0 ? "warn"
                                                                                               : "fail";
        fprintf(f, "<footer>\n<h2>summary <span class=\"badge %s\">", cls);
        h(f, status ? status : "unknown");
        fputs("</span></h2>\n", f);
        const char *answer = trace_jstr(ev, "answer");
        if (answer && answer[0]) {
                fputs("<div class=\"text answer\">", f);
                h(f, answer);
                fputs("</div>\n", f);
        }
        fputs("<dl>\n", f);
        const char *reason = trace_jstr(ev, "reason");
        if (reason && reason[0]) {
                fputs("<dt>reason</dt><dd>", f);
                h(f, reason);
                fputs("</dd>\n", f);
        }
        char *usage = stream_text(usage_line, ev);
        if (usage && usage[0]) {
                fputs("<dt>run</dt><dd>", f);
                h(f, usage);
                fputs("</dd>\n", f);
        }
        free(usage);
        if (trace_jstr(ev, "output_dir")) {
                fputs("<dt>output</dt><dd><code>", f);
                h(f, trace_jstr(ev, "output_dir"));
                fputs("</code></dd>\n", f);
        }
        fputs("</dl>\n", f);
        html_artifacts(f, json_object_get(ev, "artifacts"));
        html_files(f, e, json_object_get(ev, "artifacts"));
        fputs("</footer>\n", f);
}

static char *build_html(struct events *e)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (f == NULL)
                return NULL;
        const json_t *start = NULL;
        size_t i;
        json_t *ev;
        json_array_foreach (e->all, i, ev)
                if (start == NULL && is_type(ev, "run_start"))
                        start = ev;
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<meta http-equiv=\"Content-Security-Policy\"\n"
              "      content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
              "<meta name=\"referrer\" content=\"no-referrer\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>corral run",
              f);
        const char *task = trace_jstr(start, "task");
        if (task) {
                char title[121];
                size_t n = strcspn(task, "\n");
                if (n > 120)
                        n = 120;
                while (n > 0 && ((unsigned char)task[n] & 0xc0) == 0x80 && task[n] != '\0')
                        n--; /* not in the middle of a UTF-8 sequence */
                memcpy(title, task, n);
                title[n] = '\0';
                fputs(": ", f);
                h(f, title);
        }
        fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", html_css);
        unsigned steps = 0;
        json_array_foreach (e->all, i, ev) {
                if (is_type(ev, "run_start")) {
                        html_run_start(f, ev);
                } else if (is_type(ev, "model_reply")) {
                        const char *content = trace_jstr(ev, "content");
                        if (content && content[strspn(content, " \t\r\n")] != '\0') {
                                fputs("<div class=\"text\">", f);
                                h(f, content);
                                fputs("</div>\n", f);
                        }
                } else if (is_type(ev, "tool_call")) {
                        const json_t *result = find_result(e, i);
                        if (!trace_is_answer_tool(trace_jstr(ev, "name")))
                                html_step(f, e, ++steps, ev, result);
                } else if (is_type(ev, "tool_result") && !e->consumed[i]) {
                        html_step(f, e, ++steps, ev, ev);
                } else if (is_type(ev, "notice") || is_type(ev, "model_retry")) {
                        fputs("<p class=\"notice\">", f);
                        if (is_type(ev, "notice")) {
                                h(f, trace_jstr(ev, "message"));
                        } else {
                                double a = 0, d = 0;
                                trace_jnum(ev, "attempt", &a);
                                trace_jnum(ev, "delay_s", &d);
                                fprintf(f, "model request failed (retry %.0f after %.1f s): ", a, d);
                                h(f, trace_jstr(ev, "reason"));
                        }
                        fputs("</p>\n", f);
                } else if (is_type(ev, "run_end")) {
                        html_run_end(f, e, ev);
                }
        }
        fputs("</main>\n</body>\n</html>\n", f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- writing -------------------------------------------------------------- */

int trace_export(const char *trace_path, enum export_format fmt, const char *out, corral_error **ret_err)
{
        struct events e = { .all = json_array(), .out_fd = -1, .shown = json_object() };
        if (e.all == NULL || e.shown == NULL) {
                json_decref(e.all);
                json_decref(e.shown);
                return corral_fail(ret_err, ENOMEM, "out of memory");
        }
        if (trace_read_file(trace_path, collect_event, e.all, ret_err) < 0) {
                json_decref(e.all);
                json_decref(e.shown);
                return -1;
        }
        e.consumed = calloc(json_array_size(e.all) + 1, sizeof(bool));
        outputs_open(&e);
        char *text = NULL;
        if (e.consumed != NULL && e.shown != NULL)
                text = fmt == EXPORT_IPYNB ? build_ipynb(&e) : build_html(&e);
        free(e.consumed);
        json_decref(e.all);
        json_decref(e.shown);
        if (e.out_fd >= 0)
                close(e.out_fd);
        if (text == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot build the %s export of '%s'",
                                   fmt == EXPORT_IPYNB ? "notebook" : "HTML", trace_path);
        /* Written beside out and renamed over it (workspace/dest.h): an
         * export may go into a workspace, where a link could wait. */
        struct ws_dest d;
        int r = ws_dest_open(out, WS_DEST_FILE, "the export", NULL, &d, ret_err);
        if (r == 0)
                r = ws_dest_write(&d, text, strlen(text), 0600, ret_err);
        ws_dest_release(&d);
        free(text);
        return r;
}

char *export_default_path(const char *path, enum export_format fmt)
{
        const char *ext = fmt == EXPORT_IPYNB ? "ipynb" : "html";
        size_t n = strlen(path);
        char *out = NULL;
        if (n > 6 && strcmp(path + n - 6, ".jsonl") == 0) {
                if (asprintf(&out, "%.*s.%s", (int)(n - 6), path, ext) < 0)
                        return NULL;
        } else if (asprintf(&out, "%s.%s", path, ext) < 0) {
                return NULL;
        }
        return out;
}
