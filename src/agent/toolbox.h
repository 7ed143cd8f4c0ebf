/* toolbox.h: the agent's tools (run_python, run_shell, read_file,
 * write_file, list_files, final_answer) as an object over a workspace and a
 * session, callable without the loop: the loop calls them for the model, and
 * a server or MCP front end for its clients (docs/architecture.md).
 *
 *   toolbox_new(&cfg, &tb, &err);       cfg: workspace, jail, review, limits
 *   toolbox_call(tb, "run_python", "{\"code\": \"1+1\"}", &res);
 *   tool_result_release(&res);
 *   toolbox_free(tb);                   run_python's session ends
 *
 * run_python runs in one session kept across calls (warm where the options
 * allow; cfg->stateless: a fresh process per call), run_shell in a fresh
 * jail per call, both over cfg->ws with input/ read-only and reviewed first
 * (cfg->review); the file tools work on the host beneath the workspace.
 * Whatever the caller sends (an unknown tool, arguments that are not JSON,
 * a missing argument) becomes an observation, never an error; only a jail
 * that cannot be set up is fatal.  Threads: one call at a time per toolbox;
 * toolboxes are independent.
 */
#ifndef CORRAL_AGENT_TOOLBOX_H
#define CORRAL_AGENT_TOOLBOX_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "agent.h"

struct tool_result {
        /* What was asked for. */
        const char *name;
        json_t *args;            /* parsed arguments object, or NULL */
        /* What came of it. */
        bool ok;
        char *content;           /* the observation, as the model reads it (malloc'd, secrets redacted) */
        json_t *exec;            /* run_*: the execution result, for the trace */
        json_t *artifacts;       /* the workspace diff of the call, or NULL */
        char *final_answer;      /* final_answer: the answer */
        bool fatal;              /* the jail could not be set up: nothing more can run */
        bool cancelled;
        corral_error *err;       /* with fatal */
};
CORRAL_HIDDEN void tool_result_release(struct tool_result *r);

struct toolbox;

/* cfg (borrowed for the toolbox's life) gives the workspace, the jail
 * configuration, the review, the trace (review and notice events; may be
 * NULL), the secrets, the cancel fd and the observation and image limits;
 * its model and task are not used. */
CORRAL_HIDDEN int toolbox_new(const struct agent_config *cfg, struct toolbox **ret, corral_error **ret_err);
CORRAL_HIDDEN void toolbox_free(struct toolbox *tb);

/* The tools' schemas (OpenAI function tools; a new array) and names. */
CORRAL_HIDDEN json_t *toolbox_schemas(void);
CORRAL_HIDDEN const char *toolbox_names(void);

/* Call a tool: arguments is the JSON object's text (NULL or "": none). */
CORRAL_HIDDEN void toolbox_call(struct toolbox *tb, const char *name, const char *arguments,
                                struct tool_result *ret);
/* End run_python's session: the next call starts a new interpreter (MCP's
 * reset_session). */
CORRAL_HIDDEN void toolbox_reset(struct toolbox *tb);
/* Run code as run_python ("python") or run_shell ("bash") would. */
CORRAL_HIDDEN void toolbox_exec_code(struct toolbox *tb, const char *lang, const char *code,
                                     struct tool_result *ret);
/* Bind the directory open as fd (borrowed: keep it open while the toolbox
 * runs code) read-only at `at` in every jail the toolbox starts from now on,
 * the session's included: the test-driven mode's tests/ (tdd.c).  name
 * names it in messages.  At most 4. */
CORRAL_HIDDEN int toolbox_bind_read_only(struct toolbox *tb, int fd, const char *name, const char *at,
                                         corral_error **ret_err);
/* Run a program of corral's own (name, code: the script, argv naming it as
 * /run/corral/NAME) in a one-shot jail set up as a step's (workspace,
 * read-only inputs and binds, limits, the run's deadline), env added
 * ("NAME=VALUE", NULL-terminated, may be NULL): no review, no session, not
 * counted as a step.  0 with *ret to release (corral_jail_result_release),
 * or -1 (nothing could run). */
CORRAL_HIDDEN int toolbox_run_program(struct toolbox *tb, const char *name, const char *code, char *const argv[],
                                      const char *const *env, corral_jail_result *ret, corral_error **ret_err);
/* The caller's turn (in the trace's review events) and its wall-clock
 * deadline (CLOCK_MONOTONIC ms, 0 none), which caps each step's time. */
CORRAL_HIDDEN void toolbox_set_turn(struct toolbox *tb, unsigned iteration, double deadline_ms);

/* Team mode (team.h): the reviewer examines every code step the static
 * review lets through, and the executor reports on every step that ran.
 * Borrowed for the toolbox's life; NULL: no team. */
struct team;
CORRAL_HIDDEN void toolbox_set_team(struct toolbox *tb, struct team *team);

/* Figures for the model (cfg->images): the last run_python call's, checked
 * PNGs within the budgets, and a text naming every figure (sent or not). */
struct toolbox_image {
        char *path;              /* "output/figures/step1-1.png" */
        unsigned char *png;
        size_t len;
        uint32_t width, height;
};
CORRAL_HIDDEN size_t toolbox_images(struct toolbox *tb, const struct toolbox_image **ret, const char **ret_note);
CORRAL_HIDDEN void toolbox_images_clear(struct toolbox *tb);
/* The endpoint refused images: none for the rest of the toolbox's life. */
CORRAL_HIDDEN void toolbox_images_off(struct toolbox *tb);
CORRAL_HIDDEN bool toolbox_images_are_off(const struct toolbox *tb);

#endif
