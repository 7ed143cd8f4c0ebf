/* approve.c: `corral run --approve` on the terminal.
 *
 * A sync subscriber of the run's events: at an "approval_request" it shows
 * the code (made inert, then highlighted as the live view does) and the
 * review's findings on stderr, asks [a]pprove / [d]eny / [e]dit on standard
 * input (a terminal: run.c checks), and answers through the engine
 * (run_approval_answer(), who "terminal").  Deny reads a reason; edit opens
 * $VISUAL or $EDITOR on a copy of the code, or without one reads the new
 * code up to a line holding a single ".".  The prompt gives up at the
 * request's timeout (the engine then applies the default) or on a signal
 * (the run is being cancelled).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/termsafe.h"
#include "../agent/run.h"
#include "../trace/render.h"
#include "cli.h"

#define LINE_MAX_BYTES 4096

/* One line from fd (without its '\n') by deadline (monotonic ms): 1, 0 at
 * the deadline, end of input or a signal. */
static int read_line(int fd, double deadline_ms, char *buf, size_t size)
{
        size_t n = 0;
        for (;;) {
                double left = deadline_ms - monotonic_ms();
                if (left <= 0 || cli_cancel_signal())
                        return 0;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = poll(&p, 1, left > 1000 ? 1000 : (int)left + 1);
                if (r < 0 && errno != EINTR)
                        return 0;
                if (r <= 0)
                        continue;
                char c;
                ssize_t got = read(fd, &c, 1);
                if (got <= 0)
                        return got < 0 && errno == EINTR ? (cli_cancel_signal() ? 0 : read_line(fd, deadline_ms, buf, size)) : 0;
                if (c == '\n') {
                        buf[n] = '\0';
                        if (n > 0 && buf[n - 1] == '\r')
                                buf[n - 1] = '\0';
                        return 1;
                }
                if (n + 1 < size)
                        buf[n++] = c;
        }
}

static void show_code(FILE *out, const char *code, const char *lang, bool color)
{
        cleanup_free char *safe = term_sanitize(code, strlen(code), NULL);
        cleanup_free char *hl = safe && color ? render_highlight(safe, lang) : NULL;
        const char *text = hl ? hl : safe ? safe : "";
        unsigned line = 1;
        fprintf(out, "    %3u | ", line);
        for (const char *p = text; *p; p++) {
                fputc(*p, out);
                if (*p == '\n' && p[1])
                        fprintf(out, "    %3u | ", ++line);
        }
        if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
                fputc('\n', out);
        if (color)
                fputs("\033[0m", out);
}

static void show_findings(FILE *out, const json_t *review)
{
        const char *verdict = json_string_value(json_object_get(review, "verdict"));
        const json_t *f;
        size_t i;
        fprintf(out, "  review: %s\n", verdict ? verdict : "not reviewed");
        json_array_foreach(json_object_get(review, "findings"), i, f) {
                const char *msg = json_string_value(json_object_get(f, "message"));
                const char *rule = json_string_value(json_object_get(f, "rule"));
                cleanup_free char *safe = term_sanitize(msg ? msg : "", msg ? strlen(msg) : 0, NULL);
                fprintf(out, "    line %lld: %s%s%s%s\n", (long long)json_integer_value(json_object_get(f, "line")),
                        safe ? safe : "", rule ? " [" : "", rule ? rule : "", rule ? "]" : "");
        }
}

/* The edit through $VISUAL / $EDITOR on a private copy; malloc'd, NULL
 * when it failed (said on out). */
static char *edit_in_editor(FILE *out, const char *code, const char *lang)
{
        const char *tmp = getenv("TMPDIR");
        cleanup_free char *tpl = NULL;
        if (asprintf(&tpl, "%s/corral-approve-XXXXXX%s", tmp && tmp[0] == '/' ? tmp : "/tmp",
                     strcmp(lang, "python") == 0 ? ".py" : ".sh") < 0)
                return NULL;
        int fd = mkstemps(tpl, 3);
        if (fd < 0) {
                fprintf(out, "  cannot make a file for the editor: %s\n", strerror(errno));
                return NULL;
        }
        bool ok = write_all(fd, code, strlen(code)) == 0;
        close(fd);
        pid_t pid = ok ? fork() : -1;
        if (pid == 0) {
                /* The editor gets the terminal; $EDITOR may carry arguments. */
                execl("/bin/sh", "sh", "-c", "exec $CORRAL_APPROVE_EDITOR \"$1\"", "sh", tpl, (char *)NULL);
                _exit(127);
        }
        int st = 0;
        while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        char *text = NULL;
        if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                size_t len = 0;
                text = cli_read_code(tpl, &len, NULL);
        } else {
                fprintf(out, "  the editor failed (exit status %d): the code is unchanged\n",
                        WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
        unlink(tpl);
        return text;
}

/* The replacement typed in, up to a line with a single "." */
static char *read_code(FILE *out, double deadline_ms)
{
        fputs("  type the code to run instead, then a line with a single '.':\n", out);
        fflush(out);
        struct capbuf b = { .cap = 256u << 10 };
        char line[LINE_MAX_BYTES];
        while (read_line(STDIN_FILENO, deadline_ms, line, sizeof(line)) == 1) {
                if (strcmp(line, ".") == 0)
                        return capbuf_detach(&b, NULL);
                capbuf_append(&b, line, strlen(line));
                capbuf_append(&b, "\n", 1);
        }
        free(capbuf_detach(&b, NULL));
        return NULL;
}

void cli_approve_event(void *userdata, const json_t *ev)
{
        struct cli_approver *a = userdata;
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (type == NULL || strcmp(type, "approval_request") != 0 || json_is_true(json_object_get(ev, "unattended")))
                return;
        FILE *out = stderr;
        unsigned n = (unsigned)json_integer_value(json_object_get(ev, "n"));
        const char *lang = json_string_value(json_object_get(ev, "lang"));
        const char *code = json_string_value(json_object_get(ev, "code"));
        double timeout_s = json_number_value(json_object_get(ev, "timeout_s"));
        const char *dflt = json_string_value(json_object_get(ev, "default"));
        double deadline = monotonic_ms() + timeout_s * 1000;
        lang = lang ? lang : "python";
        fprintf(out, "\n── approval %u: the model wants to run this %s ──\n", n,
                strcmp(lang, "python") == 0 ? "Python code" : "shell command");
        show_code(out, code ? code : "", lang, a->color);
        show_findings(out, json_object_get(ev, "review"));
        char line[LINE_MAX_BYTES];
        for (;;) {
                fprintf(out, "[a]pprove / [d]eny / [e]dit (%.0f s, then %s)? ", timeout_s, dflt ? dflt : "deny");
                fflush(out);
                if (read_line(STDIN_FILENO, deadline, line, sizeof(line)) != 1) {
                        fputs("\n  no answer: the run applies its default\n", out);
                        return;
                }
                const char *decision = NULL;
                cleanup_free char *reason = NULL, *newcode = NULL;
                switch (line[strspn(line, " \t")]) {
                case 'a':
                case 'y':
                        decision = "approve";
                        break;
                case 'd':
                case 'n':
                        decision = "deny";
                        fputs("  reason (told to the model; empty for none): ", out);
                        fflush(out);
                        if (read_line(STDIN_FILENO, deadline, line, sizeof(line)) == 1 && line[0])
                                reason = strdup(line);
                        break;
                case 'e': {
                        const char *editor = getenv("VISUAL");
                        if (editor == NULL || *editor == '\0')
                                editor = getenv("EDITOR");
                        if (editor && *editor && setenv("CORRAL_APPROVE_EDITOR", editor, 1) == 0)
                                newcode = edit_in_editor(out, code ? code : "", lang);
                        else
                                newcode = read_code(out, deadline);
                        if (newcode == NULL || newcode[strspn(newcode, " \t\r\n")] == '\0') {
                                fputs("  no code: asking again\n", out);
                                continue;
                        }
                        decision = "edit";
                        break;
                }
                default:
                        fputs("  answer a, d or e\n", out);
                        continue;
                }
                corral_error *err = NULL;
                if (run_approval_answer(a->run, n, decision, reason, newcode, "terminal", &err) < 0) {
                        cleanup_free char *safe = term_sanitize(err->msg, strlen(err->msg), NULL);
                        fprintf(out, "  %s\n", safe ? safe : err->msg);
                        corral_error_free(err);
                        if (strcmp(decision, "edit") == 0)
                                continue;
                }
                return;
        }
}
