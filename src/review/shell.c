/* shell.c: the review of bash scripts over tree-sitter-bash's tree.
 *
 * Each simple command is looked at by its name (the literal word, with
 * quotes and backslashes removed, without its directory: /bin/rm is rm; the
 * wrappers env, sudo, nohup, timeout, exec... are looked through) and its
 * literal arguments; redirects by their literal targets; pipelines for a
 * download fed to an interpreter; function definitions for fork bombs.
 * Arguments built at run time ($x, $(...)) are not guessed at.  The code of
 * `python -c CODE` and `bash -c CODE` is reviewed in its own language.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "review-internal.h"

#define MAX_ARGS 64

#define MAX_DOWNLOADS 16

struct sh {
        struct review_ctx *c;
        unsigned depth;
        bool too_deep;
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
};

enum field {
        F_BODY,
        F_DESTINATION,
        F_NAME,
        F_VALUE,
        F_COUNT,
};

static const char *const field_names[F_COUNT] = {
        [F_BODY] = "body",
        [F_DESTINATION] = "destination",
        [F_NAME] = "name",
        [F_VALUE] = "value",
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

/* The literal value of a word, or NULL when it depends on expansions. */
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
                return w;
        }
        if (t == K_RAW_STRING || t == K_ANSI_C_STRING) {
                char *w = review_node_text(s->c, n);
                if (w == NULL)
                        return NULL;
                char *q = strchr(w, '\'');
                size_t l = q ? strlen(q) : 0;
                if (l < 2) {
                        free(w);
                        return NULL;
                }
                memmove(w, q + 1, l - 2);
                w[l - 2] = '\0';
                return w;
        }
        if (t == K_STRING) {
                struct review_children k;
                TSNode ch;
                char *out = strdup("");
                review_children_init(&k, n, true);
                while (out && review_children_next(&k, &ch)) {
                        if (!is(ch, K_STRING_CONTENT)) {
                                review_children_release(&k);
                                free(out);
                                return NULL;
                        }
                        char *part = review_node_text(s->c, ch), *j = NULL;
                        if (part == NULL || asprintf(&j, "%s%s", out, part) < 0)
                                j = NULL;
                        free(part);
                        free(out);
                        out = j;
                }
                review_children_release(&k);
                return out;
        }
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

static void redirect_target(struct sh *s, TSNode at, TSNode dest, bool write)
{
        cleanup_free char *p = literal(s, dest);
        if (p == NULL)
                return;
        if (strncmp(p, "/dev/tcp/", 9) == 0 || strncmp(p, "/dev/udp/", 9) == 0) {
                review_add(s->c, at, "SH-NET-002", p, NULL);
                return;
        }
        if (write && review_path_outside(p)) {
                char subject[256];
                snprintf(subject, sizeof(subject), "> %s", p);
                review_add(s->c, at, "SH-FS-001", subject, NULL);
        }
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

/* The words of a simple command; a0 skips wrappers (sudo, env X=1, timeout
 * 5, ...), each reported by on_priv when it is a privilege tool. */
static void command_words(struct sh *s, TSNode cmd, struct words *w, bool report)
{
        struct review_ctx *c = s->c;
        TSNode *nodes = w->nodes;
        char **argv = w->argv;
        size_t argc = 0;
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
        while (argc < MAX_ARGS && review_children_next(&k, &ch)) {
                if (!after) {
                        after = ts_node_eq(ch, name_node);
                        if (!after)
                                continue;
                } else if ((kind_bits(ch) & KIND_REDIRECT) || is(ch, K_COMMENT)) {
                        continue;
                }
                nodes[argc] = ch;
                argv[argc] = literal(s, ch);
                argc++;
        }
        review_children_release(&k);
        w->argc = argc;
        size_t a0 = 0;
        /* Look through wrappers: sudo rm -rf /, env X=1 bash -c ... */
        while (a0 < argc && argv[a0]) {
                const char *b = strrchr(argv[a0], '/');
                const char *name = b ? b + 1 : argv[a0];
                if (report && in_list(name, priv_tools, ARRAY_SIZE(priv_tools)))
                        review_add(c, nodes[a0], "SH-PRIV-001", name, name);
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

/* One simple command: name and literal arguments. */
static void visit_command(struct sh *s, TSNode cmd)
{
        struct review_ctx *c = s->c;
        struct words w;
        command_words(s, cmd, &w, true);
        TSNode *nodes = w.nodes;
        char **argv = w.argv;
        size_t argc = w.argc, a0 = w.a0;
        if (a0 >= argc || argv[a0] == NULL)
                goto out;
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
                        snprintf(dir, sizeof(dir), "%.*s", (int)(l >= 2 && strcmp(x + l - 2, "/*") == 0 ? l - 2 : l), x);
                        if (npr || (rec && (review_path_system_dir(dir[0] ? dir : "/")))) {
                                char subject[256];
                                snprintf(subject, sizeof(subject), "rm -r %s", x);
                                review_add(c, at, "SH-RM-001", subject, name);
                        }
                }
                if (npr)
                        review_add(c, at, "SH-RM-001", "rm --no-preserve-root", name);
        } else if (strcmp(name, "find") == 0) {
                /* find / -delete, find /etc -exec rm -rf {} + */
                bool del = false;
                for (size_t i = a0 + 1; i < argc; i++)
                        del |= argv[i] && (strcmp(argv[i], "-delete") == 0 ||
                                           ((strcmp(argv[i], "-exec") == 0 || strcmp(argv[i], "-execdir") == 0) &&
                                            i + 1 < argc && argv[i + 1] && strcmp(argv[i + 1], "rm") == 0));
                for (size_t i = a0 + 1; del && i < argc && argv[i] && argv[i][0] != '-'; i++)
                        if (review_path_system_dir(argv[i])) {
                                char subject[256];
                                snprintf(subject, sizeof(subject), "find %s -delete", argv[i]);
                                review_add(c, at, "SH-RM-001", subject, name);
                                break;
                        }
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
                        redirect_target(s, nodes[last], nodes[last], true);
                for (size_t i = a0 + 1; strcmp(name, "install") == 0 && i + 1 < argc; i++)
                        if (argv[i] && (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "--mode") == 0) &&
                            argv[i + 1] && setuid_mode(argv[i + 1])) {
                                char subject[128];
                                snprintf(subject, sizeof(subject), "install -m %s", argv[i + 1]);
                                review_add(c, at, "SH-PERM-001", subject, name);
                        }
        } else if (strcmp(name, "touch") == 0 || strcmp(name, "mkdir") == 0 || strcmp(name, "truncate") == 0 ||
                   strcmp(name, "chown") == 0 || strcmp(name, "shred") == 0 || strcmp(name, "sed") == 0 ||
                   strcmp(name, "perl") == 0) {
                /* every operand is written (sed and perl only with -i) */
                bool in_place = strcmp(name, "sed") != 0 && strcmp(name, "perl") != 0;
                for (size_t i = a0 + 1; i < argc; i++)
                        in_place |= argv[i] && (strncmp(argv[i], "-i", 2) == 0 || strncmp(argv[i], "--in-place", 10) == 0 ||
                                                (argv[i][0] == '-' && argv[i][1] != '-' && strchr(argv[i], 'i')));
                for (size_t i = a0 + 1; in_place && i < argc; i++)
                        if (argv[i] && argv[i][0] == '/')
                                redirect_target(s, nodes[i], nodes[i], true);
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
        } else if (strcmp(name, "rsync") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-' && argv[i][0] != '/' && strchr(argv[i], ':')) {
                                review_add(c, at, "SH-NET-003", "rsync", name);
                                break;
                        }
        } else if (in_list(name, downloaders, ARRAY_SIZE(downloaders))) {
                review_add(c, at, "SH-NET-004", name, name);
        } else if (strcmp(name, "eval") == 0) {
                review_add(c, at, "SH-DYN-001", "eval", name);
        } else if (strcmp(name, "tee") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && argv[i][0] != '-')
                                redirect_target(s, nodes[i], nodes[i], true);
        } else if (strcmp(name, "dd") == 0) {
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && strncmp(argv[i], "of=", 3) == 0 && review_path_outside(argv[i] + 3))
                                review_add(c, nodes[i], "SH-FS-001", argv[i], name);
        } else if (strncmp(name, "mkfs", 4) == 0 || strcmp(name, "mke2fs") == 0 || strcmp(name, "wipefs") == 0) {
                review_add(c, at, "SH-FS-001", name, name);
        }

        /* bash -c CODE, python3 -c CODE: the code in its own language. */
        bool sh = is_interpreter(name) && !is_python(name) && strcmp(name, "perl") && strcmp(name, "ruby") &&
                  strcmp(name, "node") && strcmp(name, "php");
        if (sh || is_python(name)) {
                for (size_t i = a0 + 1; i + 1 < argc; i++) {
                        if (argv[i] == NULL || strcmp(argv[i], "-c") != 0)
                                continue;
                        if (argv[i + 1])
                                review_nested(c, nodes[i + 1], sh ? REVIEW_BASH : REVIEW_PYTHON, argv[i + 1],
                                              strlen(argv[i + 1]));
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
                        if (has_command(s, nodes[i], downloaders, ARRAY_SIZE(downloaders), 0)) {
                                review_add(c, nodes[i], "SH-NET-001", name, name);
                                break;
                        }
        /* /dev/tcp as an argument (exec 3<>/dev/tcp/... parses as a redirect) */
        if (strcmp(name, "echo") != 0 && strcmp(name, "printf") != 0)
                for (size_t i = a0 + 1; i < argc; i++)
                        if (argv[i] && (strstr(argv[i], "/dev/tcp/") || strstr(argv[i], "/dev/udp/")))
                                review_add(c, nodes[i], "SH-NET-002", argv[i], name);
out:
        words_release(&w);
}

/* A download piped into an interpreter: curl ... | sh */
static void visit_pipeline(struct sh *s, TSNode n)
{
        struct review_children k;
        TSNode ch;
        bool download = false;
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
        }
        review_children_release(&k);
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

/* x=/dev/tcp/host/port, used later in a redirect */
static void visit_assignment(struct sh *s, TSNode n)
{
        TSNode v = field(n, F_VALUE);
        cleanup_free char *val = ts_node_is_null(v) ? NULL : literal(s, v);
        if (val && (strstr(val, "/dev/tcp/") || strstr(val, "/dev/udp/")))
                review_add(s->c, v, "SH-NET-002", val, NULL);
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
        bool py = is_python(name), sh = !py && is_interpreter(name) && strcmp(name, "perl") && strcmp(name, "ruby") &&
                                      strcmp(name, "node") && strcmp(name, "php");
        if (!py && !sh)
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
                                review_nested(s->c, hb, py ? REVIEW_PYTHON : REVIEW_BASH, s->c->code + a, b - a);
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
        if (t == K_COMMAND)
                visit_command(s, n);
        else if (t == K_PIPELINE)
                visit_pipeline(s, n);
        else if (t == K_FUNCTION_DEFINITION)
                visit_function(s, n);
        else if (t == K_FILE_REDIRECT)
                visit_redirect(s, n);
        else if (t == K_VARIABLE_ASSIGNMENT)
                visit_assignment(s, n);
        else if (t == K_REDIRECTED_STATEMENT)
                visit_heredoc(s, n);
        struct review_children k;
        TSNode ch;
        review_children_init(&k, n, true);
        while (review_children_next(&k, &ch))
                review_sh(s, ch);
        review_children_release(&k);
        s->depth--;
}

void review_shell(struct review_ctx *c, TSTree *tree)
{
        pthread_once(&kinds_once, kinds_init);
        struct sh s = { .c = c };
        TSNode root = ts_tree_root_node(tree);
        review_syntax(c, root, "SH-SYN-001");
        review_sh(&s, root);
        for (unsigned i = 0; i < s.n_downloads; i++)
                free(s.downloads[i]);
}
