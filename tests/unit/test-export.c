/* test-export.c: the ipynb and HTML exports of a trace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../../src/trace/export.h"
#include "harness.h"

static const char sample[] =
        "{\"v\":1,\"type\":\"run_start\",\"t_ms\":0.0,\"ts\":\"x\",\"run_id\":\"r-1\",\"task\":\"Top 5 <products> & "
        "more\",\"model\":\"gpt-4o-mini\",\"base_url\":\"https://api.example.com/v1\",\"provider\":\"openai\","
        "\"protocol\":\"tools\",\"inputs\":[{\"source\":\"data/sales.csv\",\"dest\":\"input/sales.csv\",\"type\":"
        "\"file\",\"bytes\":1234}],\"limits\":{\"timeout_s\":30},\"workspace\":\"/tmp/ws\",\"version\":\"0.1.0\"}\n"
        "{\"v\":1,\"type\":\"model_request\",\"t_ms\":1,\"ts\":\"x\",\"iteration\":1}\n"
        "{\"v\":1,\"type\":\"model_reply\",\"t_ms\":2,\"ts\":\"x\",\"iteration\":1,\"content\":\"First I load it.\\n"
        "Then I count.\"}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":3,\"ts\":\"x\",\"iteration\":1,\"id\":\"c1\",\"name\":\"run_python\","
        "\"arguments\":{},\"code\":\"import pandas as pd\\nprint('<script>alert(1)</script>')\\n\"}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":4,\"ts\":\"x\",\"iteration\":1,\"id\":\"c1\",\"name\":\"run_python\","
        "\"ok\":true,\"content\":\"1\",\"ms\":600,\"exec\":{\"status\":\"ok\",\"exit_code\":0,\"stdout\":"
        "\"<script>alert(1)</script>\\nline 2\\n\",\"stderr\":\"warn \\\"quoted\\\" & 'single'\\n\",\"wall_ms\":412.3},"
        "\"artifacts\":[{\"path\":\"output/top5.csv\",\"change\":\"created\",\"type\":\"file\",\"size\":312,"
        "\"format\":\"csv\",\"rows\":5,\"columns\":2}]}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":5,\"ts\":\"x\",\"iteration\":2,\"id\":\"c2\",\"name\":\"run_shell\","
        "\"arguments\":{\"command\":\"ls -la\"},\"command\":\"ls -la\"}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":5,\"ts\":\"x\",\"iteration\":2,\"id\":\"c3\",\"name\":\"read_file\","
        "\"arguments\":{\"path\":\"input/missing.csv\"}}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":6,\"ts\":\"x\",\"iteration\":2,\"id\":\"c2\",\"name\":\"run_shell\","
        "\"ok\":false,\"content\":\"\",\"exec\":{\"status\":\"error\",\"exit_code\":2,\"stdout\":\"\",\"stderr\":"
        "\"ls: nope\\n\",\"wall_ms\":30}}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":8,\"ts\":\"x\",\"iteration\":2,\"id\":\"c3\",\"name\":\"read_file\","
        "\"ok\":false,\"content\":\"error: cannot open 'input/missing.csv'\"}\n"
        "{\"v\":1,\"type\":\"notice\",\"t_ms\":9,\"ts\":\"x\",\"message\":\"trimmed <b>\"}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":9,\"ts\":\"x\",\"iteration\":3,\"id\":\"c4\",\"name\":\"final_answer\","
        "\"arguments\":{\"answer\":\"A\"}}\n"
        "{\"v\":1,\"type\":\"run_end\",\"t_ms\":10,\"ts\":\"x\",\"status\":\"answered\",\"answer\":\"A, B & C.\","
        "\"iterations\":3,\"usage\":{\"prompt_tokens\":3210,\"completion_tokens\":512,\"requests\":4,\"retries\":1,"
        "\"wait_ms\":8400,\"estimated\":false},\"artifacts\":[{\"path\":\"output/top5.csv\",\"bytes\":312}],"
        "\"output_dir\":\"./out\",\"wall_ms\":12345}\n";

static char tmpdir[256];

static char *path_in(const char *name)
{
        char *p = NULL;
        if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
                abort();
        return p;
}

static void spit(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
                abort();
        close(fd);
}

/* Files in tmpdir whose names start with '.': leftover temporary files. */
static int hidden_files(void)
{
        DIR *d = opendir(tmpdir);
        int n = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
                if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* The lines of a notebook multiline string joined. */
static char *joined(const json_t *source)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (json_is_string(source))
                fputs(json_string_value(source), f);
        size_t i;
        json_t *line;
        json_array_foreach (source, i, line)
                fputs(json_string_value(line) ? json_string_value(line) : "<not a string>", f);
        fclose(f);
        return buf;
}

TEST(ipynb_structure)
{
        cleanup_free char *trace = path_in("run.jsonl");
        cleanup_free char *out = path_in("run.ipynb");
        spit(trace, sample);
        corral_error *err = NULL;
        CHECK(trace_export(trace, EXPORT_IPYNB, out, &err) == 0);
        if (err)
                printf("# %s\n", err->msg);
        corral_error_free(err);
        json_error_t jerr;
        json_t *nb = json_load_file(out, JSON_REJECT_DUPLICATES, &jerr);
        CHECK(nb != NULL);
        if (nb == NULL) {
                printf("# %s\n", jerr.text);
                return;
        }
        struct stat st;
        CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0600);
        CHECK_INT(json_integer_value(json_object_get(nb, "nbformat")), 4);
        CHECK_INT(json_integer_value(json_object_get(nb, "nbformat_minor")), 5);
        json_t *meta = json_object_get(nb, "metadata");
        CHECK_STR(json_string_value(json_object_get(json_object_get(meta, "kernelspec"), "name")), "python3");
        CHECK_STR(json_string_value(json_object_get(json_object_get(meta, "kernelspec"), "display_name")),
                  "Python 3");
        CHECK_STR(json_string_value(json_object_get(json_object_get(meta, "language_info"), "name")), "python");
        json_t *corral = json_object_get(meta, "corral");
        CHECK_STR(json_string_value(json_object_get(corral, "model")), "gpt-4o-mini");
        CHECK_STR(json_string_value(json_object_get(corral, "status")), "answered");
        CHECK_INT(json_integer_value(json_object_get(corral, "iterations")), 3);

        json_t *cells = json_object_get(nb, "cells");
        /* run_start, reply text, python (+ its files), shell, read_file, notice, summary */
        const char *types[] = { "markdown", "markdown", "code", "markdown", "code", "markdown", "markdown", "markdown" };
        CHECK_INT(json_array_size(cells), ARRAY_SIZE(types));
        size_t i;
        json_t *cell;
        json_array_foreach (cells, i, cell) {
                if (i < ARRAY_SIZE(types))
                        CHECK_STR(json_string_value(json_object_get(cell, "cell_type")), types[i]);
                const char *id = json_string_value(json_object_get(cell, "id"));
                CHECK(id && strlen(id) >= 1 && strlen(id) <= 64 && strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-_") ==
                                                                         strlen(id));
                for (size_t k = 0; k < i; k++)
                        CHECK(strcmp(id, json_string_value(json_object_get(json_array_get(cells, k), "id"))) != 0);
                CHECK(json_is_object(json_object_get(cell, "metadata")));
                CHECK(json_is_array(json_object_get(cell, "source")));
        }
        cleanup_free char *intro = joined(json_object_get(json_array_get(cells, 0), "source"));
        /* untrusted prose is escaped: no tag, no entity */
        CHECK(intro && strstr(intro, "Top 5 \\<products\\> \\& more") != NULL);
        CHECK(intro && strstr(intro, "`gpt-4o-mini`") != NULL);
        cleanup_free char *text = joined(json_object_get(json_array_get(cells, 1), "source"));
        CHECK_STR(text, "First I load it.\nThen I count.");
        json_t *src1 = json_object_get(json_array_get(cells, 1), "source");
        CHECK_STR(json_string_value(json_array_get(src1, 0)), "First I load it.\n"); /* lines keep their newline */

        json_t *py = json_array_get(cells, 2);
        CHECK_INT(json_integer_value(json_object_get(py, "execution_count")), 1);
        cleanup_free char *code = joined(json_object_get(py, "source"));
        CHECK_STR(code, "import pandas as pd\nprint('<script>alert(1)</script>')\n");
        json_t *outs = json_object_get(py, "outputs");
        CHECK_INT(json_array_size(outs), 2);
        CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 0), "output_type")), "stream");
        CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 0), "name")), "stdout");
        cleanup_free char *o0 = joined(json_object_get(json_array_get(outs, 0), "text"));
        CHECK_STR(o0, "<script>alert(1)</script>\nline 2\n");
        CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 1), "name")), "stderr");
        cleanup_free char *files = joined(json_object_get(json_array_get(cells, 3), "source"));
        CHECK(files && strstr(files, "`+ output/top5.csv (312 B, CSV 5 rows × 2 columns)`") != NULL);

        json_t *sh = json_array_get(cells, 4);
        CHECK_INT(json_integer_value(json_object_get(sh, "execution_count")), 2);
        cleanup_free char *shsrc = joined(json_object_get(sh, "source"));
        CHECK_STR(shsrc, "%%bash\nls -la");
        json_t *shout = json_object_get(sh, "outputs");
        CHECK_INT(json_array_size(shout), 2);
        cleanup_free char *status = joined(json_object_get(json_array_get(shout, 1), "text"));
        CHECK(status && strstr(status, "error · exit 2") != NULL);
        CHECK_STR(json_string_value(json_object_get(json_array_get(shout, 1), "name")), "stderr");

        cleanup_free char *rf = joined(json_object_get(json_array_get(cells, 5), "source"));
        CHECK(rf && strstr(rf, "**read\\_file** `input/missing.csv`") != NULL && strstr(rf, "cannot open") != NULL);
        cleanup_free char *summary = joined(json_object_get(json_array_get(cells, 7), "source"));
        CHECK(summary && strstr(summary, "## Answer\n\nA, B & C.") != NULL);
        CHECK(summary && strstr(summary, "**answered**") != NULL);
        CHECK(summary && strstr(summary, "3210 prompt + 512 completion tokens") != NULL);
        CHECK_INT(hidden_files(), 0);
        json_decref(nb);
}

/* tag in text, not escaped by a backslash (markdown would render it). */
static bool raw_tag(const char *text, const char *tag)
{
        for (const char *p = strstr(text, tag); p; p = strstr(p + 1, tag))
                if (p == text || p[-1] != '\\')
                        return true;
        return false;
}

/* The notebook holds to the HTML export's rule: no control character from
 * the trace in any cell, no HTML from untrusted strings in markdown (a tool
 * name, an error, a notice), the model's own markdown kept but its raw HTML
 * shown as text outside code, and a fence nothing can close. */
TEST(ipynb_hostile_strings)
{
        cleanup_free char *trace = path_in("hostile.jsonl");
        cleanup_free char *out = path_in("hostile.ipynb");
        spit(trace,
             "{\"type\":\"run_start\",\"task\":\"# big\\n[x](javascript:alert(1)) \\u001b]52;c;aGk=\\u0007\"}\n"
             "{\"type\":\"model_reply\",\"content\":\"**ok** <img src=x onerror=alert(1)> `<b>` \\u009b2J\\n"
             "```html\\n<script>kept()</script>\\n```\\nafter <script>x</script>\"}\n"
             "{\"type\":\"tool_call\",\"id\":\"a\",\"name\":\"<img src=x onerror=alert(2)>\",\"arguments\":{}}\n"
             "{\"type\":\"tool_result\",\"id\":\"a\",\"name\":\"x\",\"ok\":false,"
             "\"content\":\"error: <svg onload=alert(3)> \\u001b[2J\"}\n"
             "{\"type\":\"tool_call\",\"id\":\"b\",\"name\":\"run_python\",\"code\":\"print('\\u001b]0;t\\u0007')\"}\n"
             "{\"type\":\"tool_result\",\"id\":\"b\",\"name\":\"run_python\",\"ok\":true,\"exec\":{\"status\":"
             "\"ok\",\"stdout\":\"\\u001b]52;c;aGk=\\u0007\\u001bP$q m\\u001b\\\\\"}}\n"
             "{\"type\":\"tool_result\",\"id\":\"z\",\"name\":\"<i>t</i>\",\"content\":\"```\\n<b>x</b>\"}\n"
             "{\"type\":\"notice\",\"message\":\"<a href=javascript:x>n</a>\"}\n"
             "{\"type\":\"run_end\",\"status\":\"answered\",\"answer\":\"done <iframe>\",\"reason\":\"<b>r</b>\"}\n");
        corral_error *err = NULL;
        CHECK(trace_export(trace, EXPORT_IPYNB, out, &err) == 0);
        corral_error_free(err);
        cleanup_free char *text = read_file_at(AT_FDCWD, out, 1 << 20);
        CHECK(text != NULL);
        json_t *nb = json_loads(text ? text : "", 0, NULL);
        CHECK(nb != NULL);
        /* every string of every cell, joined */
        char *all = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&all, &size);
        size_t i;
        json_t *cell;
        json_array_foreach (json_object_get(nb, "cells"), i, cell) {
                cleanup_free char *src = joined(json_object_get(cell, "source"));
                fprintf(f, "%s\n", src ? src : "");
                size_t k;
                json_t *o;
                json_array_foreach (json_object_get(cell, "outputs"), k, o) {
                        cleanup_free char *t = joined(json_object_get(o, "text"));
                        fprintf(f, "%s\n", t ? t : "");
                }
        }
        fclose(f);
        CHECK(all && strchr(all, '\033') == NULL && strchr(all, '\007') == NULL);
        CHECK(all && strstr(all, "\xc2\x9b") == NULL); /* C1 CSI */
        CHECK(all && !raw_tag(all, "<img") && !raw_tag(all, "<svg") && !raw_tag(all, "<a ") &&
              !raw_tag(all, "<i>") && !raw_tag(all, "<iframe") && !raw_tag(all, "(javascript:"));
        CHECK(all && strstr(all, "**\\<img src\\=x onerror\\=alert\\(2\\)\\>**") != NULL); /* the tool name */
        CHECK(all && strstr(all, "\\# big") != NULL);                                /* no heading */
        CHECK(all && strstr(all, "**ok** &lt;img src=x") != NULL);                     /* the model's markdown */
        CHECK(all && strstr(all, "`<b>`") != NULL);                                    /* code span kept */
        CHECK(all && strstr(all, "```html\n<script>kept()</script>\n```") != NULL);    /* fenced code kept */
        CHECK(all && strstr(all, "after &lt;script>") != NULL);
        CHECK(all && strstr(all, "````\n```\n<b>x</b>\n````") != NULL);              /* an unclosable fence */
        CHECK(all && strstr(all, "^[]52;c;aGk=^G") != NULL);                           /* outputs inert */
        free(all);
        json_decref(nb);
}

TEST(html_escaped_and_self_contained)
{
        cleanup_free char *trace = path_in("run.jsonl");
        cleanup_free char *out = path_in("page.html");
        spit(trace, sample);
        spit(out, "old page");
        corral_error *err = NULL;
        CHECK(trace_export(trace, EXPORT_HTML, out, &err) == 0);
        corral_error_free(err);
        cleanup_free char *html = read_file_at(AT_FDCWD, out, 1 << 20);
        CHECK(html != NULL);
        if (html == NULL)
                return;
        CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
        CHECK(strstr(html, "old page") == NULL);
        CHECK(strstr(html, "<script") == NULL);
        CHECK(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
        CHECK(strstr(html, "Top 5 &lt;products&gt; &amp; more") != NULL);
        CHECK(strstr(html, "warn &quot;quoted&quot; &amp; &#39;single&#39;") != NULL);
        CHECK(strstr(html, "trimmed &lt;b&gt;") != NULL);
        CHECK(strstr(html, "<link") == NULL && strstr(html, " src=") == NULL && strstr(html, "url(") == NULL);
        CHECK(strstr(html, "Content-Security-Policy") != NULL);
        CHECK(strstr(html, "<pre class=\"code\">import pandas as pd") != NULL);
        CHECK(strstr(html, "<span class=\"badge ok\">ok · exit 0 · 412 ms</span>") != NULL);
        CHECK(strstr(html, "<span class=\"badge fail\">error · exit 2 · 30 ms</span>") != NULL);
        CHECK(strstr(html, "+ output/top5.csv (312 B, CSV 5 rows × 2 columns)") != NULL);
        CHECK(strstr(html, "<span class=\"badge ok\">answered</span>") != NULL);
        CHECK(strstr(html, "A, B &amp; C.") != NULL);
        CHECK(strstr(html, "</html>\n") != NULL);
        CHECK_INT(hidden_files(), 0);
}

TEST(html_control_characters)
{
        cleanup_free char *trace = path_in("ctl.jsonl");
        cleanup_free char *out = path_in("ctl.html");
        spit(trace, "{\"type\":\"tool_call\",\"id\":\"a\",\"name\":\"run_python\",\"code\":\"x\"}\n"
                    "{\"type\":\"tool_result\",\"id\":\"a\",\"name\":\"run_python\",\"ok\":true,\"exec\":{\"status\":"
                    "\"ok\",\"stdout\":\"\\u001b[31mred\\u0007\"}}\n");
        CHECK(trace_export(trace, EXPORT_HTML, out, NULL) == 0);
        cleanup_free char *html = read_file_at(AT_FDCWD, out, 1 << 20);
        CHECK(html && strchr(html, '\033') == NULL && strchr(html, '\007') == NULL);
        CHECK(html && strstr(html, "^[[31mred^G") != NULL);
}

TEST(failures_leave_nothing)
{
        cleanup_free char *bad = path_in("bad.jsonl");
        cleanup_free char *out = path_in("bad.ipynb");
        spit(bad, "{\"type\":\"notice\"}\nnot json\n");
        corral_error *err = NULL;
        CHECK(trace_export(bad, EXPORT_IPYNB, out, &err) < 0);
        CHECK(err && strstr(err->msg, "line 2") != NULL);
        CHECK(access(out, F_OK) < 0);
        corral_error_free(err);

        cleanup_free char *good = path_in("good.jsonl");
        cleanup_free char *nodir = path_in("good.jsonl/x.html");
        spit(good, "{\"type\":\"notice\",\"message\":\"m\"}\n");
        err = NULL;
        CHECK(trace_export(good, EXPORT_HTML, nodir, &err) < 0);
        CHECK(err && strstr(err->msg, "is a regular file, not a directory") != NULL);
        corral_error_free(err);

        /* Renaming over a directory fails: the temporary file is removed. */
        cleanup_free char *dir = path_in("adir");
        mkdir(dir, 0700);
        err = NULL;
        CHECK(trace_export(good, EXPORT_HTML, dir, &err) < 0);
        CHECK(err && strstr(err->msg, dir) != NULL);
        corral_error_free(err);
        CHECK_INT(hidden_files(), 0);

        cleanup_free char *missing = path_in("missing.jsonl");
        err = NULL;
        CHECK(trace_export(missing, EXPORT_IPYNB, out, &err) < 0);
        CHECK(err && strstr(err->msg, "missing.jsonl") != NULL);
        corral_error_free(err);
}

TEST(empty_trace)
{
        cleanup_free char *trace = path_in("empty.jsonl");
        cleanup_free char *out = path_in("empty.ipynb");
        spit(trace, "");
        CHECK(trace_export(trace, EXPORT_IPYNB, out, NULL) == 0);
        json_t *nb = json_load_file(out, 0, NULL);
        CHECK(nb && json_array_size(json_object_get(nb, "cells")) == 0);
        CHECK(nb && json_is_object(json_object_get(json_object_get(nb, "metadata"), "corral")));
        json_decref(nb);
}

TEST(default_path)
{
        char *p = export_default_path("/r/trace.jsonl", EXPORT_IPYNB);
        CHECK_STR(p, "/r/trace.ipynb");
        free(p);
        p = export_default_path("run.log", EXPORT_HTML);
        CHECK_STR(p, "run.log.html");
        free(p);
        p = export_default_path(".jsonl", EXPORT_HTML); /* no name before it */
        CHECK_STR(p, ".jsonl.html");
        free(p);
}

int main(void)
{
        snprintf(tmpdir, sizeof(tmpdir), "%s/corral-test-export-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(tmpdir) == NULL)
                return 1;
        RUN(ipynb_structure);
        RUN(ipynb_hostile_strings);
        RUN(html_escaped_and_self_contained);
        RUN(html_control_characters);
        RUN(failures_leave_nothing);
        RUN(empty_trace);
        RUN(default_path);
        char *cmd = NULL;
        if (asprintf(&cmd, "rm -rf '%s'", tmpdir) >= 0 && system(cmd) != 0)
                printf("# could not remove %s\n", tmpdir);
        free(cmd);
        return DONE();
}
