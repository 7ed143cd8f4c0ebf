/* agent-internal.h: the parts of the loop, shared inside agent/.
 * Threads: one agent run at a time per run's state. */
#ifndef CORRAL_AGENT_INTERNAL_H
#define CORRAL_AGENT_INTERNAL_H

#include "agent.h"

/* tools.c: the tool schemas offered to the model and their execution. */
CORRAL_HIDDEN json_t *agent_tool_schemas(void);
CORRAL_HIDDEN const char *agent_tool_names(void);

struct agent_step {
        /* What the model asked for. */
        const char *name;
        json_t *args;            /* parsed arguments object, or NULL */
        /* What came of it. */
        bool ok;
        char *content;           /* the observation sent back (malloc'd) */
        json_t *exec;            /* run_*: the execution result for the trace */
        json_t *artifacts;       /* the workspace diff of the step, or NULL */
        char *final_answer;      /* final_answer: the answer */
        bool fatal;              /* the jail could not be set up: end the run */
        bool cancelled;
        corral_error *err;       /* with fatal */
};
CORRAL_HIDDEN void agent_step_release(struct agent_step *s);

struct agent_state;
/* Run one tool call: name and the raw arguments text from the model. */
CORRAL_HIDDEN void agent_tool_run(struct agent_state *st, const char *name, const char *arguments,
                                  struct agent_step *ret);
/* End run_python's session, if any (at the end of the run). */
CORRAL_HIDDEN void agent_session_close(struct agent_state *st);
/* Run code in a jail over the workspace (lang "python" or "bash"). */
CORRAL_HIDDEN void agent_exec_code(struct agent_state *st, const char *lang, const char *code, struct agent_step *ret);

/* prompt.c */
CORRAL_HIDDEN char *agent_system_prompt(const struct agent_config *cfg, bool text_protocol);
/* "Python 3.11 with numpy 1.24.2, pandas 1.5.3, ..." from the packages'
 * metadata under sysroot (no interpreter is started). */
CORRAL_HIDDEN char *agent_runtime_description(const char *sysroot);

/* observe.c */
/* Keep head and tail of text within limit bytes, marking what was cut. */
CORRAL_HIDDEN char *agent_cut_middle(const char *text, size_t len, size_t limit);
/* The observation for one execution result. */
CORRAL_HIDDEN char *agent_observe_exec(const corral_jail_result *res, const corral_jail_config *jail,
                                       const json_t *artifacts, size_t stream_limit);
CORRAL_HIDDEN json_t *agent_exec_to_json(const corral_jail_result *res, size_t stream_limit);

/* textproto.c: the protocol for models without tool calling. */
struct text_block {
        char *lang;              /* "python" or "bash" */
        char *code;
};
/* The first fenced code block of a reply: 1 found, 0 none (final answer), -1 ENOMEM. */
CORRAL_HIDDEN int textproto_find_block(const char *reply, struct text_block *ret);
CORRAL_HIDDEN void text_block_release(struct text_block *b);

/* The loop's state, visible to the tools. */
struct agent_state {
        const struct agent_config *cfg;
        unsigned iteration;
        unsigned step;           /* executions so far, names step files */
        double deadline_ms;      /* monotonic; 0 none */
        /* Hashes of code that failed, with the step that ran it. */
        struct {
                uint64_t hash;
                unsigned step;
        } failed[64];
        size_t n_failed;
        struct ws_snapshot *last_snapshot; /* the workspace after the last step (tools.c) */
        uint64_t notices[16];    /* hashes of the jail notes already passed on */
        size_t n_notices;
        struct session *session; /* run_python's interpreter (tools.c), NULL until the first step */
        /* The Python steps the session has run, reviewed with each new one:
         * an import in one step and its use in the next are one program. */
        char *review_context;
        size_t review_context_len;
        /* Figures for the model: what the last step produced, waiting for
         * the user message that follows the tool results (agent.c). */
        bool images_off;         /* the endpoint rejected images: none for the rest of the run */
        unsigned images_sent;    /* over the run */
        struct agent_image {
                char *path;      /* "output/figures/step1-1.png" */
                unsigned char *png;
                size_t len;
                uint32_t width, height;
        } pending[AGENT_MAX_STEP_IMAGES];
        size_t n_pending;
        char *pending_note;      /* the message's text: every figure named, sent or not; NULL none */
};
/* Drop the pending images (sent or not). */
CORRAL_HIDDEN void agent_images_clear(struct agent_state *st);

#endif
