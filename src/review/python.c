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
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review-internal.h"

#define VMAX 4
/* A function's summary keeps this many parameters and uses of them. */
#define FN_PARAMS 8
#define FN_USES 16
/* Working directories one name of os.chdir() may leave (after a branch). */
#define CWD_MAX 4

/* What an expression may stand for.  Besides dotted names, names may be
 * pseudo-names starting with '@' that no rule matches:
 *   "@i:X"      a container (list, tuple, set, dict values) holding X
 *   "@fnK"      the function or lambda of summary K
 *   "@pK.I..."  parameter I of function K (and attributes of it): a use
 *               of it is recorded in the summary and checked at each call
 *   "@attr:A"   operator.attrgetter("A") */
struct val {
        char *names[VMAX];       /* dotted names: "os", "os.system", "builtins.eval", "os.__dict__" */
        unsigned n;
        char *str;               /* a constant string */
        size_t str_len;
        char *path;              /* a pathlib.Path of a constant path */
        char *prefix;            /* the known start of a string built at run time: f"/etc/{x}" */
        bool is_int;
        long long num;
};

struct binding {
        char *name;
        uint32_t hash;           /* of name: most lookups compare only this */
        char *vals[VMAX];
        unsigned n;
        bool definite;           /* bound unconditionally at module level: no builtin fallback */
        /* The one constant every binding of the name gave it (p = "/etc/x";
         * flags = os.O_WRONLY), unless mixed: bound to another value too. */
        char *str;
        size_t str_len;
        bool is_int;
        long long num;
        bool mixed;
};

/* What the walk learnt of a function or lambda, applied where it is called
 * (a module passed in, a path written, what it returns). */
struct fnsum {
        uint32_t start;          /* the definition's first byte: which one it is */
        char *params[FN_PARAMS]; /* names, for keyword arguments */
        TSNode defaults[FN_PARAMS];
        unsigned n_params;
        char *uses[FN_USES];     /* "@pK.I.attr": attributes of parameters used in the body */
        bool called[FN_USES];
        unsigned n_uses;
        char *rets[VMAX];        /* what it returns (names, "@pK.I...") */
        unsigned n_rets;
        unsigned lookup;         /* bit I: getattr(parameter I, computed name) */
        unsigned writes;         /* bit I: parameter I is a path the function writes */
        char *write_what[FN_PARAMS];
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
        /* Summaries of the functions and lambdas seen; fn: the one being walked (-1: none). */
        struct fnsum *fns;
        unsigned nfns, afns;
        int fn;
        /* Bindings of attribute chains (self.m = os): looked up only when there are some. */
        unsigned attr_bindings;
        /* os.chdir(): the directories relative paths may be taken from (NULL
         * entries: /workspace), and whether one could not be followed. */
        char *cwd[CWD_MAX];
        unsigned n_cwd;
        bool cwd_lost;
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
        K_AWAIT,
        K_DEFAULT_PARAMETER,
        K_DICTIONARY,
        K_DICTIONARY_SPLAT_PATTERN,
        K_IF_CLAUSE,
        K_PAIR,
        K_RETURN_STATEMENT,
        K_SET,
        K_TYPED_DEFAULT_PARAMETER,
        K_TYPED_PARAMETER,
        K_UNARY_OPERATOR,
        K_WITH_STATEMENT,
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
        [K_AWAIT] = "await",
        [K_DEFAULT_PARAMETER] = "default_parameter",
        [K_DICTIONARY] = "dictionary",
        [K_DICTIONARY_SPLAT_PATTERN] = "dictionary_splat_pattern",
        [K_IF_CLAUSE] = "if_clause",
        [K_PAIR] = "pair",
        [K_RETURN_STATEMENT] = "return_statement",
        [K_SET] = "set",
        [K_TYPED_DEFAULT_PARAMETER] = "typed_default_parameter",
        [K_TYPED_PARAMETER] = "typed_parameter",
        [K_UNARY_OPERATOR] = "unary_operator",
        [K_WITH_STATEMENT] = "with_statement",
};

/* The fields the walk reads, by id: ts_node_child_by_field_name() looks
 * the name up among the grammar's field names on every call. */
enum field {
        F_ALIAS,
        F_ALTERNATIVE,
        F_ARGUMENT,
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
        [F_ARGUMENT] = "argument",
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
        free(v->prefix);
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
        if (name == NULL || name[0] == '@')
                return name;
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

static void binding_clear_const(struct binding *b)
{
        free(b->str);
        b->str = NULL;
        b->str_len = 0;
        b->is_int = false;
}

static bool same_const(const struct binding *b, const struct val *v)
{
        if (v == NULL)
                return false;
        if (b->str)
                return v->str && v->str_len == b->str_len && memcmp(v->str, b->str, b->str_len) == 0;
        return b->is_int && v->is_int && v->num == b->num;
}

/* Bind name to what v stands for (v NULL: something unknown). */
static void bind(struct py *p, const char *name, const struct val *v)
{
        struct binding *b = find_binding(p, name);
        bool fresh = b == NULL;
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
                binding_clear_const(b);
                b->mixed = false;
                fresh = true;
        }
        /* A constant is kept while it is the only value the name was given. */
        if (fresh && v && v->str) {
                b->str = malloc(v->str_len + 1);
                if (b->str) {
                        memcpy(b->str, v->str, v->str_len + 1);
                        b->str_len = v->str_len;
                }
        } else if (fresh && v && v->is_int) {
                b->is_int = true;
                b->num = v->num;
        } else if (!fresh && !b->mixed && !same_const(b, v)) {
                binding_clear_const(b);
                b->mixed = true;
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
        if (b && !b->mixed && b->str && v->str == NULL) {
                v->str = malloc(b->str_len + 1);
                if (v->str) {
                        memcpy(v->str, b->str, b->str_len + 1);
                        v->str_len = b->str_len;
                }
        } else if (b && !b->mixed && b->is_int && v->str == NULL) {
                v->is_int = true;
                v->num = b->num;
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
                        /* f"/etc/{name}": what comes before the first interpolation */
                        if (ck == K_INTERPOLATION && len > 0 && v->prefix == NULL) {
                                out[len] = '\0';
                                v->prefix = out;
                        } else {
                                free(out);
                        }
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
static void visit(struct py *p, TSNode n, bool chain);
static char *chain_text(struct py *p, TSNode n);
static void visit_container_add(struct py *p, TSNode call, TSNode obj, const char *attr);

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

/* The value of a call's keyword argument kw; null if none. */
static TSNode kwarg(struct py *p, TSNode call, const char *kw)
{
        TSNode args = field(call, F_ARGUMENTS), none = { 0 };
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

/* Argument idx by position, else by keyword kw (NULL: none). */
static TSNode arg(struct py *p, TSNode call, unsigned idx, const char *kw)
{
        TSNode a = call_arg(call, idx);
        if (!ts_node_is_null(a) || kw == NULL)
                return a;
        return kwarg(p, call, kw);
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

/* Constants of os: open()'s flags (Linux's values) and path strings. */
static const struct {
        const char *name;
        const char *str;
        long long num;
} name_consts[] = {
        { "os.O_RDONLY", NULL, 0 },          { "os.O_WRONLY", NULL, 01 },        { "os.O_RDWR", NULL, 02 },
        { "os.O_ACCMODE", NULL, 03 },        { "os.O_CREAT", NULL, 0100 },       { "os.O_EXCL", NULL, 0200 },
        { "os.O_NOCTTY", NULL, 0400 },       { "os.O_TRUNC", NULL, 01000 },      { "os.O_APPEND", NULL, 02000 },
        { "os.O_NONBLOCK", NULL, 04000 },    { "os.O_NDELAY", NULL, 04000 },     { "os.O_DSYNC", NULL, 010000 },
        { "os.O_ASYNC", NULL, 020000 },      { "os.O_DIRECT", NULL, 040000 },    { "os.O_LARGEFILE", NULL, 0 },
        { "os.O_DIRECTORY", NULL, 0200000 }, { "os.O_NOFOLLOW", NULL, 0400000 }, { "os.O_NOATIME", NULL, 01000000 },
        { "os.O_CLOEXEC", NULL, 02000000 },  { "os.O_SYNC", NULL, 04010000 },    { "os.O_RSYNC", NULL, 04010000 },
        { "os.O_PATH", NULL, 010000000 },    { "os.O_TMPFILE", NULL, 020200000 },
        { "os.sep", "/", 0 },                { "os.path.sep", "/", 0 },          { "posixpath.sep", "/", 0 },
        { "os.curdir", ".", 0 },             { "os.path.curdir", ".", 0 },       { "os.pardir", "..", 0 },
        { "os.path.pardir", "..", 0 },       { "os.devnull", "/dev/null", 0 },   { "os.path.devnull", "/dev/null", 0 },
        { "os.extsep", ".", 0 },             { "os.linesep", "\n", 0 },
};

/* os.O_WRONLY is 1, os.sep is "/". */
static void name_constant(struct val *v)
{
        if (v->str || v->is_int)
                return;
        for (unsigned i = 0; i < v->n; i++) {
                const char *nm = v->names[i], *last = strrchr(nm, '.');
                /* (O_* and a few words after a dot: most names are none of these) */
                if ((nm[0] != 'o' && nm[0] != 'p') || last == NULL ||
                    !(last[1] == 'O' || last[1] == 's' || last[1] == 'c' || last[1] == 'p' || last[1] == 'd' ||
                      last[1] == 'e' || last[1] == 'l'))
                        continue;
                for (size_t j = 0; j < ARRAY_SIZE(name_consts); j++) {
                        if (strcmp(nm, name_consts[j].name) != 0)
                                continue;
                        if (name_consts[j].str) {
                                v->str = strdup(name_consts[j].str);
                                v->str_len = v->str ? strlen(v->str) : 0;
                        } else {
                                v->is_int = true;
                                v->num = name_consts[j].num;
                        }
                        return;
                }
        }
}

/* A Python integer literal: 42, 0o101, 0x41, 0b1, 1_000. */
static bool parse_int(const char *s, long long *ret)
{
        char digits[64];
        size_t k = 0;
        for (; *s && k < sizeof(digits) - 1; s++)
                if (*s != '_')
                        digits[k++] = *s;
        if (*s)
                return false;
        digits[k] = '\0';
        int base = 10;
        const char *d = digits;
        if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
                base = 16, d += 2;
        else if (d[0] == '0' && (d[1] == 'o' || d[1] == 'O'))
                base = 8, d += 2;
        else if (d[0] == '0' && (d[1] == 'b' || d[1] == 'B'))
                base = 2, d += 2;
        char *end = NULL;
        errno = 0;
        long long x = strtoll(d, &end, base);
        if (*d == '\0' || errno || end == NULL || *end != '\0')
                return false;
        *ret = x;
        return true;
}

/* Containers: "@i:X" is a list, tuple, set or dict (its values) holding X. */
static void val_items(const struct val *c, struct val *out)
{
        for (unsigned i = 0; i < c->n; i++)
                if (strncmp(c->names[i], "@i:", 3) == 0)
                        val_take(out, strdup(c->names[i] + 3));
}

static void val_wrap(const struct val *x, struct val *out)
{
        for (unsigned i = 0; i < x->n; i++) {
                char *s = NULL;
                /* (a container in a container in ...: a few levels are plenty) */
                if (strlen(x->names[i]) < 128 && asprintf(&s, "@i:%s", x->names[i]) >= 0)
                        val_take(out, s);
        }
}

static void val_add_names(const struct val *x, struct val *out)
{
        for (unsigned i = 0; i < x->n; i++)
                val_take(out, strdup(x->names[i]));
}

/* Does v stand for anything known?  (builtins.x alone is only what an
 * unbound local x might be.) */
static bool val_known(const struct val *v)
{
        for (unsigned i = 0; i < v->n; i++)
                if (strncmp(v->names[i], "builtins.", 9) != 0 && strncmp(v->names[i], "@p", 2) != 0)
                        return true;
        return false;
}

/* Summaries of functions. */

/* "@fnK": K; -1 for any other name. */
static int fn_index(const char *name)
{
        if (name[0] != '@' || name[1] != 'f' || name[2] != 'n' || name[3] < '0' || name[3] > '9')
                return -1;
        long k = 0;
        for (const char *d = name + 3; *d; d++) {
                if (*d < '0' || *d > '9' || k > 1000000)
                        return -1;
                k = k * 10 + (*d - '0');
        }
        return (int)k;
}

static int fn_find(const struct py *p, uint32_t start)
{
        for (unsigned i = 0; i < p->nfns; i++)
                if (p->fns[i].start == start)
                        return (int)i;
        return -1;
}

static int fn_new(struct py *p, uint32_t start)
{
        if (p->nfns == p->afns) {
                unsigned n = p->afns ? p->afns * 2 : 16;
                struct fnsum *f = reallocarray(p->fns, n, sizeof(*f));
                if (f == NULL) {
                        p->c->failed = true;
                        return -1;
                }
                p->fns = f;
                p->afns = n;
        }
        struct fnsum *f = &p->fns[p->nfns];
        memset(f, 0, sizeof(*f));
        f->start = start;
        return (int)p->nfns++;
}

static void fn_release(struct fnsum *f)
{
        for (unsigned i = 0; i < f->n_params; i++) {
                free(f->params[i]);
                free(f->write_what[i]);
        }
        for (unsigned i = 0; i < f->n_uses; i++)
                free(f->uses[i]);
        for (unsigned i = 0; i < f->n_rets; i++)
                free(f->rets[i]);
}

/* "@pK.I" or "@pK.I.attr...": K, I and the rest ("" or ".attr..."). */
static bool param_parse(const char *name, unsigned *k, unsigned *i, const char **rest)
{
        if (name[0] != '@' || name[1] != 'p' || name[2] < '0' || name[2] > '9')
                return false;
        unsigned long a = 0, b = 0;
        const char *d = name + 2;
        for (; *d >= '0' && *d <= '9' && a < 1000000; d++)
                a = a * 10 + (unsigned long)(*d - '0');
        if (*d != '.' || d[1] < '0' || d[1] > '9')
                return false;
        for (d++; *d >= '0' && *d <= '9' && b < 1000; d++)
                b = b * 10 + (unsigned long)(*d - '0');
        if ((*d != '\0' && *d != '.') || a >= 1000000 || b >= FN_PARAMS)
                return false;
        *k = (unsigned)a;
        *i = (unsigned)b;
        *rest = d;
        return true;
}

/* A use of an attribute of a parameter, inside its function: checked where the function is called. */
static void fn_record_use(struct py *p, const char *name, bool called)
{
        unsigned k, i;
        const char *rest;
        if (!param_parse(name, &k, &i, &rest) || *rest == '\0' || k >= p->nfns)
                return;
        struct fnsum *f = &p->fns[k];
        for (unsigned u = 0; u < f->n_uses; u++)
                if (strcmp(f->uses[u], name) == 0) {
                        f->called[u] |= called;
                        return;
                }
        if (f->n_uses < FN_USES && (f->uses[f->n_uses] = strdup(name)) != NULL)
                f->called[f->n_uses++] = called;
}

/* Is v exactly a parameter ("@pK.I")?  Marks bit I of summary K's field. */
static bool fn_mark_param(struct py *p, const struct val *v, bool lookup, const char *what)
{
        bool found = false;
        for (unsigned j = 0; j < v->n; j++) {
                unsigned k, i;
                const char *rest;
                if (!param_parse(v->names[j], &k, &i, &rest) || *rest || k >= p->nfns)
                        continue;
                found = true;
                struct fnsum *f = &p->fns[k];
                if (lookup) {
                        f->lookup |= 1u << i;
                } else if (!(f->writes & (1u << i))) {
                        f->writes |= 1u << i;
                        f->write_what[i] = strdup(what);
                }
        }
        return found;
}

/* The argument a call gives parameter i of function k: by position, by
 * keyword, else its default. */
static TSNode fn_arg(struct py *p, TSNode call, unsigned k, unsigned i)
{
        TSNode a = call_arg(call, i);
        if (!ts_node_is_null(a) || k >= p->nfns || i >= p->fns[k].n_params)
                return a;
        if (p->fns[k].params[i]) {
                cleanup_free char *kw = strdup(p->fns[k].params[i]);
                a = kw ? kwarg(p, call, kw) : a;
        }
        return ts_node_is_null(a) ? p->fns[k].defaults[i] : a;
}

/* What parameter i is given: an argument of the call, or (map(f, c)) an item of items. */
struct fn_args {
        TSNode call;
        const struct val *items;
};

static void fn_arg_val(struct py *p, const struct fn_args *a, unsigned k, unsigned i, struct val *out)
{
        if (a->items) {
                if (i == 0)
                        val_add_names(a->items, out);
                return;
        }
        eval(p, fn_arg(p, a->call, k, i), out);
}

/* What a call of function k returns: its return values, parameters replaced by the arguments. */
static void fn_returns(struct py *p, unsigned k, const struct fn_args *a, struct val *v)
{
        for (unsigned r = 0; k < p->nfns && r < p->fns[k].n_rets; r++) {
                cleanup_free char *ret = strdup(p->fns[k].rets[r]);
                unsigned kk, i;
                const char *rest;
                if (ret == NULL)
                        return;
                if (!param_parse(ret, &kk, &i, &rest) || kk != k) {
                        val_take(v, TAKE_PTR(ret));
                        continue;
                }
                struct val x = { 0 };
                fn_arg_val(p, a, k, i, &x);
                for (unsigned j = 0; j < x.n; j++)
                        val_take(v, *rest ? dotted(x.names[j], rest + 1) : strdup(x.names[j]));
                val_release(&x);
        }
}

/* The constant strings of ["a", "b"], ("a",), "a.b".split("."); -1 if not constant. */
#define STR_LIST_MAX 16
static int const_str_list(struct py *p, TSNode n, char *out[static STR_LIST_MAX])
{
        int cnt = 0;
        if (ts_node_is_null(n))
                return -1;
        if (kind(n) == K_LIST || kind(n) == K_TUPLE) {
                struct review_children k;
                TSNode item;
                review_children_init(&k, n, true);
                while (review_children_next(&k, &item)) {
                        char *s = cnt < STR_LIST_MAX ? const_str(p, item) : NULL;
                        if (s == NULL) {
                                cnt = -cnt - 1;
                                break;
                        }
                        out[cnt++] = s;
                }
                review_children_release(&k);
        } else if (kind(n) == K_CALL && kind(field(n, F_FUNCTION)) == K_ATTRIBUTE) {
                TSNode fn = field(n, F_FUNCTION);
                cleanup_free char *attr = review_node_text(p->c, field(fn, F_ATTRIBUTE));
                cleanup_free char *whole = attr && strcmp(attr, "split") == 0 ? const_str(p, field(fn, F_OBJECT)) : NULL;
                TSNode sepn = call_arg(n, 0);
                cleanup_free char *sep = ts_node_is_null(sepn) ? NULL : const_str(p, sepn);
                if (whole == NULL || (!ts_node_is_null(sepn) && (sep == NULL || *sep == '\0')))
                        return -1;
                char *save = NULL;
                for (char *t = strtok_r(whole, sep ? sep : " \t\n", &save); t && cnt < STR_LIST_MAX;
                     t = strtok_r(NULL, sep ? sep : " \t\n", &save))
                        out[cnt++] = strdup(t);
        } else {
                return -1;
        }
        if (cnt < 0) {
                for (int i = 0; i < -cnt - 1; i++)
                        free(out[i]);
                return -1;
        }
        return cnt;
}

static void str_list_free(char **list, int n)
{
        for (int i = 0; i < n; i++)
                free(list[i]);
}

/* functools.reduce(getattr, [...], obj): is its function getattr (or a lambda of getattr)? */
static bool reduce_of_getattr(struct py *p, TSNode call)
{
        struct val f = { 0 };
        eval(p, call_arg(call, 0), &f);
        bool yes = false;
        for (unsigned i = 0; i < f.n; i++) {
                int k = fn_index(f.names[i]);
                yes |= strcmp(f.names[i], "builtins.getattr") == 0 || strcmp(f.names[i], "inspect.getattr_static") == 0;
                if (k >= 0 && (unsigned)k < p->nfns)
                        yes |= (p->fns[k].lookup & 1u) != 0;
        }
        val_release(&f);
        return yes;
}

static void eval_reduce(struct py *p, TSNode call, struct val *v)
{
        char *parts[STR_LIST_MAX];
        if (!reduce_of_getattr(p, call))
                return;
        int np = const_str_list(p, call_arg(call, 1), parts);
        if (np < 0)
                return;
        struct val o = { 0 };
        eval(p, call_arg(call, 2), &o);
        for (unsigned i = 0; i < o.n; i++) {
                char *cur = strdup(o.names[i]);
                for (int j = 0; cur && j < np; j++) {
                        char *next = dotted(cur, parts[j]);
                        free(cur);
                        cur = next;
                }
                val_take(v, cur);
        }
        val_release(&o);
        str_list_free(parts, np);
}

/* Join path parts as os.path.join and pathlib do: an absolute part starts
 * over.  All constant: *full; else the constant start: *prefix. */
static void join_args(struct py *p, TSNode call, unsigned from, char **full, char **prefix)
{
        char buf[4096];
        buf[0] = '\0';
        size_t len = 0;
        for (unsigned i = from;; i++) {
                TSNode a = call_arg(call, i);
                if (ts_node_is_null(a))
                        break;
                struct val x = { 0 };
                eval(p, a, &x);
                const char *s = x.str ? x.str : x.path;
                if (s == NULL) {
                        const char *pre = x.prefix;
                        if (pre && pre[0] == '/')
                                len = (size_t)snprintf(buf, sizeof(buf), "%s", pre);
                        else if (pre && len && len + 1 + strlen(pre) < sizeof(buf))
                                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
                                                        buf[len - 1] == '/' ? "" : "/", pre);
                        else if (len && len + 1 < sizeof(buf) && buf[len - 1] != '/')
                                buf[len++] = '/', buf[len] = '\0';
                        if (len)
                                *prefix = strdup(buf);
                        val_release(&x);
                        return;
                }
                if (s[0] == '/' || len == 0)
                        len = (size_t)snprintf(buf, sizeof(buf), "%s", s);
                else if (len + 1 + strlen(s) < sizeof(buf))
                        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", buf[len - 1] == '/' ? "" : "/", s);
                if (len >= sizeof(buf))
                        len = sizeof(buf) - 1;
                val_release(&x);
        }
        if (len)
                *full = strdup(buf);
}

/* Functions and methods that find or load a module by name: their value is the module. */
static const char *const finders[] = { "find_spec", "find_module", "load_module", "find_loader", "get_loader",
                                       "init_builtin", "init_frozen", "ModuleSpec", "resolve_name" };

static bool is_finder(const char *last)
{
        return in_list(last, finders, ARRAY_SIZE(finders));
}

/* The module a finder's first argument names (resolve_name's "os:system" too). */
static void eval_finder(struct py *p, TSNode call, const char *last, struct val *v)
{
        char *mod = const_str(p, call_arg(call, 0));
        if (mod == NULL)
                return;
        if (strcmp(last, "resolve_name") == 0)
                for (char *c = mod; *c; c++)
                        *c = *c == ':' ? '.' : *c;
        if (mod[0] == '.') {
                /* a relative name and its package */
                cleanup_free char *pkg = const_str(p, call_arg(call, 1));
                char *full = NULL;
                if (pkg && asprintf(&full, "%s%s", pkg, mod) < 0)
                        full = NULL;
                free(mod);
                mod = full;
        }
        if (mod && (*mod == '\0' || mod[0] == '.')) {
                free(mod);
                return;
        }
        val_take(v, canon(mod));
}

static bool loop_factory(const char *nm)
{
        static const char *const loops[] = { "get_event_loop", "new_event_loop", "get_running_loop", "get_loop",
                                             "SelectorEventLoop", "BaseEventLoop", "AbstractEventLoop",
                                             "_UnixSelectorEventLoop", "EventLoop" };
        const char *last = strrchr(nm, '.');
        return under_module(nm, "asyncio") && last && in_list(last + 1, loops, ARRAY_SIZE(loops));
}

/* Method names the walk looks at, whatever their object (sorted: bsearch),
 * with what each may be: most attribute calls are none of these, and one
 * lookup tells. */
enum method_flag {
        M_STR = 1 << 0,          /* of a constant string: "".join, .decode, .format, .replace */
        M_FINDER = 1 << 1,       /* a module by name: find_spec("os"), load_module("os") */
        M_SPEC = 1 << 2,         /* a module from a spec: create_module(spec) */
        M_LOADER = 1 << 3,       /* loads or finds (checked when the name is not known) */
        M_GETATTRIBUTE = 1 << 4, /* __getattribute__ */
        M_ITEM = 1 << 5,         /* an item of a container: d.get(k), c.pop() */
        M_SAME = 1 << 6,         /* the container again: .values(), .copy(), .items() */
        M_PATHOP = 1 << 7,       /* a path again: .joinpath(), .resolve() */
        M_WRITER = 1 << 8,       /* writes at its first argument: .to_csv(P), .savefig(P) */
        M_PATHWRITE = 1 << 9,    /* writes at a pathlib.Path: .write_text(), .open("w") */
        M_SUBPROC = 1 << 10,     /* an event loop's subprocess_exec/_shell */
        M_ADDER = 1 << 11,       /* puts a value into a container: .append(x) */
};

static const struct {
        const char *name;
        unsigned flags;
} method_names[] = {
        { "ModuleSpec", M_FINDER },
        { "__getattribute__", M_GETATTRIBUTE },
        { "__getitem__", M_ITEM },
        { "absolute", M_PATHOP },
        { "add", M_ADDER },
        { "append", M_ADDER },
        { "appendleft", M_ADDER },
        { "chmod", M_PATHWRITE },
        { "copy", M_SAME },
        { "create_module", M_SPEC | M_LOADER },
        { "decode", M_STR },
        { "dump", M_WRITER },
        { "encode", M_STR },
        { "exec_module", M_LOADER },
        { "expanduser", M_PATHOP },
        { "extend", M_ADDER },
        { "find_loader", M_FINDER | M_LOADER },
        { "find_module", M_FINDER | M_LOADER },
        { "find_spec", M_FINDER | M_LOADER },
        { "format", M_STR },
        { "get", M_ITEM },
        { "get_loader", M_FINDER },
        { "hardlink_to", M_PATHWRITE },
        { "imsave", M_WRITER },
        { "init_builtin", M_FINDER },
        { "init_frozen", M_FINDER },
        { "insert", M_ADDER },
        { "items", M_SAME },
        { "join", M_STR },
        { "joinpath", M_PATHOP },
        { "lchmod", M_PATHWRITE },
        { "link_to", M_PATHWRITE },
        { "load_module", M_FINDER | M_LOADER },
        { "lower", M_STR },
        { "lstrip", M_STR },
        { "mkdir", M_PATHWRITE },
        { "module_from_spec", M_SPEC },
        { "open", M_PATHWRITE },
        { "pop", M_ITEM },
        { "popitem", M_ITEM },
        { "put", M_ADDER },
        { "rename", M_PATHWRITE },
        { "replace", M_STR | M_PATHWRITE },
        { "resolve", M_PATHOP },
        { "resolve_name", M_FINDER },
        { "rmdir", M_PATHWRITE },
        { "rstrip", M_STR },
        { "save", M_WRITER },
        { "savefig", M_WRITER },
        { "savetxt", M_WRITER },
        { "savez", M_WRITER },
        { "savez_compressed", M_WRITER },
        { "setdefault", M_ITEM | M_ADDER },
        { "strip", M_STR },
        { "subprocess_exec", M_SUBPROC },
        { "subprocess_shell", M_SUBPROC },
        { "symlink_to", M_PATHWRITE },
        { "to_csv", M_WRITER },
        { "to_excel", M_WRITER },
        { "to_feather", M_WRITER },
        { "to_hdf", M_WRITER },
        { "to_html", M_WRITER },
        { "to_json", M_WRITER },
        { "to_latex", M_WRITER },
        { "to_netcdf", M_WRITER },
        { "to_parquet", M_WRITER },
        { "to_pickle", M_WRITER },
        { "to_sql", M_WRITER },
        { "to_stata", M_WRITER },
        { "to_xml", M_WRITER },
        { "tofile", M_WRITER },
        { "touch", M_PATHWRITE },
        { "unlink", M_PATHWRITE },
        { "update", M_ADDER },
        { "upper", M_STR },
        { "values", M_SAME },
        { "write_bytes", M_PATHWRITE },
        { "write_text", M_PATHWRITE },
};

static int cmp_method(const void *key, const void *elem)
{
        return strcmp(key, *(const char *const *)elem);
}

static unsigned method_flags(const char *attr)
{
        const void *hit = bsearch(attr, method_names, ARRAY_SIZE(method_names), sizeof(method_names[0]), cmp_method);
        return hit ? ((const typeof(method_names[0]) *)hit)->flags : 0;
}

/* Methods whose value follows from their object: of constant strings
 * ("".join([...]), b"os".decode()), of containers (d.get(k), c.pop()), of
 * importers (finder.find_spec("os")), of paths.  True when handled. */
static bool eval_method(struct py *p, TSNode n, TSNode fn, const char *attr, struct val *v)
{
        const unsigned mf = method_flags(attr);
        if (!(mf & (M_STR | M_FINDER | M_SPEC | M_GETATTRIBUTE | M_ITEM | M_SAME | M_PATHOP)))
                return false;
        TSNode obj = field(fn, F_OBJECT);
        if (mf & M_STR) {
                cleanup_free char *sep = const_str(p, obj);
                if (sep == NULL)
                        return false;
                if (strcmp(attr, "join") == 0) {
                        TSNode list = call_arg(n, 0);
                        char *parts[STR_LIST_MAX];
                        int np = const_str_list(p, list, parts);
                        if (np < 0)
                                return true;
                        struct capbuf b = { .cap = SIZE_MAX };
                        bool ok = true;
                        for (int i = 0; i < np; i++) {
                                ok &= !i || capbuf_append(&b, sep, strlen(sep)) != (size_t)-1;
                                ok &= capbuf_append(&b, parts[i], strlen(parts[i])) != (size_t)-1;
                        }
                        if (ok)
                                v->str = capbuf_detach(&b, &v->str_len);
                        if (ok && v->str == NULL)
                                v->str = strdup(""); /* "".join([]) */
                        capbuf_release(&b);
                        str_list_free(parts, np);
                        return true;
                }
                if (strcmp(attr, "format") == 0) {
                        /* "/etc/{}".format(x): known up to the first field */
                        char *brace = strchr(sep, '{');
                        if (brace)
                                *brace = '\0';
                        if (*sep)
                                v->prefix = TAKE_PTR(sep);
                        return true;
                }
                if (strcmp(attr, "replace") == 0) {
                        cleanup_free char *from = const_str(p, call_arg(n, 0));
                        cleanup_free char *to = const_str(p, call_arg(n, 1));
                        if (from == NULL || to == NULL || *from == '\0')
                                return true;
                        struct capbuf b = { .cap = SIZE_MAX };
                        bool ok = true;
                        for (const char *s = sep, *hit; ok && *s; s = hit + strlen(from)) {
                                hit = strstr(s, from);
                                ok &= capbuf_append(&b, s, hit ? (size_t)(hit - s) : strlen(s)) != (size_t)-1;
                                if (hit == NULL)
                                        break;
                                ok &= capbuf_append(&b, to, strlen(to)) != (size_t)-1;
                        }
                        if (ok)
                                v->str = capbuf_detach(&b, &v->str_len);
                        if (ok && v->str == NULL)
                                v->str = strdup("");
                        capbuf_release(&b);
                        return true;
                }
                v->str = TAKE_PTR(sep);
                for (char *s = v->str; attr[0] == 'l' && attr[1] == 'o' && *s; s++)
                        *s = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
                for (char *s = v->str; attr[0] == 'u' && *s; s++)
                        *s = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
                v->str_len = strlen(v->str);
                return true;
        }
        if (mf & M_FINDER) {
                eval_finder(p, n, attr, v);
                return true;
        }
        if (mf & M_SPEC) {
                struct val s = { 0 };
                eval(p, call_arg(n, 0), &s);
                val_add_names(&s, v);
                val_release(&s);
                return true;
        }
        if (mf & M_GETATTRIBUTE) {
                /* os.__getattribute__("system"); object.__getattribute__(os, "system") */
                struct val o = { 0 };
                eval(p, obj, &o);
                bool cls = false;
                for (unsigned i = 0; i < o.n; i++)
                        cls |= strcmp(o.names[i], "builtins.object") == 0 || strcmp(o.names[i], "builtins.type") == 0 ||
                               strcmp(o.names[i], "types.ModuleType") == 0;
                if (cls) {
                        val_release(&o);
                        eval(p, call_arg(n, 0), &o);
                }
                cleanup_free char *a = const_str(p, call_arg(n, cls ? 1 : 0));
                for (unsigned i = 0; a && i < o.n; i++)
                        val_take(v, dotted(o.names[i], a));
                val_release(&o);
                return true;
        }
        bool item = mf & M_ITEM;
        if (mf & (M_ITEM | M_SAME)) {
                struct val o = { 0 }, it = { 0 };
                eval(p, obj, &o);
                val_items(&o, &it);
                bool container = it.n > 0;
                if (item)
                        val_add_names(&it, v);
                else if (strcmp(attr, "items") == 0)
                        val_wrap(&o, v); /* (key, value) pairs: a container of containers */
                else
                        val_add_names(&o, v);
                val_release(&o);
                val_release(&it);
                /* sys.modules.get("os") is not a container's */
                return container;
        }
        if (mf & M_PATHOP) {
                struct val o = { 0 };
                eval(p, obj, &o);
                if (o.path == NULL) {
                        val_release(&o);
                        return false;
                }
                if (attr[0] != 'j') {
                        v->path = TAKE_PTR(o.path);
                } else {
                        char *full = NULL, *prefix = NULL;
                        join_args(p, n, 0, &full, &prefix);
                        char *j = NULL;
                        if (full && asprintf(&j, "%s%s%s", full[0] == '/' ? "" : o.path, full[0] == '/' ? "" : "/",
                                             full) >= 0)
                                v->path = j;
                        else if (prefix && asprintf(&j, "%s/%s", o.path, prefix) >= 0)
                                v->prefix = j;
                        free(full);
                        free(prefix);
                }
                val_release(&o);
                return true;
        }
        return false;
}

/* A decoded constant: base64.b64decode("L2V0Yw=="), bytes.fromhex("2f6574"). */
static void eval_decode(struct py *p, TSNode call, bool hex, struct val *v)
{
        cleanup_free char *in = const_str(p, call_arg(call, 0));
        if (in == NULL)
                return;
        v->str = hex ? review_hex_decode(in, strlen(in), &v->str_len) : review_base64_decode(in, strlen(in), &v->str_len);
}

/* The first parts of the names eval_call_names() knows (sorted): a call
 * of anything else (pandas.*, df.*) returns nothing the review follows. */
static const char *const call_roots[] = { "_imp", "asyncio", "base64", "binascii", "builtins", "copy", "functools",
                                          "imp", "importlib", "inspect", "operator", "os", "pathlib", "pkgutil",
                                          "posixpath", "random", "sys", "types" };

static void eval_call_names(struct py *p, TSNode n, const struct val *f, struct val *v);
static int cmp_root(const void *key, const void *elem);

/* What a call returns: a module (__import__("os")), a name
 * (getattr(os, "system")), a constant ("".join([...])), a container. */
static void eval_call(struct py *p, TSNode n, struct val *v)
{
        TSNode fn = field(n, F_FUNCTION);
        if (ts_node_is_null(fn))
                return;
        if (kind(fn) == K_ATTRIBUTE) {
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(fn, F_ATTRIBUTE), attr_buf, &attr_heap);
                if (attr && eval_method(p, n, fn, attr, v))
                        return;
        }
        struct val f = { 0 };
        eval(p, fn, &f);
        eval_call_names(p, n, &f, v);
        val_release(&f);
}

/* Calls whose value the review follows, by name (sorted: bsearch). */
enum call_kind {
        C_NONE = 0,
        C_ATTRGETTER,            /* operator.attrgetter("system") */
        C_IMPORT,                /* __import__("os"), importlib.import_module */
        C_GETATTR,               /* getattr(os, "system") */
        C_GLOBALS,               /* globals(), locals(), vars() */
        C_VARS,                  /* vars(os) */
        C_CHR,
        C_STR,                   /* str(x), os.fspath(x), os.path.abspath(x): x as a string */
        C_JOIN,                  /* os.path.join */
        C_GETCWD,
        C_PATH,                  /* pathlib.Path(...) */
        C_B64,                   /* base64.b64decode("...") */
        C_HEX,                   /* bytes.fromhex("...") */
        C_REDUCE,                /* functools.reduce(getattr, [...], obj) */
        C_GETITEM,               /* operator.getitem(sys.modules, "os") */
        C_MAP,
        C_DICT,
        C_SAME,                  /* list(c), sorted(c), iter(c): the same items */
        C_ITEM,                  /* next(c), max(c): an item */
        C_WRAP,                  /* enumerate(c), zip(c): items of items */
        C_ARG,                   /* importlib.reload(m), module_from_spec(spec): what it is given */
};

static const struct {
        const char *name;
        enum call_kind kind;
} call_kinds[] = {
        { "_imp.create_builtin", C_ARG },
        { "_imp.exec_builtin", C_ARG },
        { "base64.b64decode", C_B64 },
        { "base64.standard_b64decode", C_B64 },
        { "binascii.a2b_base64", C_B64 },
        { "binascii.unhexlify", C_HEX },
        { "builtins.__import__", C_IMPORT },
        { "builtins.bytes.fromhex", C_HEX },
        { "builtins.chr", C_CHR },
        { "builtins.dict", C_DICT },
        { "builtins.enumerate", C_WRAP },
        { "builtins.frozenset", C_SAME },
        { "builtins.getattr", C_GETATTR },
        { "builtins.globals", C_GLOBALS },
        { "builtins.iter", C_SAME },
        { "builtins.list", C_SAME },
        { "builtins.locals", C_GLOBALS },
        { "builtins.map", C_MAP },
        { "builtins.max", C_ITEM },
        { "builtins.min", C_ITEM },
        { "builtins.next", C_ITEM },
        { "builtins.reversed", C_SAME },
        { "builtins.set", C_SAME },
        { "builtins.sorted", C_SAME },
        { "builtins.str", C_STR },
        { "builtins.tuple", C_SAME },
        { "builtins.vars", C_VARS },
        { "builtins.zip", C_WRAP },
        { "copy.copy", C_SAME },
        { "copy.deepcopy", C_SAME },
        { "functools.reduce", C_REDUCE },
        { "imp.reload", C_ARG },
        { "importlib.__import__", C_IMPORT },
        { "importlib.import_module", C_IMPORT },
        { "importlib.reload", C_ARG },
        { "importlib.util.module_from_spec", C_ARG },
        { "inspect.getattr_static", C_GETATTR },
        { "operator.attrgetter", C_ATTRGETTER },
        { "operator.getitem", C_GETITEM },
        { "operator.methodcaller", C_ATTRGETTER },
        { "os.fspath", C_STR },
        { "os.getcwd", C_GETCWD },
        { "os.path.abspath", C_STR },
        { "os.path.join", C_JOIN },
        { "os.path.normpath", C_STR },
        { "os.path.realpath", C_STR },
        { "pathlib.Path", C_PATH },
        { "pathlib.PosixPath", C_PATH },
        { "pathlib.PurePath", C_PATH },
        { "pathlib.PurePosixPath", C_PATH },
        { "posixpath.join", C_JOIN },
        { "random.choice", C_ITEM },
        { "types.MethodType", C_ARG },
};

static int cmp_call_kind(const void *key, const void *elem)
{
        return strcmp(key, *(const char *const *)elem);
}

static enum call_kind call_kind_of(const char *nm)
{
        const void *hit = bsearch(nm, call_kinds, ARRAY_SIZE(call_kinds), sizeof(call_kinds[0]), cmp_call_kind);
        return hit ? ((const typeof(call_kinds[0]) *)hit)->kind : C_NONE;
}

/* The same, the callee's names f already known. */
static void eval_call_names(struct py *p, TSNode n, const struct val *f, struct val *v)
{
        for (unsigned i = 0; i < f->n; i++) {
                const char *nm = f->names[i];
                int k = fn_index(nm);
                if (k >= 0) {
                        struct fn_args a = { .call = n };
                        fn_returns(p, (unsigned)k, &a, v);
                        continue;
                }
                /* operator.attrgetter("system")(os) is os.system */
                if (strncmp(nm, "@attr:", 6) == 0) {
                        struct val o = { 0 };
                        eval(p, call_arg(n, 0), &o);
                        for (unsigned j = 0; j < o.n; j++)
                                val_take(v, dotted(o.names[j], nm + 6));
                        val_release(&o);
                        continue;
                }
                if (nm[0] == '@')
                        continue;
                size_t l = strlen(nm);
                if (l > 4 && strcmp(nm + l - 4, ".get") == 0) {
                        /* sys.modules.get("os"), os.__dict__.get("system") */
                        char *d = strndup(nm, l - 4);
                        cleanup_free char *key = d && dictish(d) ? const_str(p, call_arg(n, 0)) : NULL;
                        if (key)
                                subscript_name(p, d, key, v);
                        free(d);
                        continue;
                }
                if (bsearch(nm, call_roots, ARRAY_SIZE(call_roots), sizeof(call_roots[0]), cmp_root) == NULL)
                        continue;
                const char *last = strrchr(nm, '.');
                last = last ? last + 1 : nm;
                struct val x = { 0 };
                switch (call_kind_of(nm)) {
                case C_ATTRGETTER: {
                        cleanup_free char *a = const_str(p, call_arg(n, 0));
                        char *pseudo = NULL;
                        if (a && asprintf(&pseudo, "@attr:%s", a) >= 0)
                                val_take(v, pseudo);
                        break;
                }
                case C_IMPORT: {
                        char *mod = const_str(p, call_arg(n, 0));
                        if (mod && nm[0] == 'b' && strchr(mod, '.'))
                                *strchr(mod, '.') = '\0'; /* __import__("a.b") is a */
                        if (mod && mod[0] == '.') {
                                /* import_module(".system", "os") */
                                cleanup_free char *pkg = const_str(p, arg(p, n, 1, "package"));
                                char *full = NULL;
                                if (pkg == NULL || asprintf(&full, "%s%s", pkg, mod) < 0)
                                        full = NULL;
                                free(mod);
                                mod = full;
                        }
                        val_take(v, canon(mod));
                        break;
                }
                case C_GETATTR: {
                        cleanup_free char *attr = const_str(p, call_arg(n, 1));
                        if (attr)
                                eval(p, call_arg(n, 0), &x);
                        for (unsigned j = 0; j < x.n; j++)
                                val_take(v, dotted(x.names[j], attr));
                        break;
                }
                case C_GLOBALS:
                        val_take(v, strdup("__main__.__dict__"));
                        break;
                case C_VARS:
                        if (ts_node_is_null(call_arg(n, 0))) {
                                val_take(v, strdup("__main__.__dict__"));
                                break;
                        }
                        eval(p, call_arg(n, 0), &x);
                        for (unsigned j = 0; j < x.n; j++)
                                val_take(v, dotted(x.names[j], "__dict__"));
                        break;
                case C_CHR:
                        eval(p, call_arg(n, 0), &x);
                        if (x.is_int && x.num > 0 && x.num < 0x110000 && v->str == NULL) {
                                v->str = malloc(5);
                                if (v->str) {
                                        put_utf8(v->str, &v->str_len, (unsigned long)x.num);
                                        v->str[v->str_len] = '\0';
                                }
                        }
                        break;
                case C_STR:
                        if (v->str)
                                break;
                        eval(p, call_arg(n, 0), &x);
                        if (x.str || x.path) {
                                v->str = x.str ? TAKE_PTR(x.str) : TAKE_PTR(x.path);
                                v->str_len = strlen(v->str);
                        } else if (x.prefix && v->prefix == NULL) {
                                v->prefix = TAKE_PTR(x.prefix);
                        }
                        break;
                case C_JOIN:
                        if (v->str == NULL && v->prefix == NULL) {
                                join_args(p, n, 0, &v->str, &v->prefix);
                                v->str_len = v->str ? strlen(v->str) : 0;
                        }
                        break;
                case C_GETCWD:
                        if (v->str == NULL && p->n_cwd == 1 && !p->cwd_lost) {
                                v->str = strdup(p->cwd[0] ? p->cwd[0] : "/workspace");
                                v->str_len = v->str ? strlen(v->str) : 0;
                        }
                        break;
                case C_PATH:
                        if (v->path == NULL && v->prefix == NULL)
                                join_args(p, n, 0, &v->path, &v->prefix);
                        break;
                case C_B64:
                case C_HEX:
                        if (v->str == NULL)
                                eval_decode(p, n, call_kind_of(nm) == C_HEX, v);
                        break;
                case C_REDUCE:
                        eval_reduce(p, n, v);
                        break;
                case C_GETITEM: {
                        /* operator.getitem(sys.modules, "os"), operator.getitem([os], 0) */
                        eval(p, call_arg(n, 0), &x);
                        cleanup_free char *key = x.n ? const_str(p, call_arg(n, 1)) : NULL;
                        for (unsigned j = 0; j < x.n; j++)
                                if (key && dictish(x.names[j]))
                                        subscript_name(p, x.names[j], key, v);
                        val_items(&x, v);
                        break;
                }
                case C_MAP: {
                        /* map(f, c): a container of what f returns for the items of c */
                        struct val fv = { 0 }, c = { 0 }, items = { 0 };
                        eval(p, call_arg(n, 0), &fv);
                        eval(p, call_arg(n, 1), &c);
                        val_items(&c, &items);
                        for (unsigned j = 0; j < fv.n; j++) {
                                struct fn_args a = { .items = &items };
                                if ((k = fn_index(fv.names[j])) >= 0)
                                        fn_returns(p, (unsigned)k, &a, &x);
                                else if (strncmp(fv.names[j], "@attr:", 6) == 0)
                                        for (unsigned m = 0; m < items.n; m++)
                                                val_take(&x, dotted(items.names[m], fv.names[j] + 6));
                        }
                        val_wrap(&x, v);
                        val_release(&fv);
                        val_release(&c);
                        val_release(&items);
                        break;
                }
                case C_DICT: {
                        /* dict(m=os): a container of the values */
                        struct review_children kc;
                        TSNode a;
                        review_children_init(&kc, field(n, F_ARGUMENTS), true);
                        while (review_children_next(&kc, &a)) {
                                struct val y = { 0 };
                                if (kind(a) == K_KEYWORD_ARGUMENT) {
                                        struct val z = { 0 };
                                        eval(p, field(a, F_VALUE), &z);
                                        val_wrap(&z, &y);
                                        val_release(&z);
                                } else {
                                        eval(p, a, &y);
                                }
                                val_add_names(&y, v);
                                val_release(&y);
                        }
                        review_children_release(&kc);
                        break;
                }
                case C_SAME:
                case C_ARG:
                        eval(p, call_arg(n, 0), &x);
                        val_add_names(&x, v);
                        break;
                case C_ITEM:
                        eval(p, call_arg(n, 0), &x);
                        val_items(&x, v);
                        break;
                case C_WRAP:
                        eval(p, call_arg(n, 0), &x);
                        val_wrap(&x, v);
                        break;
                case C_NONE:
                default:
                        if (is_finder(last) && (under_module(nm, "importlib") || under_module(nm, "imp") ||
                                                under_module(nm, "pkgutil")))
                                eval_finder(p, n, last, v);
                        else if (loop_factory(nm))
                                val_take(v, strdup("asyncio.AbstractEventLoop"));
                        else if (under_module(nm, "asyncio") && (strcmp(last, "get_event_loop_policy") == 0 ||
                                                                strcmp(last, "DefaultEventLoopPolicy") == 0))
                                val_take(v, strdup("asyncio.AbstractEventLoopPolicy"));
                        break;
                }
                val_release(&x);
        }
}

/* The items of a container literal: [os, sys], {"k": os}, (os,). */
static void eval_items(struct py *p, TSNode n, struct val *v)
{
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (!p->c->failed && review_children_next(&k, &ch)) {
                enum kind ck = kind(ch);
                if (ck == K_PAIR) {
                        ch = field(ch, F_VALUE);
                        ck = kind(ch);
                }
                /* (most items are data: nothing to follow) */
                if (ck == K_STRING || ck == K_INTEGER || ck == K_FLOAT || ck == K_COMMENT || ck == K_CONCATENATED_STRING)
                        continue;
                struct val x = { 0 };
                if (ck == K_LIST_SPLAT || ck == K_DICTIONARY_SPLAT) {
                        /* [*c]: the items of c */
                        eval(p, ts_node_named_child(ch, 0), &x);
                        val_add_names(&x, v);
                } else {
                        eval(p, ch, &x);
                        val_wrap(&x, v);
                }
                val_release(&x);
        }
        review_children_release(&k);
}

static void eval_int_op(const char *op, const struct val *a, const struct val *b, struct val *v)
{
        unsigned long long x = (unsigned long long)a->num, y = (unsigned long long)b->num, r;
        if (strcmp(op, "|") == 0)
                r = x | y;
        else if (strcmp(op, "+") == 0)
                r = x + y;
        else if (strcmp(op, "-") == 0)
                r = x - y;
        else if (strcmp(op, "^") == 0)
                r = x ^ y;
        else if (strcmp(op, "&") == 0)
                r = x & y;
        else if (strcmp(op, "*") == 0)
                r = x * y;
        else if (strcmp(op, "<<") == 0 && y < 63)
                r = x << y;
        else
                return;
        v->is_int = true;
        v->num = (long long)r;
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
                name_constant(v);
        } else if (nk == K_ATTRIBUTE) {
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(n, F_ATTRIBUTE), attr_buf, &attr_heap);
                struct val o = { 0 };
                eval(p, field(n, F_OBJECT), &o);
                for (unsigned i = 0; attr && i < o.n; i++)
                        val_take(v, dotted(o.names[i], attr));
                val_release(&o);
                if (p->attr_bindings) {
                        /* self.m after self.m = os */
                        cleanup_free char *t = chain_text(p, n);
                        const struct binding *b = t ? find_binding(p, t) : NULL;
                        for (unsigned i = 0; b && i < b->n; i++)
                                if (strncmp(b->vals[i], "@path:", 6) != 0)
                                        val_take(v, strdup(b->vals[i]));
                }
                name_constant(v);
        } else if (nk == K_CALL) {
                eval_call(p, n, v);
        } else if (nk == K_SUBSCRIPT) {
                struct val o = { 0 };
                eval(p, field(n, F_VALUE), &o);
                TSNode key = field(n, F_SUBSCRIPT);
                if (!ts_node_is_null(key) && kind(key) == K_SLICE) {
                        /* "metsys"[::-1] */
                        cleanup_free char *k = o.str ? review_node_text(p->c, key) : NULL;
                        if (k && strcmp(k, "::-1") == 0) {
                                for (size_t i = 0; i < o.str_len / 2; i++) {
                                        char ch = o.str[i];
                                        o.str[i] = o.str[o.str_len - 1 - i];
                                        o.str[o.str_len - 1 - i] = ch;
                                }
                                v->str = TAKE_PTR(o.str);
                                v->str_len = o.str_len;
                        }
                        /* c[1:] is a container of the same */
                        for (unsigned i = 0; i < o.n; i++)
                                if (strncmp(o.names[i], "@i:", 3) == 0)
                                        val_take(v, strdup(o.names[i]));
                } else {
                        cleanup_free char *k = o.n ? const_str(p, key) : NULL;
                        for (unsigned i = 0; k && i < o.n; i++)
                                if (dictish(o.names[i]))
                                        subscript_name(p, o.names[i], k, v);
                        val_items(&o, v);
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
                                        /* "/etc/" f"{x}": known up to here */
                                        char *pre = NULL;
                                        if (asprintf(&pre, "%.*s%s", (int)alen, acc ? acc : "",
                                                     s.prefix ? s.prefix : "") >= 0 && *pre)
                                                v->prefix = pre;
                                        else
                                                free(pre);
                                        free(acc);
                                        val_release(&s);
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
                if (op == NULL) {
                        /* out of memory */
                } else if (strcmp(op, "+") == 0 && a.str && b.str) {
                        v->str = malloc(a.str_len + b.str_len + 1);
                        if (v->str) {
                                memcpy(v->str, a.str, a.str_len);
                                memcpy(v->str + a.str_len, b.str, b.str_len + 1);
                                v->str_len = a.str_len + b.str_len;
                        }
                } else if (strcmp(op, "+") == 0 && (a.str || a.prefix)) {
                        /* "/etc/" + name */
                        if (asprintf(&v->prefix, "%s%s", a.str ? a.str : a.prefix,
                                     a.str && b.prefix ? b.prefix : "") < 0)
                                v->prefix = NULL;
                } else if (strcmp(op, "/") == 0 && a.path && (b.str || b.path)) {
                        const char *tail = b.str ? b.str : b.path;
                        if (tail[0] == '/')
                                v->path = strdup(tail);
                        else if (asprintf(&v->path, "%s/%s", a.path, tail) < 0)
                                v->path = NULL;
                } else if (strcmp(op, "/") == 0 && a.path) {
                        /* Path("/etc") / name */
                        if (asprintf(&v->prefix, "%s/%s", a.path, b.prefix ? b.prefix : "") < 0)
                                v->prefix = NULL;
                } else if (strcmp(op, "%") == 0 && a.str) {
                        /* "/etc/%s" % name: known up to the first conversion */
                        char *pct = strchr(a.str, '%');
                        if (pct && pct > a.str)
                                v->prefix = strndup(a.str, (size_t)(pct - a.str));
                } else if (strcmp(op, "*") == 0 && a.str && b.is_int && b.num >= 0 && b.num <= 64) {
                        v->str = calloc(1, a.str_len * (size_t)b.num + 1);
                        for (long long i = 0; v->str && i < b.num; i++)
                                memcpy(v->str + a.str_len * (size_t)i, a.str, a.str_len);
                        v->str_len = v->str ? a.str_len * (size_t)b.num : 0;
                } else if (a.is_int && b.is_int) {
                        eval_int_op(op, &a, &b, v);
                } else if (strcmp(op, "+") == 0) {
                        /* [os] + [sys] */
                        val_add_names(&a, v);
                        val_add_names(&b, v);
                }
                val_release(&a);
                val_release(&b);
        } else if (nk == K_INTEGER) {
                char num_buf[NODE_STR_BUF];
                cleanup_free char *num_heap = NULL;
                const char *s = node_str(p, n, num_buf, &num_heap);
                v->is_int = s && parse_int(s, &v->num);
        } else if (nk == K_UNARY_OPERATOR) {
                struct val a = { 0 };
                eval(p, field(n, F_ARGUMENT), &a);
                char op = p->c->code[ts_node_start_byte(n)];
                if (a.is_int && (op == '-' || op == '~' || op == '+')) {
                        v->is_int = true;
                        v->num = op == '-' ? (long long)(0ull - (unsigned long long)a.num) : op == '~' ? ~a.num : a.num;
                }
                val_release(&a);
        } else if (nk == K_PARENTHESIZED_EXPRESSION || nk == K_AWAIT) {
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
        } else if (nk == K_LIST || nk == K_TUPLE || nk == K_SET || nk == K_DICTIONARY || nk == K_EXPRESSION_LIST) {
                eval_items(p, n, v);
        } else if (nk == K_LIST_COMPREHENSION || nk == K_SET_COMPREHENSION || nk == K_GENERATOR_EXPRESSION ||
                   nk == K_DICTIONARY_COMPREHENSION) {
                /* [m for m in mods]: a container of what the body is (its names are bound by now) */
                struct val x = { 0 };
                TSNode body = field(n, F_BODY);
                eval(p, kind(body) == K_PAIR ? field(body, F_VALUE) : body, &x);
                val_wrap(&x, v);
                val_release(&x);
        } else if (nk == K_LAMBDA) {
                /* a lambda is a function of its own: summarised when first seen */
                int k = fn_find(p, ts_node_start_byte(n));
                if (k < 0) {
                        visit(p, n, false);
                        k = fn_find(p, ts_node_start_byte(n));
                }
                char *name = NULL;
                if (k >= 0 && asprintf(&name, "@fn%d", k) >= 0)
                        val_take(v, name);
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
        { "asyncio.streams.open_connection", "PY-NET-001" },
        { "asyncio.streams.start_server", "PY-NET-001" },
        { "asyncio.streams.open_unix_connection", "PY-NET-001" },
        { "asyncio.streams.start_unix_server", "PY-NET-001" },
        { "asyncio.base_subprocess", "PY-PROC-001" },
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
        { "zipimport", "PY-DYN-001" },
        { "imp.load_source", "PY-DYN-001" },
        { "imp.load_compiled", "PY-DYN-001" },
        { "imp.load_package", "PY-DYN-001" },
        { "imp.load_dynamic", "PY-FFI-001" },
        /* the import system's internals: nothing but an import by other means */
        { "_imp", "PY-DYN-002" },
        { "importlib._bootstrap", "PY-DYN-002" },
        { "importlib._bootstrap_external", "PY-DYN-002" },
        { "_frozen_importlib", "PY-DYN-002" },
        { "_frozen_importlib_external", "PY-DYN-002" },
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
                                                 "posix", "operator", "asyncio", "pkgutil", "imp", "functools",
                                                 "__main__.__dict__" };

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
static const char *const rule_roots[] = { "_cffi_backend", "_ctypes", "_frozen_importlib",
                                          "_frozen_importlib_external", "_imp", "_posixsubprocess", "_socket", "_ssl",
                                          "aiohttp", "asyncio", "builtins", "cffi", "code", "codecs", "codeop",
                                          "contextlib", "ctypes", "ftplib", "functools", "http", "httpx", "imaplib",
                                          "imp", "importlib", "inspect", "io", "multiprocessing", "nntplib", "numpy",
                                          "operator", "os", "paramiko", "pkgutil", "poplib", "pty", "requests",
                                          "runpy", "shutil", "smtplib", "socket", "socketserver", "ssl", "subprocess",
                                          "sys", "telnetlib", "timeit", "types", "urllib", "urllib2", "urllib3",
                                          "xmlrpc", "zipimport" };

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
/* Methods of an event loop that start processes or open connections
 * (asyncio.AbstractEventLoop: what get_event_loop() and the like return). */
static const char *const loop_proc[] = { "subprocess_exec", "subprocess_shell", "_make_subprocess_transport" };
static const char *const loop_net[] = { "create_connection", "create_server", "create_datagram_endpoint",
                                        "create_unix_connection", "create_unix_server", "sock_connect",
                                        "sock_accept", "sock_sendto", "connect_accepted_socket", "getaddrinfo",
                                        "getnameinfo", "open_connection", "start_server" };

static void check_name(struct py *p, TSNode at, const char *name, bool called)
{
        struct review_ctx *c = p->c;
        if (name[0] == '@') {
                /* a parameter's attribute: checked where the function is called */
                if (name[1] == 'p')
                        fn_record_use(p, name, called);
                return;
        }
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
        if (name[0] == 'a' && under_module(name, "asyncio") && strchr(name, '.')) {
                const char *last = strrchr(name, '.') + 1;
                if (in_list(last, loop_proc, ARRAY_SIZE(loop_proc))) {
                        review_add(c, at, "PY-PROC-001", name, NULL);
                        return;
                }
                if (strchr(name + 8, '.') && in_list(last, loop_net, ARRAY_SIZE(loop_net))) {
                        review_add(c, at, "PY-NET-001", name, NULL);
                        return;
                }
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

/* A path a call writes, given as a constant (open("/etc/x")), the start of
 * one (f"/etc/{name}"), or a parameter of the function being walked (then
 * checked where the function is called).  Relative paths are taken from
 * every directory os.chdir() may have left. */
static void check_path_write(struct py *p, TSNode at, const char *what, const char *path, bool rmtree)
{
        if (path == NULL)
                return;
        char subject[256];
        snprintf(subject, sizeof(subject), "%.96s('%.150s')", what, path);
        bool relative = path[0] != '/';
        for (unsigned i = 0; i < (relative ? p->n_cwd : 1); i++) {
                const char *cwd = relative ? p->cwd[i] : NULL;
                char full[4096];
                /* after os.chdir(): the path it stands for */
                if (cwd && review_path_join(cwd, path, full, sizeof(full)))
                        snprintf(subject, sizeof(subject), "%.96s('%.150s')", what, full);
                if (rmtree && review_path_system_dir_at(cwd, path)) {
                        review_add(p->c, at, "PY-FS-002", subject, what);
                        return;
                }
                if (review_path_outside_at(cwd, path)) {
                        review_add(p->c, at, "PY-FS-001", subject, what);
                        return;
                }
        }
        if (relative && p->cwd_lost)
                review_add(p->c, at, "PY-DYN-006", subject, what);
}

static void check_path_val(struct py *p, TSNode at, const char *what, const struct val *x, bool rmtree)
{
        const char *path = x->str ? x->str : x->path;
        if (path) {
                check_path_write(p, at, what, path, rmtree);
                return;
        }
        if (x->prefix) {
                bool relative = x->prefix[0] != '/';
                for (unsigned i = 0; i < (relative ? p->n_cwd : 1); i++)
                        if (review_prefix_outside_at(relative ? p->cwd[i] : NULL, x->prefix)) {
                                char subject[256];
                                snprintf(subject, sizeof(subject), "%s('%s...')", what, x->prefix);
                                review_add(p->c, at, "PY-FS-001", subject, what);
                                return;
                        }
                return;
        }
        fn_mark_param(p, x, false, what);
}

static void check_path_node(struct py *p, TSNode at, const char *what, TSNode n, bool rmtree)
{
        if (ts_node_is_null(n))
                return;
        struct val x = { 0 };
        eval(p, n, &x);
        check_path_val(p, at, what, &x, rmtree);
        val_release(&x);
}

/* The keywords of the writers' paths. */
static const char *const writer_keywords[] = { "path_or_buf", "path", "excel_writer", "fname", "file", "fid",
                                               "buf", "filename", "path_or_buffer", "fp" };

/* Raw file APIs: where the path is, where the mode is, and which modes write. */
enum wmode {
        W_ALWAYS,                /* it creates or writes the file */
        W_OPEN,                  /* open()'s modes: read unless w, a, x or + (the default reads) */
        W_UNLESS_READ,           /* the default writes (numpy.memmap's r+); r, c, readonly, copyonwrite read */
        W_DBM,                   /* dbm: c, n, w write */
        W_FLAGS,                 /* os.open(): O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND */
};

struct path_api {
        const char *name;
        signed char pos;         /* positional index of the path (-1: keyword only) */
        const char *kw;
        signed char mode_pos;
        const char *mode_kw;
        enum wmode mode;
};

/* Sorted by name (bsearch). */
static const struct path_api path_apis[] = {
        { "_io.FileIO", 0, "file", 1, "mode", W_OPEN },
        { "_io.open", 0, "file", 1, "mode", W_OPEN },
        { "builtins.open", 0, "file", 1, "mode", W_OPEN },
        { "bz2.BZ2File", 0, "filename", 1, "mode", W_OPEN },
        { "bz2.open", 0, "filename", 1, "mode", W_OPEN },
        { "codecs.open", 0, "filename", 1, "mode", W_OPEN },
        { "dbm.open", 0, "file", 1, "flag", W_DBM },
        { "gzip.GzipFile", 0, "filename", 1, "mode", W_OPEN },
        { "gzip.open", 0, "filename", 1, "mode", W_OPEN },
        { "io.FileIO", 0, "file", 1, "mode", W_OPEN },
        { "io.open", 0, "file", 1, "mode", W_OPEN },
        { "joblib.dump", 1, "filename", -1, NULL, W_ALWAYS },
        { "logging.FileHandler", 0, "filename", -1, NULL, W_ALWAYS },
        { "logging.basicConfig", -1, "filename", -1, NULL, W_ALWAYS },
        { "logging.handlers.RotatingFileHandler", 0, "filename", -1, NULL, W_ALWAYS },
        { "logging.handlers.TimedRotatingFileHandler", 0, "filename", -1, NULL, W_ALWAYS },
        { "logging.handlers.WatchedFileHandler", 0, "filename", -1, NULL, W_ALWAYS },
        { "lzma.LZMAFile", 0, "filename", 1, "mode", W_OPEN },
        { "lzma.open", 0, "filename", 1, "mode", W_OPEN },
        { "numpy.lib.format.open_memmap", 0, "filename", 1, "mode", W_UNLESS_READ },
        { "numpy.memmap", 0, "filename", 2, "mode", W_UNLESS_READ },
        { "os.open", 0, "path", 1, "flags", W_FLAGS },
        { "pandas.ExcelWriter", 0, "path", -1, NULL, W_ALWAYS },
        { "pandas.HDFStore", 0, "path", 1, "mode", W_UNLESS_READ },
        { "scipy.io.mmwrite", 0, "target", -1, NULL, W_ALWAYS },
        { "scipy.io.savemat", 0, "file_name", -1, NULL, W_ALWAYS },
        { "scipy.io.wavfile.write", 0, "filename", -1, NULL, W_ALWAYS },
        { "scipy.sparse.save_npz", 0, "file", -1, NULL, W_ALWAYS },
        { "shelve.open", 0, "filename", 1, "flag", W_UNLESS_READ },
        { "sqlite3.connect", 0, "database", -1, NULL, W_ALWAYS },
        { "tarfile.TarFile", 0, "name", 1, "mode", W_OPEN },
        { "tarfile.open", 0, "name", 1, "mode", W_OPEN },
        { "tempfile.NamedTemporaryFile", -1, "dir", -1, NULL, W_ALWAYS },
        { "tempfile.TemporaryDirectory", -1, "dir", -1, NULL, W_ALWAYS },
        { "tempfile.TemporaryFile", -1, "dir", -1, NULL, W_ALWAYS },
        { "tempfile.mkdtemp", 2, "dir", -1, NULL, W_ALWAYS },
        { "tempfile.mkstemp", 2, "dir", -1, NULL, W_ALWAYS },
        { "zipfile.ZipFile", 0, "file", 1, "mode", W_OPEN },
};

static int cmp_api(const void *key, const void *elem)
{
        return strcmp(key, ((const struct path_api *)elem)->name);
}

/* Does this mode write?  1 yes, 0 no, -1 cannot tell (not a constant). */
static int mode_writes(enum wmode m, TSNode mode_node, struct py *p)
{
        if (m == W_ALWAYS)
                return 1;
        if (ts_node_is_null(mode_node))
                return m == W_UNLESS_READ;
        struct val x = { 0 };
        eval(p, mode_node, &x);
        int w = -1;
        if (m == W_FLAGS && x.is_int)
                w = (x.num & 3) || (x.num & (0100 | 01000 | 02000 | 020000000));
        else if (x.str && m == W_OPEN)
                w = strpbrk(x.str, "wax+") != NULL;
        else if (x.str && m == W_DBM)
                w = strpbrk(x.str, "cnw") != NULL;
        else if (x.str && m == W_UNLESS_READ)
                w = !(strcmp(x.str, "r") == 0 || strcmp(x.str, "c") == 0 || strcmp(x.str, "readonly") == 0 ||
                      strcmp(x.str, "copyonwrite") == 0);
        val_release(&x);
        return w;
}

/* open(P, "w"), io.FileIO(P, "wb"), os.open(P, os.O_WRONLY), numpy.memmap(P):
 * a write when the mode writes, or cannot be folded (treated as a write). */
static bool check_path_api(struct py *p, TSNode call, const char *nm)
{
        const struct path_api *api = bsearch(nm, path_apis, ARRAY_SIZE(path_apis), sizeof(path_apis[0]), cmp_api);
        if (api == NULL)
                return false;
        TSNode pn = api->pos >= 0 ? arg(p, call, (unsigned)api->pos, api->kw) : kwarg(p, call, api->kw);
        if (ts_node_is_null(pn))
                return true;
        TSNode mn = api->mode_pos >= 0 ? arg(p, call, (unsigned)api->mode_pos, api->mode_kw) : (TSNode){ 0 };
        if (mode_writes(api->mode, mn, p) != 0)
                check_path_node(p, call, shown(nm), pn, false);
        return true;
}

/* getattr(M, computed) and the like: M's attributes by a name the review cannot see. */
static void check_computed_lookup(struct py *p, TSNode call, const char *fn, const struct val *o)
{
        if (fn_mark_param(p, o, true, NULL))
                return;
        for (unsigned i = 0; i < o->n; i++) {
                /* (builtins.x is only what an unbound local x might be) */
                if (o->names[i][0] == '@' || (strncmp(o->names[i], "builtins.", 9) == 0 && !sensitive(o->names[i])))
                        continue;
                char subject[160];
                if (strcmp(fn, "functools.reduce") == 0)
                        snprintf(subject, sizeof(subject), "reduce(getattr, ..., %s)", shown(o->names[i]));
                else
                        snprintf(subject, sizeof(subject), "%s(%s, ...)", fn, shown(o->names[i]));
                review_add(p->c, call, sensitive(o->names[i]) ? "PY-DYN-003" : "PY-DYN-006", subject, fn);
                return;
        }
}

/* os.chdir(D): relative paths from here on are taken from D. */
static void note_chdir(struct py *p, TSNode call, bool scoped)
{
        struct val x = { 0 };
        eval(p, call_arg(call, 0), &x);
        const char *d = x.str ? x.str : x.path;
        char *next[CWD_MAX] = { 0 };
        unsigned n = 0;
        for (unsigned i = 0; d && i < p->n_cwd && n < CWD_MAX; i++) {
                char full[4096];
                if (review_path_join(p->cwd[i], d, full, sizeof(full)) && (next[n] = strdup(full)) != NULL)
                        n++;
        }
        val_release(&x);
        if (d == NULL || n == 0) {
                /* a directory the review cannot follow */
                p->cwd_lost = true;
                if (p->nest == 0 && !scoped) {
                        for (unsigned i = 0; i < p->n_cwd; i++)
                                free(p->cwd[i]);
                        p->n_cwd = 0;
                }
                return;
        }
        if (p->nest == 0 && !scoped) {
                for (unsigned i = 0; i < p->n_cwd; i++)
                        free(p->cwd[i]);
                p->n_cwd = 0;
        }
        /* inside a block it may or may not have happened: both */
        for (unsigned i = 0; i < n; i++) {
                bool dup = false;
                for (unsigned j = 0; j < p->n_cwd; j++)
                        dup |= p->cwd[j] && strcmp(p->cwd[j], next[i]) == 0;
                if (dup || p->n_cwd == CWD_MAX) {
                        p->cwd_lost |= !dup;
                        free(next[i]);
                        continue;
                }
                p->cwd[p->n_cwd++] = next[i];
        }
}

/* Calls check_call() looks at (sorted by name: bsearch); the raw file APIs
 * are in path_apis. */
enum check_kind {
        CK_NONE = 0,
        CK_EXEC,                 /* eval, exec, compile */
        CK_IMPORT,               /* __import__, import_module */
        CK_GETATTR,              /* getattr and its kin */
        CK_REDUCE,               /* functools.reduce */
        CK_LOAD,                 /* pkgutil.resolve_name, module_from_spec */
        CK_FIND,                 /* find_spec and its kin */
        CK_CHDIR,
        CK_TIMEIT,
        CK_WRITE1,               /* os.remove(P) and the like */
        CK_WRITE2,               /* os.rename(A, P), shutil.copy(A, P) */
        CK_RMTREE,
};

static const struct {
        const char *name;
        enum check_kind kind;
} check_kinds[] = {
        { "builtins.__import__", CK_IMPORT },
        { "builtins.compile", CK_EXEC },
        { "builtins.delattr", CK_GETATTR },
        { "builtins.eval", CK_EXEC },
        { "builtins.exec", CK_EXEC },
        { "builtins.execfile", CK_EXEC },
        { "builtins.getattr", CK_GETATTR },
        { "builtins.hasattr", CK_GETATTR },
        { "builtins.setattr", CK_GETATTR },
        { "contextlib.chdir", CK_CHDIR },
        { "functools.reduce", CK_REDUCE },
        { "importlib.__import__", CK_IMPORT },
        { "importlib.find_loader", CK_FIND },
        { "importlib.import_module", CK_IMPORT },
        { "importlib.util.find_spec", CK_FIND },
        { "importlib.util.module_from_spec", CK_LOAD },
        { "inspect.getattr_static", CK_GETATTR },
        { "os.chdir", CK_CHDIR },
        { "os.chflags", CK_WRITE1 },
        { "os.chmod", CK_WRITE1 },
        { "os.chown", CK_WRITE1 },
        { "os.lchmod", CK_WRITE1 },
        { "os.lchown", CK_WRITE1 },
        { "os.link", CK_WRITE2 },
        { "os.makedirs", CK_WRITE1 },
        { "os.mkdir", CK_WRITE1 },
        { "os.mkfifo", CK_WRITE1 },
        { "os.mknod", CK_WRITE1 },
        { "os.remove", CK_WRITE1 },
        { "os.removedirs", CK_RMTREE },
        { "os.rename", CK_WRITE2 },
        { "os.renames", CK_WRITE2 },
        { "os.replace", CK_WRITE2 },
        { "os.rmdir", CK_WRITE1 },
        { "os.symlink", CK_WRITE2 },
        { "os.truncate", CK_WRITE1 },
        { "os.unlink", CK_WRITE1 },
        { "os.utime", CK_WRITE1 },
        { "pkgutil.find_loader", CK_FIND },
        { "pkgutil.get_loader", CK_FIND },
        { "pkgutil.resolve_name", CK_LOAD },
        { "shutil.copy", CK_WRITE2 },
        { "shutil.copy2", CK_WRITE2 },
        { "shutil.copyfile", CK_WRITE2 },
        { "shutil.copymode", CK_WRITE2 },
        { "shutil.copystat", CK_WRITE2 },
        { "shutil.copytree", CK_WRITE2 },
        { "shutil.move", CK_WRITE2 },
        { "shutil.rmtree", CK_RMTREE },
        { "timeit.Timer", CK_TIMEIT },
        { "timeit.repeat", CK_TIMEIT },
        { "timeit.timeit", CK_TIMEIT },
};

static int cmp_check_kind(const void *key, const void *elem)
{
        return strcmp(key, *(const char *const *)elem);
}

static void check_call(struct py *p, TSNode call, const char *nm)
{
        struct review_ctx *c = p->c;
        if (check_path_api(p, call, nm))
                return;
        const void *hit = bsearch(nm, check_kinds, ARRAY_SIZE(check_kinds), sizeof(check_kinds[0]), cmp_check_kind);
        const enum check_kind ck = hit ? ((const typeof(check_kinds[0]) *)hit)->kind : CK_NONE;
        if (ck == CK_NONE)
                return;
        if (ck == CK_EXEC) {
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
        } else if (ck == CK_IMPORT) {
                TSNode a = call_arg(call, 0);
                cleanup_free char *mod = const_str(p, a);
                if (mod && mod[0] == '.') {
                        /* import_module(".system", "os") */
                        cleanup_free char *pkg = const_str(p, arg(p, call, 1, "package"));
                        char *full = NULL;
                        if (pkg == NULL || asprintf(&full, "%s%s", pkg, mod) < 0)
                                full = NULL;
                        free(mod);
                        mod = full;
                }
                if (mod) {
                        cleanup_free char *m = canon(strdup(mod));
                        if (m)
                                check_name(p, call, m, false);
                } else if (!ts_node_is_null(a)) {
                        review_add(c, call, "PY-DYN-002", shown(nm), nm);
                }
        } else if (ck == CK_GETATTR) {
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
                        check_computed_lookup(p, call, shown(nm), &o);
                }
                val_release(&o);
        } else if (ck == CK_REDUCE) {
                /* reduce(getattr, ["path", "os", "system"], shutil) */
                char *parts[STR_LIST_MAX];
                int np = reduce_of_getattr(p, call) ? const_str_list(p, call_arg(call, 1), parts) : 0;
                if (np >= 0) {
                        str_list_free(parts, np);
                        return;
                }
                struct val o = { 0 };
                eval(p, call_arg(call, 2), &o);
                check_computed_lookup(p, call, nm, &o);
                val_release(&o);
        } else if (ck == CK_LOAD) {
                /* a module by a name (or a spec) the review cannot see: an import of anything */
                struct val m = { 0 };
                eval_call(p, call, &m);
                if (!val_known(&m) && !ts_node_is_null(call_arg(call, 0)))
                        review_add(c, call, "PY-DYN-002", nm, nm);
                val_release(&m);
        } else if (ck == CK_FIND) {
                struct val m = { 0 };
                eval_call(p, call, &m);
                if (!val_known(&m) && !ts_node_is_null(call_arg(call, 0)))
                        review_add(c, call, "PY-DYN-006", nm, nm);
                val_release(&m);
        } else if (ck == CK_CHDIR) {
                note_chdir(p, call, nm[0] == 'c');
        } else if (ck == CK_TIMEIT) {
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
        } else if (ck == CK_WRITE1) {
                check_path_node(p, call, nm, arg(p, call, 0, "path"), false);
        } else if (ck == CK_WRITE2) {
                check_path_node(p, call, nm, arg(p, call, 1, "dst"), false);
                /* a rename or move also removes its source; a link leaves its target alone */
                if (strstr(nm, "rename") || strstr(nm, "replace") || strstr(nm, "move"))
                        check_path_node(p, call, nm, arg(p, call, 0, "src"), false);
        } else if (ck == CK_RMTREE) {
                check_path_node(p, call, nm, arg(p, call, 0, "path"), true);
        }
}

static void visit_children(struct py *p, TSNode n)
{
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (!p->c->failed && review_children_next(&k, &ch))
                visit(p, ch, false);
        review_children_release(&k);
}

/* A call of function k (a def or lambda the walk summarised): what it does
 * with its parameters, checked with the arguments it is given here. */
static void fn_check(struct py *p, TSNode at, unsigned k, const struct fn_args *a)
{
        if (k >= p->nfns || (p->fns[k].n_uses == 0 && p->fns[k].lookup == 0 && p->fns[k].writes == 0))
                return;
        /* each argument once (evaluating one may add summaries and move p->fns: copy, then index again) */
        struct val args[FN_PARAMS];
        unsigned have = 0;
        for (unsigned u = 0; u < p->fns[k].n_uses; u++) {
                char use[256];
                snprintf(use, sizeof(use), "%s", p->fns[k].uses[u]);
                bool called = p->fns[k].called[u];
                unsigned kk, i;
                const char *rest;
                if (!param_parse(use, &kk, &i, &rest) || kk != k || *rest == '\0')
                        continue;
                if (!(have & (1u << i))) {
                        memset(&args[i], 0, sizeof(args[i]));
                        fn_arg_val(p, a, k, i, &args[i]);
                        have |= 1u << i;
                }
                for (unsigned j = 0; j < args[i].n; j++) {
                        cleanup_free char *full = dotted(args[i].names[j], rest + 1);
                        if (full)
                                check_name(p, at, full, called);
                }
        }
        for (unsigned i = 0; i < p->fns[k].n_params; i++) {
                unsigned lookup = p->fns[k].lookup, writes = p->fns[k].writes;
                if (!((lookup | writes) & (1u << i)))
                        continue;
                cleanup_free char *what = writes & (1u << i) && p->fns[k].write_what[i] ? strdup(p->fns[k].write_what[i])
                                                                                         : NULL;
                if (!(have & (1u << i))) {
                        memset(&args[i], 0, sizeof(args[i]));
                        fn_arg_val(p, a, k, i, &args[i]);
                        have |= 1u << i;
                }
                if (lookup & (1u << i))
                        check_computed_lookup(p, at, "getattr", &args[i]);
                if (what)
                        check_path_val(p, at, what, &args[i], false);
        }
        for (unsigned i = 0; i < FN_PARAMS; i++)
                if (have & (1u << i))
                        val_release(&args[i]);
}

/* A sensitive module (or a container of one) as a value: "os", "@i:sys". */
static const char *module_value(const char *name)
{
        while (strncmp(name, "@i:", 3) == 0)
                name += 3;
        return name[0] != '@' && strcmp(name, "operator") != 0 && strcmp(name, "functools") != 0 &&
                               in_list(name, sensitive_modules, ARRAY_SIZE(sensitive_modules))
                       ? name
                       : NULL;
}

/* Calls the review follows modules through (or that do nothing with them). */
static bool follows_modules(const char *nm)
{
        static const char *const known[] = { "builtins.print", "builtins.repr", "builtins.str", "builtins.type",
                                             "builtins.id", "builtins.isinstance", "builtins.dir", "builtins.help",
                                             "builtins.hasattr", "builtins.getattr", "builtins.vars",
                                             "builtins.callable", "builtins.map", "builtins.dict",
                                             "functools.reduce", "operator.getitem", "inspect.getattr_static" };
        return nm[0] == '@' || in_list(nm, known, ARRAY_SIZE(known)) || call_kind_of(nm) != C_NONE;
}

/* Under strict: a sensitive module handed to code the review cannot follow. */
static void check_module_escape(struct py *p, TSNode call, const struct val *f)
{
        for (unsigned i = 0; i < f->n; i++)
                if (follows_modules(f->names[i]))
                        return;
        TSNode args = field(call, F_ARGUMENTS);
        struct review_children k;
        TSNode a;
        review_children_init(&k, args, true);
        while (review_children_next(&k, &a)) {
                const enum kind ak = kind(a);
                if (ak != K_IDENTIFIER && ak != K_ATTRIBUTE && ak != K_KEYWORD_ARGUMENT && ak != K_LIST &&
                    ak != K_TUPLE && ak != K_DICTIONARY && ak != K_SET && ak != K_LIST_SPLAT && ak != K_CALL &&
                    ak != K_SUBSCRIPT)
                        continue;
                struct val x = { 0 };
                eval(p, ak == K_KEYWORD_ARGUMENT ? field(a, F_VALUE) : a, &x);
                for (unsigned j = 0; j < x.n; j++) {
                        const char *m = module_value(x.names[j]);
                        if (m) {
                                char subject[160];
                                snprintf(subject, sizeof(subject), "%s passed as a value", m);
                                review_add(p->c, a, "PY-DYN-006", subject, m);
                                break;
                        }
                }
                val_release(&x);
        }
        review_children_release(&k);
}

/* Methods that load a module by a name or spec the review cannot see. */
static void check_loader_method(struct py *p, TSNode n, TSNode fn, const char *attr)
{
        bool load = strcmp(attr, "load_module") == 0 || strcmp(attr, "exec_module") == 0 ||
                    strcmp(attr, "create_module") == 0;
        bool find = strcmp(attr, "find_spec") == 0 || strcmp(attr, "find_module") == 0 ||
                    strcmp(attr, "find_loader") == 0;
        if (!load && !find)
                return;
        TSNode a0 = call_arg(n, 0);
        if (ts_node_is_null(a0))
                return;
        struct val x = { 0 };
        if (strcmp(attr, "exec_module") == 0 || strcmp(attr, "create_module") == 0)
                eval(p, a0, &x); /* a module or a spec */
        else
                eval_call(p, n, &x);
        if (!val_known(&x)) {
                cleanup_free char *subject = review_node_text(p->c, fn);
                review_add(p->c, n, load ? "PY-DYN-002" : "PY-DYN-006", subject ? subject : attr, attr);
        }
        val_release(&x);
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
                int k = fn_index(f.names[i]);
                if (k >= 0) {
                        struct fn_args a = { .call = n };
                        fn_check(p, n, (unsigned)k, &a);
                        continue;
                }
                check_name(p, n, f.names[i], true);
                check_call(p, n, f.names[i]);
                if (strcmp(f.names[i], "builtins.map") == 0) {
                        /* map(f, c): f called with the items of c */
                        struct val fv = { 0 }, c = { 0 }, items = { 0 };
                        eval(p, call_arg(n, 0), &fv);
                        eval(p, call_arg(n, 1), &c);
                        val_items(&c, &items);
                        for (unsigned j = 0; j < fv.n; j++)
                                if ((k = fn_index(fv.names[j])) >= 0) {
                                        struct fn_args a = { .items = &items };
                                        fn_check(p, n, (unsigned)k, &a);
                                }
                        val_release(&fv);
                        val_release(&c);
                        val_release(&items);
                }
        }
        if (review_policy_level(p->c->policy) == REVIEW_LEVEL_STRICT)
                check_module_escape(p, n, &f);
        bool named = val_known(&f), method = false;
        if (kind(fn) == K_ATTRIBUTE) {
                char attr_buf[NODE_STR_BUF];
                cleanup_free char *attr_heap = NULL;
                const char *attr = node_str(p, field(fn, F_ATTRIBUTE), attr_buf, &attr_heap);
                const unsigned mf = attr ? method_flags(attr) : 0;
                struct val r = { 0 };
                /* What the call returns, when used: sys.modules.get("subprocess") */
                if (!chain && mf && (method = eval_method(p, n, fn, attr, &r)))
                        check_names(p, n, &r, false);
                val_release(&r);
                if (mf & M_WRITER) {
                        TSNode pn = call_arg(n, 0);
                        for (size_t i = 0; ts_node_is_null(pn) && i < ARRAY_SIZE(writer_keywords); i++)
                                pn = kwarg(p, n, writer_keywords[i]);
                        check_path_node(p, n, attr, pn, false);
                        /* json.dump(obj, path) and DataFrame.to_csv(df, path): the second */
                        cleanup_free char *obj = review_node_text(p->c, field(fn, F_OBJECT));
                        const char *last = obj ? strrchr(obj, '.') : NULL;
                        last = last ? last + 1 : obj;
                        if (strcmp(attr, "dump") == 0 || (last && *last >= 'A' && *last <= 'Z'))
                                check_path_node(p, n, attr, call_arg(n, 1), false);
                }
                if (mf & M_PATHWRITE) {
                        struct val o = { 0 };
                        eval(p, field(fn, F_OBJECT), &o);
                        if ((o.path || o.prefix) &&
                            (strcmp(attr, "open") != 0 || mode_writes(W_OPEN, arg(p, n, 0, "mode"), p) != 0)) {
                                char what[96];
                                snprintf(what, sizeof(what), "Path.%s", attr);
                                struct val pv = { .path = o.path, .prefix = o.prefix };
                                check_path_val(p, n, what, &pv, false);
                        }
                        val_release(&o);
                }
                if ((mf & M_SUBPROC) && !named) {
                        /* an event loop's, whatever the object: the names are asyncio's alone */
                        cleanup_free char *subject = review_node_text(p->c, fn);
                        review_add(p->c, n, "PY-PROC-001", subject ? subject : attr, attr);
                }
                if (mf & M_GETATTRIBUTE) {
                        struct val o = { 0 };
                        eval(p, field(fn, F_OBJECT), &o);
                        bool cls = false;
                        for (unsigned i = 0; i < o.n; i++)
                                cls |= strcmp(o.names[i], "builtins.object") == 0 ||
                                       strcmp(o.names[i], "builtins.type") == 0 ||
                                       strcmp(o.names[i], "types.ModuleType") == 0;
                        if (cls) {
                                val_release(&o);
                                eval(p, call_arg(n, 0), &o);
                        }
                        struct val a = { 0 };
                        eval(p, call_arg(n, cls ? 1 : 0), &a);
                        if (a.str == NULL && !ts_node_is_null(call_arg(n, cls ? 1 : 0)))
                                check_computed_lookup(p, n, "__getattribute__", &o);
                        val_release(&a);
                        val_release(&o);
                }
                if (mf & M_LOADER)
                        check_loader_method(p, n, fn, attr);
                if (mf & M_ADDER)
                        visit_container_add(p, n, field(fn, F_OBJECT), attr);
        }
        if (!chain && !method) {
                struct val r = { 0 };
                eval_call_names(p, n, &f, &r);
                check_names(p, n, &r, false);
                val_release(&r);
        }
        val_release(&f);
        visit(p, fn, true);
        TSNode args = field(n, F_ARGUMENTS);
        if (!ts_node_is_null(args))
                visit(p, args, false);
}

static bool ruled(const char *name);

/* Does v stand for something a rule looks at (a module of a rule, a
 * function the walk summarised, a container of either)? */
static bool val_followed(const struct val *v)
{
        for (unsigned i = 0; i < v->n; i++) {
                const char *nm = v->names[i];
                while (strncmp(nm, "@i:", 3) == 0)
                        nm += 3;
                if (nm[0] == '@' ? nm[1] == 'f' : ruled(nm))
                        return true;
        }
        return false;
}

/* Add what v may be to a name's binding, whatever the block (c.append(os),
 * d["k"] = os: a container that now may hold os). */
static void bind_add(struct py *p, const char *name, const struct val *v)
{
        if (v->n == 0)
                return;
        if (find_binding(p, name) == NULL) {
                bind(p, name, v);
                return;
        }
        unsigned nest = p->nest;
        p->nest = nest ? nest : 1;
        bind(p, name, v);
        p->nest = nest;
}

/* The text of a simple attribute chain (self.m, a.b.c), or NULL. */
static char *chain_text(struct py *p, TSNode n)
{
        for (TSNode o = n; kind(o) != K_IDENTIFIER; o = field(o, F_OBJECT))
                if (kind(o) != K_ATTRIBUTE)
                        return NULL;
        char *t = review_node_text(p->c, n);
        if (t && strpbrk(t, " \t\n\\#()[]")) {
                free(t);
                return NULL;
        }
        return t;
}

/* Bind the names of an assignment target (v: what the right side is). */
static void bind_target(struct py *p, TSNode left, const struct val *v)
{
        if (ts_node_is_null(left))
                return;
        const enum kind lk = kind(left);
        if (lk == K_IDENTIFIER) {
                cleanup_free char *id = review_node_text(p->c, left);
                if (id)
                        bind(p, id, v);
                return;
        }
        if (lk == K_PATTERN_LIST || lk == K_TUPLE_PATTERN || lk == K_LIST_PATTERN || lk == K_LIST_SPLAT_PATTERN ||
            lk == K_PARENTHESIZED_EXPRESSION || lk == K_TUPLE || lk == K_LIST) {
                /* a, b = c: each may be any item of c */
                struct val items = { 0 };
                if (v)
                        val_items(v, &items);
                struct review_children k;
                TSNode ch;
                review_children_init(&k, left, true);
                while (review_children_next(&k, &ch))
                        bind_target(p, ch, v ? &items : NULL);
                review_children_release(&k);
                val_release(&items);
                return;
        }
        /* o.x = ..., d[k] = ...: a use of what is assigned into. */
        visit(p, left, false);
        if (v == NULL || v->n == 0)
                return;
        if (lk == K_SUBSCRIPT && kind(field(left, F_VALUE)) == K_IDENTIFIER) {
                /* d["k"] = os: d may hold os */
                cleanup_free char *id = review_node_text(p->c, field(left, F_VALUE));
                struct val w = { 0 };
                val_wrap(v, &w);
                if (id)
                        bind_add(p, id, &w);
                val_release(&w);
        } else if (lk == K_ATTRIBUTE && val_followed(v)) {
                /* self.m = os: self.m is os (by the text of the chain, wherever it is used) */
                cleanup_free char *t = chain_text(p, left);
                if (t) {
                        bind_add(p, t, v);
                        p->attr_bindings++;
                }
        }
}

/* Methods that put a value into a container: c.append(os), d.update(m=os). */
static void visit_container_add(struct py *p, TSNode call, TSNode obj, const char *attr)
{
        static const char *const adders[] = { "append", "add", "insert", "extend", "update", "setdefault",
                                              "appendleft", "put" };
        if (!in_list(attr, adders, ARRAY_SIZE(adders)) || kind(obj) != K_IDENTIFIER)
                return;
        struct val x = { 0 }, w = { 0 };
        TSNode args = field(call, F_ARGUMENTS);
        struct review_children k;
        TSNode a;
        review_children_init(&k, args, true);
        while (review_children_next(&k, &a)) {
                struct val y = { 0 };
                eval(p, kind(a) == K_KEYWORD_ARGUMENT ? field(a, F_VALUE) : a, &y);
                /* extend([os]) and update({...}) give items; the rest give one */
                if (strcmp(attr, "extend") == 0 || (strcmp(attr, "update") == 0 && kind(a) != K_KEYWORD_ARGUMENT))
                        val_add_names(&y, &w);
                else
                        val_add_names(&y, &x);
                val_release(&y);
        }
        review_children_release(&k);
        val_wrap(&x, &w);
        cleanup_free char *id = review_node_text(p->c, obj);
        if (id)
                bind_add(p, id, &w);
        val_release(&x);
        val_release(&w);
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
                        bind_target(p, l, &e);
                        val_release(&e);
                }
                review_children_release(&kr);
                review_children_release(&kl);
                return;
        }
        eval(p, r, &v);
        cleanup_free char *chain = review_policy_level(p->c->policy) == REVIEW_LEVEL_STRICT && lk == K_ATTRIBUTE
                                           ? chain_text(p, left)
                                           : NULL;
        if (review_policy_level(p->c->policy) == REVIEW_LEVEL_STRICT &&
            (lk == K_ATTRIBUTE || lk == K_SUBSCRIPT) && chain == NULL)
                for (unsigned i = 0; i < v.n; i++) {
                        const char *m = module_value(v.names[i]);
                        if (m) {
                                char subject[160];
                                snprintf(subject, sizeof(subject), "%s stored in an object", m);
                                review_add(p->c, n, "PY-DYN-006", subject, m);
                                break;
                        }
                }
        bind_target(p, left, &v);
        val_release(&v);
}

/* x += y, flags |= os.O_CREAT: x = x OP y. */
static void visit_augmented(struct py *p, TSNode n)
{
        TSNode l = field(n, F_LEFT), r = field(n, F_RIGHT);
        visit(p, r, false);
        if (ts_node_is_null(l))
                return;
        if (kind(l) != K_IDENTIFIER) {
                visit(p, l, false);
                return;
        }
        char op_buf[NODE_STR_BUF];
        cleanup_free char *op_heap = NULL;
        const char *op = node_str(p, field(n, F_OPERATOR), op_buf, &op_heap);
        struct val a = { 0 }, b = { 0 }, x = { 0 };
        eval(p, l, &a);
        eval(p, r, &b);
        if (op && strcmp(op, "+=") == 0 && a.str && b.str) {
                x.str = malloc(a.str_len + b.str_len + 1);
                if (x.str) {
                        memcpy(x.str, a.str, a.str_len);
                        memcpy(x.str + a.str_len, b.str, b.str_len + 1);
                        x.str_len = a.str_len + b.str_len;
                }
        } else if (op && a.is_int && b.is_int && strlen(op) >= 2) {
                char o[3] = { op[0], op[1] == '=' ? '\0' : op[1], '\0' };
                eval_int_op(o, &a, &b, &x);
        }
        val_add_names(&a, &x);
        val_add_names(&b, &x);
        bind_target(p, l, &x);
        val_release(&a);
        val_release(&b);
        val_release(&x);
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

/* Bind a function's parameters: each stands for "@pK.I" (what callers give
 * it, checked at the calls) and for its default; no constant. */
static void visit_params(struct py *p, TSNode params, int k)
{
        if (ts_node_is_null(params))
                return;
        struct review_children kc;
        TSNode ch;
        unsigned pos = 0;
        review_children_init(&kc, params, true);
        while (review_children_next(&kc, &ch)) {
                const enum kind ck = kind(ch);
                TSNode v = field(ch, F_VALUE), nm = { 0 };
                bool positional = true;
                if (ck == K_IDENTIFIER) {
                        nm = ch;
                } else if (ck == K_DEFAULT_PARAMETER || ck == K_TYPED_DEFAULT_PARAMETER) {
                        nm = field(ch, F_NAME);
                } else if (ck == K_TYPED_PARAMETER || ck == K_LIST_SPLAT_PATTERN || ck == K_DICTIONARY_SPLAT_PATTERN) {
                        nm = ts_node_named_child(ch, 0);
                        positional = ck == K_TYPED_PARAMETER && kind(nm) == K_IDENTIFIER;
                        if (kind(nm) != K_IDENTIFIER && !ts_node_is_null(nm))
                                nm = ts_node_named_child(nm, 0);
                } else {
                        continue;
                }
                if (!ts_node_is_null(v))
                        visit(p, v, false);
                if (ts_node_is_null(nm) || kind(nm) != K_IDENTIFIER)
                        continue;
                cleanup_free char *id = review_node_text(p->c, nm);
                if (id == NULL)
                        continue;
                struct val x = { 0 };
                if (!ts_node_is_null(v))
                        eval(p, v, &x);
                if (positional && k >= 0 && pos < FN_PARAMS) {
                        char *pn = NULL;
                        struct fnsum *f = &p->fns[k];
                        if (asprintf(&pn, "@p%d.%u", k, pos) >= 0)
                                val_take(&x, pn);
                        f->params[pos] = strdup(id);
                        f->defaults[pos] = v;
                        f->n_params = pos + 1;
                }
                pos += positional;
                bind(p, id, &x);
                struct binding *b = find_binding(p, id);
                if (b) {
                        binding_clear_const(b);
                        b->mixed = true;
                }
                val_release(&x);
        }
        review_children_release(&kc);
}

/* A def or a lambda: its parameters, its body, its summary (what callers get checked against). */
static void visit_function(struct py *p, TSNode n, bool lambda)
{
        int k = fn_new(p, ts_node_start_byte(n));
        cleanup_free char *name = lambda ? NULL : review_node_text(p->c, field(n, F_NAME));
        if (name) {
                struct val fv = { 0 };
                if (k >= 0 && asprintf(&fv.names[0], "@fn%d", k) >= 0)
                        fv.n = 1;
                bind(p, name, &fv);
                val_release(&fv);
        }
        /* A function that forks and calls itself forks without end. */
        const char *fn_name = p->fn_name;
        bool fn_fork = p->fn_fork, fn_self = p->fn_self;
        TSNode fn_fork_at = p->fn_fork_at;
        int fn = p->fn;
        if (!lambda) {
                p->fn_name = name;
                p->fn_fork = p->fn_self = false;
        }
        p->fn = k;
        p->nest++;
        visit_params(p, field(n, F_PARAMETERS), k);
        if (!lambda)
                visit(p, field(n, F_RETURN_TYPE), false);
        visit(p, field(n, F_BODY), false);
        if (lambda && k >= 0) {
                /* a lambda returns its body */
                struct val r = { 0 };
                eval(p, field(n, F_BODY), &r);
                for (unsigned i = 0; i < r.n && p->fns[k].n_rets < VMAX; i++)
                        p->fns[k].rets[p->fns[k].n_rets++] = TAKE_PTR(r.names[i]);
                val_release(&r);
        }
        p->nest--;
        p->fn = fn;
        if (!lambda) {
                if (p->fn_fork && p->fn_self)
                        review_add(p->c, p->fn_fork_at, "PY-PROC-006", "os.fork", NULL);
                p->fn_name = fn_name;
                p->fn_fork = fn_fork;
                p->fn_self = fn_self;
                p->fn_fork_at = fn_fork_at;
        }
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
                visit_augmented(p, n);
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
                /* for m in [os, sys]: m is each item */
                struct val c = { 0 }, items = { 0 };
                eval(p, field(n, F_RIGHT), &c);
                val_items(&c, &items);
                p->nest++;
                bind_target(p, field(n, F_LEFT), &items);
                val_release(&c);
                val_release(&items);
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
                /* the for clauses bind what the body uses: them first */
                p->loop++;
                p->nest++;
                TSNode body = field(n, F_BODY);
                struct review_children k;
                TSNode ch;
                review_children_init(&k, n, true);
                while (review_children_next(&k, &ch))
                        if (!ts_node_eq(ch, body))
                                visit(p, ch, false);
                review_children_release(&k);
                visit(p, body, false);
                p->nest--;
                p->loop--;
        } else if (nk == K_FUNCTION_DEFINITION) {
                visit_function(p, n, false);
        } else if (nk == K_LAMBDA) {
                /* (a lambda evaluated before its turn was walked then) */
                if (fn_find(p, ts_node_start_byte(n)) < 0)
                        visit_function(p, n, true);
        } else if (nk == K_CLASS_DEFINITION) {
                cleanup_free char *name = review_node_text(p->c, field(n, F_NAME));
                if (name)
                        bind(p, name, NULL);
                p->nest++;
                visit(p, field(n, F_SUPERCLASSES), false);
                visit(p, field(n, F_BODY), false);
                p->nest--;
        } else if (nk == K_RETURN_STATEMENT) {
                visit_children(p, n);
                TSNode e = ts_node_named_child(n, 0);
                if (p->fn >= 0 && !ts_node_is_null(e)) {
                        struct val r = { 0 };
                        eval(p, e, &r);
                        struct fnsum *f = &p->fns[p->fn];
                        for (unsigned i = 0; i < r.n && f->n_rets < VMAX; i++) {
                                bool dup = false;
                                for (unsigned j = 0; j < f->n_rets; j++)
                                        dup |= strcmp(f->rets[j], r.names[i]) == 0;
                                if (!dup)
                                        f->rets[f->n_rets++] = TAKE_PTR(r.names[i]);
                        }
                        val_release(&r);
                }
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
        /* relative paths start from /workspace (cwd[0] NULL) */
        struct py p = { .c = c, .fn = -1, .n_cwd = 1 };
        TSNode root = ts_tree_root_node(tree);
        review_syntax(c, root, "PY-SYN-001");
        visit(&p, root, false);
        for (size_t i = 0; i < p.nb; i++) {
                free(p.b[i].name);
                free(p.b[i].str);
                for (unsigned j = 0; j < p.b[i].n; j++)
                        free(p.b[i].vals[j]);
        }
        free(p.b);
        for (unsigned i = 0; i < p.nstars; i++)
                free(p.stars[i]);
        for (unsigned i = 0; i < p.nfns; i++)
                fn_release(&p.fns[i]);
        free(p.fns);
        for (unsigned i = 0; i < p.n_cwd; i++)
                free(p.cwd[i]);
}
