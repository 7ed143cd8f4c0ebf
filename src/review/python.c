/* python.c: the review of Python code over tree-sitter-python's tree.
 *
 * One walk, in source order.  Names are resolved to the dotted names they
 * stand for ("o" after `import os as o` is "os"; `s` after `from os import
 * system as s` is "os.system"; `__import__("o" + "s")`, getattr(os,
 * "sys" + "tem"), sys.modules["os"], vars(os)["system"] and
 * globals()["__builtins__"] too), and every *use* of a name is checked, called
 * or not: `f = os.system` is found where os.system appears, so an alias of a
 * function needs no tracking; aliases of modules do, and names bound in more
 * than one place keep every value they may have (up to VMAX).
 *
 * A binding at module level outside any block replaces what a name stood
 * for; one inside a block (if, def, loop, try) adds to it, and a name that
 * may be unbound may still be the builtin of that name.  What cannot be
 * resolved statically (a computed import name, getattr of a computed name
 * on a sensitive module, eval of a built string) is itself a finding.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "review-internal.h"

#define VMAX 4

/* What an expression may stand for. */
struct val {
        char *names[VMAX];       /* dotted names: "os", "os.system", "builtins.eval", "os.__dict__" */
        unsigned n;
        char *str;               /* a constant string */
        size_t str_len;
        char *path;              /* a pathlib.Path of a constant path */
        bool is_int;
        long long num;
};

struct binding {
        char *name;
        uint32_t hash;           /* of name: most lookups compare only this */
        char *vals[VMAX];
        unsigned n;
        bool definite;           /* bound unconditionally at module level: no builtin fallback */
};

struct py {
        struct review_ctx *c;
        struct binding *b;
        size_t nb, ab;
        char *stars[8];          /* modules imported with `from M import *` */
        unsigned nstars;
        unsigned nest;           /* inside blocks */
        unsigned loop;           /* inside loops and comprehensions */
        unsigned depth;
        bool too_deep;
        /* The function being walked: does it fork, and call itself? */
        const char *fn_name;
        bool fn_fork, fn_self;
        TSNode fn_fork_at;
};

/* Node kinds the walk dispatches on, by symbol: comparing type strings
 * for every node was a third of the review's time.  Several symbols may
 * share a name (aliases), so the table maps every symbol of the grammar. */
enum kind {
        K_OTHER = 0,
        K_ALIASED_IMPORT,
        K_ARGUMENT_LIST,
        K_AS_PATTERN,
        K_AS_PATTERN_TARGET,
        K_ASSIGNMENT,
        K_ATTRIBUTE,
        K_AUGMENTED_ASSIGNMENT,
        K_BINARY_OPERATOR,
        K_BLOCK,
        K_BOOLEAN_OPERATOR,
        K_CALL,
        K_CLASS_DEFINITION,
        K_COMMENT,
        K_CONCATENATED_STRING,
        K_CONDITIONAL_EXPRESSION,
        K_DICTIONARY_COMPREHENSION,
        K_DICTIONARY_SPLAT,
        K_DOTTED_NAME,
        K_ESCAPE_SEQUENCE,
        K_EXPRESSION_LIST,
        K_FLOAT,
        K_FOR_IN_CLAUSE,
        K_FOR_STATEMENT,
        K_FUNCTION_DEFINITION,
        K_FUTURE_IMPORT_STATEMENT,
        K_GENERATOR_EXPRESSION,
        K_GLOBAL_STATEMENT,
        K_IDENTIFIER,
        K_IMPORT_FROM_STATEMENT,
        K_IMPORT_STATEMENT,
        K_INTEGER,
        K_INTERPOLATION,
        K_KEYWORD_ARGUMENT,
        K_LAMBDA,
        K_LIST,
        K_LIST_COMPREHENSION,
        K_LIST_PATTERN,
        K_LIST_SPLAT,
        K_LIST_SPLAT_PATTERN,
        K_NAMED_EXPRESSION,
        K_NONLOCAL_STATEMENT,
        K_PARENTHESIZED_EXPRESSION,
        K_PATTERN_LIST,
        K_RELATIVE_IMPORT,
        K_SET_COMPREHENSION,
        K_SLICE,
        K_STRING,
        K_STRING_CONTENT,
        K_STRING_START,
        K_SUBSCRIPT,
        K_TUPLE,
        K_TUPLE_PATTERN,
        K_WHILE_STATEMENT,
        K_WILDCARD_IMPORT,
        K_COUNT,
};

static const char *const kind_names[K_COUNT] = {
        [K_ALIASED_IMPORT] = "aliased_import",
        [K_ARGUMENT_LIST] = "argument_list",
        [K_AS_PATTERN] = "as_pattern",
        [K_AS_PATTERN_TARGET] = "as_pattern_target",
        [K_ASSIGNMENT] = "assignment",
        [K_ATTRIBUTE] = "attribute",
        [K_AUGMENTED_ASSIGNMENT] = "augmented_assignment",
        [K_BINARY_OPERATOR] = "binary_operator",
        [K_BLOCK] = "block",
        [K_BOOLEAN_OPERATOR] = "boolean_operator",
        [K_CALL] = "call",
        [K_CLASS_DEFINITION] = "class_definition",
        [K_COMMENT] = "comment",
        [K_CONCATENATED_STRING] = "concatenated_string",
        [K_CONDITIONAL_EXPRESSION] = "conditional_expression",
        [K_DICTIONARY_COMPREHENSION] = "dictionary_comprehension",
        [K_DICTIONARY_SPLAT] = "dictionary_splat",
        [K_DOTTED_NAME] = "dotted_name",
        [K_ESCAPE_SEQUENCE] = "escape_sequence",
        [K_EXPRESSION_LIST] = "expression_list",
        [K_FLOAT] = "float",
        [K_FOR_IN_CLAUSE] = "for_in_clause",
        [K_FOR_STATEMENT] = "for_statement",
        [K_FUNCTION_DEFINITION] = "function_definition",
        [K_FUTURE_IMPORT_STATEMENT] = "future_import_statement",
        [K_GENERATOR_EXPRESSION] = "generator_expression",
        [K_GLOBAL_STATEMENT] = "global_statement",
        [K_IDENTIFIER] = "identifier",
        [K_IMPORT_FROM_STATEMENT] = "import_from_statement",
        [K_IMPORT_STATEMENT] = "import_statement",
        [K_INTEGER] = "integer",
        [K_INTERPOLATION] = "interpolation",
        [K_KEYWORD_ARGUMENT] = "keyword_argument",
        [K_LAMBDA] = "lambda",
        [K_LIST] = "list",
        [K_LIST_COMPREHENSION] = "list_comprehension",
        [K_LIST_PATTERN] = "list_pattern",
        [K_LIST_SPLAT] = "list_splat",
        [K_LIST_SPLAT_PATTERN] = "list_splat_pattern",
        [K_NAMED_EXPRESSION] = "named_expression",
        [K_NONLOCAL_STATEMENT] = "nonlocal_statement",
        [K_PARENTHESIZED_EXPRESSION] = "parenthesized_expression",
        [K_PATTERN_LIST] = "pattern_list",
        [K_RELATIVE_IMPORT] = "relative_import",
        [K_SET_COMPREHENSION] = "set_comprehension",
        [K_SLICE] = "slice",
        [K_STRING] = "string",
        [K_STRING_CONTENT] = "string_content",
        [K_STRING_START] = "string_start",
        [K_SUBSCRIPT] = "subscript",
        [K_TUPLE] = "tuple",
        [K_TUPLE_PATTERN] = "tuple_pattern",
        [K_WHILE_STATEMENT] = "while_statement",
        [K_WILDCARD_IMPORT] = "wildcard_import",
};

/* The fields the walk reads, by id: ts_node_child_by_field_name() looks
 * the name up among the grammar's field names on every call. */
enum field {
        F_ALIAS,
        F_ALTERNATIVE,
        F_ARGUMENTS,
        F_ATTRIBUTE,
        F_BODY,
        F_FUNCTION,
        F_LEFT,
        F_MODULE_NAME,
        F_NAME,
        F_OBJECT,
        F_OPERATOR,
        F_PARAMETERS,
        F_RETURN_TYPE,
        F_RIGHT,
        F_SUBSCRIPT,
        F_SUPERCLASSES,
        F_VALUE,
        F_COUNT,
};

static const char *const field_names[F_COUNT] = {
        [F_ALIAS] = "alias",
        [F_ALTERNATIVE] = "alternative",
        [F_ARGUMENTS] = "arguments",
        [F_ATTRIBUTE] = "attribute",
        [F_BODY] = "body",
        [F_FUNCTION] = "function",
        [F_LEFT] = "left",
        [F_MODULE_NAME] = "module_name",
        [F_NAME] = "name",
        [F_OBJECT] = "object",
        [F_OPERATOR] = "operator",
        [F_PARAMETERS] = "parameters",
        [F_RETURN_TYPE] = "return_type",
        [F_RIGHT] = "right",
        [F_SUBSCRIPT] = "subscript",
        [F_SUPERCLASSES] = "superclasses",
        [F_VALUE] = "value",
};

static struct review_grammar grammar = {
        .language = tree_sitter_python,
        .kinds = kind_names,
        .n_kinds = K_COUNT,
        .fields = field_names,
        .n_fields = F_COUNT,
};
_Static_assert(F_COUNT <= REVIEW_GRAMMAR_MAX_FIELDS, "review_grammar.field_ids is too small");
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void kinds_init(void)
{
        review_grammar_init(&grammar);
}

static enum kind kind(TSNode n)
{
        return (enum kind)review_grammar_kind(&grammar, n);
}

/* A field's child (the first, for fields that repeat); null if none.  A
 * field id of 0 (not in the grammar) gives null too. */
static TSNode field(TSNode n, enum field f)
{
        return ts_node_child_by_field_id(n, grammar.field_ids[f]);
}

/* The node's text, in buf when it is short (names, operators: no
 * allocation per node), else malloc'd into *heap for the caller to free;
 * NULL on ENOMEM.  The same text as review_node_text(). */
#define NODE_STR_BUF 64
static const char *node_str(struct py *p, TSNode n, char buf[static NODE_STR_BUF], char **heap)
{
        uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
        if (b > p->c->len)
                b = (uint32_t)p->c->len;
        if (a > b)
                a = b;
        size_t l = strnlen(p->c->code + a, b - a);
        if (l < NODE_STR_BUF) {
                memcpy(buf, p->c->code + a, l);
                buf[l] = '\0';
                return buf;
        }
        *heap = review_node_text(p->c, n);
        return *heap;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
        /* (the first byte first: most names match none of a list) */
        for (size_t i = 0; i < n; i++)
                if (s[0] == list[i][0] && strcmp(s, list[i]) == 0)
                        return true;
        return false;
}

static void val_release(struct val *v)
{
        for (unsigned i = 0; i < v->n; i++)
                free(v->names[i]);
        free(v->str);
        free(v->path);
        memset(v, 0, sizeof(*v));
}

/* Add a name (taken); duplicates and names past VMAX are dropped. */
static void val_take(struct val *v, char *name)
{
        if (name == NULL)
                return;
        for (unsigned i = 0; i < v->n; i++)
                if (strcmp(v->names[i], name) == 0) {
                        free(name);
                        return;
                }
        if (v->n < VMAX)
                v->names[v->n++] = name;
        else
                free(name);
}

/* Modules that other modules re-export under their own name (shutil.os,
 * os.path.os, subprocess.sys...): X.os.system is os.system. */
static const char *const reexported[] = { "os", "posix", "sys", "subprocess", "ctypes", "socket", "builtins",
                                          "importlib", "pty" };

/* posix and nt are os under another name. */
static char *canon(char *name)
{
        if (name == NULL)
                return NULL;
        /* Not through objects: self.socket of an unbound self is not the module. */
        bool object = strncmp(name, "builtins.", 9) == 0 || strncmp(name, "__main__.", 9) == 0;
        for (char *dot = object ? NULL : strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
                size_t l = strcspn(dot + 1, ".");
                for (size_t i = 0; i < ARRAY_SIZE(reexported); i++)
                        if (strlen(reexported[i]) == l && strncmp(dot + 1, reexported[i], l) == 0) {
                                memmove(name, dot + 1, strlen(dot + 1) + 1);
                                return canon(name);
                        }
        }
        const char *alias[] = { "posix", "nt" };
        for (size_t i = 0; i < ARRAY_SIZE(alias); i++) {
                size_t l = strlen(alias[i]);
                if (strncmp(name, alias[i], l) == 0 && (name[l] == '\0' || name[l] == '.')) {
                        char *n = NULL;
                        if (asprintf(&n, "os%s", name + l) < 0)
                                n = NULL;
                        free(name);
                        return n;
                }
        }
        return name;
}

static char *dotted(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        char *s = malloc(la + 1 + lb + 1);
        if (s == NULL)
                return NULL;
        memcpy(s, a, la);
        s[la] = '.';
        memcpy(s + la + 1, b, lb + 1);
        return canon(s);
}

static bool under_module(const char *name, const char *m)
{
        size_t n = strlen(m);
        return strncmp(name, m, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/* Bindings. */

static uint32_t name_hash(const char *s)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 16777619u;
        return h;
}

static struct binding *find_binding(struct py *p, const char *name)
{
        uint32_t h = name_hash(name);
        for (size_t i = 0; i < p->nb; i++)
                if (p->b[i].hash == h && strcmp(p->b[i].name, name) == 0)
                        return &p->b[i];
        return NULL;
}

/* Bind name to what v stands for (v NULL: something unknown). */
static void bind(struct py *p, const char *name, const struct val *v)
{
        struct binding *b = find_binding(p, name);
        if (b == NULL) {
                if (p->nb == p->ab) {
                        size_t n = p->ab ? p->ab * 2 : 32;
                        struct binding *nb = reallocarray(p->b, n, sizeof(*nb));
                        if (nb == NULL) {
                                p->c->failed = true;
                                return;
                        }
                        p->b = nb;
                        p->ab = n;
                }
                b = &p->b[p->nb];
                memset(b, 0, sizeof(*b));
                b->name = strdup(name);
                if (b->name == NULL) {
                        p->c->failed = true;
                        return;
                }
                b->hash = name_hash(name);
                p->nb++;
        }
        if (p->nest == 0) {
                /* Unconditional: replaces. */
                for (unsigned i = 0; i < b->n; i++)
                        free(b->vals[i]);
                b->n = 0;
                b->definite = true;
        }
        /* A pathlib.Path of a constant is kept as "@path:P". */
        char *pathname = NULL;
        if (v && v->path && b->n < VMAX && asprintf(&pathname, "@path:%s", v->path) >= 0)
                b->vals[b->n++] = pathname;
        for (unsigned i = 0; v && i < v->n && b->n < VMAX; i++) {
                bool dup = false;
                for (unsigned j = 0; j < b->n; j++)
                        dup |= strcmp(b->vals[j], v->names[i]) == 0;
                if (!dup && (b->vals[b->n] = strdup(v->names[i])) != NULL)
                        b->n++;
        }
}

static void bind_name(struct py *p, const char *name, const char *target)
{
        struct val v = { .n = 1 };
        v.names[0] = (char *)target;
        bind(p, name, &v);
}

static bool is_module_root(const char *id);

static void lookup(struct py *p, const char *id, struct val *v)
{
        if (strcmp(id, "__builtins__") == 0) {
                val_take(v, strdup("builtins"));
                return;
        }
        struct binding *b = find_binding(p, id);
        for (unsigned i = 0; b && i < b->n; i++) {
                if (strncmp(b->vals[i], "@path:", 6) == 0) {
                        if (v->path == NULL)
                                v->path = strdup(b->vals[i] + 6);
                        continue;
                }
                val_take(v, strdup(b->vals[i]));
        }
        if (b && b->definite)
                return;
        /* A module used without an import we saw (one lost in a syntax
         * error, or made by exec) is still that module. */
        if (b == NULL && is_module_root(id))
                val_take(v, canon(strdup(id)));
        val_take(v, dotted("builtins", id));
        for (unsigned i = 0; i < p->nstars; i++)
                val_take(v, dotted(p->stars[i], id));
}

/* Constants. */

static int hexval(char ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

static void put_utf8(char *o, size_t *k, unsigned long cp)
{
        if (cp < 0x80) {
                o[(*k)++] = (char)cp;
        } else if (cp < 0x800) {
                o[(*k)++] = (char)(0xc0 | (cp >> 6));
                o[(*k)++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
                o[(*k)++] = (char)(0xe0 | (cp >> 12));
                o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                o[(*k)++] = (char)(0x80 | (cp & 0x3f));
        } else {
                o[(*k)++] = (char)(0xf0 | ((cp >> 18) & 0x07));
                o[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
                o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                o[(*k)++] = (char)(0x80 | (cp & 0x3f));
        }
}

/* Python's escapes, decoded into o (at most as long as s); returns the length. */
static size_t unescape(const char *s, size_t n, char *o)
{
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] != '\\' || i + 1 == n) {
                        o[k++] = s[i];
                        continue;
                }
                char e = s[++i];
                int width = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
                if (width) {
                        unsigned long cp = 0;
                        int j = 0;
                        for (; j < width && i + 1 + j < n && hexval(s[i + 1 + j]) >= 0; j++)
                                cp = cp * 16 + (unsigned long)hexval(s[i + 1 + j]);
                        /* A UTF-8 form never outgrows its escape (\xHH: 4 bytes for 2). */
                        if (j == width && cp <= 0x10ffff) {
                                put_utf8(o, &k, cp);
                                i += (size_t)j;
                                continue;
                        }
                        o[k++] = '\\';
                        o[k++] = e;
                        continue;
                }
                if (e >= '0' && e <= '7') {
                        unsigned v = 0;
                        int j = 0;
                        for (; j < 3 && i + j < n && s[i + j] >= '0' && s[i + j] <= '7'; j++)
                                v = v * 8 + (unsigned)(s[i + j] - '0');
                        if (v < 0x80) {
                                o[k++] = (char)v;
                                i += (size_t)j - 1;
                                continue;
                        }
                        o[k++] = '\\';
                        o[k++] = e;
                        continue;
                }
                switch (e) {
                case 'n': o[k++] = '\n'; break;
                case 't': o[k++] = '\t'; break;
                case 'r': o[k++] = '\r'; break;
                case 'a': o[k++] = '\a'; break;
                case 'b': o[k++] = '\b'; break;
                case 'f': o[k++] = '\f'; break;
                case 'v': o[k++] = '\v'; break;
                case '\\': o[k++] = '\\'; break;
                case '\'': o[k++] = '\''; break;
                case '"': o[k++] = '"'; break;
                case '\n': break;
                default:
                        o[k++] = '\\';
                        o[k++] = e;
                        break;
                }
        }
        o[k] = '\0';
        return k;
}

/* A string literal without interpolations: its value. */
static bool string_value(struct py *p, TSNode n, struct val *v)
{
        struct review_ctx *c = p->c;
        bool raw = false;
        size_t cap = ts_node_end_byte(n) - ts_node_start_byte(n) + 1, len = 0;
        char *out = malloc(cap);
        if (out == NULL) {
                c->failed = true;
                return false;
        }
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, false);
        while (review_children_next(&k, &ch)) {
                uint32_t a = ts_node_start_byte(ch), b = ts_node_end_byte(ch);
                const enum kind ck = kind(ch);
                if (b > c->len || a > b || ck == K_INTERPOLATION) {
                        review_children_release(&k);
                        free(out);
                        return false;
                }
                if (ck == K_STRING_START) {
                        for (uint32_t j = a; j < b && c->code[j] != '"' && c->code[j] != '\''; j++)
                                raw |= c->code[j] == 'r' || c->code[j] == 'R';
                } else if (ck == K_STRING_CONTENT || ck == K_ESCAPE_SEQUENCE) {
                        if (raw) {
                                memcpy(out + len, c->code + a, b - a);
                                len += b - a;
                                out[len] = '\0';
                        } else {
                                len += unescape(c->code + a, b - a, out + len);
                        }
                }
        }
        review_children_release(&k);
        out[len] = '\0';
        v->str = out;
        v->str_len = len;
        return true;
}

static void eval(struct py *p, TSNode n, struct val *v);

/* The constant string of an expression, or NULL. */
static char *const_str(struct py *p, TSNode n)
{
        if (ts_node_is_null(n))
                return NULL;
        struct val v = { 0 };
        eval(p, n, &v);
        char *s = TAKE_PTR(v.str);
        val_release(&v);
        return s;
}

/* The n-th positional argument of a call. */
static TSNode call_arg(TSNode call, unsigned idx)
{
        TSNode args = field(call, F_ARGUMENTS), none = { 0 };
        if (ts_node_is_null(args) || kind(args) != K_ARGUMENT_LIST)
                return none;
        unsigned pos = 0;
        struct review_children k;
        TSNode a, found = none;
        review_children_init(&k, args, true);
        while (review_children_next(&k, &a)) {
                const enum kind ak = kind(a);
                if (ak == K_KEYWORD_ARGUMENT || ak == K_LIST_SPLAT || ak == K_DICTIONARY_SPLAT || ak == K_COMMENT)
                        continue;
                if (pos++ == idx) {
                        found = a;
                        break;
                }
        }
        review_children_release(&k);
        return found;
}

static TSNode arg(struct py *p, TSNode call, unsigned idx, const char *kw)
{
        TSNode a = call_arg(call, idx), none = { 0 };
        if (!ts_node_is_null(a) || kw == NULL)
                return a;
        TSNode args = field(call, F_ARGUMENTS);
        if (ts_node_is_null(args))
                return none;
        struct review_children k;
        TSNode ka, found = none;
        review_children_init(&k, args, true);
        while (review_children_next(&k, &ka)) {
                if (kind(ka) != K_KEYWORD_ARGUMENT)
                        continue;
                TSNode name = field(ka, F_NAME);
                uint32_t s = ts_node_start_byte(name), e = ts_node_end_byte(name);
                if (e <= p->c->len && e - s == strlen(kw) && memcmp(p->c->code + s, kw, e - s) == 0) {
                        found = field(ka, F_VALUE);
                        break;
                }
        }
        review_children_release(&k);
        return found;
}

static bool dictish(const char *name)
{
        size_t l = strlen(name);
        return strcmp(name, "sys.modules") == 0 || (l > 9 && strcmp(name + l - 9, ".__dict__") == 0);
}

/* d[key] for a namespace-like d (sys.modules, X.__dict__, globals()). */
static void subscript_name(struct py *p, const char *d, const char *key, struct val *v)
{
        if (strcmp(d, "sys.modules") == 0) {
                val_take(v, canon(strdup(key)));
                return;
        }
        size_t l = strlen(d) - 9;
        if (l == 8 && strncmp(d, "__main__", 8) == 0) {
                lookup(p, key, v);
                return;
        }
        char *base = strndup(d, l);
        if (base)
                val_take(v, dotted(base, key));
        free(base);
}

static void eval_call(struct py *p, TSNode n, struct val *v)
{
        TSNode fn = field(n, F_FUNCTION);
        if (ts_node_is_null(fn))
                return;
        /* Methods of constants: "".join([...]), b"os".decode(). */
        if (kind(fn) == K_ATTRIBUTE) {
                TSNode obj = field(fn, F_OBJECT);
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(fn, F_ATTRIBUTE), attr_buf, &attr_heap);
                if (attr && (strcmp(attr, "join") == 0 || strcmp(attr, "decode") == 0 || strcmp(attr, "lower") == 0 ||
                             strcmp(attr, "strip") == 0)) {
                        cleanup_free char *sep = const_str(p, obj);
                        if (sep == NULL)
                                goto names;
                        if (attr[0] != 'j') {
                                v->str = TAKE_PTR(sep);
                                if (attr[0] == 'l')
                                        for (char *s = v->str; *s; s++)
                                                *s = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
                                v->str_len = strlen(v->str);
                                return;
                        }
                        TSNode list = call_arg(n, 0);
                        if (ts_node_is_null(list) || !(kind(list) == K_LIST || kind(list) == K_TUPLE))
                                return;
                        char *out = NULL;
                        size_t olen = 0;
                        FILE *f = open_memstream(&out, &olen);
                        if (f == NULL)
                                return;
                        bool ok = true;
                        struct review_children k;
                        TSNode item;
                        review_children_init(&k, list, true);
                        for (uint32_t i = 0; ok && review_children_next(&k, &item); i++) {
                                char *s = const_str(p, item);
                                ok = s != NULL;
                                if (s)
                                        fprintf(f, "%s%s", i ? sep : "", s);
                                free(s);
                        }
                        review_children_release(&k);
                        fclose(f);
                        if (ok && out) {
                                v->str = out;
                                v->str_len = olen;
                        } else {
                                free(out);
                        }
                        return;
                }
        }
names:;
        struct val f = { 0 };
        eval(p, fn, &f);
        for (unsigned i = 0; i < f.n; i++) {
                const char *nm = f.names[i];
                /* operator.attrgetter("system")(os) is os.system */
                if (strncmp(nm, "@attr:", 6) == 0) {
                        struct val o = { 0 };
                        eval(p, call_arg(n, 0), &o);
                        for (unsigned j = 0; j < o.n; j++)
                                val_take(v, dotted(o.names[j], nm + 6));
                        val_release(&o);
                        continue;
                }
                if (strcmp(nm, "operator.attrgetter") == 0 || strcmp(nm, "operator.methodcaller") == 0) {
                        cleanup_free char *a = const_str(p, call_arg(n, 0));
                        char *pseudo = NULL;
                        if (a && asprintf(&pseudo, "@attr:%s", a) >= 0)
                                val_take(v, pseudo);
                        continue;
                }
                if (strcmp(nm, "builtins.__import__") == 0 || strcmp(nm, "importlib.import_module") == 0 ||
                    strcmp(nm, "importlib.__import__") == 0) {
                        char *mod = const_str(p, call_arg(n, 0));
                        if (mod && nm[0] == 'b' && strchr(mod, '.'))
                                *strchr(mod, '.') = '\0'; /* __import__("a.b") is a */
                        val_take(v, canon(mod));
                } else if (strcmp(nm, "builtins.getattr") == 0) {
                        cleanup_free char *attr = const_str(p, call_arg(n, 1));
                        struct val o = { 0 };
                        if (attr)
                                eval(p, call_arg(n, 0), &o);
                        for (unsigned j = 0; j < o.n; j++)
                                val_take(v, dotted(o.names[j], attr));
                        val_release(&o);
                } else if (strcmp(nm, "builtins.globals") == 0 || strcmp(nm, "builtins.locals") == 0 ||
                           (strcmp(nm, "builtins.vars") == 0 && ts_node_is_null(call_arg(n, 0)))) {
                        val_take(v, strdup("__main__.__dict__"));
                } else if (strcmp(nm, "builtins.vars") == 0) {
                        struct val o = { 0 };
                        eval(p, call_arg(n, 0), &o);
                        for (unsigned j = 0; j < o.n; j++)
                                val_take(v, dotted(o.names[j], "__dict__"));
                        val_release(&o);
                } else if (strcmp(nm, "builtins.chr") == 0) {
                        struct val o = { 0 };
                        eval(p, call_arg(n, 0), &o);
                        if (o.is_int && o.num > 0 && o.num < 0x110000 && v->str == NULL) {
                                v->str = malloc(5);
                                if (v->str) {
                                        put_utf8(v->str, &v->str_len, (unsigned long)o.num);
                                        v->str[v->str_len] = '\0';
                                }
                        }
                        val_release(&o);
                } else if (strcmp(nm, "builtins.str") == 0 && v->str == NULL) {
                        v->str = const_str(p, call_arg(n, 0));
                        v->str_len = v->str ? strlen(v->str) : 0;
                } else if ((strcmp(nm, "pathlib.Path") == 0 || strcmp(nm, "pathlib.PosixPath") == 0 ||
                            strcmp(nm, "pathlib.PurePath") == 0 || strcmp(nm, "pathlib.PurePosixPath") == 0) &&
                           v->path == NULL) {
                        v->path = const_str(p, call_arg(n, 0));
                } else {
                        size_t l = strlen(nm);
                        if (l > 4 && strcmp(nm + l - 4, ".get") == 0) {
                                char *d = strndup(nm, l - 4);
                                cleanup_free char *key = d && dictish(d) ? const_str(p, call_arg(n, 0)) : NULL;
                                if (key)
                                        subscript_name(p, d, key, v);
                                free(d);
                        }
                }
        }
        val_release(&f);
}

static void eval(struct py *p, TSNode n, struct val *v)
{
        if (ts_node_is_null(n) || p->c->failed)
                return;
        if (++p->depth > REVIEW_MAX_DEPTH) {
                p->depth--;
                return;
        }
        const enum kind nk = kind(n);
        if (nk == K_IDENTIFIER) {
                char id_buf[NODE_STR_BUF];
                cleanup_free char *id_heap = NULL;
                const char *id = node_str(p, n, id_buf, &id_heap);
                if (id)
                        lookup(p, id, v);
        } else if (nk == K_ATTRIBUTE) {
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(n, F_ATTRIBUTE), attr_buf, &attr_heap);
                struct val o = { 0 };
                eval(p, field(n, F_OBJECT), &o);
                for (unsigned i = 0; attr && i < o.n; i++)
                        val_take(v, dotted(o.names[i], attr));
                val_release(&o);
        } else if (nk == K_CALL) {
                eval_call(p, n, v);
        } else if (nk == K_SUBSCRIPT) {
                struct val o = { 0 };
                eval(p, field(n, F_VALUE), &o);
                TSNode key = field(n, F_SUBSCRIPT);
                if (o.str && !ts_node_is_null(key) && kind(key) == K_SLICE) {
                        /* "metsys"[::-1] */
                        cleanup_free char *k = review_node_text(p->c, key);
                        if (k && strcmp(k, "::-1") == 0) {
                                for (size_t i = 0; i < o.str_len / 2; i++) {
                                        char ch = o.str[i];
                                        o.str[i] = o.str[o.str_len - 1 - i];
                                        o.str[o.str_len - 1 - i] = ch;
                                }
                                v->str = TAKE_PTR(o.str);
                                v->str_len = o.str_len;
                        }
                } else {
                        cleanup_free char *k = o.n ? const_str(p, key) : NULL;
                        for (unsigned i = 0; k && i < o.n; i++)
                                if (dictish(o.names[i]))
                                        subscript_name(p, o.names[i], k, v);
                }
                val_release(&o);
        } else if (nk == K_STRING) {
                string_value(p, n, v);
        } else if (nk == K_CONCATENATED_STRING || nk == K_BINARY_OPERATOR) {
                TSNode l, r;
                if (nk == K_CONCATENATED_STRING) {
                        /* fold pairwise, left to right */
                        char *acc = NULL;
                        size_t alen = 0;
                        struct review_children k;
                        TSNode part;
                        review_children_init(&k, n, true);
                        while (review_children_next(&k, &part)) {
                                struct val s = { 0 };
                                eval(p, part, &s);
                                char *j = s.str ? realloc(acc, alen + s.str_len + 1) : NULL;
                                if (j == NULL) {
                                        val_release(&s);
                                        free(acc);
                                        review_children_release(&k);
                                        goto out;
                                }
                                memcpy(j + alen, s.str, s.str_len + 1);
                                acc = j;
                                alen += s.str_len;
                                val_release(&s);
                        }
                        review_children_release(&k);
                        v->str = acc;
                        v->str_len = alen;
                        goto out;
                }
                l = field(n, F_LEFT);
                r = field(n, F_RIGHT);
                char op_buf[NODE_STR_BUF];
                cleanup_free char *op_heap = NULL;
                const char *op = node_str(p, field(n, F_OPERATOR), op_buf, &op_heap);
                struct val a = { 0 }, b = { 0 };
                eval(p, l, &a);
                eval(p, r, &b);
                if (op && strcmp(op, "+") == 0 && a.str && b.str) {
                        v->str = malloc(a.str_len + b.str_len + 1);
                        if (v->str) {
                                memcpy(v->str, a.str, a.str_len);
                                memcpy(v->str + a.str_len, b.str, b.str_len + 1);
                                v->str_len = a.str_len + b.str_len;
                        }
                } else if (op && strcmp(op, "/") == 0 && a.path && b.str) {
                        if (asprintf(&v->path, "%s/%s", a.path, b.str) < 0)
                                v->path = NULL;
                } else if (op && strcmp(op, "*") == 0 && a.str && b.is_int && b.num >= 0 && b.num <= 64) {
                        v->str = calloc(1, a.str_len * (size_t)b.num + 1);
                        for (long long i = 0; v->str && i < b.num; i++)
                                memcpy(v->str + a.str_len * (size_t)i, a.str, a.str_len);
                        v->str_len = v->str ? a.str_len * (size_t)b.num : 0;
                }
                val_release(&a);
                val_release(&b);
        } else if (nk == K_INTEGER) {
                cleanup_free char *s = review_node_text(p->c, n);
                char *end = NULL;
                if (s) {
                        v->num = strtoll(s, &end, 0);
                        v->is_int = end && *end == '\0';
                }
        } else if (nk == K_PARENTHESIZED_EXPRESSION) {
                eval(p, ts_node_named_child(n, 0), v);
        } else if (nk == K_CONDITIONAL_EXPRESSION || nk == K_BOOLEAN_OPERATOR) {
                struct review_children k;
                TSNode ch;
                review_children_init(&k, n, true);
                while (review_children_next(&k, &ch)) {
                        struct val a = { 0 };
                        eval(p, ch, &a);
                        for (unsigned j = 0; j < a.n; j++)
                                val_take(v, TAKE_PTR(a.names[j]));
                        a.n = 0;
                        val_release(&a);
                }
                review_children_release(&k);
        } else if (nk == K_NAMED_EXPRESSION) {
                eval(p, field(n, F_VALUE), v);
        }
out:
        p->depth--;
}

/* Rules on names. */

struct name_rule {
        const char *name;
        const char *rule;
};

/* A name under one of these (the module or anything in it) is the rule's. */
static const struct name_rule prefix_rules[] = {
        { "subprocess", "PY-PROC-001" },
        { "_posixsubprocess", "PY-PROC-001" },
        { "asyncio.create_subprocess_exec", "PY-PROC-001" },
        { "asyncio.create_subprocess_shell", "PY-PROC-001" },
        { "asyncio.subprocess", "PY-PROC-001" },
        { "os.system", "PY-PROC-002" },
        { "os.popen", "PY-PROC-002" },
        { "os.posix_spawn", "PY-PROC-003" },
        { "os.posix_spawnp", "PY-PROC-003" },
        { "pty", "PY-PROC-004" },
        { "os.forkpty", "PY-PROC-004" },
        { "os.openpty", "PY-PROC-004" },
        { "os.register_at_fork", "PY-PROC-005" },
        { "ctypes", "PY-FFI-001" },
        { "_ctypes", "PY-FFI-001" },
        { "numpy.ctypeslib", "PY-FFI-001" },
        { "cffi", "PY-FFI-002" },
        { "_cffi_backend", "PY-FFI-002" },
        { "socket", "PY-NET-001" },
        { "_socket", "PY-NET-001" },
        { "ssl", "PY-NET-001" },
        { "_ssl", "PY-NET-001" },
        { "socketserver", "PY-NET-001" },
        { "multiprocessing.connection", "PY-NET-001" },
        { "asyncio.open_connection", "PY-NET-001" },
        { "asyncio.start_server", "PY-NET-001" },
        { "asyncio.open_unix_connection", "PY-NET-001" },
        { "asyncio.start_unix_server", "PY-NET-001" },
        { "urllib.request", "PY-NET-002" },
        { "urllib.urlopen", "PY-NET-002" },
        { "urllib2", "PY-NET-002" },
        { "http.client", "PY-NET-002" },
        { "http.server", "PY-NET-002" },
        { "requests", "PY-NET-002" },
        { "httpx", "PY-NET-002" },
        { "urllib3", "PY-NET-002" },
        { "aiohttp", "PY-NET-002" },
        { "ftplib", "PY-NET-002" },
        { "smtplib", "PY-NET-002" },
        { "telnetlib", "PY-NET-002" },
        { "poplib", "PY-NET-002" },
        { "imaplib", "PY-NET-002" },
        { "nntplib", "PY-NET-002" },
        { "xmlrpc.client", "PY-NET-002" },
        { "xmlrpc.server", "PY-NET-002" },
        { "paramiko", "PY-NET-002" },
        { "runpy", "PY-DYN-001" },
        { "code.interact", "PY-DYN-001" },
        { "code.InteractiveInterpreter", "PY-DYN-001" },
        { "code.InteractiveConsole", "PY-DYN-001" },
        { "code.compile_command", "PY-DYN-001" },
        { "codeop", "PY-DYN-001" },
        { "importlib.util.spec_from_file_location", "PY-DYN-001" },
        { "importlib.util.spec_from_loader", "PY-DYN-001" },
        { "importlib.machinery.SourceFileLoader", "PY-DYN-001" },
        { "importlib.machinery.SourcelessFileLoader", "PY-DYN-001" },
        { "importlib.machinery.ExtensionFileLoader", "PY-FFI-001" },
        { "sys._getframe", "PY-DYN-005" },
        { "inspect.currentframe", "PY-DYN-005" },
        { "types.CodeType", "PY-DYN-005" },
        { "types.FunctionType", "PY-DYN-005" },
};

/* Attributes used to climb out of a sandbox: `().__class__.__base__.__subclasses__()`. */
static const char *const internal_attrs[] = { "__subclasses__", "__globals__", "__code__", "__closure__",
                                              "__mro__", "__base__", "__bases__", "f_globals", "f_locals",
                                              "f_builtins", "f_back", "gi_frame", "cr_frame", "ag_frame",
                                              "tb_frame", "co_code" };

/* Modules on which a computed getattr is a finding (PY-DYN-003). */
static const char *const sensitive_modules[] = { "builtins", "os", "sys", "subprocess", "importlib", "ctypes",
                                                 "_ctypes", "cffi", "socket", "pty", "shutil", "io", "_io",
                                                 "types", "inspect", "gc", "runpy", "code", "codeop", "marshal",
                                                 "posix", "operator", "__main__.__dict__" };

/* A sensitive module, its namespace (os.__dict__, vars(builtins)), the
 * globals, or sys.modules; not any object's __dict__ (self.__dict__[k] is
 * ordinary). */
static bool sensitive(const char *name)
{
        if (in_list(name, sensitive_modules, ARRAY_SIZE(sensitive_modules)) || strcmp(name, "sys.modules") == 0)
                return true;
        size_t l = strlen(name);
        if (!dictish(name) || l <= 9)
                return false;
        char base[128];
        snprintf(base, sizeof(base), "%.*s", (int)(l - 9), name);
        return strcmp(base, "__main__") == 0 || in_list(base, sensitive_modules, ARRAY_SIZE(sensitive_modules));
}

static bool is_module_root(const char *id)
{
        if (in_list(id, sensitive_modules, ARRAY_SIZE(sensitive_modules)))
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(prefix_rules); i++)
                if (strchr(prefix_rules[i].name, '.') == NULL && strcmp(prefix_rules[i].name, id) == 0)
                        return true;
        return false;
}

static const char *shown(const char *name)
{
        if (strcmp(name, "__main__.__dict__") == 0)
                return "globals()";
        return strncmp(name, "builtins.", 9) == 0 ? name + 9 : name;
}

static bool is_dyn_exec(const char *nm)
{
        return strcmp(nm, "builtins.eval") == 0 || strcmp(nm, "builtins.exec") == 0 ||
               strcmp(nm, "builtins.compile") == 0 || strcmp(nm, "builtins.execfile") == 0;
}

static bool is_dyn_import(const char *nm)
{
        return strcmp(nm, "builtins.__import__") == 0 || strcmp(nm, "importlib.import_module") == 0 ||
               strcmp(nm, "importlib.__import__") == 0;
}

/* The first parts of every name a rule looks at (sorted for bsearch):
 * most names (pandas.*, numpy.*, df.*) are none of these, and need no
 * further look. */
static const char *const rule_roots[] = { "_cffi_backend", "_ctypes", "_posixsubprocess", "_socket", "_ssl",
                                          "aiohttp", "asyncio", "builtins", "cffi", "code", "codecs", "codeop",
                                          "ctypes", "ftplib", "http", "httpx", "imaplib", "importlib", "inspect",
                                          "io", "multiprocessing", "nntplib", "numpy", "operator", "os",
                                          "paramiko", "poplib", "pty", "requests", "runpy", "shutil", "smtplib",
                                          "socket", "socketserver", "ssl", "subprocess", "sys", "telnetlib",
                                          "timeit", "types", "urllib", "urllib2", "urllib3", "xmlrpc" };

static int cmp_root(const void *key, const void *elem)
{
        const char *k = key, *e = *(const char *const *)elem;
        size_t kl = strcspn(k, "."), el = strlen(e);
        int c = strncmp(k, e, kl < el ? kl : el);
        return c ? c : (kl > el) - (kl < el);
}

static bool ruled(const char *name)
{
        return bsearch(name, rule_roots, ARRAY_SIZE(rule_roots), sizeof(rule_roots[0]), cmp_root) != NULL;
}

/* A use of name at node at (called: called is the call node). */
static void check_name(struct py *p, TSNode at, const char *name, bool called)
{
        struct review_ctx *c = p->c;
        if (review_policy_denied(c->policy, 'n', name))
                review_add(c, at, "PY-POL-001", shown(name), name);
        if (!ruled(name))
                return;
        if (strncmp(name, "os.exec", 7) == 0 || strncmp(name, "os.spawn", 8) == 0) {
                review_add(c, at, "PY-PROC-003", name, NULL);
                return;
        }
        if (strcmp(name, "os.fork") == 0) {
                review_add(c, at, p->loop ? "PY-PROC-006" : "PY-PROC-005", name, NULL);
                if (p->fn_name && !p->fn_fork) {
                        p->fn_fork = true;
                        p->fn_fork_at = at;
                }
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(prefix_rules); i++)
                if (name[0] == prefix_rules[i].name[0] && under_module(name, prefix_rules[i].name)) {
                        review_add(c, at, prefix_rules[i].rule, name, NULL);
                        return;
                }
        const char *dot = strrchr(name, '.');
        if (dot && strcmp(dot + 1, "__builtins__") == 0)
                review_add(c, at, "PY-DYN-004", "__builtins__", NULL);
        /* Referenced without being called: whatever it is later called
         * with cannot be seen. */
        if (!called && is_dyn_exec(name))
                review_add(c, at, "PY-DYN-001", shown(name), name);
        if (!called && is_dyn_import(name))
                review_add(c, at, "PY-DYN-002", shown(name), name);
}

static void check_names(struct py *p, TSNode at, const struct val *v, bool called)
{
        for (unsigned i = 0; i < v->n; i++)
                check_name(p, at, v->names[i], called);
}

/* A constant path: a string or a pathlib.Path of one. */
static char *path_of(struct py *p, TSNode n)
{
        if (ts_node_is_null(n))
                return NULL;
        struct val v = { 0 };
        eval(p, n, &v);
        char *s = v.str ? TAKE_PTR(v.str) : TAKE_PTR(v.path);
        val_release(&v);
        return s;
}

static void check_path_write(struct py *p, TSNode at, const char *what, const char *path, bool rmtree)
{
        if (path == NULL)
                return;
        char subject[256];
        snprintf(subject, sizeof(subject), "%s('%s')", what, path);
        if (rmtree && review_path_system_dir(path))
                review_add(p->c, at, "PY-FS-002", subject, what);
        else if (review_path_outside(path))
                review_add(p->c, at, "PY-FS-001", subject, what);
}

/* Functions of os and shutil that write at a path: which arguments. */
static const char *const os_write1[] = { "os.remove", "os.unlink", "os.rmdir", "os.mkdir", "os.makedirs",
                                         "os.chmod", "os.chown", "os.lchown", "os.truncate", "os.utime",
                                         "os.mkfifo", "os.mknod", "os.chflags", "os.lchmod" };
static const char *const os_write2[] = { "os.rename", "os.replace", "os.renames", "os.link", "os.symlink",
                                         "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree",
                                         "shutil.move", "shutil.copymode", "shutil.copystat" };
/* Methods that write at their first argument, whatever their object. */
static const char *const writer_methods[] = { "to_csv", "to_excel", "to_json", "to_parquet", "to_pickle",
                                              "to_hdf", "to_feather", "to_html", "to_latex", "to_stata",
                                              "to_sql", "to_xml", "savefig", "savetxt", "save", "savez",
                                              "savez_compressed", "tofile", "to_netcdf", "dump" };
/* pathlib.Path methods that write at the path. */
static const char *const path_methods[] = { "write_text", "write_bytes", "touch", "mkdir", "unlink", "rmdir",
                                            "rename", "replace", "symlink_to", "hardlink_to", "chmod",
                                            "lchmod", "link_to" };

static bool write_mode(const char *m)
{
        return m && strpbrk(m, "wax+") != NULL;
}

static void check_call(struct py *p, TSNode call, const char *nm)
{
        struct review_ctx *c = p->c;
        if (!ruled(nm))
                return;
        if (is_dyn_exec(nm)) {
                TSNode a = call_arg(call, 0);
                if (ts_node_is_null(a))
                        return;
                struct val s = { 0 };
                eval(p, a, &s);
                if (s.str)
                        review_nested(c, a, REVIEW_PYTHON, s.str, s.str_len);
                else
                        review_add(c, call, "PY-DYN-001", shown(nm), nm);
                val_release(&s);
        } else if (is_dyn_import(nm)) {
                TSNode a = call_arg(call, 0);
                cleanup_free char *mod = const_str(p, a);
                if (mod) {
                        cleanup_free char *m = canon(strdup(mod));
                        if (m)
                                check_name(p, call, m, false);
                } else if (!ts_node_is_null(a)) {
                        review_add(c, call, "PY-DYN-002", shown(nm), nm);
                }
        } else if (strcmp(nm, "builtins.getattr") == 0 || strcmp(nm, "builtins.setattr") == 0 ||
                   strcmp(nm, "builtins.delattr") == 0 || strcmp(nm, "builtins.hasattr") == 0) {
                struct val o = { 0 };
                TSNode an = call_arg(call, 1);
                if (ts_node_is_null(an))
                        return;
                eval(p, call_arg(call, 0), &o);
                cleanup_free char *attr = const_str(p, an);
                if (attr) {
                        if (in_list(attr, internal_attrs, ARRAY_SIZE(internal_attrs)))
                                review_add(c, call, "PY-DYN-005", attr, attr);
                        if (strcmp(attr, "__builtins__") == 0)
                                review_add(c, call, "PY-DYN-004", attr, attr);
                        if (review_policy_denied(c->policy, 'a', attr))
                                review_add(c, call, "PY-POL-001", attr, attr);
                        for (unsigned i = 0; i < o.n; i++) {
                                cleanup_free char *full = dotted(o.names[i], attr);
                                if (full)
                                        check_name(p, call, full, false);
                        }
                } else {
                        for (unsigned i = 0; i < o.n; i++)
                                if (sensitive(o.names[i])) {
                                        char subject[160];
                                        snprintf(subject, sizeof(subject), "%s(%s, ...)", shown(nm),
                                                 shown(o.names[i]));
                                        review_add(c, call, "PY-DYN-003", subject, nm);
                                        break;
                                }
                }
                val_release(&o);
        } else if (strcmp(nm, "timeit.timeit") == 0 || strcmp(nm, "timeit.repeat") == 0 ||
                   strcmp(nm, "timeit.Timer") == 0) {
                /* timeit compiles and runs its stmt and setup strings */
                TSNode parts[2] = { arg(p, call, 0, "stmt"), arg(p, call, 1, "setup") };
                for (int i = 0; i < 2; i++) {
                        if (ts_node_is_null(parts[i]) || kind(parts[i]) == K_LAMBDA || kind(parts[i]) == K_IDENTIFIER ||
                            kind(parts[i]) == K_ATTRIBUTE)
                                continue;
                        struct val s = { 0 };
                        eval(p, parts[i], &s);
                        if (s.str)
                                review_nested(c, parts[i], REVIEW_PYTHON, s.str, s.str_len);
                        else
                                review_add(c, call, "PY-DYN-001", shown(nm), nm);
                        val_release(&s);
                }
        } else if (strcmp(nm, "builtins.open") == 0 || strcmp(nm, "io.open") == 0 ||
                   strcmp(nm, "codecs.open") == 0) {
                cleanup_free char *path = path_of(p, arg(p, call, 0, "file"));
                cleanup_free char *mode = const_str(p, arg(p, call, 1, "mode"));
                if (write_mode(mode))
                        check_path_write(p, call, shown(nm), path, false);
        } else if (strcmp(nm, "os.open") == 0) {
                cleanup_free char *path = path_of(p, arg(p, call, 0, "path"));
                TSNode fl = arg(p, call, 1, "flags");
                cleanup_free char *flags = ts_node_is_null(fl) ? NULL : review_node_text(c, fl);
                if (flags && (strstr(flags, "O_WRONLY") || strstr(flags, "O_RDWR") || strstr(flags, "O_CREAT") ||
                              strstr(flags, "O_APPEND") || strstr(flags, "O_TRUNC")))
                        check_path_write(p, call, nm, path, false);
        } else if (in_list(nm, os_write1, ARRAY_SIZE(os_write1))) {
                cleanup_free char *path = path_of(p, call_arg(call, 0));
                check_path_write(p, call, nm, path, false);
        } else if (in_list(nm, os_write2, ARRAY_SIZE(os_write2))) {
                cleanup_free char *dst = path_of(p, call_arg(call, 1));
                check_path_write(p, call, nm, dst, false);
                /* a rename or move also removes its source; a link leaves its target alone */
                if (strstr(nm, "rename") || strstr(nm, "replace") || strstr(nm, "move")) {
                        cleanup_free char *src = path_of(p, call_arg(call, 0));
                        check_path_write(p, call, nm, src, false);
                }
        } else if (strcmp(nm, "shutil.rmtree") == 0 || strcmp(nm, "os.removedirs") == 0) {
                cleanup_free char *path = path_of(p, arg(p, call, 0, "path"));
                check_path_write(p, call, nm, path, true);
        }
}

static void visit(struct py *p, TSNode n, bool chain);

static void visit_children(struct py *p, TSNode n)
{
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (!p->c->failed && review_children_next(&k, &ch))
                visit(p, ch, false);
        review_children_release(&k);
}

static void visit_call(struct py *p, TSNode n, bool chain)
{
        TSNode fn = field(n, F_FUNCTION);
        if (ts_node_is_null(fn)) {
                visit_children(p, n);
                return;
        }
        if (p->fn_name && kind(fn) == K_IDENTIFIER) {
                char id_buf[NODE_STR_BUF];
                cleanup_free char *id_heap = NULL;
                const char *id = node_str(p, fn, id_buf, &id_heap);
                p->fn_self |= id && strcmp(id, p->fn_name) == 0;
        }
        struct val f = { 0 };
        eval(p, fn, &f);
        for (unsigned i = 0; i < f.n; i++) {
                check_name(p, n, f.names[i], true);
                check_call(p, n, f.names[i]);
        }
        val_release(&f);
        if (kind(fn) == K_ATTRIBUTE) {
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(fn, F_ATTRIBUTE), attr_buf, &attr_heap);
                if (attr && in_list(attr, writer_methods, ARRAY_SIZE(writer_methods))) {
                        cleanup_free char *path = path_of(p, call_arg(n, 0));
                        check_path_write(p, n, attr, path, false);
                }
                if (attr && (in_list(attr, path_methods, ARRAY_SIZE(path_methods)) || strcmp(attr, "open") == 0)) {
                        struct val o = { 0 };
                        eval(p, field(fn, F_OBJECT), &o);
                        cleanup_free char *mode = strcmp(attr, "open") == 0 ? const_str(p, arg(p, n, 0, "mode")) : NULL;
                        if (o.path && (strcmp(attr, "open") != 0 || write_mode(mode))) {
                                char what[96];
                                snprintf(what, sizeof(what), "Path.%s", attr);
                                check_path_write(p, n, what, o.path, false);
                        }
                        val_release(&o);
                }
        }
        /* What the call returns, when used: sys.modules.get("subprocess") */
        if (!chain) {
                struct val r = { 0 };
                eval(p, n, &r);
                check_names(p, n, &r, false);
                val_release(&r);
        }
        visit(p, fn, true);
        TSNode args = field(n, F_ARGUMENTS);
        if (!ts_node_is_null(args))
                visit(p, args, false);
}

/* Bind the names of an assignment target (v: what the right side is). */
static void bind_target(struct py *p, TSNode left, const struct val *v)
{
        if (ts_node_is_null(left))
                return;
        if (kind(left) == K_IDENTIFIER) {
                cleanup_free char *id = review_node_text(p->c, left);
                if (id)
                        bind(p, id, v);
                return;
        }
        if (kind(left) == K_PATTERN_LIST || kind(left) == K_TUPLE_PATTERN || kind(left) == K_LIST_PATTERN ||
            kind(left) == K_LIST_SPLAT_PATTERN || kind(left) == K_PARENTHESIZED_EXPRESSION || kind(left) == K_TUPLE ||
            kind(left) == K_LIST) {
                struct review_children k;
                TSNode ch;
                review_children_init(&k, left, true);
                while (review_children_next(&k, &ch))
                        bind_target(p, ch, NULL);
                review_children_release(&k);
                return;
        }
        /* o.x = ..., d[k] = ...: a use of what is assigned into. */
        visit(p, left, false);
}

static void visit_assignment(struct py *p, TSNode n)
{
        TSNode left = field(n, F_LEFT), right = field(n, F_RIGHT);
        if (ts_node_is_null(right)) {
                bind_target(p, left, NULL);
                return;
        }
        visit(p, right, false);
        /* a = b = x: the value of the innermost right side */
        TSNode r = right;
        while (kind(r) == K_ASSIGNMENT && !ts_node_is_null(field(r, F_RIGHT)))
                r = field(r, F_RIGHT);
        struct val v = { 0 };
        /* a, b = os, sys: pairwise */
        const enum kind lk = kind(left), rk = kind(r);
        if ((lk == K_PATTERN_LIST || lk == K_TUPLE_PATTERN) && (rk == K_EXPRESSION_LIST || rk == K_TUPLE) &&
            ts_node_named_child_count(left) == ts_node_named_child_count(r)) {
                struct review_children kl, kr;
                TSNode l, e_node;
                review_children_init(&kl, left, true);
                review_children_init(&kr, r, true);
                while (review_children_next(&kr, &e_node) && review_children_next(&kl, &l)) {
                        struct val e = { 0 };
                        eval(p, e_node, &e);
                        if (kind(l) == K_IDENTIFIER)
                                bind_target(p, l, &e);
                        else
                                bind_target(p, l, NULL);
                        val_release(&e);
                }
                review_children_release(&kr);
                review_children_release(&kl);
                return;
        }
        eval(p, r, &v);
        bind_target(p, left, &v);
        val_release(&v);
}

static void visit_import(struct py *p, TSNode n)
{
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &ch)) {
                TSNode name = kind(ch) == K_ALIASED_IMPORT ? field(ch, F_NAME) : ch;
                if (kind(name) != K_DOTTED_NAME)
                        continue;
                cleanup_free char *full = canon(review_node_text(p->c, name));
                if (full == NULL)
                        break;
                check_name(p, name, full, false);
                if (kind(ch) == K_ALIASED_IMPORT) {
                        cleanup_free char *alias = review_node_text(p->c, field(ch, F_ALIAS));
                        if (alias)
                                bind_name(p, alias, full);
                } else {
                        cleanup_free char *top = strndup(full, strcspn(full, "."));
                        cleanup_free char *first = review_node_text(p->c, name);
                        if (top && first) {
                                first[strcspn(first, ". \t")] = '\0';
                                bind_name(p, first, top);
                        }
                }
        }
        review_children_release(&k);
}

static void visit_import_from(struct py *p, TSNode n)
{
        TSNode mod = field(n, F_MODULE_NAME);
        if (ts_node_is_null(mod))
                return;
        bool relative = kind(mod) == K_RELATIVE_IMPORT;
        cleanup_free char *m = relative ? NULL : canon(review_node_text(p->c, mod));
        if (!relative && m == NULL)
                return;
        if (m)
                check_name(p, mod, m, false);
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &ch)) {
                if (ts_node_eq(ch, mod))
                        continue;
                if (kind(ch) == K_WILDCARD_IMPORT) {
                        if (m && p->nstars < ARRAY_SIZE(p->stars) && (p->stars[p->nstars] = strdup(m)) != NULL)
                                p->nstars++;
                        continue;
                }
                TSNode name = kind(ch) == K_ALIASED_IMPORT ? field(ch, F_NAME) : ch;
                if (kind(name) != K_DOTTED_NAME)
                        continue;
                cleanup_free char *nm = review_node_text(p->c, name);
                cleanup_free char *alias =
                        kind(ch) == K_ALIASED_IMPORT ? review_node_text(p->c, field(ch, F_ALIAS)) : NULL;
                if (nm == NULL)
                        break;
                const char *as = alias ? alias : nm;
                if (m == NULL) {
                        bind(p, as, NULL);
                        continue;
                }
                cleanup_free char *full = dotted(m, nm);
                if (full == NULL)
                        break;
                check_name(p, name, full, false);
                bind_name(p, as, full);
        }
        review_children_release(&k);
}

static void visit_params(struct py *p, TSNode params)
{
        if (ts_node_is_null(params))
                return;
        struct review_children k;
        TSNode ch;
        review_children_init(&k, params, true);
        while (review_children_next(&k, &ch)) {
                TSNode v = field(ch, F_VALUE);
                if (!ts_node_is_null(v))
                        visit(p, v, false);
                TSNode nm = field(ch, F_NAME);
                if (kind(ch) == K_IDENTIFIER)
                        nm = ch;
                if (!ts_node_is_null(nm) && kind(nm) == K_IDENTIFIER) {
                        cleanup_free char *id = review_node_text(p->c, nm);
                        if (id)
                                bind(p, id, NULL);
                }
        }
        review_children_release(&k);
}

static void visit(struct py *p, TSNode n, bool chain)
{
        if (ts_node_is_null(n) || p->c->failed)
                return;
        if (p->depth >= REVIEW_MAX_DEPTH) {
                if (!p->too_deep)
                        review_add(p->c, n, "PY-SYN-002", "nesting", NULL);
                p->too_deep = true;
                return;
        }
        p->depth++;
        const enum kind nk = kind(n);
        if (nk == K_IMPORT_STATEMENT) {
                visit_import(p, n);
        } else if (nk == K_IMPORT_FROM_STATEMENT) {
                visit_import_from(p, n);
        } else if (nk == K_ASSIGNMENT) {
                visit_assignment(p, n);
        } else if (nk == K_AUGMENTED_ASSIGNMENT) {
                visit(p, field(n, F_RIGHT), false);
                TSNode l = field(n, F_LEFT);
                if (!ts_node_is_null(l) && kind(l) != K_IDENTIFIER)
                        visit(p, l, false);
        } else if (nk == K_NAMED_EXPRESSION) {
                visit(p, field(n, F_VALUE), false);
                struct val v = { 0 };
                eval(p, field(n, F_VALUE), &v);
                p->nest++;
                bind_target(p, field(n, F_NAME), &v);
                p->nest--;
                val_release(&v);
        } else if (nk == K_FOR_STATEMENT || nk == K_FOR_IN_CLAUSE) {
                visit(p, field(n, F_RIGHT), false);
                p->nest++;
                bind_target(p, field(n, F_LEFT), NULL);
                p->loop++;
                visit(p, field(n, F_BODY), false);
                p->loop--;
                visit(p, field(n, F_ALTERNATIVE), false);
                p->nest--;
        } else if (nk == K_WHILE_STATEMENT) {
                p->loop++;
                visit_children(p, n);
                p->loop--;
        } else if (nk == K_LIST_COMPREHENSION || nk == K_SET_COMPREHENSION ||
                   nk == K_DICTIONARY_COMPREHENSION || nk == K_GENERATOR_EXPRESSION) {
                p->loop++;
                visit_children(p, n);
                p->loop--;
        } else if (nk == K_FUNCTION_DEFINITION || nk == K_CLASS_DEFINITION) {
                cleanup_free char *name = review_node_text(p->c, field(n, F_NAME));
                if (name)
                        bind(p, name, NULL);
                /* A function that forks and calls itself forks without end. */
                const char *fn_name = p->fn_name;
                bool fn_fork = p->fn_fork, fn_self = p->fn_self;
                TSNode fn_fork_at = p->fn_fork_at;
                p->fn_name = nk == K_FUNCTION_DEFINITION ? name : NULL;
                p->fn_fork = p->fn_self = false;
                p->nest++;
                visit_params(p, field(n, F_PARAMETERS));
                visit(p, field(n, F_SUPERCLASSES), false);
                visit(p, field(n, F_RETURN_TYPE), false);
                visit(p, field(n, F_BODY), false);
                p->nest--;
                if (p->fn_fork && p->fn_self)
                        review_add(p->c, p->fn_fork_at, "PY-PROC-006", "os.fork", NULL);
                p->fn_name = fn_name;
                p->fn_fork = fn_fork;
                p->fn_self = fn_self;
                p->fn_fork_at = fn_fork_at;
        } else if (nk == K_LAMBDA) {
                p->nest++;
                visit_params(p, field(n, F_PARAMETERS));
                visit(p, field(n, F_BODY), false);
                p->nest--;
        } else if (nk == K_KEYWORD_ARGUMENT) {
                visit(p, field(n, F_VALUE), false);
        } else if (nk == K_BLOCK) {
                p->nest++;
                visit_children(p, n);
                p->nest--;
        } else if (nk == K_AS_PATTERN) {
                /* with open(x) as f, except E as e */
                struct review_children k;
                TSNode ch;
                review_children_init(&k, n, true);
                while (review_children_next(&k, &ch)) {
                        if (kind(ch) == K_AS_PATTERN_TARGET) {
                                p->nest++;
                                bind_target(p, ts_node_named_child(ch, 0), NULL);
                                p->nest--;
                        } else {
                                visit(p, ch, false);
                        }
                }
                review_children_release(&k);
        } else if (nk == K_CALL) {
                visit_call(p, n, chain);
        } else if (nk == K_ATTRIBUTE) {
                TSNode an = field(n, F_ATTRIBUTE);
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, an, attr_buf, &attr_heap);
                if (attr && in_list(attr, internal_attrs, ARRAY_SIZE(internal_attrs)))
                        review_add(p->c, an, "PY-DYN-005", attr, attr);
                if (attr && strcmp(attr, "__builtins__") == 0)
                        review_add(p->c, an, "PY-DYN-004", attr, attr);
                if (attr && review_policy_denied(p->c->policy, 'a', attr))
                        review_add(p->c, an, "PY-POL-001", attr, attr);
                if (!chain) {
                        struct val v = { 0 };
                        eval(p, n, &v);
                        check_names(p, n, &v, false);
                        val_release(&v);
                }
                visit(p, field(n, F_OBJECT), true);
        } else if (nk == K_SUBSCRIPT) {
                struct val o = { 0 };
                TSNode key = field(n, F_SUBSCRIPT);
                eval(p, field(n, F_VALUE), &o);
                cleanup_free char *k = o.n ? const_str(p, key) : NULL;
                for (unsigned i = 0; i < o.n; i++) {
                        if (!dictish(o.names[i]))
                                continue;
                        if (k && strcmp(k, "__builtins__") == 0)
                                review_add(p->c, n, "PY-DYN-004", "__builtins__", NULL);
                        else if (k == NULL && sensitive(o.names[i]))
                                /* sys.modules[x]: an import; globals()[x], vars(builtins)[x]: the
                                 * builtins; vars(os)[x]: a module's attribute */
                                review_add(p->c, n,
                                           strcmp(o.names[i], "sys.modules") == 0             ? "PY-DYN-002"
                                           : strncmp(o.names[i], "__main__.", 9) == 0 ||
                                                           strncmp(o.names[i], "builtins.", 9) == 0
                                                   ? "PY-DYN-004"
                                                   : "PY-DYN-003",
                                           shown(o.names[i]), o.names[i]);
                }
                val_release(&o);
                if (!chain) {
                        struct val v = { 0 };
                        eval(p, n, &v);
                        check_names(p, n, &v, false);
                        val_release(&v);
                }
                visit(p, field(n, F_VALUE), true);
                /* the keys: every named child after the first */
                struct review_children keys;
                TSNode ch;
                review_children_init(&keys, n, true);
                for (uint32_t i = 0; review_children_next(&keys, &ch); i++)
                        if (i > 0)
                                visit(p, ch, false);
                review_children_release(&keys);
        } else if (nk == K_IDENTIFIER) {
                char id_buf[NODE_STR_BUF];
                cleanup_free char *id_heap = NULL;
                const char *id = node_str(p, n, id_buf, &id_heap);
                if (id && strcmp(id, "__builtins__") == 0)
                        review_add(p->c, n, "PY-DYN-004", id, NULL);
                if (!chain && id) {
                        struct val v = { 0 };
                        lookup(p, id, &v);
                        check_names(p, n, &v, false);
                        val_release(&v);
                }
        } else if (nk == K_COMMENT || nk == K_INTEGER || nk == K_FLOAT ||
                   nk == K_STRING_CONTENT || nk == K_FUTURE_IMPORT_STATEMENT ||
                   nk == K_GLOBAL_STATEMENT || nk == K_NONLOCAL_STATEMENT) {
                /* nothing to see */
        } else {
                visit_children(p, n);
        }
        p->depth--;
}

void review_python(struct review_ctx *c, TSTree *tree)
{
        pthread_once(&kinds_once, kinds_init);
        struct py p = { .c = c };
        TSNode root = ts_tree_root_node(tree);
        review_syntax(c, root, "PY-SYN-001");
        visit(&p, root, false);
        for (size_t i = 0; i < p.nb; i++) {
                free(p.b[i].name);
                for (unsigned j = 0; j < p.b[i].n; j++)
                        free(p.b[i].vals[j]);
        }
        free(p.b);
        for (unsigned i = 0; i < p.nstars; i++)
                free(p.stars[i]);
}
