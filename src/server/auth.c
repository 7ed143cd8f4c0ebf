/* auth.c: tokens and principals (auth.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

struct principal {
        char *token;
        size_t len;
        char *name;
};

struct auth {
        struct principal *p;
        size_t n;
};

void auth_free(struct auth *a)
{
        if (a == NULL)
                return;
        for (size_t i = 0; i < a->n; i++) {
                /* Not left in freed memory for a later allocation to show. */
                explicit_bzero(a->p[i].token, a->p[i].len);
                free(a->p[i].token);
                free(a->p[i].name);
        }
        free(a->p);
        free(a);
}

static bool token_valid(const char *t, size_t len)
{
        if (len < AUTH_TOKEN_MIN || len > AUTH_TOKEN_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (t[i] <= ' ' || t[i] > '~')
                        return false;
        return true;
}

static int add(struct auth *a, const char *token, size_t len, const char *name, corral_error **ret_err)
{
        struct principal *p = realloc(a->p, (a->n + 1) * sizeof(*p));
        if (p == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot load the tokens");
        a->p = p;
        p = &a->p[a->n];
        p->token = strndup(token, len);
        p->len = len;
        if (name)
                p->name = strdup(name);
        else if (asprintf(&p->name, "token-%zu", a->n + 1) < 0)
                p->name = NULL;
        if (p->token == NULL || p->name == NULL) {
                free(p->token);
                free(p->name);
                return corral_fail(ret_err, ENOMEM, "cannot load the tokens");
        }
        a->n++;
        return 0;
}

int auth_load(const char *path, struct auth **ret, corral_error **ret_err)
{
        *ret = NULL;
        cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot open the tokens file '%s'", path);
        if (!S_ISREG(st.st_mode))
                return corral_usage(ret_err, "the tokens file '%s' is not a regular file", path);
        /* As ssh does with a key: a secret others can read is no secret. */
        if (st.st_mode & 077)
                return corral_usage(ret_err, "the tokens file '%s' may be read by others (mode %04o): chmod 600 it",
                                    path, (unsigned)(st.st_mode & 07777));
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, path, 1 << 20);
        if (text == NULL)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno == EFBIG ? 0 : errno,
                                         "cannot read the tokens file '%s'%s", path,
                                         errno == EFBIG ? ": larger than 1 MiB" : "");
        struct auth *a = calloc(1, sizeof(*a));
        if (a == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot load the tokens");
        unsigned line_no = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                line_no++;
                line += strspn(line, " \t\r");
                if (*line == '\0' || *line == '#')
                        continue;
                size_t tlen = strcspn(line, " \t\r");
                char *name = line + tlen;
                name += strspn(name, " \t");
                name[strcspn(name, "\r")] = '\0';
                bool named = *name != '\0';
                bool name_ok = !named || strlen(name) <= 64;
                for (const char *c = name; named && *c; c++)
                        if (*c < ' ' || *c > '~')
                                name_ok = false;
                if (!token_valid(line, tlen) || !name_ok) {
                        auth_free(a);
                        explicit_bzero(text, strlen(text));
                        return corral_usage(ret_err, "the tokens file '%s', line %u: expected TOKEN [NAME], a token "
                                                     "of %d to %d printable characters and a name of at most 64",
                                            path, line_no, AUTH_TOKEN_MIN, AUTH_TOKEN_MAX);
                }
                if (auth_check(a, line, tlen) >= 0) {
                        auth_free(a);
                        explicit_bzero(text, strlen(text));
                        return corral_usage(ret_err, "the tokens file '%s', line %u: the token repeats an earlier "
                                                     "one", path, line_no);
                }
                line[tlen] = '\0';
                if (add(a, line, tlen, named ? name : NULL, ret_err) < 0) {
                        auth_free(a);
                        return -1;
                }
        }
        explicit_bzero(text, strlen(text));
        if (a->n == 0) {
                auth_free(a);
                return corral_usage(ret_err, "the tokens file '%s' holds no token", path);
        }
        *ret = a;
        return 0;
}

int auth_generate(const char *path, struct auth **ret, const char **ret_token, corral_error **ret_err)
{
        *ret = NULL;
        char hex[32 * 2 + 2];
        if (auth_random_hex(hex, 32) < 0)
                return corral_fail(ret_err, errno, "cannot make a token");
        struct auth *a = calloc(1, sizeof(*a));
        if (a == NULL || add(a, hex, strlen(hex), "default", ret_err) < 0) {
                free(a);
                return a ? -1 : corral_fail(ret_err, ENOMEM, "cannot make a token");
        }
        /* Written whole under a temporary name, then renamed: a reader
         * never sees half a token, nor one readable by others. */
        cleanup_free char *tmp = NULL;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                auth_free(a);
                return corral_fail(ret_err, ENOMEM, "cannot write the token");
        }
        int fd = mkostemp(tmp, O_CLOEXEC);
        hex[32 * 2] = '\n';
        hex[32 * 2 + 1] = '\0';
        bool ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex) &&
                  fsync(fd) == 0;
        int saved = errno;
        explicit_bzero(hex, sizeof(hex));
        if (fd >= 0)
                close(fd);
        if (!ok || rename(tmp, path) < 0) {
                saved = ok ? errno : saved;
                if (fd >= 0)
                        unlink(tmp);
                auth_free(a);
                return corral_fail(ret_err, saved, "cannot write the token to '%s'", path);
        }
        *ret = a;
        *ret_token = a->p[0].token;
        return 0;
}

bool auth_equal(const char *known, size_t known_len, const char *given, size_t given_len)
{
        /* Every byte up to the longer of the two: no early exit tells an
         * attacker how much of a guess was right. */
        size_t n = known_len > given_len ? known_len : given_len;
        unsigned char diff = known_len != given_len;
        for (size_t k = 0; k < n; k++) {
                unsigned char x = k < known_len ? (unsigned char)known[k] : 0;
                unsigned char y = k < given_len ? (unsigned char)given[k] : 0;
                diff |= x ^ y;
        }
        return diff == 0;
}

int auth_check(const struct auth *a, const char *token, size_t len)
{
        int found = -1;
        if (token == NULL || len > AUTH_TOKEN_MAX)
                return -1;
        for (size_t i = 0; i < a->n; i++) {
                /* Branch-free select: found = i when it matches. */
                int match = -(int)auth_equal(a->p[i].token, a->p[i].len, token, len);
                found = (found & ~match) | ((int)i & match);
        }
        return found;
}

int auth_random_hex(char *out, size_t bytes)
{
        unsigned char raw[64];
        if (bytes > sizeof(raw) || getrandom(raw, bytes, 0) != (ssize_t)bytes)
                return -1;
        for (size_t i = 0; i < bytes; i++)
                snprintf(out + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero(raw, sizeof(raw));
        return 0;
}

const char *auth_name(const struct auth *a, int principal)
{
        return principal >= 0 && (size_t)principal < a->n ? a->p[principal].name : "?";
}

size_t auth_count(const struct auth *a)
{
        return a->n;
}
