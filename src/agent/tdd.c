/* tdd.c: the test-driven mode (tdd.h, docs/modes.md).
 *
 * What keeps the tests as the model wrote them:
 * - in every jail, tests/ is a read-only bind of the directory opened at
 *   the start (by its fd: a path swapped later cannot redirect it), so
 *   writing, deleting, renaming, chmod, a new file or a symlink in it fail
 *   with EROFS, and tests/ itself cannot be moved (EBUSY: a mount point);
 * - on the host, write_file into tests/ is refused once they are frozen, by
 *   name here (with the reason) and by the workspace wherever a symlink
 *   leads (workspace_freeze_dir());
 * - pytest runs in a jail of its own with nothing of the workspace's
 *   configuration: python3 -I (no PYTHONPATH, no user site, so no
 *   usercustomize, sitecustomize or .pth from the workspace, no script or
 *   working directory on sys.path), -c /dev/null (no pytest.ini, tox.ini,
 *   setup.cfg or pyproject.toml applies), --confcutdir=tests (no conftest.py
 *   above tests/), PYTEST_ADDOPTS and PYTEST_PLUGINS emptied, plugins of
 *   the system not loaded by entry point, no cache (no --lf tricks); the
 *   workspace is appended to sys.path, after the standard library and the
 *   installed packages, so the code can be imported but cannot shadow
 *   them.
 * Not prevented: the code the tests import runs in pytest's process and
 * could tamper with it at run time; the review, the completion check and
 * the trace are the answer to that, not this file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "tdd.h"
#include "toolbox.h"

#define FAILURES_BYTES 3000  /* of pytest's report, head and tail, in an observation */
#define RESULT_LINE "corral-tdd: "
#define TDD_CODE_FILES 100   /* code files kept as artifacts */
#define TDD_FILE_BYTES (1u << 20)

enum tdd_phase { TDD_TESTS, TDD_CODE };

struct tdd_state {
        const struct agent_config *cfg;
        struct toolbox *tb;
        int tests_fd;            /* tests/, O_PATH, bound into every jail */
        enum tdd_phase phase;
        unsigned frozen_at;      /* the iteration that froze the tests */
        json_t *tests;           /* the test files at the freeze */
        json_t *last;            /* the last check's event, or NULL */
        unsigned checks;
        bool stale;              /* the code changed since the last check */
        int code_ok;             /* the last code step: 1 succeeded, 0 failed, -1 none yet */
        unsigned refused, held;
        json_t *changes;         /* test changes asked for in the code phase (allowed or not) */
        bool change_open;        /* a change let through: freeze again after it */
        json_t *code;            /* {path: true}: files the code phase made or changed outside tests/,
                                  * output/ and input/ (copied to output/code/ at the end) */
};

static const char runner[] =
        "import json, sys\n"
        "sys.path.append('/workspace')  # the code: after the standard library and installed packages\n"
        "import pytest\n"
        "class Count:\n"
        "    def __init__(self):\n"
        "        self.n = {'passed': 0, 'failed': 0, 'errors': 0, 'skipped': 0}\n"
        "    def pytest_runtest_logreport(self, report):\n"
        "        if report.when == 'call' or report.outcome != 'passed':\n"
        "            k = report.outcome if report.when == 'call' or report.outcome == 'skipped' else 'errors'\n"
        "            self.n[k] += 1\n"
        "    def pytest_collectreport(self, report):\n"
        "        if report.failed:\n"
        "            self.n['errors'] += 1\n"
        "c = Count()\n"
        "rc = pytest.main(['-q', '-p', 'no:cacheprovider', '-c', '/dev/null', '--rootdir=/workspace/tests',\n"
        "                  '--confcutdir=/workspace/tests', '-o', 'addopts=', '-rfE', '--tb=short', '--color=no',\n"
        "                  '/workspace/tests'], plugins=[c])\n"
        "print('\\n" RESULT_LINE "' + json.dumps(dict(c.n, exit=int(rc))), flush=True)\n"
        "sys.exit(int(rc))\n";

static void setf(char **dst, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void setf(char **dst, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(dst, fmt, ap);
        va_end(ap);
}

static void emit(const struct tdd_state *t, json_t *ev)
{
        if (t->cfg->trace)
                trace_emit(t->cfg->trace, "tdd", ev);
        else
                json_decref(ev);
}

/* The test files under tests/ (test_*.py, *_test.py), sorted. */
static json_t *test_files(struct tdd_state *t)
{
        json_t *list = NULL, *out = json_array(), *e;
        size_t i;
        if (out == NULL || workspace_list_files(t->cfg->ws, TDD_TESTS_DIR, 8, 500, &list, NULL) < 0)
                return out;
        json_array_foreach(list, i, e) {
                const char *path = json_string_value(json_object_get(e, "path"));
                const char *type = json_string_value(json_object_get(e, "type"));
                if (path == NULL || type == NULL || strcmp(type, "file") != 0)
                        continue;
                const char *base = strrchr(path, '/');
                base = base ? base + 1 : path;
                size_t n = strlen(base);
                if (n > 3 && strcmp(base + n - 3, ".py") == 0 &&
                    (strncmp(base, "test_", 5) == 0 || (n > 8 && strcmp(base + n - 8, "_test.py") == 0)))
                        json_array_append_new(out, json_string(path));
        }
        json_decref(list);
        return out;
}

struct tdd_state *tdd_new(const struct agent_config *cfg, struct toolbox *tb, corral_error **ret_err)
{
        struct tdd_state *t = calloc(1, sizeof(*t));
        if (t == NULL || (t->changes = json_array()) == NULL || (t->code = json_object()) == NULL) {
                if (t)
                        json_decref(t->changes);
                free(t);
                corral_fail(ret_err, ENOMEM, "cannot set up the test-driven mode");
                return NULL;
        }
        t->cfg = cfg;
        t->tb = tb;
        t->code_ok = -1;
        t->tests_fd = -1;
        if (workspace_make_dir(cfg->ws, TDD_TESTS_DIR, ret_err) < 0) {
                corral_error_prefix(ret_err, "test-driven mode needs a directory " TDD_TESTS_DIR "/ in the "
                                             "workspace");
                tdd_free(t);
                return NULL;
        }
        t->tests_fd = openat(cfg->ws->root_fd, TDD_TESTS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (t->tests_fd < 0) {
                corral_fail(ret_err, errno, "cannot open the workspace's " TDD_TESTS_DIR "/");
                tdd_free(t);
                return NULL;
        }
        if (toolbox_bind_read_only(tb, t->tests_fd, TDD_TESTS_DIR, "/workspace/" TDD_TESTS_DIR, ret_err) < 0) {
                tdd_free(t);
                return NULL;
        }
        json_t *have = test_files(t);
        emit(t, json_pack("{s:s, s:s, s:i, s:o}", "event", "phase", "phase", "tests", "iteration", 0, "tests",
                          have ? have : json_array()));
        return t;
}

void tdd_free(struct tdd_state *t)
{
        if (t == NULL)
                return;
        if (t->tests_fd >= 0)
                close(t->tests_fd);
        workspace_freeze_dir(t->cfg->ws, NULL, NULL);
        json_decref(t->tests);
        json_decref(t->last);
        json_decref(t->changes);
        json_decref(t->code);
        free(t);
}

void tdd_put_prompt(FILE *f, bool text_protocol)
{
        fprintf(f, "\n# Test-driven work\n"
                   "Work test first. First write pytest tests for the task under /workspace/" TDD_TESTS_DIR "/ "
                   "(files test_*.py; they import your code from /workspace, e.g. `from solution import f` for "
                   "/workspace/solution.py). %s\n"
                   "Your first step that is not writing a test freezes the tests: from then on " TDD_TESTS_DIR
                   "/ is read-only (also to your code, which cannot change, remove or shadow the tests) and you "
                   "change only the code. After every code step corral runs the tests and shows you their "
                   "failures. The work is done when all tests pass and your code's real run succeeded: only then "
                   "give your final answer.\n",
                text_protocol ? "Write a file with a fenced block whose info string names it: ```python "
                                "file=" TDD_TESTS_DIR "/test_solution.py ... ``` (the same for code files, e.g. "
                                "file=solution.py); a block without file= runs."
                              : "Write them with the write_file tool (code in " TDD_TESTS_DIR "/ cannot write "
                                "there).");
}

/* "tests/x.py" of "tests/x.py", "./tests/x.py", "/workspace/tests//x.py":
 * whether path names tests/ or a file in it (lexically; a symlink is the
 * workspace's to refuse). */
static bool names_tests(const char *path)
{
        if (path == NULL)
                return false;
        if (strncmp(path, "/workspace", 10) == 0 && (path[10] == '/' || path[10] == '\0'))
                path += 10;
        for (;;) {
                while (*path == '/')
                        path++;
                if (path[0] == '.' && (path[1] == '/' || path[1] == '\0'))
                        path++;
                else
                        break;
        }
        size_t n = strlen(TDD_TESTS_DIR);
        return strncmp(path, TDD_TESTS_DIR, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool refuse(struct tdd_state *t, unsigned iteration, const char *name, const char *path, const char *why,
                   struct tool_result *ret)
{
        t->refused++;
        ret->name = name;
        ret->ok = false;
        setf(&ret->content, "error: %s", why);
        emit(t, json_pack("{s:s, s:i, s:s, s:s?, s:s}", "event", "refused", "iteration", iteration, "tool", name,
                          "path", path, "reason", why));
        return true;
}

/* The first call of the code phase: the tests are frozen (none: refused). */
static bool freeze(struct tdd_state *t, unsigned iteration, const char *name, struct tool_result *ret)
{
        json_t *have = test_files(t);
        if (json_array_size(have) == 0) {
                json_decref(have);
                return refuse(t, iteration, name, NULL,
                              "nothing ran: write the tests first (test_*.py files under " TDD_TESTS_DIR
                              "/, with write_file); your first step that is not a test freezes them",
                              ret);
        }
        corral_error *err = NULL;
        if (workspace_freeze_dir(t->cfg->ws, TDD_TESTS_DIR, &err) < 0) {
                json_decref(have);
                bool r = refuse(t, iteration, name, NULL, err->msg, ret);
                corral_error_free(err);
                return r;
        }
        t->phase = TDD_CODE;
        t->frozen_at = iteration;
        t->tests = have;
        t->stale = true;
        emit(t, json_pack("{s:s, s:s, s:i, s:O}", "event", "phase", "phase", "code", "iteration", iteration, "tests",
                          have));
        return false;
}

bool tdd_before_call(struct tdd_state *t, unsigned iteration, const char *name, const char *arguments,
                     struct tool_result *ret)
{
        bool code = strcmp(name, "run_python") == 0 || strcmp(name, "run_shell") == 0;
        bool write = strcmp(name, "write_file") == 0;
        if (!code && !write)
                return false;
        json_t *args = write ? json_loads(arguments ? arguments : "{}", 0, NULL) : NULL;
        const char *path = json_string_value(json_object_get(args, "path"));
        bool tests = write && names_tests(path);
        bool refused = false;
        if (t->phase == TDD_TESTS) {
                if (!tests)
                        refused = freeze(t, iteration, name, ret);
        } else if (tests) {
                const char *reason = json_string_value(json_object_get(args, "reason"));
                bool allowed = t->cfg->tdd_test_changes && reason && reason[strspn(reason, " \t\r\n")];
                json_array_append_new(t->changes, json_pack("{s:i, s:s, s:s?, s:b}", "iteration", iteration, "path",
                                                            path, "reason", reason, "allowed", allowed));
                emit(t, json_pack("{s:s, s:i, s:s, s:s?, s:b}", "event", "test_change", "iteration", iteration,
                                  "path", path, "reason", reason, "allowed", allowed));
                if (!allowed) {
                        refused = refuse(t, iteration, name, path,
                                         t->cfg->tdd_test_changes
                                                 ? "the tests are frozen: a change to " TDD_TESTS_DIR "/ must say "
                                                   "why (a \"reason\" argument of write_file); change the code "
                                                   "instead if the tests are right"
                                                 : "the tests are frozen: " TDD_TESTS_DIR "/ cannot change in this "
                                                   "run (the run does not allow test changes); change the code "
                                                   "until the tests pass",
                                         ret);
                } else {
                        workspace_freeze_dir(t->cfg->ws, NULL, NULL);
                        t->change_open = true;
                }
        }
        json_decref(args);
        return refused;
}

/* Run the tests in a jail; the "check" event, and the text for the model. */
static char *check(struct tdd_state *t, unsigned iteration)
{
        static const char *const env[] = { "PYTEST_ADDOPTS=", "PYTEST_PLUGINS=", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
                                           NULL };
        char *argv[] = { "python3", "-I", "-B", "/run/corral/tdd-tests.py", NULL };
        corral_jail_result res;
        corral_error *err = NULL;
        double t0 = monotonic_ms();
        t->checks++;
        t->stale = false;
        json_t *ev = json_pack("{s:s, s:i, s:i}", "event", "check", "iteration", iteration, "check", (int)t->checks);
        if (toolbox_run_program(t->tb, "tdd-tests.py", runner, argv, env, &res, &err) < 0) {
                json_object_set_new(ev, "status", json_string("error"));
                json_object_set_new(ev, "error", json_string(err ? err->msg : "out of memory"));
                char *text = NULL;
                setf(&text, "\n\ntests: could not run (%s)", err ? err->msg : "out of memory");
                corral_error_free(err);
                json_decref(t->last);
                t->last = json_incref(ev);
                emit(t, ev);
                return text;
        }
        /* The last result line is the counting plugin's (printed after all
         * tests, so code that prints one earlier cannot stand in for it). */
        cleanup_free char *out = strndup(res.stdout_buf ? res.stdout_buf : "", res.stdout_len);
        json_t *counts = NULL;
        char *line = NULL;
        for (char *p = out; p && (p = strstr(p, RESULT_LINE)) != NULL; p++)
                line = p;
        if (line) {
                counts = json_loads(line + strlen(RESULT_LINE), JSON_DISABLE_EOF_CHECK, NULL);
                *line = '\0';
        }
        json_int_t exit_code = counts ? json_integer_value(json_object_get(counts, "exit")) : res.exit_code;
        json_int_t failed = json_integer_value(json_object_get(counts, "failed"));
        json_int_t errors = json_integer_value(json_object_get(counts, "errors"));
        json_int_t passed = json_integer_value(json_object_get(counts, "passed"));
        const char *status = counts == NULL || res.status != CORRAL_STATUS_OK
                                     ? (exit_code == 1 && failed + errors > 0 ? "failed" : "error")
                             : exit_code == 0 && failed + errors == 0 && passed > 0 ? "passed"
                             : exit_code == 5                                        ? "no_tests"
                             : exit_code == 1                                        ? "failed"
                                                                                     : "error";
        if (counts == NULL && res.status == CORRAL_STATUS_OK && res.exit_code == 0)
                status = "error";
        json_object_set_new(ev, "status", json_string(status));
        json_object_set_new(ev, "passed", json_integer(passed));
        json_object_set_new(ev, "failed", json_integer(failed));
        json_object_set_new(ev, "errors", json_integer(errors));
        json_object_set_new(ev, "skipped", json_integer(json_integer_value(json_object_get(counts, "skipped"))));
        json_object_set_new(ev, "exit_code", json_integer(exit_code));
        json_object_set_new(ev, "ms", json_real(round_ms(monotonic_ms() - t0)));
        json_decref(counts);
        /* The report, trimmed: pytest's failures (stdout), else what
         * stopped it (stderr). */
        const char *report = out;
        cleanup_free char *err_text = NULL;
        if (strcmp(status, "error") == 0 && res.stderr_len > 0) {
                err_text = strndup(res.stderr_buf, res.stderr_len);
                report = err_text;
        }
        size_t rlen = report ? strlen(report) : 0;
        while (rlen > 0 && (report[rlen - 1] == '\n' || report[rlen - 1] == ' '))
                rlen--;
        cleanup_free char *cut = agent_cut_middle(report ? report : "", rlen, FAILURES_BYTES);
        if (strcmp(status, "passed") != 0 && cut)
                json_object_set_new(ev, "report", json_string(cut));
        char *text = NULL;
        if (strcmp(status, "passed") == 0)
                setf(&text, "\n\ntests (run by corral after this step): all %" JSON_INTEGER_FORMAT " passed.%s",
                         passed, t->code_ok == 1 ? " Your code ran successfully: give your final answer." : "");
        else if (strcmp(status, "no_tests") == 0)
                setf(&text, "\n\ntests (run by corral after this step): pytest collected no tests.\n%s",
                         cut ? cut : "");
        else
                setf(&text, "\n\ntests (run by corral after this step): %s: %" JSON_INTEGER_FORMAT " passed, "
                                "%" JSON_INTEGER_FORMAT " failed, %" JSON_INTEGER_FORMAT " errors. Fix the code "
                                "(the tests are frozen).\n%s",
                         strcmp(status, "failed") == 0 ? "FAILED" : "could not run", passed, failed, errors,
                         cut ? cut : "");
        corral_jail_result_release(&res);
        json_decref(t->last);
        t->last = json_incref(ev);
        emit(t, ev);
        return text;
}

void tdd_after_call(struct tdd_state *t, unsigned iteration, struct tool_result *s)
{
        if (s->name == NULL || t->phase != TDD_CODE)
                return;
        bool code = strcmp(s->name, "run_python") == 0 || strcmp(s->name, "run_shell") == 0;
        bool write = strcmp(s->name, "write_file") == 0;
        if (write && s->ok && !s->artifacts) {
                const char *path = json_string_value(json_object_get(s->args, "path"));
                if (path && !names_tests(path) && json_object_size(t->code) < TDD_CODE_FILES)
                        json_object_set_new(t->code, path, json_true());
        }
        if (t->change_open) {
                workspace_freeze_dir(t->cfg->ws, TDD_TESTS_DIR, NULL);
                t->change_open = false;
        }
        if (code && s->exec)
                t->code_ok = s->ok ? 1 : 0;
        /* The code: what the step made or changed, outside the tests, the
         * inputs and output/. */
        size_t i;
        json_t *a;
        json_array_foreach(s->artifacts, i, a) {
                const char *path = json_string_value(json_object_get(a, "path"));
                const char *change = json_string_value(json_object_get(a, "change"));
                if (path && strncmp(path, "/workspace/", 11) == 0)
                        path += 11;
                if (path == NULL || (change && strcmp(change, "deleted") == 0) || names_tests(path) ||
                    strncmp(path, "output/", 7) == 0 || strncmp(path, "input/", 6) == 0 ||
                    json_object_size(t->code) >= TDD_CODE_FILES)
                        continue;
                json_object_set_new(t->code, path, json_true());
        }
        if (!(code && s->exec) && !(write && s->ok))
                return;
        if (s->cancelled || s->fatal)
                return;
        cleanup_free char *text = check(t, iteration);
        if (text) {
                char *both = NULL;
                if (asprintf(&both, "%s%s", s->content ? s->content : "", text) >= 0) {
                        free(s->content);
                        s->content = both;
                }
        }
}

char *tdd_hold_answer(struct tdd_state *t, unsigned iteration, bool can_send)
{
        const char *status = json_string_value(json_object_get(t->last, "status"));
        bool green = !t->stale && status && strcmp(status, "passed") == 0;
        const char *why = t->phase == TDD_TESTS ? "no tests were frozen and no code ran yet"
                          : !green              ? "the tests do not pass yet"
                          : t->code_ok != 1     ? "your code's last run did not succeed"
                                                : NULL;
        if (why == NULL)
                return NULL;
        emit(t, json_pack("{s:s, s:i, s:s, s:s}", "event", "answer_held", "iteration", iteration, "reason", why,
                          "action", can_send ? "sent_back" : "accepted"));
        if (!can_send)
                return NULL;
        t->held++;
        char *note = NULL;
        setf(&note, "Not done yet: %s. Work test first: %s, then give your final answer again.", why,
                 t->phase == TDD_TESTS ? "write the tests under " TDD_TESTS_DIR "/, then the code"
                 : !green              ? "change the code until the tests pass"
                                       : "run your code for real (a run_python or run_shell step) and check "
                                         "that it succeeds");
        return note;
}

/* Copy src (a workspace path) to output/DIR/src: the tests and the code
 * as artifacts.  Through the workspace's calls: beneath its root, never
 * through a symlink. */
static void keep(struct tdd_state *t, const char *dir, const char *src)
{
        cleanup_free char *data = NULL, *dest = NULL;
        size_t len = 0;
        bool truncated = false;
        if (workspace_read_file(t->cfg->ws, src, TDD_FILE_BYTES, &data, &len, &truncated, NULL) < 0 || truncated)
                return;
        if (asprintf(&dest, "output/%s/%s", dir, src) >= 0)
                (void)workspace_write_file(t->cfg->ws, dest, data, len, NULL);
}

json_t *tdd_finish(struct tdd_state *t)
{
        size_t i;
        json_t *v;
        const char *path;
        json_t *code = json_array();
        if (t->phase == TDD_CODE) {
                json_t *now = test_files(t);
                json_array_foreach(now, i, v)
                        keep(t, "tdd", json_string_value(v));
                json_decref(now);
                json_object_foreach(t->code, path, v) {
                        keep(t, "tdd", path);
                        json_array_append_new(code, json_string(path));
                }
        }
        const char *status = json_string_value(json_object_get(t->last, "status"));
        bool green = !t->stale && status && strcmp(status, "passed") == 0;
        return json_pack("{s:s, s:i, s:O, s:o, s:i, s:b, s:O, s:O, s:i, s:i, s:O}", "phase",
                         t->phase == TDD_TESTS ? "tests" : "code", "frozen_at", (int)t->frozen_at, "tests",
                         t->tests ? t->tests : json_null(), "code", code, "checks", (int)t->checks, "passed",
                         green && t->code_ok == 1, "last", t->last ? t->last : json_null(), "code_ok",
                         t->code_ok < 0 ? json_null() : json_boolean(t->code_ok == 1), "refused", (int)t->refused,
                         "held", (int)t->held, "changes", t->changes);
}
