/* review.h: the safety review of code before it runs.
 *
 * review_code() parses Python or Bash with tree-sitter (the real grammars,
 * error-tolerant) and applies a policy: which modules, calls, attributes and
 * commands are rejected or warned about (docs/review.md lists the rules).
 * Every finding carries a position, a stable rule id, a severity and a
 * message written for the model that wrote the code, so it can take another
 * approach.  The review stops intent early; it is not the security boundary
 * (the jail is), and it never runs anything.
 *
 * Nothing here prints.  The policy is immutable once loaded and may be
 * shared between threads; each thread reuses its own parser (review.c).
 */
#ifndef CORRAL_REVIEW_H
#define CORRAL_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "../lib/util.h"

enum review_lang {
        REVIEW_PYTHON = 0,
        REVIEW_BASH,
};
/* "python" / "bash" (also "sh", "shell"); -1 for anything else. */
CORRAL_HIDDEN int review_lang_from_string(const char *s);

enum review_severity {
        REVIEW_SEV_OFF = 0,  /* not reported */
        REVIEW_SEV_WARN,     /* reported; the code may run */
        REVIEW_SEV_REJECT,   /* the code must not run */
};
CORRAL_HIDDEN const char *review_severity_to_string(enum review_severity s);

enum review_level {
        REVIEW_LEVEL_OFF = 0,
        REVIEW_LEVEL_STANDARD,
        REVIEW_LEVEL_STRICT,
};
CORRAL_HIDDEN const char *review_level_to_string(enum review_level l);

struct review_policy;

/* A built-in level: "strict", "standard" or "off" (never fails but for
 * ENOMEM). */
CORRAL_HIDDEN struct review_policy *review_policy_new(enum review_level level);
/* spec: "strict" | "standard" | "off" | the path of a JSON policy file (use
 * "./strict" for a file of that name).  Errors (CORRAL_ERR_USAGE) name the
 * file and what is wrong in it. */
CORRAL_HIDDEN int review_policy_load(const char *spec, struct review_policy **ret, corral_error **ret_err);
/* The same from JSON text; origin names it in errors. */
CORRAL_HIDDEN int review_policy_parse(const char *json, size_t len, const char *origin, struct review_policy **ret,
                                      corral_error **ret_err);
CORRAL_HIDDEN void review_policy_free(struct review_policy *p);
CORRAL_HIDDEN enum review_level review_policy_level(const struct review_policy *p);
/* The policy as JSON (its level, lists and per-rule overrides), for traces. */
CORRAL_HIDDEN json_t *review_policy_describe(const struct review_policy *p);

struct review_finding {
        unsigned line;           /* 1-based */
        unsigned column;         /* 1-based, in bytes */
        const char *rule;        /* "PY-PROC-001"; static */
        enum review_severity severity;
        char *subject;           /* what was found: "subprocess.run", "rm -rf /" */
        char *message;           /* "rejected by safety review: SUBJECT (rule ID): advice" */
};

struct review_result {
        struct review_finding *findings;
        size_t n_findings;
        size_t alloc;
        unsigned n_reject;
        unsigned n_warn;
        bool rejected;           /* n_reject > 0 */
        double ms;               /* parse + policy */
};
CORRAL_HIDDEN void review_result_release(struct review_result *r);

/* Review len bytes of code (need not be NUL-terminated, may hold any
 * bytes).  Fills *ret (release it); -1 only on ENOMEM or a parser that
 * cannot be set up (ret_err).  A policy at level off yields no findings. */
CORRAL_HIDDEN int review_code(enum review_lang lang, const char *code, size_t len, const struct review_policy *policy,
                              struct review_result *ret, corral_error **ret_err);

/* The same for code that runs after context in one interpreter (the earlier
 * steps of a Python session: their imports and aliases are still there).
 * Context and code are reviewed as one program; only the findings in code
 * are kept, with lines counted from the start of code. */
CORRAL_HIDDEN int review_code_in_context(enum review_lang lang, const char *context, size_t context_len,
                                         const char *code, size_t len, const struct review_policy *policy,
                                         struct review_result *ret, corral_error **ret_err);

/* {"verdict":"allow"|"warn"|"reject","findings":[{line,column,rule,
 * severity,subject,message}],"ms":N} */
CORRAL_HIDDEN json_t *review_result_to_json(const struct review_result *r);
/* One line per finding: "line L, column C: MESSAGE\n"; "" when none. */
CORRAL_HIDDEN char *review_result_text(const struct review_result *r);
/* What a run rejected by the review returns in place of a jail's result
 * (docs/exec-json.md): the schema-1 result object with status "rejected",
 * exit_code 123, nothing run, and "review" (review_result_to_json()).
 * malloc'd, or NULL on allocation failure. */
CORRAL_HIDDEN char *review_rejection_to_json(const struct review_result *r);

#endif
