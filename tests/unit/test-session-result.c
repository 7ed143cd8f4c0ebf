/* test-session-result.c: a step's result from the driver's "result" frame
 * (session_result_from_frame(), src/session/session.c) and as the JSON
 * object of docs/sessions.md (session_result_to_json()).
 *
 * The frame is the jail's to write: the rich parts of a value (html,
 * markdown, json), an error's E2B names and a figure's PNG bytes are kept
 * when well-typed and within their caps, and dropped (never cut) when not.
 * No jail is started here. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/session/session.h"
#include "harness.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#define PNG_B64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

/* The result of one frame given as JSON text; r is released by the caller. */
static void parse(struct session_result *r, const char *text)
{
        memset(r, 0, sizeof(*r));
        json_error_t jerr;
        json_t *f = json_loads(text, 0, &jerr);
        if (f == NULL)
                printf("#   bad test frame: %s\n", jerr.text);
        CHECK(f != NULL);
        session_result_from_frame(r, f);
        json_decref(f);
}

/* A string of n copies of c, as a JSON string literal's body. */
static char *repeat(char c, size_t n)
{
        char *s = malloc(n + 1);
        if (s) {
                memset(s, c, n);
                s[n] = '\0';
        }
        return s;
}

TEST(value_html_markdown_json_kept)
{
        struct session_result r;
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value\":\"   a\\n0  1\",\"value_type\":\"dataframe\","
                  "\"value_html\":\"<table><tr><td>1</td></tr></table>\",\"value_markdown\":\"| a |\","
                  "\"value_json\":{\"a\":[1,2.5,null]}}");
        CHECK_STR(json_string_value(json_object_get(r.value, "text")), "   a\n0  1");
        CHECK_STR(json_string_value(json_object_get(r.value, "type")), "dataframe");
        CHECK_STR(json_string_value(json_object_get(r.value, "html")), "<table><tr><td>1</td></tr></table>");
        CHECK_STR(json_string_value(json_object_get(r.value, "markdown")), "| a |");
        CHECK(json_is_object(json_object_get(r.value, "json")));
        CHECK_INT(json_object_size(r.value), 5);
        json_t *j = session_result_to_json(&r);
        CHECK(j != NULL);
        CHECK_STR(json_string_value(json_object_get(json_object_get(j, "value"), "html")),
                  "<table><tr><td>1</td></tr></table>");
        json_decref(j);
        session_result_release(&r);

        /* A plain value: text and type only, no null rich keys. */
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value\":\"42\",\"value_type\":\"int\"}");
        CHECK_INT(json_object_size(r.value), 2);
        session_result_release(&r);

        /* Without a text there is no value, whatever else the frame says. */
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value_html\":\"<b>x</b>\"}");
        CHECK(r.value == NULL);
        session_result_release(&r);
}

TEST(value_rich_dropped_when_mistyped)
{
        struct session_result r;
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value\":\"x\",\"value_type\":\"T\","
                  "\"value_html\":7,\"value_markdown\":[\"| a |\"],\"value_json\":\"{}\"}");
        CHECK(r.value != NULL);
        CHECK(json_object_get(r.value, "html") == NULL);
        CHECK(json_object_get(r.value, "markdown") == NULL);
        CHECK(json_object_get(r.value, "json") == NULL);
        session_result_release(&r);
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value\":\"x\",\"value_json\":3}");
        CHECK(json_object_get(r.value, "json") == NULL);
        session_result_release(&r);
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"value\":\"x\",\"value_json\":[]}");
        CHECK(json_is_array(json_object_get(r.value, "json")));
        session_result_release(&r);
}

TEST(value_rich_over_the_cap_dropped_whole)
{
        struct session_result r;
        cleanup_free char *big = repeat('a', (1u << 20) + 1);
        cleanup_free char *fits = repeat('b', 1u << 20);
        CHECK(big && fits);
        if (!big || !fits)
                return;
        json_t *f = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:{s:s}}", "t", "result", "id", 1, "status", "ok", "value",
                              "x", "value_html", big, "value_markdown", fits, "value_json", "k", big);
        CHECK(f != NULL);
        memset(&r, 0, sizeof(r));
        session_result_from_frame(&r, f);
        json_decref(f);
        CHECK(json_object_get(r.value, "html") == NULL); /* not cut: broken markup renders junk */
        CHECK_INT(json_string_length(json_object_get(r.value, "markdown")), 1u << 20);
        CHECK(json_object_get(r.value, "json") == NULL);
        session_result_release(&r);
}

TEST(error_has_e2b_names)
{
        struct session_result r;
        parse(&r, "{\"t\":\"result\",\"id\":3,\"status\":\"error\",\"error\":{\"type\":\"ZeroDivisionError\","
                  "\"message\":\"division by zero\",\"traceback\":\"Traceback ...\",\"name\":\"Lie\",\"x\":1}}");
        CHECK_INT(r.status, SESSION_STEP_ERROR);
        CHECK_INT(r.exit_code, 1);
        CHECK_INT(json_object_size(r.error), 5);
        CHECK_STR(json_string_value(json_object_get(r.error, "type")), "ZeroDivisionError");
        CHECK_STR(json_string_value(json_object_get(r.error, "name")), "ZeroDivisionError");
        CHECK_STR(json_string_value(json_object_get(r.error, "message")), "division by zero");
        CHECK_STR(json_string_value(json_object_get(r.error, "value")), "division by zero");
        CHECK_STR(json_string_value(json_object_get(r.error, "traceback")), "Traceback ...");
        CHECK_STR(r.reason, "the step raised ZeroDivisionError");
        session_result_release(&r);

        /* Mistyped keys become empty strings, under both names. */
        parse(&r, "{\"t\":\"result\",\"id\":3,\"status\":\"error\",\"error\":{\"type\":1,\"message\":null}}");
        CHECK_INT(json_object_size(r.error), 5);
        CHECK_STR(json_string_value(json_object_get(r.error, "name")), "");
        CHECK_STR(json_string_value(json_object_get(r.error, "value")), "");
        CHECK_STR(json_string_value(json_object_get(r.error, "traceback")), "");
        session_result_release(&r);
}

static json_t *figure_of(const char *png_json)
{
        cleanup_free char *text = NULL;
        if (asprintf(&text, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"figures\":[{\"path\":\"/workspace/f.png\","
                            "\"width\":1,\"height\":1,\"bytes\":70,\"png\":%s}]}", png_json) < 0)
                return NULL;
        struct session_result r;
        parse(&r, text);
        json_t *fig = json_incref(json_array_get(r.figures, 0));
        session_result_release(&r);
        return fig;
}

TEST(figure_png_checked)
{
        json_t *fig = figure_of("\"" PNG_B64 "\"");
        CHECK_STR(json_string_value(json_object_get(fig, "png")), PNG_B64);
        CHECK(json_object_get(fig, "png_error") == NULL);
        json_decref(fig);

        const char *bad[] = {
                "\"R0lGODlhAQABAAAAACw=\"",                        /* base64, but of a GIF */
                "\"iVBORw0KGgoAAAANSUhEUg*AAAAE\"",                /* not the alphabet */
                "\"iVBORw0KGgoAAAANSUhEU\"",                       /* not a multiple of 4 */
                "\"iVBORw0KGgoAAAANSU=EUgAA\"",                    /* padding inside */
                "\"iVBO\"",                                        /* shorter than the signature */
                "true",
                "[\"" PNG_B64 "\"]",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fig = figure_of(bad[i]);
                CHECK(fig != NULL && json_object_get(fig, "png") == NULL);
                CHECK(json_is_string(json_object_get(fig, "png_error")));
                json_decref(fig);
        }

        /* Over 8 MiB of PNG: dropped whole. */
        size_t n = ((8u << 20) + 3) / 3 * 4 + 4;
        char *big = malloc(n + 3);
        CHECK(big != NULL);
        if (big == NULL)
                return;
        big[0] = '"';
        memcpy(big + 1, "iVBORw0KGgo", 11);
        memset(big + 12, 'A', n - 11);
        big[n + 1] = '"';
        big[n + 2] = '\0';
        fig = figure_of(big);
        free(big);
        CHECK(fig != NULL && json_object_get(fig, "png") == NULL && json_object_get(fig, "png_error") != NULL);
        json_decref(fig);

        /* The driver's own reason is kept when it sends none. */
        struct session_result r;
        parse(&r, "{\"t\":\"result\",\"id\":1,\"status\":\"ok\",\"figures\":[{\"path\":\"/workspace/f.svg\","
                  "\"png_error\":\"not a PNG file\",\"preview\":7}]}");
        fig = json_array_get(r.figures, 0);
        CHECK_STR(json_string_value(json_object_get(fig, "png_error")), "not a PNG file");
        CHECK(json_object_get(fig, "png") == NULL);
        session_result_release(&r);
}

TEST(timings_and_step)
{
        struct session_result r;
        parse(&r, "{\"t\":\"result\",\"id\":4,\"status\":\"ok\",\"wall_ms\":12.5,\"cpu_ms\":3,"
                  "\"peak_memory_bytes\":-5}");
        r.step = 4;
        r.wall_ms = 20;
        json_t *j = session_result_to_json(&r);
        CHECK(j != NULL);
        CHECK_INT(json_integer_value(json_object_get(j, "step")), 4);
        CHECK(json_real_value(json_object_get(j, "exec_ms")) == 12.5);
        CHECK(json_real_value(json_object_get(j, "cpu_ms")) == 3);
        CHECK(json_real_value(json_object_get(j, "wall_ms")) == 20);
        CHECK_INT(json_integer_value(json_object_get(j, "peak_memory_bytes")), 0);
        CHECK(json_is_null(json_object_get(j, "value")) && json_is_null(json_object_get(j, "error")));
        json_decref(j);
        session_result_release(&r);
}

/* The object back into a result (corral run's session in the session host)
 * and out again: nothing lost, nothing changed; a limit and a lost
 * interpreter survive; something that is no result is refused. */
TEST(json_round_trip)
{
        struct session_result r = { 0 };
        r.status = SESSION_STEP_LOST;
        r.state_lost = true;
        r.step = 3;
        r.exit_code = 137;
        r.reason = strdup("the interpreter was killed");
        r.limit = CORRAL_LIMIT_MEMORY;
        r.syscall_name = strdup("ptrace");
        r.jail_reason = strdup("memory limit of 256 MiB reached");
        r.stdout_buf = strdup("out\n");
        r.stdout_len = 4;
        r.stdout_total = 4;
        r.stderr_buf = strdup("e");
        r.stderr_len = 1;
        r.stderr_total = 9;
        r.stderr_truncated = true;
        r.wall_ms = 20;
        r.exec_ms = 12.5;
        r.cpu_ms = 3;
        r.peak_memory_bytes = 1 << 20;
        r.value = json_pack("{s:s,s:s}", "type", "int", "text", "42");
        r.error = json_pack("{s:s,s:s,s:s}", "type", "E", "message", "m", "traceback", "tb");
        r.figures = json_pack("[{s:s,s:i}]", "path", "/workspace/output/figures/step3-1.png", "width", 10);
        json_t *a = session_result_to_json(&r);
        struct session_result back;
        CHECK(session_result_from_json(a, &back) == 0);
        json_t *b = session_result_to_json(&back);
        CHECK(a && b && json_equal(a, b));
        CHECK(back.status == SESSION_STEP_LOST && back.limit == CORRAL_LIMIT_MEMORY && back.signal == 9);
        CHECK_STR(back.syscall_name, "ptrace");
        /* No limit at all: null, read back as none. */
        back.limit = CORRAL_LIMIT_NONE;
        json_t *c = session_result_to_json(&back);
        struct session_result again;
        CHECK(session_result_from_json(c, &again) == 0 && again.limit == CORRAL_LIMIT_NONE);
        session_result_release(&again);
        json_t *junk = json_pack("{s:i}", "status", 5);
        CHECK(session_result_from_json(junk, &again) < 0);
        json_decref(junk);
        json_decref(a);
        json_decref(b);
        json_decref(c);
        session_result_release(&back);
        session_result_release(&r);
}

int main(void)
{
        RUN(json_round_trip);
        RUN(value_html_markdown_json_kept);
        RUN(value_rich_dropped_when_mistyped);
        RUN(value_rich_over_the_cap_dropped_whole);
        RUN(error_has_e2b_names);
        RUN(figure_png_checked);
        RUN(timings_and_step);
        return DONE();
}
