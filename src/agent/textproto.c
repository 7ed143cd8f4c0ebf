/* textproto.c: the text protocol, for models without tool calling.
 *
 * The system prompt asks for code in one fenced block (```python or
 * ```bash); a reply without an executable block is the final answer.  This
 * file finds that block: a line opening with ``` (or ~~~), up to three
 * spaces of indent, an info string naming the language, and the lines up
 * to the matching closing fence, as CommonMark defines fenced code blocks.
 * Blocks in other languages (json, text, csv, ...) are not executed and are
 * skipped; a block without a language is Python; an unterminated block
 * runs to the end of the reply (a reply cut off by a token limit); a block
 * holding only white space is skipped.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "agent-internal.h"

static const char *lang_of(const char *info, size_t len)
{
        static const struct {
                const char *name;
                const char *lang;
        } langs[] = {
                { "", "python" },       { "python", "python" }, { "python3", "python" }, { "py", "python" },
                { "bash", "bash" },     { "sh", "bash" },       { "shell", "bash" },     { "console", "bash" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(langs); i++)
                if (strlen(langs[i].name) == len && strncasecmp(info, langs[i].name, len) == 0)
                        return langs[i].lang;
        return NULL;
}

/* Length of the fence opening line at p (>= 3 backticks or tildes after at
 * most 3 spaces), 0 when p does not open a fence. */
static size_t fence_at(const char *p, char *ret_ch, size_t *ret_indent)
{
        size_t indent = 0;
        while (p[indent] == ' ' && indent < 3)
                indent++;
        char ch = p[indent];
        if (ch != '`' && ch != '~')
                return 0;
        size_t n = 0;
        while (p[indent + n] == ch)
                n++;
        if (n < 3)
                return 0;
        *ret_ch = ch;
        *ret_indent = indent;
        return n;
}

int textproto_find_block(const char *reply, struct text_block *ret)
{
        memset(ret, 0, sizeof(*ret));
        for (const char *line = reply; line && *line;) {
                const char *eol = strchr(line, '\n');
                const char *next = eol ? eol + 1 : NULL;
                char ch;
                size_t indent, n = fence_at(line, &ch, &indent);
                if (n == 0) {
                        line = next;
                        continue;
                }
                /* The info string: its first word is the language. */
                const char *info = line + indent + n;
                const char *info_end = eol ? eol : info + strlen(info);
                while (info < info_end && isspace((unsigned char)*info))
                        info++;
                size_t word = 0;
                while (info + word < info_end && !isspace((unsigned char)info[word]) && info[word] != '{')
                        word++;
                /* A backtick fence's info string may not contain backticks. */
                bool valid = !(ch == '`' && memchr(info, '`', (size_t)(info_end - info)));
                const char *lang = valid ? lang_of(info, word) : NULL;

                /* The body: up to a closing fence of the same char, at least as long. */
                const char *body = next, *body_end = NULL, *after = NULL;
                for (const char *l = body; l && *l;) {
                        const char *e = strchr(l, '\n');
                        char c2;
                        size_t ind2, n2 = fence_at(l, &c2, &ind2);
                        if (n2 >= n && c2 == ch) {
                                const char *rest = l + ind2 + n2;
                                while (*rest == ' ' || *rest == '\t' || *rest == '\r')
                                        rest++;
                                if (*rest == '\n' || *rest == '\0') {
                                        body_end = l;
                                        after = e ? e + 1 : NULL;
                                        break;
                                }
                        }
                        l = e ? e + 1 : NULL;
                }
                if (body_end == NULL)
                        body_end = body ? body + strlen(body) : NULL;
                /* A block with nothing to run is no block. */
                bool blank = true;
                for (const char *q = body; q && q < body_end && blank; q++)
                        blank = isspace((unsigned char)*q);
                if (lang && valid && !blank) {
                        /* "file=PATH" after the language: a file to write. */
                        for (const char *q = info + word; q < info_end; q++) {
                                if ((q == info + word || isspace((unsigned char)q[-1])) &&
                                    strncmp(q, "file=", 5) == 0 && q + 5 < info_end) {
                                        size_t plen = strcspn(q + 5, " \t\r\n");
                                        if (q + 5 + plen > info_end)
                                                plen = (size_t)(info_end - q - 5);
                                        ret->path = strndup(q + 5, plen);
                                        if (ret->path == NULL)
                                                return -1;
                                        break;
                                }
                        }
                        ret->lang = strdup(lang);
                        ret->code = body ? strndup(body, (size_t)(body_end - body)) : strdup("");
                        if (ret->lang == NULL || ret->code == NULL) {
                                text_block_release(ret);
                                return -1;
                        }
                        return 1;
                }
                line = after;
        }
        return 0;
}

void text_block_release(struct text_block *b)
{
        free(b->lang);
        free(b->code);
        free(b->path);
        b->lang = b->code = b->path = NULL;
}
