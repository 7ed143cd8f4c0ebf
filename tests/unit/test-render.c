/* test-render.c: the terminal renderer (layout, sanitising, quiet mode,
 * output cutting, streamed text, the spinner) and the highlighter. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/trace/render.h"
#include "harness.h"

static const char sample[] =
        "{\"v\":1,\"type\":\"run_start\",\"t_ms\":0.0,\"ts\":\"2025-01-31T12:00:00.000Z\",\"task\":\"Find the top 5 "
        "products\",\"model\":\"gpt-4o-mini\",\"base_url\":\"https://api.example.com/v1\",\"provider\":\"openai\","
        "\"protocol\":\"tools\",\"inputs\":[{\"source\":\"data/sales.csv\",\"dest\":\"input/sales.csv\",\"type\":"
        "\"file\",\"bytes\":1234567}],\"limits\":{\"timeout_s\":30,\"memory_bytes\":536870912},\"workspace\":\"/tmp/ws\"}\n"
        "{\"v\":1,\"type\":\"model_request\",\"t_ms\":1,\"ts\":\"x\",\"iteration\":1}\n"
        "{\"v\":1,\"type\":\"model_retry\",\"t_ms\":1,\"ts\":\"x\",\"iteration\":1,\"attempt\":1,\"delay_s\":2.0,"
        "\"reason\":\"HTTP 429\"}\n"
        "{\"v\":1,\"type\":\"model_reply\",\"t_ms\":2,\"ts\":\"x\",\"iteration\":1,\"content\":\"I'll load the CSV.\"}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":3,\"ts\":\"x\",\"iteration\":1,\"id\":\"c1\",\"name\":\"run_python\","
        "\"arguments\":{},\"code\":\"import pandas as pd\\nprint(1)\\n\"}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":4,\"ts\":\"x\",\"iteration\":1,\"id\":\"c1\",\"name\":\"run_python\","
        "\"ok\":true,\"content\":\"1\",\"ms\":600,\"exec\":{\"status\":\"ok\",\"exit_code\":0,\"stdout\":\"1\\n\","
        "\"stderr\":\"warn\\n\",\"wall_ms\":412.3},\"artifacts\":[{\"path\":\"output/top5.csv\",\"change\":\"created\","
        "\"type\":\"file\",\"size\":312,\"format\":\"csv\",\"rows\":5,\"columns\":2},"
        "{\"path\":\"output/log\",\"change\":\"modified\",\"type\":\"file\",\"size\":2048},"
        "{\"path\":\"output/old\",\"change\":\"deleted\",\"type\":\"file\",\"size\":1}]}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":5,\"ts\":\"x\",\"iteration\":2,\"id\":\"c2\",\"name\":\"run_shell\","
        "\"arguments\":{\"command\":\"ls -la\"},\"command\":\"ls -la\"}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":6,\"ts\":\"x\",\"iteration\":2,\"id\":\"c2\",\"name\":\"run_shell\","
        "\"ok\":false,\"content\":\"\",\"exec\":{\"status\":\"timeout\",\"exit_code\":124,\"stdout\":\"\",\"stderr\":"
        "\"\",\"wall_ms\":30000,\"reason\":\"wall-clock limit of 30 s reached\"}}\n"
        "{\"v\":1,\"type\":\"tool_call\",\"t_ms\":7,\"ts\":\"x\",\"iteration\":2,\"id\":\"c3\",\"name\":\"read_file\","
        "\"arguments\":{\"path\":\"input/missing.csv\"}}\n"
        "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":8,\"ts\":\"x\",\"iteration\":2,\"id\":\"c3\",\"name\":\"read_file\","
        "\"ok\":false,\"content\":\"error: cannot open 'input/missing.csv'\"}\n"
        "{\"v\":1,\"type\":\"notice\",\"t_ms\":9,\"ts\":\"x\",\"message\":\"the conversation was trimmed\"}\n"
        "{\"v\":1,\"type\":\"run_end\",\"t_ms\":10,\"ts\":\"x\",\"status\":\"answered\",\"answer\":\"A, B and C.\","
        "\"iterations\":3,\"usage\":{\"prompt_tokens\":3210,\"completion_tokens\":512,\"requests\":4,\"retries\":1,"
        "\"wait_ms\":8400,\"estimated\":true},\"artifacts\":[{\"path\":\"output/top5.csv\",\"bytes\":312}],"
        "\"output_dir\":\"./out\",\"wall_ms\":12345}\n";

struct capture {
        char *buf;
        size_t size;
        FILE *f;
        render *r;
};

static void cap_open(struct capture *c, bool color, bool quiet, unsigned max_lines, bool spinner)
{
        memset(c, 0, sizeof(*c));
        c->f = open_memstream(&c->buf, &c->size);
        struct render_options o = { .out = c->f, .color = color, .quiet = quiet, .max_output_lines = max_lines,
                                    .spinner = spinner };
        c->r = render_new(&o);
}

static void cap_feed(struct capture *c, const char *jsonl)
{
        const char *p = jsonl;
        while (*p) {
                size_t n = strcspn(p, "\n");
                json_t *ev = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
                if (ev == NULL)
                        printf("# bad test event: %.*s\n", (int)n, p);
                render_event(c->r, ev);
                json_decref(ev);
                p += n + (p[n] == '\n');
        }
}

static char *cap_close(struct capture *c)
{
        render_free(c->r);
        fclose(c->f);
        return c->buf;
}

static char *render_text(const char *jsonl, bool color, bool quiet, unsigned max_lines)
{
        struct capture c;
        cap_open(&c, color, quiet, max_lines, false);
        cap_feed(&c, jsonl);
        return cap_close(&c);
}

/* Remove SGR sequences (ESC [ digits/; m), the only ones we emit. */
static char *strip_sgr(const char *s)
{
        char *out = malloc(strlen(s) + 1);
        size_t o = 0;
        for (size_t i = 0; s[i];) {
                if (s[i] == '\033' && s[i + 1] == '[') {
                        size_t j = i + 2;
                        while (s[j] && (s[j] == ';' || (s[j] >= '0' && s[j] <= '9')))
                                j++;
                        if (s[j] == 'm') {
                                i = j + 1;
                                continue;
                        }
                }
                out[o++] = s[i++];
        }
        out[o] = '\0';
        return out;
}

static size_t count(const char *hay, const char *needle)
{
        size_t n = 0;
        for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
                n++;
        return n;
}

TEST(layout_without_colour)
{
        cleanup_free char *out = render_text(sample, false, false, 40);
        CHECK(out != NULL);
        if (out == NULL)
                return;
        CHECK(strchr(out, '\033') == NULL);
        CHECK(strstr(out, "── corral run ──") != NULL);
        CHECK(strstr(out, "  task       Find the top 5 products\n") != NULL);
        CHECK(strstr(out, "  model      gpt-4o-mini · openai · protocol tools\n") != NULL);
        CHECK(strstr(out, "  endpoint   https://api.example.com/v1\n") != NULL);
        CHECK(strstr(out, "  inputs     input/sales.csv ← data/sales.csv (1.2 MiB)\n") != NULL);
        CHECK(strstr(out, "  limits     timeout 30 s · memory 512 MiB\n") != NULL);
        CHECK(strstr(out, "! model request failed: HTTP 429; retry 1 in 2.0 s\n") != NULL);
        CHECK(strstr(out, "\nI'll load the CSV.\n") != NULL);
        CHECK(strstr(out, "── step 1 · run_python ──") != NULL);
        CHECK(strstr(out, "   1 │ import pandas as pd\n   2 │ print(1)\n") != NULL);
        CHECK(strstr(out, "  ✓ ok · exit 0 · 412 ms\n") != NULL);
        CHECK(strstr(out, "  out │ 1\n  err │ warn\n") != NULL);
        CHECK(strstr(out, "  + output/top5.csv (312 B, CSV 5 rows × 2 columns)\n  ~ output/log (2 KiB)\n  - output/old\n") !=
              NULL);
        CHECK(strstr(out, "── step 2 · run_shell ──") != NULL);
        CHECK(strstr(out, "  $ ls -la\n") != NULL);
        CHECK(strstr(out, "  ✗ timeout · exit 124 · 30 s · wall-clock limit of 30 s reached\n") != NULL);
        CHECK(strstr(out, "── step 3 · read_file input/missing.csv\n  ✗ error: cannot open 'input/missing.csv'\n") !=
              NULL);
        CHECK(strstr(out, "! the conversation was trimmed\n") != NULL);
        CHECK(strstr(out, "══ answered ══") != NULL);
        CHECK(strstr(out, "  answer     A, B and C.\n") != NULL);
        CHECK(strstr(out, "  iterations 3\n") != NULL);
        CHECK(strstr(out, "  tokens     ~3,210 prompt · ~512 completion (estimated)\n") != NULL);
        CHECK(strstr(out, "  model      8.4 s waiting · 4 requests · 1 retry\n") != NULL);
        CHECK(strstr(out, "  wall       12.3 s\n") != NULL);
        CHECK(strstr(out, "  artifacts  + output/top5.csv (312 B)\n") != NULL);
        CHECK(strstr(out, "  output     ./out\n") != NULL);
        printf("# ---- sample ----\n");
        for (char *line = out, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                printf("# %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        }
}

TEST(colour_is_only_sgr)
{
        cleanup_free char *out = render_text(sample, true, false, 40);
        CHECK(out && strstr(out, "\033[") != NULL);
        cleanup_free char *plain = strip_sgr(out ? out : "");
        cleanup_free char *nocolor = render_text(sample, false, false, 40);
        CHECK_STR(plain, nocolor); /* colour adds nothing but SGR sequences */
}

static const char hostile[] =
        "{\"type\":\"model_reply\",\"iteration\":1,\"content\":\"model \\u001b]0;title\\u0007 text\"}\n"
        "{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"run\\u001b[2Jpython\",\"arguments\":{\"path\":\"a\\u001bb\"}}\n"
        "{\"type\":\"tool_call\",\"id\":\"c2\",\"name\":\"run_python\",\"code\":\"print('\\u001b[31m')\\u009b\"}\n"
        "{\"type\":\"tool_result\",\"id\":\"c2\",\"name\":\"run_python\",\"ok\":true,\"exec\":{\"status\":\"ok\","
        "\"exit_code\":0,\"stdout\":\"\\u001b[31mred\\u001b[0m \\u0007bell \\u009b31m c1 progress\\r50%\\r\\n"
        "\\u202eevil\\u0000nul\\n\",\"stderr\":\"\\u001b[2J\\u001b[H wiped\"}}\n"
        "{\"type\":\"notice\",\"message\":\"\\u001b[1A up\"}\n"
        "{\"type\":\"run_end\",\"status\":\"answered\",\"answer\":\"\\u001b[?1049h alt\",\"output_dir\":\"\\u001b\"}\n";

TEST(control_characters_neutralised)
{
        for (int color = 0; color <= 1; color++) {
                cleanup_free char *out = render_text(hostile, color, false, 40);
                cleanup_free char *plain = strip_sgr(out ? out : "");
                CHECK(strchr(plain, '\033') == NULL); /* no escape but our own SGR */
                CHECK(strchr(plain, '\007') == NULL);
                CHECK(strchr(plain, '\r') == NULL);
                CHECK(strstr(plain, "\xc2\x9b") == NULL);
                CHECK(strstr(plain, "\xe2\x80\xae") == NULL);
                CHECK(strstr(plain, "^[[31mred^[[0m ^Gbell \xef\xbf\xbd" "31m c1 progress^M50%\n") != NULL);
                CHECK(strstr(plain, "\xef\xbf\xbd" "evil\xef\xbf\xbdnul") != NULL);
                CHECK(strstr(plain, "model ^[]0;title^G text") != NULL);
                CHECK(strstr(plain, "run^[[2Jpython") != NULL);
                CHECK(strstr(plain, "^[[2J^[[H wiped") != NULL);
                CHECK(strstr(plain, "^[[?1049h alt") != NULL);
        }
}

/* --net allow's connections: a line each, the refused one with its reason;
 * the host is the jail's bytes, escaped. */
TEST(net_events)
{
        static const char events[] =
                "{\"type\":\"net\",\"host\":\"pypi.org\",\"port\":443,\"method\":\"CONNECT\",\"allowed\":true,"
                "\"reason\":null,\"bytes_up\":1820,\"bytes_down\":48211,\"ms\":412.7,\"iteration\":1}\n"
                "{\"type\":\"net\",\"host\":\"evil\\u001b[2J.test\",\"port\":80,\"method\":\"GET\",\"allowed\":false,"
                "\"reason\":\"the host is not in the jail's allow-list\",\"bytes_up\":0,\"bytes_down\":0,\"ms\":0.4}\n";
        cleanup_free char *out = render_text(events, false, false, 40);
        CHECK(out && strstr(out, "  net CONNECT pypi.org:443  1820 B up, 48211 B down, 413 ms\n") != NULL);
        CHECK(out && strstr(out, "  net refused GET evil^[[2J.test:80  0 B up, 0 B down, 0 ms: the host is not in the "
                                 "jail's allow-list\n") != NULL);
        cleanup_free char *quiet = render_text(events, false, true, 40);
        CHECK(quiet && strstr(quiet, "net") == NULL);
}

TEST(sanitize_rules)
{
        const char in[] = "a\033[2Jb\r\nc\rd\177\xc2\x9b\xe2\x80\xae" "e\xff\tf\n";
        size_t n = 0;
        cleanup_free char *s = term_sanitize(in, sizeof(in) - 1, &n);
        CHECK_STR(s, "a^[[2Jb\nc^Md^?\xef\xbf\xbd\xef\xbf\xbd" "e\xef\xbf\xbd\tf\n");
        CHECK_INT(n, strlen(s ? s : ""));
        cleanup_free char *nul = term_sanitize("x\0y", 3, &n);
        CHECK_STR(nul, "x\xef\xbf\xbdy");
        cleanup_free char *utf = term_sanitize("héllo ✓ 你好", strlen("héllo ✓ 你好"), NULL);
        CHECK_STR(utf, "héllo ✓ 你好");
}

/* A program's output to a terminal, fed in chunks split everywhere: colours,
 * CR and BS kept; OSC, DCS, CSI other than SGR, C1 and bidi made inert; a
 * UTF-8 character or an SGR sequence split across chunks comes out whole. */
static char *filtered(const char *in, size_t len, size_t chunk)
{
        FILE *tmp = tmpfile();
        int fd = fileno(tmp);
        struct term_filter f = { 0 };
        for (size_t i = 0; i < len; i += chunk)
                term_filter_write(&f, fd, in + i, len - i < chunk ? len - i : chunk);
        term_filter_flush(&f, fd);
        char *out = calloc(1, 4096);
        pread(fd, out, 4095, 0);
        fclose(tmp);
        return out;
}

TEST(filter_rules)
{
        const char in[] = "\033[1;31mred\033[0m 10%\r20%\b\n"     /* kept */
                          "\033]52;c;aGk=\007"                      /* clipboard write */
                          "\033]0;title\033\\"                     /* window title */
                          "\033[2J\033[6n\033P$q m\033\\"           /* clear, DSR, DECRQSS */
                          "\xc2\x9b" "6n \xe2\x80\xae" "txt "         /* C1 CSI, RLO */
                          "h\xc3\xa9 \xe4\xbd\xa0\n";                /* UTF-8 */
        const char *want = "\033[1;31mred\033[0m 10%\r20%\b\n"
                           "^[]52;c;aGk=^G"
                           "^[]0;title^[\\"
                           "^[[2J^[[6n^[P$q m^[\\"
                           "\xef\xbf\xbd" "6n \xef\xbf\xbd" "txt "
                           "h\xc3\xa9 \xe4\xbd\xa0\n";
        for (size_t chunk = 1; chunk <= sizeof(in); chunk++) {
                cleanup_free char *out = filtered(in, sizeof(in) - 1, chunk);
                CHECK_STR(out, want);
        }
        /* an unfinished sequence at the end is flushed, inert */
        cleanup_free char *tail = filtered("a\033[31", 5, 3);
        CHECK_STR(tail, "a^[[31");
        cleanup_free char *cut = filtered("b\xe4\xbd", 3, 1);
        CHECK_STR(cut, "b\xef\xbf\xbd\xef\xbf\xbd");
        /* an over-long SGR is not a colour */
        char long_sgr[64] = "\033[";
        memset(long_sgr + 2, '1', 40);
        long_sgr[42] = 'm';
        cleanup_free char *lg = filtered(long_sgr, strlen(long_sgr), 5);
        CHECK(lg && lg[0] == '^' && strchr(lg, '\033') == NULL);
}

TEST(quiet_mode)
{
        cleanup_free char *out = render_text(sample, false, true, 40);
        CHECK(out && strstr(out, "! the conversation was trimmed") != NULL);
        CHECK(out && strstr(out, "! model request failed") != NULL);
        CHECK(out && strstr(out, "══ answered") != NULL);
        CHECK(out && strstr(out, "  tokens ") != NULL);
        CHECK(out && strstr(out, "step 1") == NULL);
        CHECK(out && strstr(out, "I'll load") == NULL);
        CHECK(out && strstr(out, "corral run") == NULL);
        CHECK(out && strstr(out, "out │") == NULL);
}

TEST(answer_not_repeated)
{
        static const char ev[] = "{\"type\":\"model_reply\",\"content\":\"The answer is 42.\\n\"}\n"
                                 "{\"type\":\"run_end\",\"status\":\"answered\",\"answer\":\"The answer is 42.\"}\n";
        cleanup_free char *out = render_text(ev, false, false, 40);
        CHECK_INT(count(out, "The answer is 42."), 1);
        CHECK(out && strstr(out, "  answer ") == NULL);
        cleanup_free char *quiet = render_text(ev, false, true, 40);
        CHECK(quiet && strstr(quiet, "  answer     The answer is 42.\n") != NULL);
}

TEST(long_output_head_and_tail)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        fputs("{\"type\":\"tool_result\",\"id\":\"x\",\"name\":\"run_python\",\"ok\":true,\"exec\":{\"status\":\"ok\","
              "\"exit_code\":0,\"stdout\":\"",
              f);
        for (int i = 1; i <= 100; i++)
                fprintf(f, "line %d\\n", i);
        fputs("\",\"stdout_truncated\":true,\"stderr\":\"", f);
        for (int i = 0; i < 2000; i++)
                fputc('x', f);
        fputs("\"}}\n", f);
        fclose(f);
        cleanup_free char *out = render_text(buf, false, false, 10);
        free(buf);
        CHECK(out && strstr(out, "  out │ line 1\n") != NULL);
        CHECK(out && strstr(out, "  out │ line 5\n  out │ … 90 lines cut …\n  out │ line 96\n") != NULL);
        CHECK(out && strstr(out, "  out │ line 100\n") != NULL);
        CHECK(out && strstr(out, "line 6\n") == NULL);
        CHECK(out && strstr(out, "line 95\n") == NULL);
        CHECK(out && strstr(out, "  out │ … the output went past the limit; the rest was dropped\n") != NULL);
        CHECK(out && strstr(out, "x … (1500 more bytes)\n") != NULL);
        /* Exactly max lines: nothing cut. */
        cleanup_free char *out2 = render_text("{\"type\":\"tool_result\",\"name\":\"run_python\",\"exec\":{\"status\":"
                                              "\"ok\",\"stdout\":\"1\\n2\\n3\\n4\\n\"}}\n",
                                              false, false, 4);
        CHECK(out2 && strstr(out2, "cut") == NULL && strstr(out2, "  out │ 4\n") != NULL);
}

TEST(streamed_text_not_printed_twice)
{
        struct capture c;
        cap_open(&c, false, false, 40, false);
        cap_feed(&c, "{\"type\":\"model_request\",\"iteration\":1}\n");
        render_content_delta(c.r, "Hel", 3);
        render_content_delta(c.r, "lo wor", 6);
        render_content_delta(c.r, "ld, caf\xc3", 8); /* é split across deltas */
        render_content_delta(c.r, "\xa9!", 2);
        cap_feed(&c, "{\"type\":\"model_reply\",\"iteration\":1,\"content\":\"Hello world, café!\"}\n"
                     "{\"type\":\"model_request\",\"iteration\":2}\n"
                     "{\"type\":\"model_reply\",\"iteration\":2,\"content\":\"Second reply\"}\n");
        cleanup_free char *out = cap_close(&c);
        CHECK_INT(count(out, "Hello world, café!"), 1);
        CHECK(out && strstr(out, "\xef\xbf\xbd") == NULL);
        CHECK(out && strstr(out, "Hello world, café!\n\nSecond reply\n") != NULL);
}

TEST(spinner_runs_and_is_erased)
{
        struct capture c;
        cap_open(&c, false, false, 40, true);
        cap_feed(&c, "{\"type\":\"model_request\",\"iteration\":1}\n");
        usleep(350 * 1000);
        cap_feed(&c, "{\"type\":\"model_reply\",\"iteration\":1,\"content\":\"done\"}\n");
        /* A spinner still running at render_free is stopped and joined. */
        cap_feed(&c, "{\"type\":\"model_request\",\"iteration\":2}\n");
        usleep(120 * 1000);
        cleanup_free char *out = cap_close(&c);
        CHECK(out && strstr(out, "waiting for the model… 0.") != NULL);
        CHECK(out && count(out, "waiting for the model") >= 2);
        CHECK(out && strstr(out, "\r\033[Kdone\n") != NULL);
        CHECK(out && out[strlen(out) - 1] != ' ');

        /* Waits that end at once, many times over: every thread stops and is joined. */
        cap_open(&c, false, false, 40, true);
        for (int i = 0; i < 300; i++)
                cap_feed(&c, "{\"type\":\"model_request\"}\n{\"type\":\"model_reply\"}\n");
        free(cap_close(&c));
        CHECK(1);

        /* Quiet or non-live: no spinner. */
        cap_open(&c, false, true, 40, true);
        cap_feed(&c, "{\"type\":\"model_request\",\"iteration\":1}\n");
        usleep(150 * 1000);
        cleanup_free char *q = cap_close(&c);
        CHECK(q && strstr(q, "waiting") == NULL);
}

TEST(options_default_not_a_tty)
{
        FILE *f = tmpfile();
        struct render_options o;
        render_options_default(&o, f, true);
        CHECK(o.out == f);
        CHECK(!o.color);
        CHECK(!o.spinner);
        CHECK(!o.quiet);
        CHECK_INT(o.max_output_lines, 40);
        fclose(f);
}

static const char *const py_cases[] = {
        "import os\nprint(len(range(3)))\n",
        "s = 'unterminated\nprint(1)\n",
        "x = '''never closed\nstill string",
        "\"\"\"doc\n  with \\\"\"\" inside\"\"\" + 1",
        "'\\'",
        "'\\",
        "f'{x!r:>10}' rb\"\\x00\" u'é' F\"\"\"{a}\n\"\"\"",
        "@deco.attr(1)\nclass C(object): pass\n  @inner\ndef f(): ...",
        "1e-5 + 0x1F + 1_000.5j - .5 + 3.",
        "# comment é ✓\n# another",
        "",
        "\\",
        "'",
        "\"\"\"",
        "你好 = 1  # 注释\nprint(你好)",
        "a@b; x.print; def; class",
        "if x:\n\treturn None\nelse:\n    yield from y",
        "\t\n\n  \n",
};

static const char *const sh_cases[] = {
        "echo \"$HOME ${x:-y}\" '$no' # c\nfor i in 1 2; do echo $i; done\n",
        "echo \"unterminated",
        "echo 'unterminated",
        "echo ${unterminated\nnext",
        "x=$",
        "cat <<EOF\n$a\nEOF",
        "\\\"not a string\\",
        "a#b # c $1 $@ $? $$",
        "file-in.done/if x=fi",
        "ls -la | grep \"é\" && exit 1",
        "",
};

/* Every line of highlighted text closes what it opens. */
static bool lines_balanced(const char *hl)
{
        bool open = false;
        for (const char *p = hl; *p; p++) {
                if (*p == '\n' && open)
                        return false;
                if (p[0] == '\033' && p[1] == '[') {
                        open = !(p[2] == '0' && p[3] == 'm');
                }
        }
        return !open;
}

TEST(highlight_round_trip)
{
        for (size_t i = 0; i < ARRAY_SIZE(py_cases); i++) {
                cleanup_free char *hl = render_highlight(py_cases[i], "python");
                cleanup_free char *back = strip_sgr(hl ? hl : "");
                CHECK_STR(back, py_cases[i]);
                CHECK(hl && lines_balanced(hl));
        }
        for (size_t i = 0; i < ARRAY_SIZE(sh_cases); i++) {
                cleanup_free char *hl = render_highlight(sh_cases[i], "bash");
                cleanup_free char *back = strip_sgr(hl ? hl : "");
                CHECK_STR(back, sh_cases[i]);
                CHECK(hl && lines_balanced(hl));
        }
        /* Every byte value, both languages. */
        char all[256];
        for (int b = 1; b < 256; b++)
                all[b - 1] = (char)b;
        all[255] = '\0';
        const char *langs[] = { "python", "bash", "text" };
        for (size_t l = 0; l < 3; l++) {
                cleanup_free char *hl = render_highlight(all, langs[l]);
                cleanup_free char *back = strip_sgr(hl ? hl : "");
                CHECK_STR(back, all);
        }
        CHECK(render_highlight(NULL, "python") == NULL);
}

TEST(highlight_colours_tokens)
{
        cleanup_free char *py = render_highlight("def f(x):\n    return print('s')  # c\n", "python");
        CHECK(py && strstr(py, "\033[35mdef\033[0m \033[34mf\033[0m") != NULL);
        CHECK(py && strstr(py, "\033[35mreturn\033[0m") != NULL);
        CHECK(py && strstr(py, "\033[36mprint\033[0m") != NULL);
        CHECK(py && strstr(py, "\033[32m's'\033[0m") != NULL);
        CHECK(py && strstr(py, "\033[90m# c\033[0m") != NULL);
        cleanup_free char *tri = render_highlight("x = \"\"\"a\nb\"\"\"\n", "python");
        CHECK_STR(tri, "x = \033[32m\"\"\"a\033[0m\n\033[32mb\"\"\"\033[0m\n"); /* closed and reopened per line */
        cleanup_free char *attr = render_highlight("df.sum()", "python");
        CHECK(attr && strstr(attr, "\033[36msum") == NULL); /* an attribute is not a builtin */
        cleanup_free char *sh = render_highlight("for f in $FILES; do echo \"$f\"; done # x", "bash");
        CHECK(sh && strstr(sh, "\033[35mfor\033[0m") != NULL);
        CHECK(sh && strstr(sh, "\033[36m$FILES\033[0m") != NULL);
        CHECK(sh && strstr(sh, "\033[36mecho\033[0m") != NULL);
        CHECK(sh && strstr(sh, "\033[32m\"$f\"\033[0m") != NULL);
        CHECK(sh && strstr(sh, "\033[90m# x\033[0m") != NULL);
        cleanup_free char *word = render_highlight("file-in x=fi", "bash");
        CHECK(word && strchr(word, '\033') == NULL);
}

int main(void)
{
        unsetenv("NO_COLOR");
        RUN(layout_without_colour);
        RUN(colour_is_only_sgr);
        RUN(control_characters_neutralised);
        RUN(filter_rules);
        RUN(net_events);
        RUN(sanitize_rules);
        RUN(quiet_mode);
        RUN(answer_not_repeated);
        RUN(long_output_head_and_tail);
        RUN(streamed_text_not_printed_twice);
        RUN(spinner_runs_and_is_erased);
        RUN(options_default_not_a_tty);
        RUN(highlight_round_trip);
        RUN(highlight_colours_tokens);
        return DONE();
}
