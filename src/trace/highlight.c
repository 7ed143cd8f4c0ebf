/* highlight.c: text made safe for a terminal, and code made colourful.
 *
 * render_highlight() is a small lexer for Python and bash that wraps tokens
 * in SGR colour codes without ever changing, dropping or reordering a byte
 * of the input.  It knows nothing of events or traces; what it is given is
 * already made safe (term_sanitize(), src/lib/termsafe.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "render.h"

#define C_KEYWORD "35"
#define C_BUILTIN "36"
#define C_STRING "32"
#define C_COMMENT "90"
#define C_NUMBER "33"
#define C_DECORATOR "34"
#define C_DEFNAME "34"
#define C_VARIABLE "36"

/* ---- highlighting --------------------------------------------------------- */

static const char *const py_keywords[] = {
        "False", "None",   "True",  "and",    "as",       "assert", "async",  "await",  "break",
        "class", "continue", "def", "del",    "elif",     "else",   "except", "finally", "for",
        "from",  "global", "if",    "import", "in",       "is",     "lambda", "nonlocal", "not",
        "or",    "pass",   "raise", "return", "try",      "while",  "with",   "yield",  NULL,
};
static const char *const py_builtins[] = {
        "abs",      "all",       "any",       "bool",      "bytes",     "callable", "chr",       "dict",
        "dir",      "divmod",    "enumerate", "filter",    "float",     "format",   "frozenset", "getattr",
        "hasattr",  "hash",      "hex",       "id",        "input",     "int",      "isinstance", "issubclass",
        "iter",     "len",       "list",      "map",       "max",       "min",      "next",      "object",
        "open",     "ord",       "pow",       "print",     "range",     "repr",     "reversed",  "round",
        "set",      "setattr",   "slice",     "sorted",    "str",       "sum",      "super",     "tuple",
        "type",     "vars",      "zip",       "Exception", "ValueError", "TypeError", "KeyError", "IndexError",
        "RuntimeError", "OSError", "FileNotFoundError", "StopIteration", "self",  NULL,
};
static const char *const sh_keywords[] = {
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
        "case", "esac", "in", "function", "select", "time", "return", "exit", NULL,
};
static const char *const sh_builtins[] = {
        "echo", "printf", "cd", "export", "local", "read", "set", "unset", "source", "shift",
        "trap", "eval", "exec", "test", "true", "false", "declare", "readonly", NULL,
};

static bool word_in(const char *w, size_t n, const char *const *list)
{
        for (size_t i = 0; list[i]; i++)
                if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
                        return true;
        return false;
}

/* Write s[0..n) in colour; each line of it is wrapped on its own, so a
 * highlighted text can be split at '\n' and every piece is self-contained. */
static void emit(FILE *f, const char *color, const char *s, size_t n)
{
        if (color == NULL) {
                fwrite(s, 1, n, f);
                return;
        }
        size_t i = 0;
        while (i < n) {
                const char *nl = memchr(s + i, '\n', n - i);
                size_t seg = nl ? (size_t)(nl - (s + i)) : n - i;
                if (seg > 0)
                        fprintf(f, "\033[%sm%.*s\033[0m", color, (int)seg, s + i);
                i += seg;
                if (nl) {
                        fputc('\n', f);
                        i++;
                }
        }
}

static bool ident_start(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool ident_char(unsigned char c)
{
        return ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c)
{
        return c >= '0' && c <= '9';
}

/* The end of a Python string literal whose opening quote is at q. */
static size_t py_string_end(const char *s, size_t n, size_t q)
{
        char quote = s[q];
        bool triple = q + 2 < n && s[q + 1] == quote && s[q + 2] == quote;
        size_t j = q + (triple ? 3 : 1);
        while (j < n) {
                if (s[j] == '\\') {
                        j = j + 2 < n ? j + 2 : n;
                } else if (triple) {
                        if (j + 2 < n && s[j] == quote && s[j + 1] == quote && s[j + 2] == quote)
                                return j + 3;
                        j++;
                } else if (s[j] == quote) {
                        return j + 1;
                } else if (s[j] == '\n') {
                        return j; /* unterminated: the string stops at the line's end */
                } else {
                        j++;
                }
        }
        return n;
}

static void highlight_python(FILE *f, const char *s, size_t n)
{
        bool line_start = true; /* only blanks so far on this line */
        bool after_def = false; /* the next name is a def/class name */
        char prev_sig = 0;      /* the last non-blank byte */
        size_t i = 0;
        while (i < n) {
                unsigned char c = (unsigned char)s[i];
                size_t j;
                if (c == '#') {
                        j = i;
                        while (j < n && s[j] != '\n')
                                j++;
                        emit(f, C_COMMENT, s + i, j - i);
                } else if (c == '\'' || c == '"') {
                        j = py_string_end(s, n, i);
                        emit(f, C_STRING, s + i, j - i);
                } else if (c == '@' && line_start) {
                        j = i + 1;
                        while (j < n && (ident_char((unsigned char)s[j]) || s[j] == '.'))
                                j++;
                        emit(f, C_DECORATOR, s + i, j - i);
                } else if (is_digit(c) || (c == '.' && i + 1 < n && is_digit((unsigned char)s[i + 1]))) {
                        bool hex = c == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X');
                        j = i + 1;
                        while (j < n) {
                                unsigned char d = (unsigned char)s[j];
                                if (ident_char(d) && d < 0x80)
                                        j++;
                                else if (d == '.')
                                        j++;
                                else if ((d == '+' || d == '-') && !hex && (s[j - 1] == 'e' || s[j - 1] == 'E'))
                                        j++;
                                else
                                        break;
                        }
                        emit(f, C_NUMBER, s + i, j - i);
                } else if (ident_start(c)) {
                        j = i;
                        while (j < n && ident_char((unsigned char)s[j]))
                                j++;
                        size_t len = j - i;
                        bool prefix = len <= 2 && j < n && (s[j] == '\'' || s[j] == '"');
                        for (size_t k = i; prefix && k < j; k++)
                                prefix = strchr("rRbBuUfF", s[k]) != NULL;
                        if (prefix) {
                                j = py_string_end(s, n, j);
                                emit(f, C_STRING, s + i, j - i);
                        } else if (after_def) {
                                emit(f, C_DEFNAME, s + i, len);
                        } else if (prev_sig != '.' && word_in(s + i, len, py_keywords)) {
                                emit(f, C_KEYWORD, s + i, len);
                        } else if (prev_sig != '.' && word_in(s + i, len, py_builtins)) {
                                emit(f, C_BUILTIN, s + i, len);
                        } else {
                                emit(f, NULL, s + i, len);
                        }
                        after_def = !prefix && (word_in(s + i, len, (const char *const[]){ "def", "class", NULL }) &&
                                                prev_sig != '.');
                        line_start = false;
                        prev_sig = s[j - 1];
                        i = j;
                        continue;
                } else {
                        j = i + 1;
                        emit(f, NULL, s + i, 1);
                        if (c == '\n')
                                line_start = true;
                        else if (c != ' ' && c != '\t')
                                line_start = false;
                        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                                prev_sig = (char)c;
                                after_def = false;
                        }
                        i = j;
                        continue;
                }
                line_start = false;
                after_def = false;
                prev_sig = s[j - 1];
                i = j;
        }
}

static bool sh_word_edge(const char *s, size_t n, size_t k)
{
        if (k >= n)
                return true;
        unsigned char c = (unsigned char)s[k];
        return !(ident_char(c) || c == '-' || c == '.' || c == '/' || c == '=' || c == '$');
}

static void highlight_bash(FILE *f, const char *s, size_t n)
{
        size_t i = 0;
        while (i < n) {
                unsigned char c = (unsigned char)s[i];
                size_t j;
                bool word_start = i == 0 || strchr(" \t\n;&|()", s[i - 1]) != NULL;
                if (c == '#' && word_start) {
                        j = i;
                        while (j < n && s[j] != '\n')
                                j++;
                        emit(f, C_COMMENT, s + i, j - i);
                } else if (c == '\'') {
                        const char *q = memchr(s + i + 1, '\'', n - i - 1);
                        j = q ? (size_t)(q - s) + 1 : n;
                        emit(f, C_STRING, s + i, j - i);
                } else if (c == '"') {
                        j = i + 1;
                        while (j < n && s[j] != '"')
                                j += s[j] == '\\' && j + 1 < n ? 2 : 1;
                        j = j < n ? j + 1 : n;
                        emit(f, C_STRING, s + i, j - i);
                } else if (c == '$' && i + 1 < n && s[i + 1] == '{') {
                        j = i + 2;
                        while (j < n && s[j] != '}' && s[j] != '\n')
                                j++;
                        j = j < n && s[j] == '}' ? j + 1 : j;
                        emit(f, C_VARIABLE, s + i, j - i);
                } else if (c == '$' && i + 1 < n && ident_start((unsigned char)s[i + 1]) &&
                           (unsigned char)s[i + 1] < 0x80) {
                        j = i + 1;
                        while (j < n && ident_char((unsigned char)s[j]) && (unsigned char)s[j] < 0x80)
                                j++;
                        emit(f, C_VARIABLE, s + i, j - i);
                } else if (c == '$' && i + 1 < n && strchr("0123456789@*#?$!-", s[i + 1]) != NULL) {
                        j = i + 2;
                        emit(f, C_VARIABLE, s + i, j - i);
                } else if (c == '\\') {
                        j = i + 2 <= n ? i + 2 : n;
                        emit(f, NULL, s + i, j - i);
                } else if (ident_char(c)) {
                        j = i;
                        while (j < n && ident_char((unsigned char)s[j]))
                                j++;
                        bool whole = (i == 0 || sh_word_edge(s, n, i - 1)) && sh_word_edge(s, n, j);
                        const char *color = NULL;
                        if (whole && word_in(s + i, j - i, sh_keywords))
                                color = C_KEYWORD;
                        else if (whole && word_in(s + i, j - i, sh_builtins))
                                color = C_BUILTIN;
                        emit(f, color, s + i, j - i);
                } else {
                        j = i + 1;
                        emit(f, NULL, s + i, 1);
                }
                i = j;
        }
}

/* Colour Python or bash source; every byte of code comes out once, in
 * order, so stripping the SGR sequences gives the input back.  Each line of
 * the result carries its own colour codes (a token spanning lines is closed
 * at every '\n'), so callers may split it into lines.  The input is not
 * sanitised here: callers printing untrusted code pass it through
 * term_sanitize() first. */
char *render_highlight(const char *code, const char *lang)
{
        if (code == NULL)
                return NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (f == NULL)
                return NULL;
        size_t n = strlen(code);
        if (lang && strcmp(lang, "python") == 0)
                highlight_python(f, code, n);
        else if (lang && strcmp(lang, "bash") == 0)
                highlight_bash(f, code, n);
        else
                fwrite(code, 1, n, f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
