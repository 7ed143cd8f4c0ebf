/* tdd.h: the test-driven mode (docs/modes.md, "Test-driven work").  Internal to src/agent/.
 *
 * The run has two phases.  In the first the model writes tests under
 * tests/ in the workspace, only through corral's host-side write_file tool:
 * tests/ is bound read-only into every jail from the first step on.  The
 * first tool call that is not a write into tests/ (a code step, a write
 * elsewhere) freezes them: from then on tests/ is read-only to write_file
 * too (workspace_freeze_dir()), a change needs the run's leave
 * (agent_config.tdd_test_changes) and a reason, and is traced.  After every
 * code step the tests run in a jail of their own, with pytest isolated from
 * whatever the code could put beside them, and their trimmed failures are
 * appended to the step's observation.  An answer is held back until the
 * tests pass and the last code step succeeded.
 *
 * The loop (agent.c) calls these around each tool call; nothing here knows
 * how the loop or the jail work inside.  Threads: one run's state, one
 * caller.
 */
#ifndef CORRAL_AGENT_TDD_H
#define CORRAL_AGENT_TDD_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "agent.h"

struct toolbox;
struct tool_result;
struct tdd_state;

/* The directory of the tests, relative to /workspace. */
#define TDD_TESTS_DIR "tests"

/* Set the mode up: tests/ made (or taken as it is: a workspace given with
 * tests in it), opened without following links and bound read-only into
 * every jail of tb; the "tdd" event of the first phase emitted.  NULL with
 * ret_err when tests/ cannot be made (a file or symlink in its place). */
CORRAL_HIDDEN struct tdd_state *tdd_new(const struct agent_config *cfg, struct toolbox *tb, corral_error **ret_err);
CORRAL_HIDDEN void tdd_free(struct tdd_state *t);

/* The system prompt's section on the mode. */
CORRAL_HIDDEN void tdd_put_prompt(FILE *f, bool text_protocol);

/* Before tool `name` runs with arguments (JSON text): true when it must
 * not run, with ret->name and ret->content (the refusal, for the model)
 * set; the phase moves on (the tests frozen) when the call begins the
 * code. */
CORRAL_HIDDEN bool tdd_before_call(struct tdd_state *t, unsigned iteration, const char *name, const char *arguments,
                                   struct tool_result *ret);
/* After a tool call that was let through: a code step, or a write of the
 * code, runs the tests; their outcome is appended to s->content. */
CORRAL_HIDDEN void tdd_after_call(struct tdd_state *t, unsigned iteration, struct tool_result *s);
/* The model offers an answer: NULL when it may stand (the tests pass after
 * the last change and the last code step succeeded), else the note that
 * sends it back (malloc'd).  can_send false (the last turn): the answer
 * stands whatever, and the result says so. */
CORRAL_HIDDEN char *tdd_hold_answer(struct tdd_state *t, unsigned iteration, bool can_send);
/* At the end: the tests and the code (the files the code phase made or
 * changed outside tests/, output/ and input/; up to 100 of 1 MiB each) are
 * copied to output/tdd/, so both are artifacts; the run result's "tdd"
 * (docs/run-json.md), a new reference. */
CORRAL_HIDDEN json_t *tdd_finish(struct tdd_state *t);

#endif
