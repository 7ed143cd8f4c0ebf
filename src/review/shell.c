/* shell.c: the review of bash scripts over tree-sitter-bash's tree.
 *
 * Each simple command is looked at by its name (the literal word, with
 * quotes and backslashes removed, without its directory: /bin/rm is rm; the
 * wrappers env, sudo, nohup, timeout, exec... are looked through) and its
 * literal arguments; redirects by their literal targets; pipelines for a
 * download fed to an interpreter; function definitions for fork bombs.
 *
 * Words are read as bash would where that is decidable without running
 * anything: quotes, backslashes, $'\x2f' escapes, and variables the script
 * gave a literal value (d=/dev; "$d/tcp/..." is /dev/tcp/...; $HOME is the
 * jail's /tmp).  What comes from a command or the environment is not
 * guessed at.  The working directory is followed through cd and pushd (in
 * order; a cd inside a branch may or may not have happened, so both count),
 * so a relative write is checked where it lands.  Code inside code is
 * reviewed in its own language: python -c, bash -c, eval and trap strings,
 * here-strings and echo piped into an interpreter, sed's e command, find
 * -exec's command.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review-internal.h"

#define MAX_ARGS 64

#define MAX_DOWNLOADS 16

#define MAX_VARS 64
#define CWD_MAX 4

struct shvar {
        char *name;
        char *value;             /* NULL: not known (read, $(...), a loop's) */
};

struct sh {
        struct review_ctx *c;
        unsigned depth;
        bool too_deep;
        /* Variables and their literal values, in the order the script sets them. */
        struct shvar vars[MAX_VARS];
        unsigned n_vars;
        /* The directories relative paths may be taken from (NULL entries:
         * /workspace), and whether a cd could not be followed. */
        char *cwd[CWD_MAX];
        unsigned n_cwd;
        bool cwd_lost;
        unsigned cond;           /* inside if, loops, case, functions, && and || lists */
        /* Files written by a download earlier in the script (curl -o F,
         * wget -O F, curl URL > F): running one is running downloaded code. */
        char *downloads[MAX_DOWNLOADS];
        unsigned n_downloads;
};

/* Node kinds by symbol, fields by id, looked up once (as in python.c):
 * comparing type strings and looking field names up on every node cost
 * more than the walk itself.  The table maps every symbol of that name
 * (aliases and anonymous tokens such as "&" share names). */
enum kind {
        K_OTHER = 0,
        K_AMP,                   /* "&" */
        K_ANSI_C_STRING,
        K_COMMAND,
        K_COMMAND_NAME,
        K_COMMENT,
        K_CONCATENATION,
        K_EXPANSION,
        K_FILE_REDIRECT,
        K_FUNCTION_DEFINITION,
        K_HEREDOC_BODY,
        K_HEREDOC_REDIRECT,
        K_NUMBER,
        K_PIPELINE,
        K_RAW_STRING,
        K_REDIRECTED_STATEMENT,
        K_STRING,
        K_STRING_CONTENT,
        K_VARIABLE_ASSIGNMENT,
        K_VARIABLE_NAME,
        K_WORD,
        K_SIMPLE_EXPANSION,
        K_SUBSHELL,
        K_COMMAND_SUBSTITUTION,
        K_PROCESS_SUBSTITUTION,
        K_IF_STATEMENT,
        K_WHILE_STATEMENT,
        K_FOR_STATEMENT,
        K_C_STYLE_FOR_STATEMENT,
        K_CASE_STATEMENT,
        K_LIST,
        K_HERESTRING_REDIRECT,
        K_UNSET_COMMAND,
        K_COUNT,
};

static const char *const kind_names[K_COUNT] = {
        [K_AMP] = "&",
        [K_ANSI_C_STRING] = "ansi_c_string",
        [K_COMMAND] = "command",
        [K_COMMAND_NAME] = "command_name",
        [K_COMMENT] = "comment",
        [K_CONCATENATION] = "concatenation",
        [K_EXPANSION] = "expansion",
        [K_FILE_REDIRECT] = "file_redirect",
        [K_FUNCTION_DEFINITION] = "function_definition",
        [K_HEREDOC_BODY] = "heredoc_body",
        [K_HEREDOC_REDIRECT] = "heredoc_redirect",
        [K_NUMBER] = "number",
        [K_PIPELINE] = "pipeline",
        [K_RAW_STRING] = "raw_string",
        [K_REDIRECTED_STATEMENT] = "redirected_statement",
        [K_STRING] = "string",
        [K_STRING_CONTENT] = "string_content",
        [K_VARIABLE_ASSIGNMENT] = "variable_assignment",
        [K_VARIABLE_NAME] = "variable_name",
        [K_WORD] = "word",
        [K_SIMPLE_EXPANSION] = "simple_expansion",
        [K_SUBSHELL] = "subshell",
        [K_COMMAND_SUBSTITUTION] = "command_substitution",
        [K_PROCESS_SUBSTITUTION] = "process_substitution",
        [K_IF_STATEMENT] = "if_statement",
        [K_WHILE_STATEMENT] = "while_statement",
        [K_FOR_STATEMENT] = "for_statement",
        [K_C_STYLE_FOR_STATEMENT] = "c_style_for_statement",
        [K_CASE_STATEMENT] = "case_statement",
        [K_LIST] = "list",
        [K_HERESTRING_REDIRECT] = "herestring_redirect",
        [K_UNSET_COMMAND] = "unset_command",
};

enum field {
        F_BODY,
        F_DESTINATION,
        F_NAME,
        F_VALUE,
        F_VARIABLE,
        F_COUNT,
};

static const char *const field_names[F_COUNT] = {
        [F_BODY] = "body",
        [F_DESTINATION] = "destination",
        [F_NAME] = "name",
        [F_VALUE] = "value",
        [F_VARIABLE] = "variable",
};

#define KIND_REDIRECT 0x80       /* flag: the symbol's name has "redirect" in it */

static unsigned redirect_flag(const char *name)
{
        return strstr(name, "redirect") ? KIND_REDIRECT : 0;
}

static struct review_grammar grammar = {
        .language = tree_sitter_bash,
        .kinds = kind_names,
        .n_kinds = K_COUNT,
        .fields = field_names,
        .n_fields = F_COUNT,
        .flag = redirect_flag,
};
_Static_assert(F_COUNT <= REVIEW_GRAMMAR_MAX_FIELDS, "review_grammar.field_ids is too small");
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void kinds_init(void)
{
        review_grammar_init(&grammar);
}

static unsigned kind_bits(TSNode n)
{
        return review_grammar_kind(&grammar, n);
}

static enum kind kind(TSNode n)
{
        return (enum kind)(kind_bits(n) & ~(unsigned)KIND_REDIRECT);
}

static bool is(TSNode n, enum kind k)
{
        return kind(n) == k;
}

static TSNode field(TSNode n, enum field f)
{
        return ts_node_child_by_field_id(n, grammar.field_ids[f]);
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(s, list[i]) == 0)
                        return true;
        return false;
}

/* Variables. */

static struct shvar *var_find(struct sh *s, const char *name)
{
        for (unsigned i = 0; i < s->n_vars; i++)
                if (strcmp(s->vars[i].name, name) == 0)
                        return &s->vars[i];
        return NULL;
}

/* name is value from here on (value taken; NULL: not known). */
static void var_set(struct sh *s, const char *name, char *value)
{
        struct shvar *v = var_find(s, name);
        if (v == NULL && s->n_vars < MAX_VARS && (s->vars[s->n_vars].name = strdup(name)) != NULL)
                v = &s->vars[s->n_vars++];
        if (v == NULL) {
                free(value);
                return;
        }
        free(v->value);
        v->value = value;
}

/* What $name is, when the review knows. */
static const char *var_value(const struct sh *s, const char *name)
{
        for (unsigned i = 0; i < s->n_vars; i++)
                if (strcmp(s->vars[i].name, name) == 0)
                        return s->vars[i].value;
        /* the jail's: corral sets HOME=/tmp */
        if (strcmp(name, "HOME") == 0)
                return "/tmp";
        if (strcmp(name, "PWD") == 0 && s->n_cwd == 1 && !s->cwd_lost)
                return s->cwd[0] ? s->cwd[0] : "/workspace";
        return NULL;
}

/* The working directory: cd DIR (NULL: one the review cannot follow). */
static void cwd_change(struct sh *s, const char *dir)
{
        char *next[CWD_MAX] = { 0 };
        unsigned n = 0;
        for (unsigned i = 0; dir && i < s->n_cwd && n < CWD_MAX; i++) {
                char full[4096];
                if (review_path_join(s->cwd[i], dir, full, sizeof(full)) && (next[n] = strdup(full)) != NULL)
                        n++;
        }
        /* outside any branch it replaces; inside one it may or may not have happened */
        if (s->cond == 0) {
                for (unsigned i = 0; i < s->n_cwd; i++)
                        free(s->cwd[i]);
                s->n_cwd = 0;
        }
        if (dir == NULL || n == 0) {
                s->cwd_lost = true;
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                bool dup = false;
                for (unsigned j = 0; j < s->n_cwd; j++)
                        dup |= s->cwd[j] && strcmp(s->cwd[j], next[i]) == 0;
                if (dup || s->n_cwd == CWD_MAX) {
                        s->cwd_lost |= !dup;
                        free(next[i]);
                        continue;
                }
                s->cwd[s->n_cwd++] = next[i];
        }
}

struct cwd_saved {
        char *cwd[CWD_MAX];
        unsigned n_cwd;
        bool lost;
};

/* A subshell's cd ends with it: ( cd /etc; ... ), $(cd x && pwd), a | stage. */
static void cwd_save(const struct sh *s, struct cwd_saved *o)
{
        o->n_cwd = s->n_cwd;
        o->lost = s->cwd_lost;
        for (unsigned i = 0; i < s->n_cwd; i++)
                o->cwd[i] = s->cwd[i] ? strdup(s->cwd[i]) : NULL;
}

static void cwd_restore(struct sh *s, struct cwd_saved *o)
{
        for (unsigned i = 0; i < s->n_cwd; i++)
                free(s->cwd[i]);
        memcpy(s->cwd, o->cwd, sizeof(s->cwd));
        s->n_cwd = o->n_cwd;
        s->cwd_lost = o->lost;
}

/* $'...': bash's ANSI-C escapes (\x2f, \057, \u002f, \n, \cA). */
static char *ansi_c_decode(const char *in, size_t n)
{
        char *o = malloc(n + 1);
        size_t k = 0;
        if (o == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (in[i] != '\\' || i + 1 == n) {
                        o[k++] = in[i];
                        continue;
                }
                char e = in[++i];
                int width = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
                if (width) {
                        unsigned long cp = 0;
                        int j = 0;
                        for (; j < width && i + 1 + j < n && isxdigit((unsigned char)in[i + 1 + j]); j++) {
                                char h = in[i + 1 + j];
                                cp = cp * 16 + (unsigned long)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
                        }
                        i += (size_t)j;
                        if (j == 0) {
                                o[k++] = '\\';
                                o[k++] = e;
                        } else if (cp < 0x80 && cp > 0) {
                                o[k++] = (char)cp;
                        } else if (cp > 0) {
                                o[k++] = '?'; /* (not an ASCII path or command character) */
                        }
                        continue;
                }
                if (e >= '0' && e <= '7') {
                        unsigned v = 0;
                        int j = 0;
                        for (; j < 3 && i + j < n && in[i + j] >= '0' && in[i + j] <= '7'; j++)
                                v = v * 8 + (unsigned)(in[i + j] - '0');
                        i += (size_t)j - 1;
                        if (v)
                                o[k++] = (char)(v & 0xff);
                        continue;
                }
                switch (e) {
                case 'a': o[k++] = '\a'; break;
                case 'b': o[k++] = '\b'; break;
                case 'e': case 'E': o[k++] = 27; break;
                case 'f': o[k++] = '\f'; break;
                case 'n': o[k++] = '\n'; break;
                case 'r': o[k++] = '\r'; break;
                case 't': o[k++] = '\t'; break;
                case 'v': o[k++] = '\v'; break;
                case '\\': case '\'': case '"': case '?': o[k++] = e; break;
                case 'c':
                        if (i + 1 < n)
                                o[k++] = (char)(in[++i] & 0x1f);
                        break;
                default:
                        o[k++] = '\\';
                        o[k++] = e;
                        break;
                }
        }
        o[k] = '\0';
        return o;
}

static char *literal(struct sh *s, TSNode n);

/* ${x}, ${x:-default} (also -, :=, =): the value, or the default when x is not known. */
static char *expansion_value(struct sh *s, TSNode n)
{
        struct review_children k;
        TSNode ch, word = { 0 };
        cleanup_free char *name = NULL;
        bool dflt = false, other = false;
        review_children_init(&k, n, false);
        while (review_children_next(&k, &ch)) {
                if (!ts_node_is_named(ch)) {
                        const char *t = ts_node_type(ch);
                        if (strcmp(t, ":-") == 0 || strcmp(t, "-") == 0 || strcmp(t, ":=") == 0 || strcmp(t, "=") == 0)
                                dflt = true;
                        else if (strcmp(t, "${") != 0 && strcmp(t, "}") != 0)
                                other = true;
                } else if (is(ch, K_VARIABLE_NAME) && name == NULL) {
                        name = review_node_text(s->c, ch);
                } else if (ts_node_is_null(word)) {
                        word = ch;
                } else {
                        other = true;
                }
        }
        review_children_release(&k);
        if (name == NULL || other || (!dflt && !ts_node_is_null(word)))
                return NULL;
        const char *v = var_value(s, name);
        if (v)
                return strdup(v);
        return dflt ? (ts_node_is_null(word) ? strdup("") : literal(s, word)) : NULL;
}

/* "a $x b": the quoted text with its expansions, when all are known. */
static char *dquoted_value(struct sh *s, TSNode n)
{
        uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
        if (b > s->c->len || b < a + 2 || s->c->code[a] != '"')
                return NULL;
        struct capbuf out = { .cap = SIZE_MAX };
        bool ok = true;
        uint32_t pos = a + 1, end = b - 1;
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        for (;;) {
                bool more = ok && review_children_next(&k, &ch);
                uint32_t upto = more ? ts_node_start_byte(ch) : end;
                /* text between expansions, with the escapes of double quotes */
                for (uint32_t i = pos; ok && i < upto && i < end; i++) {
                        const char *c = s->c->code + i;
                        if (c[0] == '\\' && i + 1 < end && strchr("\\\"$`\n", c[1])) {
                                i++;
                                if (c[1] != '\n')
                                        ok &= capbuf_append(&out, c + 1, 1) != (size_t)-1;
                                continue;
                        }
                        ok &= capbuf_append(&out, c, 1) != (size_t)-1;
                }
                if (!more)
                        break;
                pos = ts_node_end_byte(ch);
                if (is(ch, K_STRING_CONTENT)) {
                        pos = ts_node_start_byte(ch); /* (copied as text, above, next round) */
                        continue;
                }
                char *part = literal(s, ch);
                ok &= part && capbuf_append(&out, part, strlen(part)) != (size_t)-1;
                free(part);
        }
        review_children_release(&k);
        char *r = ok ? capbuf_detach(&out, NULL) : NULL;
        capbuf_release(&out);
        return ok && r == NULL ? strdup("") : r;
}

/* The literal value of a word, or NULL when it depends on what only running it tells. */
static char *literal(struct sh *s, TSNode n)
{
        const enum kind t = kind(n);
        if (t == K_WORD || t == K_NUMBER || t == K_COMMAND_NAME) {
                if (t == K_COMMAND_NAME) {
                        if (ts_node_named_child_count(n) != 1)
                                return NULL;
                        return literal(s, ts_node_named_child(n, 0));
                }
                char *w = review_node_text(s->c, n);
                if (w == NULL)
                        return NULL;
                /* r\m is rm */
                size_t k = 0;
                for (size_t i = 0; w[i]; i++) {
                        if (w[i] == '\\' && w[i + 1])
                                i++;
                        w[k++] = w[i];
                }
                w[k] = '\0';
                /* ~ and ~/x: the jail's HOME */
                if (w[0] == '~' && (w[1] == '\0' || w[1] == '/')) {
                        char *h = NULL;
                        if (asprintf(&h, "%s%s", var_value(s, "HOME"), w + 1) < 0)
                                h = NULL;
                        free(w);
                        return h;
                }
                return w;
        }
        if (t == K_RAW_STRING || t == K_ANSI_C_STRING) {
                cleanup_free char *w = review_node_text(s->c, n);
                if (w == NULL)
                        return NULL;
                char *q = strchr(w, '\'');
                size_t l = q ? strlen(q) : 0;
                if (l < 2)
                        return NULL;
                if (t == K_ANSI_C_STRING)
                        return ansi_c_decode(q + 1, l - 2);
                return strndup(q + 1, l - 2);
        }
        if (t == K_STRING)
                return dquoted_value(s, n);
        if (t == K_SIMPLE_EXPANSION) {
                TSNode v = ts_node_named_child(n, 0);
                cleanup_free char *name = is(v, K_VARIABLE_NAME) ? review_node_text(s->c, v) : NULL;
                const char *val = name ? var_value(s, name) : NULL;
                return val ? strdup(val) : NULL;
        }
        if (t == K_EXPANSION)
                return expansion_value(s, n);
        if (t == K_CONCATENATION) {
                struct review_children k;
                TSNode ch;
                char *out = strdup("");
                review_children_init(&k, n, true);
                while (out && review_children_next(&k, &ch)) {
                        char *part = literal(s, ch), *j = NULL;
                        if (part == NULL || asprintf(&j, "%s%s", out, part) < 0)
                                j = NULL;
                        free(part);
                        free(out);
                        out = j;
                }
                review_children_release(&k);
                return out;
        }
        return NULL;
}

static char *effective_name(struct sh *s, TSNode cmd);

/* "${T:-/}" and ${T-/}: the default, what the word is when T is unset. */
static char *default_value(struct sh *s, TSNode n)
{
        if (is(n, K_STRING) && ts_node_named_child_count(n) == 1)
                n = ts_node_named_child(n, 0);
        if (!is(n, K_EXPANSION))
                return NULL;
        bool op = false;
        TSNode word = { 0 };
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, false);
        while (review_children_next(&k, &ch)) {
                /* the operator: rare enough to compare by name */
                const char *t = ts_node_type(ch);
                if (!ts_node_is_named(ch))
                        op |= strcmp(t, ":-") == 0 || strcmp(t, "-") == 0 || strcmp(t, ":=") == 0 ||
                              strcmp(t, "=") == 0;
                else if (!is(ch, K_VARIABLE_NAME))
                        word = ch;
        }
        review_children_release(&k);
        return op && !ts_node_is_null(word) ? literal(s, word) : NULL;
}

/* Does the subtree hold a command named one of names? */
static bool has_command(struct sh *s, TSNode n, const char *const *names, size_t nn, unsigned depth)
{
        if (ts_node_is_null(n) || depth > 200)
                return false;
        if (is(n, K_COMMAND)) {
                cleanup_free char *w = effective_name(s, n);
                if (w && in_list(w, names, nn))
                        return true;
        }
        struct review_children k;
        TSNode ch;
        bool found = false;
        review_children_init(&k, n, true);
        while (!found && review_children_next(&k, &ch))
                found = has_command(s, ch, names, nn, depth + 1);
        review_children_release(&k);
        return found;
}

static const char *const downloaders[] = { "curl", "wget", "fetch" };
static const char *const interpreters[] = { "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "python",
                                            "python2", "python3", "perl", "ruby", "node", "php", "source", "." };
static const char *const net_tools[] = { "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp" };
static const char *const priv_tools[] = { "sudo", "su", "doas", "mount", "umount", "chroot", "nsenter",
                                          "unshare", "insmod", "modprobe", "setcap" };
/* Commands that run their arguments as a command. */
static const char *const wrappers[] = { "env", "sudo", "doas", "nohup", "exec", "command", "builtin", "nice",
                                        "time", "timeout", "stdbuf", "setsid", "xargs", "chroot", "ionice" };

static bool is_interpreter(const char *w)
{
        if (in_list(w, interpreters, ARRAY_SIZE(interpreters)))
                return true;
        return strncmp(w, "python3.", 8) == 0;
}

static bool is_python(const char *w)
{
        return strcmp(w, "python") == 0 || strncmp(w, "python3", 7) == 0;
}

/* The language code handed to the interpreter name (by -c, a here-string, a
 * here-document or a pipe) is reviewed in: Python, the shell (shells and
 * source/.), or -1 for those the review does not read (perl, ruby, ...). */
static int nested_lang(const char *name)
{
        static const char *const unread[] = { "perl", "ruby", "node", "php", "python2" };
        if (is_python(name))
                return REVIEW_PYTHON;
        return is_interpreter(name) && !in_list(name, unread, ARRAY_SIZE(unread)) ? REVIEW_BASH : -1;
}

/* A write to the literal path p: outside /workspace and /tmp, from any
 * directory cd may have left?  (at: where it shows.) */
static void write_target(struct sh *s, TSNode at, const char *p)
{
        bool relative = p[0] != '/';
        for (unsigned i = 0; i < (relative ? s->n_cwd : 1); i++) {
                const char *cwd = relative ? s->cwd[i] : NULL;
                if (!review_path_outside_at(cwd, p))
                        continue;
                char full[4096], subject[256];
                if (!review_path_join(cwd, p, full, sizeof(full)))
                        snprintf(full, sizeof(full), "%s", p);
                snprintf(subject, sizeof(subject), "> %.200s", full);
                review_add(s->c, at, "SH-FS-001", subject, NULL);
                return;
        }
        if (relative && s->cwd_lost) {
                char subject[256];
                snprintf(subject, sizeof(subject), "cd ...; > %.200s", p);
                review_add(s->c, at, "SH-DYN-002", subject, NULL);
        }
}

static void redirect_target(struct sh *s, TSNode at, TSNode dest, bool write)
{
        cleanup_free char *p = literal(s, dest);
        if (p == NULL)
                return;
        if (strncmp(p, "/dev/tcp/", 9) == 0 || strncmp(p, "/dev/udp/", 9) == 0) {
                review_add(s->c, at, "SH-NET-002", p, NULL);
                return;
        }
        if (write)
                write_target(s, at, p);
}

/* Does a file redirect write (>, >>, &>, >|)? */
static bool redirect_writes(TSNode r)
{
        /* The operator: the first anonymous child that is not the descriptor. */
        bool write = false;
        struct review_children k;
        TSNode ch;
        review_children_init(&k, r, false);
        while (review_children_next(&k, &ch)) {
                if (ts_node_is_named(ch))
                        continue;
                write = strchr(ts_node_type(ch), '>') != NULL;
                break;
        }
        review_children_release(&k);
        return write;
}

static void visit_redirect(struct sh *s, TSNode r)
{
        if (!is(r, K_FILE_REDIRECT))
                return;
        TSNode d = field(r, F_DESTINATION);
        if (!ts_node_is_null(d))
                redirect_target(s, r, d, redirect_writes(r));
}

/* ./x.sh and x.sh are the same file. */
static const char *plain_path(const char *p)
{
        while (p[0] == '.' && p[1] == '/')
                for (p += 2; *p == '/'; p++)
                        ;
        return p;
}

static void note_download(struct sh *s, const char *file)
{
        if (file == NULL || *file == '\0' || strcmp(file, "-") == 0 || s->n_downloads == MAX_DOWNLOADS)
                return;
        char *f = strdup(file);
        if (f == NULL) {
                s->c->failed = true;
                return;
        }
        s->downloads[s->n_downloads++] = f;
}

static bool downloaded(const struct sh *s, const char *path)
{
        for (unsigned i = 0; path && i < s->n_downloads; i++)
                if (strcmp(plain_path(s->downloads[i]), plain_path(path)) == 0)
                        return true;
        return false;
}

/* The file a download command writes: curl/fetch -o F, --output F, -O (the
 * URL's last part); wget -O F, --output-document=F, or without -O the URL's
 * last part.  Literal words only; "-" (standard output) is no file. */
static void download_target(struct sh *s, char **argv, size_t a0, size_t argc, const char *name)
{
        bool wget = strcmp(name, "wget") == 0, remote = wget;
        const char *url = NULL;
        for (size_t i = a0 + 1; i < argc; i++) {
                const char *x = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
                if (x == NULL)
                        continue;
                if (wget ? strcmp(x, "--output-document") == 0 : strcmp(x, "--output") == 0) {
                        note_download(s, next);
                        remote = false;
                        i++;
                } else if (wget && strncmp(x, "--output-document=", 18) == 0) {
                        note_download(s, x + 18);
                        remote = false;
                } else if (!wget && strcmp(x, "--remote-name") == 0) {
                        remote = true;
                } else if (x[0] == '-' && x[1] != '-' && x[1]) {
                        /* a cluster of short options: -fsSLo FILE, -OFILE, -fsSLO */
                        const char *o = strchr(x + 1, wget ? 'O' : 'o');
                        if (o) {
                                note_download(s, o[1] ? o + 1 : next);
                                remote = false;
                                i += o[1] == '\0';
                        } else if (!wget && strchr(x + 1, 'O')) {
                                remote = true;
                        }
                } else if (x[0] != '-' && (url == NULL || (strstr(x, "://") && !strstr(url, "://")))) {
                        url = x; /* the first operand, or the first that looks like a URL */
                }
        }
        if (remote && url) {
                const char *b = strrchr(url, '/');
                char file[256];
                snprintf(file, sizeof(file), "%.*s", (int)strcspn(b ? b + 1 : url, "?#"), b ? b + 1 : url);
                if (b && b > url && b[-1] != '/')
                        note_download(s, file);
        }
}

static bool setuid_mode(const char *m)
{
        size_t l = strlen(m);
        if (l >= 4 && strspn(m, "01234567") == l) {
                int hi = m[l - 4] - '0';
                return (hi & 6) != 0;
        }
        for (const char *p = m; *p; p++)
                if ((*p == '+' || *p == '=') && strchr(p, 's') && strcspn(p, ",") > (size_t)(strchr(p, 's') - p))
                        return true;
        return false;
}

static void review_sh(struct sh *s, TSNode n);

struct words {
        TSNode nodes[MAX_ARGS];
        char *argv[MAX_ARGS];    /* literal values, NULL where not literal */
        size_t argc;
        size_t a0;               /* the command after wrappers */
};

static void words_release(struct words *w)
{
        for (size_t i = 0; i < w->argc; i++)
                free(w->argv[i]);
}

/* a0: the command after wrappers (sudo, env X=1, timeout 5, ...), each
 * reported when it is a privilege tool and report is set. */
static void skip_wrappers(struct sh *s, struct words *w, size_t from, bool report)
{
        size_t a0 = from, argc = w->argc;
        char **argv = w->argv;
        while (a0 < argc && argv[a0]) {
                const char *b = strrchr(argv[a0], '/');
                const char *name = b ? b + 1 : argv[a0];
                if (report && in_list(name, priv_tools, ARRAY_SIZE(priv_tools)))
                        review_add(s->c, w->nodes[a0], "SH-PRIV-001", name, name);
                if (!in_list(name, wrappers, ARRAY_SIZE(wrappers)))
                        break;
                bool timeout = strcmp(name, "timeout") == 0;
                a0++;
                while (a0 < argc && argv[a0] && (argv[a0][0] == '-' || strchr(argv[a0], '=') ||
                                                 (timeout && strspn(argv[a0], "0123456789.smhd") == strlen(argv[a0]))))
                        a0++;
        }
        w->a0 = a0;
}

/* The words of a simple command, then skip_wrappers(). */
static void command_words(struct sh *s, TSNode cmd, struct words *w, bool report)
{
        w->argc = 0;
        w->a0 = 0;
        /* The name, then the arguments: every named child after it but
         * redirects (ts_node_field_name_for_child() of tree-sitter 0.20 is
         * not reliable). */
        TSNode name_node = field(cmd, F_NAME);
        if (ts_node_is_null(name_node))
                return;
        struct review_children k;
        TSNode ch;
        bool after = false;
        review_children_init(&k, cmd, true);
        while (w->argc < MAX_ARGS && review_children_next(&k, &ch)) {
                if (!after) {
                        after = ts_node_eq(ch, name_node);
                        if (!after)
                                continue;
                } else if ((kind_bits(ch) & KIND_REDIRECT) || is(ch, K_COMMENT)) {
                        continue;
                }
                w->nodes[w->argc] = ch;
                w->argv[w->argc] = literal(s, ch);
                w->argc++;
        }
        review_children_release(&k);
        skip_wrappers(s, w, 0, report);
}

/* The command's name after wrappers, without its directory; NULL when not literal. */
static char *effective_name(struct sh *s, TSNode cmd)
{
        struct words w;
        command_words(s, cmd, &w, false);
        char *name = NULL;
        if (w.a0 < w.argc && w.argv[w.a0]) {
                const char *b = strrchr(w.argv[w.a0], '/');
                name = strdup(b ? b + 1 : w.argv[w.a0]);
        }
        words_release(&w);
        return name;
}

/* The literal arguments from..argc joined by spaces (eval's code); NULL if one is not literal. */
static char *join_words(const struct words *w, size_t from)
{
        struct capbuf out = { .cap = SIZE_MAX };
        bool ok = true;
        for (size_t i = from; ok && i < w->argc; i++) {
                ok &= w->argv[i] != NULL;
                if (ok && i > from)
                        ok &= capbuf_append(&out, " ", 1) != (size_t)-1;
                if (ok)
                        ok &= capbuf_append(&out, w->argv[i], strlen(w->argv[i])) != (size_t)-1;
        }
        char *r = ok ? capbuf_detach(&out, NULL) : NULL;
        capbuf_release(&out);
        return ok && r == NULL ? strdup("") : r;
}

/* sed's script: the files its w and W commands and the w flag of s write,
 * the commands its e runs.  A script is commands with optional addresses,
 * separated by ; or newlines; a file name runs to the end of the line. */
static void sed_script(struct sh *s, TSNode at, const char *sc)
{
        size_t n = strlen(sc), i = 0;
        while (i < n) {
                while (i < n && (isspace((unsigned char)sc[i]) || sc[i] == ';' || sc[i] == '{' || sc[i] == '}' ||
                                 sc[i] == '!'))
                        i++;
                /* addresses: 1, $, 1,5, 2~3, /re/, \cREc, +N */
                for (bool more = true; more && i < n;) {
                        more = false;
                        if (isdigit((unsigned char)sc[i]) || sc[i] == '$' || sc[i] == ',' || sc[i] == '~' ||
                            sc[i] == '+' || sc[i] == '!' || sc[i] == ' ') {
                                i++;
                                more = true;
                        } else if (sc[i] == '/' || (sc[i] == '\\' && i + 1 < n)) {
                                char d = sc[i] == '/' ? '/' : sc[++i];
                                for (i++; i < n && sc[i] != d; i++)
                                        i += sc[i] == '\\';
                                i++;
                                while (i < n && (sc[i] == 'I' || sc[i] == 'M'))
                                        i++;
                                more = true;
                        }
                }
                if (i >= n)
                        break;
                char cmd = sc[i++];
                size_t eol = i;
                while (eol < n && sc[eol] != '\n')
                        eol++;
                if (cmd == 'w' || cmd == 'W' || cmd == 'e') {
                        /* the rest of the line: a file name, or a command */
                        while (i < eol && (sc[i] == ' ' || sc[i] == '\t'))
                                i++;
                        cleanup_free char *arg = strndup(sc + i, eol - i);
                        if (arg && cmd != 'e' && *arg)
                                write_target(s, at, arg);
                        else if (arg && *arg)
                                review_nested(s->c, at, REVIEW_BASH, arg, strlen(arg));
                        else if (arg)
                                review_add(s->c, at, "SH-DYN-001", "sed e", "sed");
                        i = eol;
                } else if (cmd == 'a' || cmd == 'i' || cmd == 'c' || cmd == 'r' || cmd == 'R' || cmd == ':' ||
                           cmd == '#') {
                        /* text or a file read or a label, to the end of the line (a\ continues) */
                        while (eol < n && eol > 0 && sc[eol - 1] == '\\')
                                for (eol++; eol < n && sc[eol] != '\n'; eol++)
                                        ;
                        i = eol;
                } else if (cmd == 's' || cmd == 'y') {
                        char d = i < n ? sc[i++] : '\0';
                        for (int part = 0; part < 2 && i < n; part++) {
                                for (; i < n && sc[i] != d; i++)
                                        i += sc[i] == '\\';
                                i++;
                        }
                        /* flags: g p N i m e w FILE */
                        while (cmd == 's' && i < n && sc[i] != ';' && sc[i] != '\n' && sc[i] != '}') {
                                if (sc[i] == 'w') {
                                        size_t f = i + 1;
                                        while (f < eol && (sc[f] == ' ' || sc[f] == '\t'))
                                                f++;
                                        cleanup_free char *file = strndup(sc + f, eol - f);
                                        if (file && *file)
                                                write_target(s, at, file);
                                        i = eol;
                                        break;
                                }
                                if (sc[i] == 'e')
                                        review_add(s->c, at, "SH-DYN-001", "sed s///e", "sed");
                                i++;
                        }
                } else if (cmd == 'b' || cmd == 't' || cmd == 'T') {
                        while (i < n && sc[i] != ';' && sc[i] != '\n')
                                i++;
                }
        }
}

/* sed [-n] [-i[SUF]] [-e SCRIPT | -f FILE]... [SCRIPT] FILE...: its scripts,
 * and with -i its files, which it rewrites. */
static void check_sed(struct sh *s, const struct words *w)
{
        bool in_place = false, have_script = false;
        size_t first_file = 0;
        for (size_t i = w->a0 + 1; i < w->argc; i++) {
                const char *x = w->argv[i];
                if (x == NULL || x[0] != '-' || strcmp(x, "-") == 0) {
                        if (!have_script) {
                                have_script = true;
                                if (x)
                                        sed_script(s, w->nodes[i], x);
                                continue;
                        }
                        first_file = first_file ? first_file : i;
                        continue;
                }
                if (strcmp(x, "--") == 0)
                        continue;
                if (strncmp(x, "--expression=", 13) == 0) {
                        have_script = true;
                        sed_script(s, w->nodes[i], x + 13);
                } else if (strcmp(x, "--expression") == 0 || strcmp(x, "--file") == 0 || strcmp(x, "-f") == 0 ||
                           strcmp(x, "-l") == 0 || strcmp(x, "--line-length") == 0) {
                        have_script |= x[2] != 'l' && x[1] != 'l';
                        if (i + 1 < w->argc && w->argv[i + 1] && strcmp(x, "--expression") == 0)
                                sed_script(s, w->nodes[i + 1], w->argv[i + 1]);
                        i++;
                } else if (strncmp(x, "--in-place", 10) == 0) {
                        in_place = true;
                } else if (x[1] != '-') {
                        /* a cluster: -ne SCRIPT, -i.bak, -nf FILE, -escript */
                        for (const char *o = x + 1; *o; o++) {
                                if (*o == 'i') {
                                        in_place = true;
                                        break; /* -i's suffix is the rest */
                                }
                                if (*o == 'e' || *o == 'f') {
                                        have_script = true;
                                        const char *sc = o[1] ? o + 1 : i + 1 < w->argc ? w->argv[i + 1] : NULL;
                                        if (*o == 'e' && sc)
                                                sed_script(s, w->nodes[o[1] ? i : i + 1], sc);
                                        i += o[1] == '\0';
                                        break;
                                }
                        }
                }
        }
        for (size_t i = first_file; in_place && i && i < w->argc; i++)
                if (w->argv[i] && w->argv[i][0] != '-')
                        write_target(s, w->nodes[i], w->argv[i]);
}

/* tar -x[f A] [-C DIR], tar -c -f A ..., unzip A [-d DIR]: where they write. */
static void check_archiver(struct sh *s, const struct words *w, const char *name)
{
        bool tar = strcmp(name, "tar") == 0, extract = !tar, create = false;
        const char *dir = NULL, *file = NULL;
        TSNode at = w->nodes[w->a0];
        for (size_t i = w->a0 + 1; i < w->argc; i++) {
                const char *x = w->argv[i], *next = i + 1 < w->argc ? w->argv[i + 1] : NULL;
                if (x == NULL)
                        continue;
                if (!tar) {
                        if (strcmp(x, "-d") == 0 && next)
                                dir = next, at = w->nodes[++i];
                        continue;
                }
                if (strcmp(x, "--extract") == 0 || strcmp(x, "--get") == 0) {
                        extract = true;
                } else if (strcmp(x, "--create") == 0 || strcmp(x, "--append") == 0 || strcmp(x, "--update") == 0) {
                        create = true;
                } else if ((strcmp(x, "-C") == 0 || strcmp(x, "--directory") == 0) && next) {
                        dir = next;
                        at = w->nodes[++i];
                } else if (strncmp(x, "--directory=", 12) == 0) {
                        dir = x + 12;
                } else if ((strcmp(x, "--file") == 0) && next) {
                        file = next;
                        i++;
                } else if (strncmp(x, "--file=", 7) == 0) {
                        file = x + 7;
                } else if ((x[0] == '-' && x[1] != '-') || (i == w->a0 + 1 && x[0] != '-')) {
                        /* -xzf A, or the old style: tar xzf A */
                        extract |= strchr(x, 'x') != NULL;
                        create |= strchr(x, 'c') != NULL || strchr(x, 'r') != NULL || strchr(x, 'u') != NULL;
                        if (strchr(x, 'f') && next && strchr(x, 'f')[1] == '\0')
                                file = next, i++;
                        if (strchr(x, 'C') && next && strchr(x, 'C')[1] == '\0')
                                dir = next, at = w->nodes[++i];
                }
        }
        if (extract && !create)
                write_target(s, at, dir ? dir : ".");
        if (create && file && strcmp(file, "-") != 0)
                write_target(s, w->nodes[w->a0], file);
}

static void check_words(struct sh *s, struct words *w, unsigned depth);

/* find PATH... EXPR: -delete of a system directory, the files -fprint
 * writes, and each -exec/-ok command, with {} a file under each PATH. */
static void check_find(struct sh *s, struct words *w, unsigned depth)
{
        struct review_ctx *c = s->c;
        char **argv = w->argv;
        size_t a0 = w->a0, argc = w->argc, starts = a0 + 1;
        TSNode at = w->nodes[a0];
        while (starts < argc && argv[starts] && argv[starts][0] != '-' && strcmp(argv[starts], "(") != 0 &&
               strcmp(argv[starts], "!") != 0)
                starts++;
        bool del = false;
        for (size_t i = starts; i < argc; i++) {
                const char *x = argv[i];
                if (x == NULL)
                        continue;
                if (strcmp(x, "-delete") == 0)
                        del = true;
                if ((strcmp(x, "-fprint") == 0 || strcmp(x, "-fprint0") == 0 || strcmp(x, "-fls") == 0 ||
                     strcmp(x, "-fprintf") == 0) && i + 1 < argc && argv[i + 1]) {
                        write_target(s, w->nodes[i + 1], argv[i + 1]);
                        continue;
                }
                if (strcmp(x, "-exec") != 0 && strcmp(x, "-execdir") != 0 && strcmp(x, "-ok") != 0 &&
                    strcmp(x, "-okdir") != 0)
                        continue;
                size_t end = i + 1;
                while (end < argc && !(argv[end] && (strcmp(argv[end], ";") == 0 || strcmp(argv[end], "+") == 0)))
                        end++;
                del |= i + 1 < argc && argv[i + 1] && strcmp(argv[i + 1], "rm") == 0;
                /* the command once per starting point, {} a file beneath it */
                for (size_t st = a0 + 1; st < (starts > a0 + 1 ? starts : a0 + 2) && depth < 4; st++) {
                        const char *root = st < starts && argv[st] ? argv[st] : ".";
                        struct words sub = { .argc = 0 };
                        for (size_t j = i + 1; j < end && sub.argc < MAX_ARGS; j++, sub.argc++) {
                                sub.nodes[sub.argc] = w->nodes[j];
                                sub.argv[sub.argc] = NULL;
                                const char *x2 = argv[j], *brace = x2 ? strstr(x2, "{}") : NULL;
                                if (brace && asprintf(&sub.argv[sub.argc], "%.*s%s/{}%s", (int)(brace - x2), x2, root,
                                                      brace + 2) < 0)
                                        sub.argv[sub.argc] = NULL;
                                else if (x2 && !brace)
                                        sub.argv[sub.argc] = strdup(x2);
                        }
                        skip_wrappers(s, &sub, 0, true);
                        check_words(s, &sub, depth + 1);
                        words_release(&sub);
                }
                i = end;
        }
        for (size_t i = a0 + 1; del && i < starts; i++)
                if (argv[i] && review_path_system_dir(argv[i])) {
                        char subject[256];
                        snprintf(subject, sizeof(subject), "find %s -delete", argv[i]);
                        review_add(c, at, "SH-RM-001", subject, "find");
                        break;
                }
}

/* Commands by their name and literal arguments (a simple command, or find -exec's). */
static void check_words(struct sh *s, struct words *w, unsigned depth)
{
        struct review_ctx *c = s->c;
        TSNode *nodes = w->nodes;
        char **argv = w->argv;
        size_t argc = w->argc, a0 = w->a0;
        if (a0 >= argc || argv[a0] == NULL)
                return;
        const char *b = strrchr(argv[a0], '/');
        const char *name = b ? b + 1 : argv[a0];
        TSNode at = nodes[a0];
        if (review_policy_denied(c->policy, 'c', name))
                review_add(c, at, "SH-POL-001", name, name);

        if (strcmp(name, "rm") == 0) {
                bool rec = false, npr = false;
                for (size_t i = a0 + 1; i < argc; i++) {
                        const char *x = argv[i];
                        if (x == NULL)
                                continue;
                        if (strcmp(x, "--recursive") == 0)
                                rec = true;
                        else if (strcmp(x, "--no-preserve-root") == 0)
                                npr = true;
                        else if (x[0] == '-' && x[1] != '-' && strpbrk(x, "rR"))
                                rec = true;
                }
                for (size_t i = a0 + 1; i < argc; i++) {
                        cleanup_free char *dflt = argv[i] ? NULL : default_value(s, nodes[i]);
                        const char *x = argv[i] ? argv[i] : dflt;
                        if (x == NULL || x[0] == '-')
                                continue;
                        size_t l = strlen(x);
                        char dir[4096];
                        /* DIR/star is what is in DIR; a lone star or dot, the working directory */
                        if (strcmp(x, "*") == 0 || strcmp(x, ".") == 0)
                                snprintf(dir, sizeof(dir), ".");
                        else
                                snprintf(dir, sizeof(dir), "%.*s",
                                         (int)(l >= 2 && strcmp(x + l - 2, "/*") == 0 ? l - 2 : l), x);
                        bool sys = false;
                        for (unsigned j = 0; j < (dir[0] == '/' || !dir[0] ? 1 : s->n_cwd); j++)
                                sys |= review_path_system_dir_at(dir[0] == '/' ? NULL : s->cwd[j], dir[0] ? dir : "/");
                        if (npr || (rec && sys)) {
                                char subject[256];
                                snprintf(subject, sizeof(subject), "rm -r %s", x);
                                review_add(c, at, "SH-RM-001", subject, name);
                        }
                }
                if (npr)
                        review_add(c, at, "SH-RM-001", "rm --no-preserve-root", name);
        } else if (strcmp(name, "find") == 0) {
                check_find(s, w, depth);
        } else if (strcmp(name, "cd") == 0 || strcmp(name, "pushd") == 0) {
                size_t i = a0 + 1;
                while (i < argc && argv[i] && argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--") != 0)
                        i++;
                i += i < argc && argv[i] && strcmp(argv[i], "--") == 0;
                /* cd alone goes home (/tmp in the jail); cd - and computed directories are lost */
                cwd_change(s, i >= argc ? var_value(s, "HOME") : argv[i] && strcmp(argv[i], "-") != 0 ? argv[i] : NULL);
        } else if (strcmp(name, "read") == 0 || strcmp(name, "mapfile") == 0 || strcmp(name, "readarray") == 0 ||
                   strcmp(name, "getopts") == 0) {
                /* variables that get values from input */
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-')
                                var_set(s, argv[i], NULL);
        } else if (strcmp(name, "printf") == 0) {
                for (size_t i = a0 + 1; i + 1 < argc; i++)
                        if (argv[i] && strcmp(argv[i], "-v") == 0 && argv[i + 1])
                                var_set(s, argv[i + 1], NULL);
        } else if (strcmp(name, "cp") == 0 || strcmp(name, "mv") == 0 || strcmp(name, "ln") == 0 ||
                   strcmp(name, "install") == 0 || strcmp(name, "rsync") == 0) {
                /* the destination: the last operand, or -t DIR */
                size_t last = 0;
                for (size_t i = a0 + 1; i < argc; i++) {
                        if (argv[i] && (strcmp(argv[i], "-t") == 0 || strcmp(argv[i], "--target-directory") == 0) &&
                            i + 1 < argc) {
                                last = i + 1;
                                break;
                        }
                        if (argv[i] == NULL || argv[i][0] != '-')
                                last = i;
                        else if (strcmp(name, "install") == 0 && (strcmp(argv[i], "-m") == 0 ||
                                                                  strcmp(argv[i], "--mode") == 0) && i + 1 < argc)
                                i++;
                }
                if (last && argv[last] && strchr(argv[last], ':') == NULL)
                        write_target(s, nodes[last], argv[last]);
                for (size_t i = a0 + 1; strcmp(name, "install") == 0 && i + 1 < argc; i++)
                        if (argv[i] && (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--mode") == 0) &&
                            argv[i + 1] && setuid_mode(argv[i + 1])) {
                                char subject[128];
                                snprintf(subject, sizeof(subject), "install -m %s", argv[i + 1]);
                                review_add(c, at, "SH-PERM-001", subject, name);
                        }
        } else if (strcmp(name, "touch") == 0 || strcmp(name, "mkdir") == 0 || strcmp(name, "truncate") == 0 ||
                   strcmp(name, "chown") == 0 || strcmp(name, "shred") == 0) {
                /* every operand is written */
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-')
                                write_target(s, nodes[i], argv[i]);
        } else if (strcmp(name, "sed") == 0) {
                check_sed(s, w);
        } else if (strcmp(name, "perl") == 0) {
                /* perl -i: its absolute operands (the script is an operand too) */
                bool in_place = false;
                for (size_t i = a0 + 1; i < argc; i++)
                        in_place |= argv[i] && (strncmp(argv[i], "-i", 2) == 0 ||
                                                (argv[i][0] == '-' && argv[i][1] != '-' && strchr(argv[i], 'i')));
                for (size_t i = a0 + 1; in_place && i < argc; i++)
                        if (argv[i] && argv[i][0] == '/')
                                write_target(s, nodes[i], argv[i]);
        } else if (strcmp(name, "tar") == 0 || strcmp(name, "unzip") == 0) {
                check_archiver(s, w, name);
        } else if (strcmp(name, "sort") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && strcmp(argv[i], "-o") == 0 && i + 1 < argc && argv[i + 1])
                                write_target(s, nodes[i + 1], argv[i + 1]);
                        else if (argv[i] && strncmp(argv[i], "--output=", 9) == 0)
                                write_target(s, nodes[i], argv[i] + 9);
        } else if (strcmp(name, "chmod") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-' && setuid_mode(argv[i])) {
                                char subject[128];
                                snprintf(subject, sizeof(subject), "chmod %s", argv[i]);
                                review_add(c, at, "SH-PERM-001", subject, name);
                                break;
                        }
        } else if (in_list(name, net_tools, ARRAY_SIZE(net_tools))) {
                review_add(c, at, "SH-NET-003", name, name);
        } else if (in_list(name, downloaders, ARRAY_SIZE(downloaders))) {
                review_add(c, at, "SH-NET-004", name, name);
        } else if (strcmp(name, "eval") == 0) {
                /* eval of anything hides what runs; a literal one is also reviewed as the script it is */
                review_add(c, at, "SH-DYN-001", "eval", name);
                cleanup_free char *code = join_words(w, a0 + 1);
                if (code)
                        review_nested(c, at, REVIEW_BASH, code, strlen(code));
        } else if (strcmp(name, "trap") == 0) {
                /* trap CODE SIGNAL...: CODE runs later (trap - SIG and trap '' SIG reset) */
                size_t i = a0 + 1;
                i += i < argc && argv[i] && strcmp(argv[i], "--") == 0;
                if (i + 1 < argc && (argv[i] == NULL || (argv[i][0] != '-' && argv[i][0] != '\0'))) {
                        if (argv[i])
                                review_nested(c, nodes[i], REVIEW_BASH, argv[i], strlen(argv[i]));
                        else
                                review_add(c, nodes[i], "SH-DYN-001", "trap", name);
                }
        } else if (strcmp(name, "tee") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-')
                                write_target(s, nodes[i], argv[i]);
        } else if (strcmp(name, "dd") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && strncmp(argv[i], "of=", 3) == 0)
                                write_target(s, nodes[i], argv[i] + 3);
        } else if (strncmp(name, "mkfs", 4) == 0 || strcmp(name, "mke2fs") == 0 || strcmp(name, "wipefs") == 0) {
                review_add(c, at, "SH-FS-001", name, name);
        }
        if (strcmp(name, "rsync") == 0)
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-' && argv[i][0] != '/' && strchr(argv[i], ':')) {
                                review_add(c, at, "SH-NET-003", "rsync", name);
                                break;
                        }

        /* bash -c CODE, python3 -c CODE: the code in its own language. */
        int lang = nested_lang(name);
        bool sh = lang == REVIEW_BASH;
        if (lang >= 0) {
                for (size_t i = a0 + 1; i + 1 < argc; i++) {
                        if (argv[i] == NULL || strcmp(argv[i], "-c") != 0)
                                continue;
                        if (argv[i + 1])
                                review_nested(c, nodes[i + 1], lang, argv[i + 1], strlen(argv[i + 1]));
                        else if (sh)
                                review_add(c, nodes[i + 1], "SH-DYN-001", name, name);
                        break;
                }
        }
        /* curl -o F URL && sh F, wget -O F URL; chmod +x F; ./F */
        if (in_list(name, downloaders, ARRAY_SIZE(downloaders)))
                download_target(s, argv, a0, argc, name);
        /* (a command word runs a file only with a directory: ./F, /tmp/F) */
        if (strchr(argv[a0], '/') && downloaded(s, argv[a0])) {
                char subject[256];
                snprintf(subject, sizeof(subject), "download, then run %s", argv[a0]);
                review_add(c, at, "SH-NET-001", subject, NULL);
        } else if (is_interpreter(name)) {
                /* the script: the first operand (-c CODE is another matter) */
                for (size_t i = a0 + 1; i < argc && argv[i] && strcmp(argv[i], "-c") != 0; i++) {
                        if (argv[i][0] == '-')
                                continue;
                        if (downloaded(s, argv[i])) {
                                char subject[256];
                                snprintf(subject, sizeof(subject), "download, then %s %s", name, argv[i]);
                                review_add(c, nodes[i], "SH-NET-001", subject, NULL);
                        }
                        break;
                }
        }
        /* bash <(curl ...), sh -c "$(curl ...)", source <(wget ...) */
        if (is_interpreter(name) || strcmp(name, "eval") == 0)
                for (size_t i = a0 + 1; i < argc; i++)
                        if (!ts_node_is_null(nodes[i]) &&
                            has_command(s, nodes[i], downloaders, ARRAY_SIZE(downloaders), 0)) {
                                review_add(c, nodes[i], "SH-NET-001", name, name);
                                break;
                        }
        /* /dev/tcp as an argument (exec 3<>/dev/tcp/... parses as a redirect) */
        if (strcmp(name, "echo") != 0 && strcmp(name, "printf") != 0)
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && (strstr(argv[i], "/dev/tcp/") || strstr(argv[i], "/dev/udp/")))
                                review_add(c, nodes[i], "SH-NET-002", argv[i], name);
}

/* bash <<< 'code', python3 <<< "...": the string is the program. */
static void visit_herestrings(struct sh *s, TSNode cmd, const char *name)
{
        int lang = nested_lang(name);
        if (lang < 0)
                return;
        struct review_children k;
        TSNode r;
        review_children_init(&k, cmd, true);
        while (review_children_next(&k, &r)) {
                if (!is(r, K_HERESTRING_REDIRECT))
                        continue;
                cleanup_free char *code = literal(s, ts_node_named_child(r, 0));
                if (code)
                        review_nested(s->c, r, lang, code, strlen(code));
                else if (lang == REVIEW_BASH)
                        review_add(s->c, r, "SH-DYN-001", name, name);
        }
        review_children_release(&k);
}

/* One simple command: name and literal arguments. */
static void visit_command(struct sh *s, TSNode cmd)
{
        struct words w;
        command_words(s, cmd, &w, true);
        check_words(s, &w, 0);
        if (w.a0 < w.argc && w.argv[w.a0]) {
                const char *b = strrchr(w.argv[w.a0], '/');
                visit_herestrings(s, cmd, b ? b + 1 : w.argv[w.a0]);
        }
        words_release(&w);
}

/* What a pipeline stage writes for the next, when the review can tell:
 * echo and printf of literal words, then base64 -d, xxd -r -p, rev and cat
 * of that.  *decoder: the stage decodes (its input was not known). */
static char *stage_output(struct sh *s, TSNode stage, const char *in, bool *decoder)
{
        *decoder = false;
        if (is(stage, K_REDIRECTED_STATEMENT))
                stage = field(stage, F_BODY); /* base64 -d < f, bash 2>&1 */
        if (!is(stage, K_COMMAND))
                return NULL;
        struct words w;
        command_words(s, stage, &w, false);
        char *out = NULL;
        const char *name = w.a0 < w.argc && w.argv[w.a0] ? w.argv[w.a0] : "";
        const char *b = strrchr(name, '/');
        name = b ? b + 1 : name;
        size_t i = w.a0 + 1, n = 0;
        if (strcmp(name, "echo") == 0) {
                bool nl = true, esc = false;
                for (; i < w.argc && w.argv[i] && w.argv[i][0] == '-' && strspn(w.argv[i] + 1, "neE") == strlen(w.argv[i] + 1) &&
                       w.argv[i][1];
                     i++) {
                        nl &= strchr(w.argv[i], 'n') == NULL;
                        esc |= strchr(w.argv[i], 'e') != NULL;
                }
                cleanup_free char *text = join_words(&w, i);
                if (text && asprintf(&out, "%s%s", text, nl ? "\n" : "") < 0)
                        out = NULL;
                if (out && esc) {
                        char *d = ansi_c_decode(out, strlen(out));
                        free(out);
                        out = d;
                }
        } else if (strcmp(name, "printf") == 0 && i < w.argc && w.argv[i]) {
                const char *fmt = w.argv[i];
                if (strchr(fmt, '%') == NULL && i + 1 == w.argc)
                        out = ansi_c_decode(fmt, strlen(fmt));
                else if (strcmp(fmt, "%s") == 0 || strcmp(fmt, "%s\\n") == 0 || strcmp(fmt, "%b") == 0)
                        out = join_words(&w, i + 1);
        } else if (in && strcmp(name, "cat") == 0 && w.argc == w.a0 + 1) {
                out = strdup(in);
        } else if (strcmp(name, "base64") == 0 || strcmp(name, "xxd") == 0) {
                bool dec = false, plain = strcmp(name, "base64") == 0;
                for (; i < w.argc; i++)
                        if (w.argv[i]) {
                                dec |= strcmp(w.argv[i], "-d") == 0 || strcmp(w.argv[i], "--decode") == 0 ||
                                       strcmp(w.argv[i], "-r") == 0 || strcmp(w.argv[i], "-D") == 0;
                                plain |= strcmp(w.argv[i], "-p") == 0 || strcmp(w.argv[i], "-ps") == 0;
                        }
                *decoder = dec;
                if (dec && in && plain)
                        out = name[0] == 'b' ? review_base64_decode(in, strlen(in), &n) : review_hex_decode(in, strlen(in), &n);
        } else if (strcmp(name, "rev") == 0) {
                *decoder = true;
                if (in && (out = strdup(in)) != NULL)
                        for (char *line = out, *e; *line; line = *e ? e + 1 : e) {
                                e = line + strcspn(line, "\n");
                                for (char *x = line, *y = e - 1; x < y; x++, y--) {
                                        char t = *x;
                                        *x = *y;
                                        *y = t;
                                }
                        }
        } else if (strcmp(name, "tr") == 0 || strcmp(name, "openssl") == 0 || strcmp(name, "gunzip") == 0 ||
                   strcmp(name, "zcat") == 0 || strcmp(name, "uudecode") == 0) {
                *decoder = true;
        }
        words_release(&w);
        return out;
}

/* An interpreter reading its program from standard input: bash, sh -s, python3 -. */
static int stdin_interpreter(struct sh *s, TSNode stage)
{
        if (is(stage, K_REDIRECTED_STATEMENT))
                stage = field(stage, F_BODY);
        if (!is(stage, K_COMMAND))
                return -1;
        struct words w;
        command_words(s, stage, &w, false);
        const char *name = w.a0 < w.argc && w.argv[w.a0] ? w.argv[w.a0] : "";
        const char *b = strrchr(name, '/');
        name = b ? b + 1 : name;
        int lang = nested_lang(name);
        if (lang >= 0) {
                /* a script operand (or -c) means standard input is data */
                for (size_t i = w.a0 + 1; i < w.argc; i++) {
                        const char *x = w.argv[i];
                        if (x && (strcmp(x, "-") == 0 || strcmp(x, "-s") == 0))
                                break;
                        if (x == NULL || x[0] != '-' || strcmp(x, "-c") == 0 || strcmp(x, "-m") == 0) {
                                lang = -1;
                                break;
                        }
                }
        }
        words_release(&w);
        return lang;
}

/* A download piped into an interpreter (curl ... | sh); literal text piped
 * into one (echo '...' | bash, through base64 -d): reviewed as the code it is. */
static void visit_pipeline(struct sh *s, TSNode n)
{
        struct review_children k;
        TSNode ch;
        bool download = false, decoded = false;
        char *text = NULL;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &ch)) {
                if (download && has_command(s, ch, interpreters, ARRAY_SIZE(interpreters), 0)) {
                        review_add(s->c, ch, "SH-NET-001", "download | shell", NULL);
                        break;
                }
                if (download && is(ch, K_COMMAND)) {
                        cleanup_free char *w = effective_name(s, ch);
                        if (w && is_interpreter(w)) {
                                review_add(s->c, ch, "SH-NET-001", "download | shell", NULL);
                                break;
                        }
                }
                download |= has_command(s, ch, downloaders, ARRAY_SIZE(downloaders), 0);
                int lang = stdin_interpreter(s, ch);
                if (lang >= 0 && text)
                        review_nested(s->c, ch, (enum review_lang)lang, text, strlen(text));
                else if (lang >= 0 && decoded)
                        review_add(s->c, ch, "SH-DYN-001", "decoded | shell", NULL);
                bool dec = false;
                char *next = stage_output(s, ch, text, &dec);
                decoded |= dec;
                free(text);
                text = next;
        }
        review_children_release(&k);
        free(text);
}

/* Does body call fname in a pipeline or in the background? */
static bool self_spawn(struct sh *s, TSNode n, const char *fname, bool spawned, unsigned depth)
{
        if (ts_node_is_null(n) || depth > 200)
                return false;
        if (is(n, K_COMMAND) && spawned) {
                TSNode name = field(n, F_NAME);
                cleanup_free char *w = ts_node_is_null(name) ? NULL : literal(s, name);
                if (w && strcmp(w, fname) == 0)
                        return true;
        }
        /* Each child is looked at once the next is known: cmd & : the node
         * before an anonymous "&" runs in the background. */
        struct review_children k;
        TSNode ch, prev = { 0 };
        bool found = false, pipeline = is(n, K_PIPELINE);
        review_children_init(&k, n, false);
        while (!found && review_children_next(&k, &ch)) {
                if (!ts_node_is_null(prev))
                        found = self_spawn(s, prev, fname, spawned || is(ch, K_AMP) || pipeline, depth + 1);
                prev = ch;
        }
        review_children_release(&k);
        if (!found && !ts_node_is_null(prev))
                found = self_spawn(s, prev, fname, spawned || pipeline, depth + 1);
        return found;
}

static void visit_function(struct sh *s, TSNode n)
{
        cleanup_free char *fname = review_node_text(s->c, field(n, F_NAME));
        TSNode body = field(n, F_BODY);
        if (fname && !ts_node_is_null(body) && self_spawn(s, body, fname, false, 0)) {
                char subject[128];
                snprintf(subject, sizeof(subject), "%s(){ %s|%s& }", fname, fname, fname);
                review_add(s->c, n, "SH-PROC-001", subject, NULL);
        }
}

/* x=VALUE (x+=VALUE): the variable's literal value from here on, or not
 * known; x=/dev/tcp/host/port is a finding already. */
static void visit_assignment(struct sh *s, TSNode n)
{
        TSNode v = field(n, F_VALUE), nm = field(n, F_NAME);
        char *val = ts_node_is_null(v) ? strdup("") : literal(s, v);
        if (val && (strstr(val, "/dev/tcp/") || strstr(val, "/dev/udp/")))
                review_add(s->c, v, "SH-NET-002", val, NULL);
        cleanup_free char *name = is(nm, K_VARIABLE_NAME) ? review_node_text(s->c, nm) : NULL;
        if (name == NULL) {
                free(val);
                return;
        }
        uint32_t after = ts_node_end_byte(nm);
        if (after < s->c->len && s->c->code[after] == '+') {
                const char *old = var_value(s, name);
                char *j = NULL;
                if (old == NULL || val == NULL || asprintf(&j, "%s%s", old, val) < 0)
                        j = NULL;
                free(val);
                val = j;
        }
        var_set(s, name, val);
}

/* python3 - <<'EOF' ... EOF (and bash, sh): the document is code. */
static void visit_heredoc(struct sh *s, TSNode n)
{
        TSNode body = field(n, F_BODY);
        if (ts_node_is_null(body) || !is(body, K_COMMAND))
                return;
        cleanup_free char *name = effective_name(s, body);
        if (name == NULL)
                return;
        if (in_list(name, downloaders, ARRAY_SIZE(downloaders))) {
                /* curl URL > F: F is a download */
                struct review_children k;
                TSNode r;
                review_children_init(&k, n, true);
                while (review_children_next(&k, &r)) {
                        TSNode d = field(r, F_DESTINATION);
                        if (!is(r, K_FILE_REDIRECT) || ts_node_is_null(d) || !redirect_writes(r))
                                continue;
                        cleanup_free char *file = literal(s, d);
                        note_download(s, file);
                }
                review_children_release(&k);
                return;
        }
        int lang = nested_lang(name);
        if (lang < 0)
                return;
        struct review_children k;
        TSNode r;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &r)) {
                if (!is(r, K_HEREDOC_REDIRECT))
                        continue;
                struct review_children rk;
                TSNode hb;
                review_children_init(&rk, r, true);
                while (review_children_next(&rk, &hb)) {
                        if (!is(hb, K_HEREDOC_BODY))
                                continue;
                        uint32_t a = ts_node_start_byte(hb), b = ts_node_end_byte(hb);
                        if (b <= s->c->len && a < b)
                                review_nested(s->c, hb, lang, s->c->code + a, b - a);
                }
                review_children_release(&rk);
        }
        review_children_release(&k);
}

static void review_sh(struct sh *s, TSNode n)
{
        if (ts_node_is_null(n) || s->c->failed)
                return;
        if (s->depth >= REVIEW_MAX_DEPTH) {
                if (!s->too_deep)
                        review_add(s->c, n, "SH-SYN-002", "nesting", NULL);
                s->too_deep = true;
                return;
        }
        s->depth++;
        const enum kind t = kind(n);
        /* A subshell's cd ends with it; in a branch or a loop a cd may not happen. */
        bool sub = t == K_SUBSHELL || t == K_COMMAND_SUBSTITUTION || t == K_PROCESS_SUBSTITUTION || t == K_PIPELINE;
        bool cond = t == K_IF_STATEMENT || t == K_WHILE_STATEMENT || t == K_FOR_STATEMENT ||
                    t == K_C_STYLE_FOR_STATEMENT || t == K_CASE_STATEMENT || t == K_LIST || t == K_FUNCTION_DEFINITION;
        struct cwd_saved saved;
        if (sub)
                cwd_save(s, &saved);
        s->cond += cond;
        if (t == K_COMMAND) {
                visit_command(s, n);
        } else if (t == K_PIPELINE) {
                visit_pipeline(s, n);
        } else if (t == K_FUNCTION_DEFINITION) {
                visit_function(s, n);
        } else if (t == K_FILE_REDIRECT) {
                visit_redirect(s, n);
        } else if (t == K_VARIABLE_ASSIGNMENT) {
                visit_assignment(s, n);
        } else if (t == K_REDIRECTED_STATEMENT) {
                visit_heredoc(s, n);
        } else if (t == K_FOR_STATEMENT || t == K_UNSET_COMMAND) {
                /* for x in ...; unset x: x is no longer known */
                TSNode v = t == K_FOR_STATEMENT ? field(n, F_VARIABLE) : ts_node_named_child(n, 0);
                cleanup_free char *name = !ts_node_is_null(v) ? review_node_text(s->c, v) : NULL;
                if (name)
                        var_set(s, name, NULL);
        }
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &ch))
                review_sh(s, ch);
        review_children_release(&k);
        s->cond -= cond;
        if (sub)
                cwd_restore(s, &saved);
        s->depth--;
}

void review_shell(struct review_ctx *c, TSTree *tree)
{
        pthread_once(&kinds_once, kinds_init);
        /* relative paths start from /workspace (cwd[0] NULL) */
        struct sh s = { .c = c, .n_cwd = 1 };
        TSNode root = ts_tree_root_node(tree);
        review_syntax(c, root, "SH-SYN-001");
        review_sh(&s, root);
        for (unsigned i = 0; i < s.n_downloads; i++)
                free(s.downloads[i]);
        for (unsigned i = 0; i < s.n_vars; i++) {
                free(s.vars[i].name);
                free(s.vars[i].value);
        }
        for (unsigned i = 0; i < s.n_cwd; i++)
                free(s.cwd[i]);
}
