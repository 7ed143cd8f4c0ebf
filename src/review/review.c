/* review.c: review_code(): parse with tree-sitter, walk the tree (python.c,
 * shell.c), collect findings.
 *
 * Code that does not parse is still walked (tree-sitter recovers around the
 * error), so what can be recognised still is; the error itself is one
 * finding (PY-SYN-001/SH-SYN-001), a warning under `standard`: the
 * interpreter reports syntax errors more precisely than we can, and a
 * program that does not parse does not run.  `strict` rejects it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "review-internal.h"

int review_lang_from_string(const char *s)
{
        if (strcmp(s, "python") == 0 || strcmp(s, "python3") == 0 || strcmp(s, "py") == 0)
                return REVIEW_PYTHON;
        if (strcmp(s, "bash") == 0 || strcmp(s, "sh") == 0 || strcmp(s, "shell") == 0)
                return REVIEW_BASH;
        return -1;
}

void review_result_release(struct review_result *r)
{
        for (size_t i = 0; i < r->n_findings; i++) {
                free(r->findings[i].subject);
                free(r->findings[i].message);
        }
        free(r->findings);
        memset(r, 0, sizeof(*r));
}

char *review_node_text(const struct review_ctx *c, TSNode n)
{
        uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
        if (b > c->len)
                b = (uint32_t)c->len;
        if (a > b)
                a = b;
        return strndup(c->code + a, b - a);
}

void review_add(struct review_ctx *c, TSNode at, const char *rule, const char *subject, const char *name)
{
        struct review_result *r = c->result;
        enum review_severity sev = review_policy_severity(c->policy, rule, name ? name : subject);
        if (sev == REVIEW_SEV_OFF)
                return;
        TSPoint p = ts_node_start_point(at);
        unsigned line = c->nesting ? c->at_line : p.row + 1, col = c->nesting ? c->at_col : p.column + 1;
        /* One finding per rule, subject and line. */
        for (size_t i = 0; i < r->n_findings; i++)
                if (r->findings[i].line == line && strcmp(r->findings[i].rule, rule) == 0 &&
                    strcmp(r->findings[i].subject, subject) == 0)
                        return;
        if (r->n_findings == r->alloc) {
                size_t n = r->alloc ? r->alloc * 2 : 8;
                struct review_finding *f = reallocarray(r->findings, n, sizeof(*f));
                if (f == NULL) {
                        c->failed = true;
                        return;
                }
                r->findings = f;
                r->alloc = n;
        }
        /* Subjects come from the code: keep them short and on one line. */
        char shown[96];
        size_t i = 0;
        for (const char *s = subject; *s && i < sizeof(shown) - 4; s++)
                shown[i++] = (*s == '\n' || *s == '\r' || *s == '\t') ? ' ' : *s;
        if (strlen(subject) > i)
                memcpy(shown + i, "...", 3), i += 3;
        shown[i] = '\0';
        const struct review_rule *rr = review_rule_find(rule);
        struct review_finding *f = &r->findings[r->n_findings];
        f->line = line;
        f->column = col;
        f->rule = rr->id;
        f->severity = sev;
        f->subject = strdup(shown);
        if (f->subject == NULL || asprintf(&f->message, "%s safety review: %s (rule %s): %s",
                                           sev == REVIEW_SEV_REJECT ? "rejected by" : "warning from", shown, rr->id,
                                           rr->advice) < 0) {
                free(f->subject);
                c->failed = true;
                return;
        }
        r->n_findings++;
        if (sev == REVIEW_SEV_REJECT)
                r->n_reject++;
        else
                r->n_warn++;
        r->rejected = r->n_reject > 0;
}

static TSNode first_error(TSNode n, unsigned depth)
{
        if (ts_node_is_missing(n) || strcmp(ts_node_type(n), "ERROR") == 0 || depth > 64)
                return n;
        struct review_children k;
        TSNode ch, found = n;
        review_children_init(&k, n, false);
        while (review_children_next(&k, &ch))
                if (ts_node_has_error(ch)) {
                        found = ch;
                        break;
                }
        review_children_release(&k);
        return ts_node_eq(found, n) ? n : first_error(found, depth + 1);
}

void review_syntax(struct review_ctx *c, TSNode root, const char *rule)
{
        if (!ts_node_has_error(root))
                return;
        review_add(c, first_error(root, 0), rule, "syntax error", NULL);
}

/* Per thread: a parser per language, reused from review to review
 * (creating one and loading its grammar cost as much as a small parse), and
 * a stack of tree cursors for walking children (ts_tree_cursor_new()
 * allocates; a reset cursor keeps its memory).  Freed when the thread ends. */
struct review_thread {
        TSParser *parser[2];
        TSTreeCursor **cursors;
        size_t n_cursors, used;
};

static __thread struct review_thread *thread_state;
static pthread_key_t thread_key;
static bool thread_key_ok;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static void thread_state_free(void *arg)
{
        struct review_thread *t = arg;
        if (t == NULL)
                return;
        for (size_t i = 0; i < ARRAY_SIZE(t->parser); i++)
                if (t->parser[i])
                        ts_parser_delete(t->parser[i]);
        for (size_t i = 0; i < t->n_cursors; i++) {
                ts_tree_cursor_delete(t->cursors[i]);
                free(t->cursors[i]);
        }
        free(t->cursors);
        free(t);
        if (thread_state == t)
                thread_state = NULL;
}

static void thread_key_init(void)
{
        /* Without a key (the process ran out of them) reviews fail as if out of memory. */
        thread_key_ok = pthread_key_create(&thread_key, thread_state_free) == 0;
}

static struct review_thread *thread_get(void)
{
        if (thread_state)
                return thread_state;
        pthread_once(&thread_key_once, thread_key_init);
        if (!thread_key_ok)
                return NULL;
        struct review_thread *t = calloc(1, sizeof(*t));
        if (t == NULL)
                return NULL;
        if (pthread_setspecific(thread_key, t) != 0) {
                free(t);
                return NULL;
        }
        thread_state = t;
        return t;
}

static TSParser *thread_parser(enum review_lang lang)
{
        struct review_thread *t = thread_get();
        if (t == NULL)
                return NULL;
        TSParser **slot = &t->parser[lang == REVIEW_PYTHON ? 0 : 1];
        if (*slot == NULL) {
                TSParser *p = ts_parser_new();
                if (p == NULL)
                        return NULL;
                if (!ts_parser_set_language(p, lang == REVIEW_PYTHON ? tree_sitter_python() : tree_sitter_bash())) {
                        ts_parser_delete(p);
                        return NULL;
                }
                *slot = p;
        }
        /* Nothing of an earlier parse (a failed one included) carries over. */
        ts_parser_reset(*slot);
        return *slot;
}

void review_children_init(struct review_children *k, TSNode n, bool named)
{
        struct review_thread *t = thread_get();
        memset(k, 0, sizeof(*k));
        k->named = named;
        k->node = n;
        if (t == NULL || ts_node_is_null(n))
                return;
        if (t->used == t->n_cursors) {
                size_t cap = t->n_cursors + 16;
                TSTreeCursor **a = reallocarray(t->cursors, cap, sizeof(*a));
                if (a == NULL)
                        return;
                t->cursors = a;
                for (; t->n_cursors < cap; t->n_cursors++) {
                        TSTreeCursor *cur = malloc(sizeof(*cur));
                        if (cur == NULL)
                                break;
                        *cur = ts_tree_cursor_new(n);
                        t->cursors[t->n_cursors] = cur;
                }
                if (t->used == t->n_cursors)
                        return;
        }
        k->cur = t->cursors[t->used++];
        ts_tree_cursor_reset(k->cur, n);
}

bool review_children_next(struct review_children *k, TSNode *ret)
{
        if (k->cur == NULL) {
                /* No cursor (out of memory): by index, slowly. */
                uint32_t cnt = k->named ? ts_node_named_child_count(k->node) : ts_node_child_count(k->node);
                if (ts_node_is_null(k->node) || k->index >= cnt)
                        return false;
                *ret = k->named ? ts_node_named_child(k->node, k->index) : ts_node_child(k->node, k->index);
                k->index++;
                return true;
        }
        bool ok = k->index++ ? ts_tree_cursor_goto_next_sibling(k->cur) : ts_tree_cursor_goto_first_child(k->cur);
        for (; ok; ok = ts_tree_cursor_goto_next_sibling(k->cur)) {
                TSNode n = ts_tree_cursor_current_node(k->cur);
                if (!k->named || ts_node_is_named(n)) {
                        *ret = n;
                        return true;
                }
        }
        return false;
}

void review_children_release(struct review_children *k)
{
        /* Cursors are taken and given back in stack order. */
        if (k->cur && thread_state && thread_state->used > 0)
                thread_state->used--;
        k->cur = NULL;
}

static int review_run(struct review_ctx *c, enum review_lang lang)
{
        /* A nested review (exec("..."), python -c) parses with the same
         * parser: the outer tree no longer needs it. */
        TSParser *p = thread_parser(lang);
        if (p == NULL)
                return -1;
        /* tree-sitter takes a 32-bit length. */
        uint32_t n = c->len > UINT32_MAX ? UINT32_MAX : (uint32_t)c->len;
        TSTree *t = ts_parser_parse_string(p, NULL, c->code, n);
        if (t == NULL)
                return -1;
        if (lang == REVIEW_PYTHON)
                review_python(c, t);
        else
                review_shell(c, t);
        ts_tree_delete(t);
        return 0;
}

void review_nested(struct review_ctx *c, TSNode at, enum review_lang lang, const char *code, size_t len)
{
        if (c->nesting >= REVIEW_MAX_NESTING || len == 0)
                return;
        TSPoint pt = ts_node_start_point(at);
        struct review_ctx sub = *c;
        sub.code = code;
        sub.len = len;
        sub.nesting = c->nesting + 1;
        /* Findings inside point at the outermost string that holds the code. */
        if (c->nesting == 0) {
                sub.at_line = pt.row + 1;
                sub.at_col = pt.column + 1;
        }
        if (review_run(&sub, lang) < 0)
                c->failed = true;
        c->failed |= sub.failed;
}

static int finding_cmp(const void *a, const void *b)
{
        const struct review_finding *x = a, *y = b;
        if (x->line != y->line)
                return x->line < y->line ? -1 : 1;
        if (x->column != y->column)
                return x->column < y->column ? -1 : 1;
        return strcmp(x->rule, y->rule);
}

int review_code(enum review_lang lang, const char *code, size_t len, const struct review_policy *policy,
                struct review_result *ret, corral_error **ret_err)
{
        memset(ret, 0, sizeof(*ret));
        if (policy->level == REVIEW_LEVEL_OFF)
                return 0;
        double t0 = monotonic_ms();
        struct review_ctx c = { .code = code, .len = len, .policy = policy, .result = ret };
        if (review_run(&c, lang) < 0 || c.failed) {
                review_result_release(ret);
                return corral_fail(ret_err, ENOMEM, "cannot review the code");
        }
        if (ret->n_findings > 1)
                qsort(ret->findings, ret->n_findings, sizeof(*ret->findings), finding_cmp);
        ret->ms = monotonic_ms() - t0;
        return 0;
}

int review_code_in_context(enum review_lang lang, const char *context, size_t context_len, const char *code,
                           size_t len, const struct review_policy *policy, struct review_result *ret,
                           corral_error **ret_err)
{
        if (context == NULL || context_len == 0)
                return review_code(lang, code, len, policy, ret, ret_err);
        memset(ret, 0, sizeof(*ret));
        unsigned skip = 1; /* the context's lines, and the newline added after it */
        for (size_t i = 0; i < context_len; i++)
                skip += context[i] == '\n';
        char *all = malloc(context_len + 1 + len);
        if (all == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot review the code");
        memcpy(all, context, context_len);
        all[context_len] = '\n';
        memcpy(all + context_len + 1, code, len);
        int rc = review_code(lang, all, context_len + 1 + len, policy, ret, ret_err);
        free(all);
        if (rc < 0)
                return rc;
        size_t k = 0;
        ret->n_reject = ret->n_warn = 0;
        for (size_t i = 0; i < ret->n_findings; i++) {
                struct review_finding f = ret->findings[i];
                if (f.line <= skip) {
                        free(f.subject);
                        free(f.message);
                        continue;
                }
                f.line -= skip;
                if (f.severity == REVIEW_SEV_REJECT)
                        ret->n_reject++;
                else
                        ret->n_warn++;
                ret->findings[k++] = f;
        }
        ret->n_findings = k;
        ret->rejected = ret->n_reject > 0;
        return 0;
}

json_t *review_result_to_json(const struct review_result *r)
{
        json_t *a = json_array();
        for (size_t i = 0; a && i < r->n_findings; i++) {
                const struct review_finding *f = &r->findings[i];
                json_array_append_new(a, json_pack("{s:I,s:I,s:s,s:s,s:s,s:s}", "line", (json_int_t)f->line,
                                                   "column", (json_int_t)f->column, "rule", f->rule, "severity",
                                                   review_severity_to_string(f->severity), "subject", f->subject,
                                                   "message", f->message));
        }
        return json_pack("{s:s,s:o,s:f}", "verdict", r->rejected ? "reject" : r->n_warn ? "warn" : "allow",
                         "findings", a ? a : json_array(), "ms", round_ms(r->ms));
}

char *review_result_text(const struct review_result *r)
{
        char *out = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);
        if (f == NULL)
                return NULL;
        for (size_t i = 0; i < r->n_findings; i++)
                fprintf(f, "line %u, column %u: %s\n", r->findings[i].line, r->findings[i].column,
                        r->findings[i].message);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

/* Decoding constants (what obfuscated code decodes at run time). */

char *review_base64_decode(const char *in, size_t n, size_t *ret_len)
{
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc(n + 1);
        if (out == NULL)
                return NULL;
        size_t k = 0;
        unsigned acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n && in[i] != '='; i++) {
                if (in[i] == '\n' || in[i] == '\r' || in[i] == ' ')
                        continue;
                const char *c = in[i] ? strchr(b64, in[i]) : NULL;
                if (c == NULL) {
                        free(out);
                        return NULL;
                }
                acc = (acc << 6) | (unsigned)(c - b64);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[k++] = (char)((acc >> bits) & 0xff);
                }
        }
        out[k] = '\0';
        *ret_len = k;
        return out;
}

char *review_hex_decode(const char *in, size_t n, size_t *ret_len)
{
        char *out = malloc(n / 2 + 1);
        if (out == NULL)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (in[i] == ' ' || in[i] == '\n')
                        continue;
                int hi = i + 1 < n && isxdigit((unsigned char)in[i]) ? in[i] : -1;
                int lo = i + 1 < n && isxdigit((unsigned char)in[i + 1]) ? in[i + 1] : -1;
                if (hi < 0 || lo < 0) {
                        free(out);
                        return NULL;
                }
                out[k++] = (char)(((hi <= '9' ? hi - '0' : (hi | 32) - 'a' + 10) << 4) |
                                  (lo <= '9' ? lo - '0' : (lo | 32) - 'a' + 10));
                i++;
        }
        out[k] = '\0';
        *ret_len = k;
        return out;
}

/* Paths. */

static const char *const system_dirs[] = { "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
                                           "/libx32", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys",
                                           "/usr", "/var", "/workspace", "/workspace/input" };

/* Normalise a literal path against the directory cwd (absolute; NULL:
 * /workspace): "." and ".." resolved, repeated slashes dropped.  Returns
 * false when it cannot be (too long). */
static bool normalize(const char *cwd, const char *path, char *out, size_t size)
{
        char buf[4096];
        if (snprintf(buf, sizeof(buf), "%s/%s", path[0] == '/' ? "" : cwd ? cwd : "/workspace", path) >=
            (int)sizeof(buf))
                return false;
        size_t o = 0;
        char *save = NULL;
        out[0] = '\0';
        for (char *seg = strtok_r(buf, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
                if (strcmp(seg, ".") == 0)
                        continue;
                if (strcmp(seg, "..") == 0) {
                        char *slash = strrchr(out, '/');
                        o = slash ? (size_t)(slash - out) : 0;
                        out[o] = '\0';
                        continue;
                }
                size_t l = strlen(seg);
                if (o + 1 + l + 1 > size)
                        return false;
                out[o++] = '/';
                memcpy(out + o, seg, l);
                o += l;
                out[o] = '\0';
        }
        if (o == 0)
                snprintf(out, size, "/");
        return true;
}

static bool under(const char *p, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

bool review_path_outside_at(const char *cwd, const char *path)
{
        char p[4096];
        if (*path == '\0' || strchr(path, '~') == path)
                return false;
        if (!normalize(cwd, path, p, sizeof(p)))
                return true;
        if (under(p, "/workspace") || under(p, "/tmp") || under(p, "/var/tmp") || under(p, "/dev/shm"))
                return false;
        return !(strcmp(p, "/dev/null") == 0 || strcmp(p, "/dev/stdout") == 0 || strcmp(p, "/dev/stderr") == 0 ||
                 under(p, "/dev/fd") || under(p, "/proc/self/fd"));
}

bool review_path_outside(const char *path)
{
        return review_path_outside_at(NULL, path);
}

bool review_prefix_outside_at(const char *cwd, const char *prefix)
{
        /* Only whole directories count: "/etc/" + x is under /etc, "/e" + x may be anything. */
        const char *slash = strrchr(prefix, '/');
        if (slash == NULL || (slash == prefix && prefix[0] == '/') || strchr(prefix, '~') == prefix)
                return false;
        char dir[4096], p[4096];
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - prefix), prefix);
        if (!normalize(cwd, dir, p, sizeof(p)) || strcmp(p, "/") == 0)
                return false;
        /* /dev/ + x may be /dev/null */
        return strcmp(p, "/dev") != 0 && review_path_outside_at(NULL, p);
}

bool review_path_system_dir_at(const char *cwd, const char *path)
{
        char p[4096];
        if (*path == '\0' || !normalize(cwd, path, p, sizeof(p)))
                return false;
        if (strcmp(p, "/") == 0)
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
                if (strcmp(p, system_dirs[i]) == 0)
                        return true;
        return false;
}

bool review_path_system_dir(const char *path)
{
        return review_path_system_dir_at(NULL, path);
}

bool review_path_join(const char *cwd, const char *path, char *out, size_t size)
{
        return normalize(cwd, path, out, size);
}

void review_grammar_init(struct review_grammar *g)
{
        const TSLanguage *lang = g->language();
        for (int f = 0; f < g->n_fields && f < REVIEW_GRAMMAR_MAX_FIELDS; f++)
                g->field_ids[f] = ts_language_field_id_for_name(lang, g->fields[f], (uint32_t)strlen(g->fields[f]));
        uint32_t n = ts_language_symbol_count(lang);
        unsigned char *t = calloc(n, 1);
        if (t == NULL)
                return;
        for (uint32_t sym = 0; sym < n; sym++) {
                const char *name = ts_language_symbol_name(lang, (TSSymbol)sym);
                if (name == NULL)
                        continue;
                for (int k = 1; k < g->n_kinds; k++)
                        if (strcmp(name, g->kinds[k]) == 0)
                                t[sym] = (unsigned char)k;
                if (g->flag)
                        t[sym] |= (unsigned char)g->flag(name);
        }
        g->n_symbols = n;
        g->kind_of_symbol = t;
}

unsigned review_grammar_kind(const struct review_grammar *g, TSNode n)
{
        TSSymbol sym = ts_node_symbol(n);
        if (g->kind_of_symbol)
                /* past the table: ERROR and the like, none of ours */
                return sym < g->n_symbols ? g->kind_of_symbol[sym] : 0;
        /* without the table (out of memory at start): by name */
        const char *t = ts_node_type(n);
        unsigned bits = g->flag ? g->flag(t) : 0;
        for (int k = 1; k < g->n_kinds; k++)
                if (strcmp(t, g->kinds[k]) == 0)
                        return bits | (unsigned)k;
        return bits;
}

char *review_rejection_to_json(const struct review_result *r)
{
        json_t *o = json_pack("{s:i,s:s,s:i,s:n,s:s,s:n,s:s,s:s,s:o}", "schema", 1, "status", "rejected", "exit_code",
                              /* the CLI's EXIT_REVIEW_REJECTED */ 123, "signal", "reason",
                              "rejected by the safety review; nothing ran", "limit", "stdout", "", "stderr", "",
                              "review", review_result_to_json(r));
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        json_decref(o);
        return s;
}
