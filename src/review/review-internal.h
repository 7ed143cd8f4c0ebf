/* review-internal.h: shared by the review's parts (review.c drives, python.c
 * and shell.c walk the syntax trees, policy.c holds the rules).
 * Threads: thread-safe: grammars made once (pthread_once), parsers and
 * cursors per thread. */
#ifndef CORRAL_REVIEW_INTERNAL_H
#define CORRAL_REVIEW_INTERNAL_H

#include <tree_sitter/api.h>

#include "review.h"

/* The rules of docs/review.md. */
struct review_rule {
        const char *id;
        enum review_severity strict;
        enum review_severity standard;
        const char *advice;
};
CORRAL_HIDDEN const struct review_rule *review_rule_find(const char *id);

/* Lists of a policy (allow or deny). */
struct review_lists {
        char **modules;
        char **calls;
        char **attributes;
        char **commands;
};

struct review_policy {
        enum review_level level;
        signed char *override;   /* per rule (index in the table): -1 none, else a severity */
        struct review_lists allow, deny;
};

/* The severity of a rule under p, OFF when allowed by name. */
CORRAL_HIDDEN enum review_severity review_policy_severity(const struct review_policy *p, const char *rule,
                                                          const char *name);
/* name is on a deny list: modules (name or a prefix of it by dots), calls
 * (exactly; "builtins." dropped), attributes (kind 'a'), commands ('c'). */
CORRAL_HIDDEN bool review_policy_denied(const struct review_policy *p, char kind, const char *name);

/* Nesting deeper than this is reported (PY-SYN-002/SH-SYN-002), not walked:
 * the walk is recursive and must not run out of stack. */
#define REVIEW_MAX_DEPTH 1500
/* Code reviewed inside code (exec("..."), python -c, sh -c): at most this deep. */
#define REVIEW_MAX_NESTING 4

struct review_ctx {
        const char *code;
        size_t len;
        const struct review_policy *policy;
        struct review_result *result;
        /* Code nested in a string (exec("..."), python -c '...'): its
         * findings are reported at the string, 1-based. */
        unsigned at_line, at_col;
        unsigned nesting;
        bool failed;             /* out of memory */
};

/* Add a finding for rule at node's position (subject shown, name matched
 * against the allow lists; name NULL: subject). */
CORRAL_HIDDEN void review_add(struct review_ctx *c, TSNode at, const char *rule, const char *subject,
                              const char *name);
/* The node's source text, malloc'd (NULL on ENOMEM). */
CORRAL_HIDDEN char *review_node_text(const struct review_ctx *c, TSNode n);
/* Review code found inside code (a string at node at) with the same policy. */
CORRAL_HIDDEN void review_nested(struct review_ctx *c, TSNode at, enum review_lang lang, const char *code,
                                 size_t len);
/* The children of a node in order, through a tree cursor: indexing them
 * one by one (ts_node_child(n, i)) costs a scan of the siblings each.
 * Cursors come from a per-thread stack: release in the reverse order of
 * init, on every path out of the loop.
 *
 *   struct review_children k;
 *   TSNode ch;
 *   review_children_init(&k, n, true);
 *   while (review_children_next(&k, &ch))
 *           ...;
 *   review_children_release(&k);
 */
/* A grammar's node kinds and fields, resolved once: node kinds are compared
 * by symbol (a table lookup) and fields read by id, never by name (both
 * would be string compares per node).  kinds[k] and fields[f] are the
 * names of the caller's enums (kinds[0] unused: "none of ours"); flag, when
 * set, adds flag(name) to a symbol's entry.  Filled by
 * review_grammar_init() (under pthread_once). */
#define REVIEW_GRAMMAR_MAX_FIELDS 32
struct review_grammar {
        const TSLanguage *(*language)(void);
        const char *const *kinds;
        int n_kinds;
        const char *const *fields;
        int n_fields;
        unsigned (*flag)(const char *name);
        /* filled in: */
        unsigned char *kind_of_symbol; /* NULL when out of memory: by name */
        uint32_t n_symbols;
        TSFieldId field_ids[REVIEW_GRAMMAR_MAX_FIELDS];
};

CORRAL_HIDDEN void review_grammar_init(struct review_grammar *g);
/* The node's entry: its kind index (0 for none of ours) | its flags. */
CORRAL_HIDDEN unsigned review_grammar_kind(const struct review_grammar *g, TSNode n);

struct review_children {
        TSTreeCursor *cur;       /* NULL: out of memory, by index instead */
        TSNode node;
        uint32_t index;
        bool named;              /* named children only */
};
CORRAL_HIDDEN void review_children_init(struct review_children *k, TSNode n, bool named);
CORRAL_HIDDEN bool review_children_next(struct review_children *k, TSNode *ret);
CORRAL_HIDDEN void review_children_release(struct review_children *k);

/* Report the first syntax error (rule) if the tree has one. */
CORRAL_HIDDEN void review_syntax(struct review_ctx *c, TSNode root, const char *rule);

/* Is this literal path (absolute, or relative to /workspace) outside
 * /workspace and /tmp (and not /dev/null & co.)?  The _at forms take
 * relative paths from cwd (an absolute, normalised directory; NULL:
 * /workspace). */
CORRAL_HIDDEN bool review_path_outside(const char *path);
CORRAL_HIDDEN bool review_path_outside_at(const char *cwd, const char *path);
/* A path known only by its beginning (f"/etc/{name}", "$d/x"): is every
 * path that starts so outside?  Only whole directories count. */
CORRAL_HIDDEN bool review_prefix_outside_at(const char *cwd, const char *prefix);
/* / , /workspace, /workspace/input or a top-level system directory. */
CORRAL_HIDDEN bool review_path_system_dir(const char *path);
CORRAL_HIDDEN bool review_path_system_dir_at(const char *cwd, const char *path);
/* path made absolute from cwd and normalised into out; false when too long. */
CORRAL_HIDDEN bool review_path_join(const char *cwd, const char *path, char *out, size_t size);

/* Constants obfuscated code decodes at run time (base64.b64decode("..."),
 * echo ... | base64 -d): malloc'd and NUL-terminated, length in *ret_len;
 * NULL when in is not valid. */
CORRAL_HIDDEN char *review_base64_decode(const char *in, size_t n, size_t *ret_len);
CORRAL_HIDDEN char *review_hex_decode(const char *in, size_t n, size_t *ret_len);

CORRAL_HIDDEN void review_python(struct review_ctx *c, TSTree *tree);
CORRAL_HIDDEN void review_shell(struct review_ctx *c, TSTree *tree);

const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_bash(void);

#endif
