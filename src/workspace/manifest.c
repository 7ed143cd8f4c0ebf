/* manifest.c: what goes into a workspace, and where, as data.
 *
 * A manifest is a JSON object {"entries":[...]}; each entry puts a host
 * file, a host directory or inline content at a destination relative to
 * /workspace, read-only (the default) or writable, and maybe ephemeral (not
 * archived).  --input PATH[:DEST] is the same thing with DEST under input/.
 * This file only parses and checks: the schema strictly (an unknown key is
 * a typo, not something to ignore), the destinations syntactically and
 * against each other.  Whether sources exist, their sizes, and what is in
 * the workspace already are staging's business (stage.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workspace-internal.h"

void ws_manifest_release(struct ws_manifest *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->n; i++) {
                free(m->v[i].dest);
                free(m->v[i].source);
                free(m->v[i].content);
        }
        free(m->v);
        m->v = NULL;
        m->n = 0;
}

int ws_manifest_check_dest(const char *dest, bool writable, const char *what, corral_error **ret_err)
{
        if (dest[0] == '\0')
                return corral_usage(ret_err, "%s is empty (give a path relative to /workspace)", what);
        if (dest[0] == '/')
                return corral_usage(ret_err, "%s '%s' must be relative to /workspace, not absolute", what, dest);
        if (strlen(dest) >= PATH_MAX - 64)
                return corral_usage(ret_err, "%s '%.64s...' is too long", what, dest);
        for (const char *p = dest;;) {
                size_t n = strcspn(p, "/");
                if (n == 0)
                        return corral_usage(ret_err, "%s '%s' has an empty path component", what, dest);
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return corral_usage(ret_err, "%s '%s' may not contain '.' or '..'", what, dest);
                if (n > NAME_MAX)
                        return corral_usage(ret_err, "%s '%s' has a component longer than %d bytes", what, dest,
                                            NAME_MAX);
                if (p[n] == '\0')
                        break;
                p += n + 1;
        }
        if (strcmp(dest, ".corral") == 0 || strncmp(dest, ".corral/", 8) == 0)
                return corral_usage(ret_err, "%s '%s' is reserved: .corral/ belongs to corral", what, dest);
        if (strcmp(dest, "input") == 0 || strcmp(dest, "output") == 0)
                return corral_usage(ret_err, "%s '%s' would replace the workspace's %s/ directory: name a path "
                                             "inside it",
                                    what, dest, dest);
        if (writable && strncmp(dest, "input/", 6) == 0)
                return corral_usage(ret_err,
                                    "%s '%s' is writable but under input/, which every jail sees read-only: put it "
                                    "elsewhere",
                                    what, dest);
        if (!writable && strncmp(dest, "output/", 7) == 0)
                return corral_usage(ret_err,
                                    "%s '%s' is read-only but under output/, whose files are the run's artifacts: "
                                    "put it elsewhere, or make it \"writable\"",
                                    what, dest);
        return 0;
}

/* Is a the same as b, or one a path prefix of the other ("a" and "a/b")? */
static bool overlaps(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        size_t n = la < lb ? la : lb;
        if (strncmp(a, b, n) != 0)
                return false;
        return la == lb || (la < lb ? b[la] == '/' : a[lb] == '/');
}

/* How messages name entry i: "entries[N]" (N counting manifest entries
 * only) or "the input 'input/x'" (one of the run's inputs, field "inputs"). */
void ws_manifest_entry_name(const struct ws_manifest *m, size_t i, char *buf, size_t size)
{
        if (m->v[i].from_input) {
                snprintf(buf, size, "the input '%s'", m->v[i].dest);
                return;
        }
        size_t n = 0;
        for (size_t k = 0; k < i; k++)
                n += !m->v[k].from_input;
        snprintf(buf, size, "entries[%zu]", n);
}

int ws_manifest_check(const struct ws_manifest *m, corral_error **ret_err)
{
        char what[PATH_MAX + 64], other[PATH_MAX + 64];
        for (size_t i = 0; i < m->n; i++) {
                ws_manifest_entry_name(m, i, what, sizeof(what));
                if (!m->v[i].from_input) {
                        size_t l = strlen(what);
                        snprintf(what + l, sizeof(what) - l, ".dest");
                }
                if (ws_manifest_check_dest(m->v[i].dest, m->v[i].writable, what, ret_err) < 0)
                        return corral_error_set_field(ret_err, m->v[i].from_input ? "inputs" : NULL);
                for (size_t j = 0; j < i; j++) {
                        if (!overlaps(m->v[j].dest, m->v[i].dest))
                                continue;
                        ws_manifest_entry_name(m, j, other, sizeof(other));
                        if (strcmp(m->v[j].dest, m->v[i].dest) == 0)
                                corral_usage(ret_err, "%s '%s' is also the destination of %s", what, m->v[i].dest,
                                             other);
                        else
                                corral_usage(ret_err, "%s '%s' overlaps %s ('%s'): one would be inside the other",
                                             what, m->v[i].dest, other, m->v[j].dest);
                        return corral_error_set_field(ret_err, m->v[i].from_input || m->v[j].from_input ? "inputs"
                                                                                                        : NULL);
                }
        }
        return 0;
}

/* ---- parsing ---- */

static int b64_value(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

/* Standard base64 with padding; ASCII whitespace (line breaks) is skipped.
 * -1 on a bad character, a bad length or bad padding. */
static int b64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
        char *out = malloc(len / 4 * 3 + 4);
        if (out == NULL)
                return -ENOMEM;
        size_t n = 0, pad = 0;
        unsigned acc = 0, bits = 0, chars = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                        continue;
                if (c == '=') {
                        pad++;
                        chars++;
                        continue;
                }
                int v = b64_value(c);
                if (v < 0 || pad > 0) {
                        free(out);
                        return -EINVAL;
                }
                chars++;
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[n++] = (char)((acc >> bits) & 0xff);
                }
        }
        /* Whole quads, at most two '=', and no data bits left in the pad. */
        if (chars % 4 != 0 || pad > 2 || (acc & ((1u << bits) - 1)) != 0) {
                free(out);
                return -EINVAL;
        }
        out[n] = '\0';
        *ret = out;
        *ret_len = n;
        return 0;
}

static const char *json_type_phrase(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
                return "null";
        default:
                return "something else";
        }
}

/* A source path made absolute against base (when relative). */
static char *absolute_source(const char *path, const char *base)
{
        char *r = NULL;
        if (path[0] == '/')
                return strdup(path);
        if (base && base[0])
                return asprintf(&r, "%s/%s", base, path) < 0 ? NULL : r;
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
                return NULL;
        return asprintf(&r, "%s/%s", cwd, path) < 0 ? NULL : r;
}

static int parse_entry(json_t *o, size_t i, const char *base_dir, struct ws_manifest_entry *e,
                       corral_error **ret_err)
{
        static const char *const sources[] = { "file", "dir", "content", "base64" };
        if (!json_is_object(o))
                return corral_usage(ret_err, "entries[%zu] must be an object, not %s", i, json_type_phrase(o));
        const char *key;
        json_t *v;
        const char *source_key = NULL;
        json_object_foreach(o, key, v) {
                bool is_source = false;
                for (size_t k = 0; k < ARRAY_SIZE(sources); k++)
                        is_source |= strcmp(key, sources[k]) == 0;
                if (is_source) {
                        if (source_key)
                                return corral_usage(ret_err,
                                                    "entries[%zu] has both \"%s\" and \"%s\": give one source "
                                                    "(file, dir, content or base64)",
                                                    i, source_key, key);
                        source_key = key;
                        if (!json_is_string(v))
                                return corral_usage(ret_err, "entries[%zu].%s must be a string, not %s", i, key,
                                                    json_type_phrase(v));
                } else if (strcmp(key, "dest") == 0) {
                        if (!json_is_string(v))
                                return corral_usage(ret_err, "entries[%zu].dest must be a string, not %s", i,
                                                    json_type_phrase(v));
                } else if (strcmp(key, "writable") == 0 || strcmp(key, "ephemeral") == 0) {
                        if (!json_is_boolean(v))
                                return corral_usage(ret_err, "entries[%zu].%s must be true or false, not %s", i, key,
                                                    json_type_phrase(v));
                } else {
                        cleanup_free char *shown = utf8_sanitize(key, strlen(key), NULL);
                        return corral_usage(ret_err,
                                            "entries[%zu] has an unknown key \"%s\" (known: dest, file, dir, content, "
                                            "base64, writable, ephemeral)",
                                            i, shown ? shown : "?");
                }
        }
        json_t *dest = json_object_get(o, "dest");
        if (dest == NULL)
                return corral_usage(ret_err, "entries[%zu] has no \"dest\" (where to put it, relative to /workspace)",
                                    i);
        if (source_key == NULL)
                return corral_usage(ret_err, "entries[%zu] has no source: give \"file\", \"dir\", \"content\" or "
                                             "\"base64\"",
                                    i);
        if (json_string_length(dest) != strlen(json_string_value(dest)))
                return corral_usage(ret_err, "entries[%zu].dest contains a NUL character", i);
        e->writable = json_is_true(json_object_get(o, "writable"));
        e->ephemeral = json_is_true(json_object_get(o, "ephemeral"));
        /* A trailing slash is only a way of writing a directory. */
        e->dest = strdup(json_string_value(dest));
        if (e->dest == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot parse the manifest");
        for (size_t l = strlen(e->dest); l > 1 && e->dest[l - 1] == '/' && e->dest[l - 2] != '/';)
                e->dest[--l] = '\0';
        json_t *src = json_object_get(o, source_key);
        const char *s = json_string_value(src);
        size_t slen = json_string_length(src);
        if (strcmp(source_key, "file") == 0 || strcmp(source_key, "dir") == 0) {
                e->kind = source_key[0] == 'f' ? WS_SOURCE_FILE : WS_SOURCE_DIR;
                if (slen == 0)
                        return corral_usage(ret_err, "entries[%zu].%s is empty", i, source_key);
                if (slen != strlen(s))
                        return corral_usage(ret_err, "entries[%zu].%s contains a NUL character", i, source_key);
                e->source = absolute_source(s, base_dir);
                if (e->source == NULL)
                        return corral_fail(ret_err, errno ? errno : ENOMEM, "entries[%zu].%s", i, source_key);
                return 0;
        }
        e->kind = WS_SOURCE_CONTENT;
        if (strcmp(source_key, "content") == 0) {
                e->content = malloc(slen + 1);
                if (e->content == NULL)
                        return corral_fail(ret_err, ENOMEM, "cannot parse the manifest");
                memcpy(e->content, s, slen + 1);
                e->content_len = slen;
                return 0;
        }
        int r = b64_decode(s, slen, &e->content, &e->content_len);
        if (r == -ENOMEM)
                return corral_fail(ret_err, ENOMEM, "cannot parse the manifest");
        if (r < 0)
                return corral_usage(ret_err, "entries[%zu].base64 is not valid base64 (standard alphabet, padded "
                                             "with '=')",
                                    i);
        return 0;
}

int ws_manifest_parse(struct ws_manifest *m, const char *text, size_t len, const char *base_dir,
                      corral_error **ret_err)
{
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (root == NULL)
                return corral_usage(ret_err, "not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                                    jerr.column);
        int r = -1;
        struct ws_manifest add = { 0 };
        json_t *entries = json_object_get(root, "entries"), *v;
        const char *key;
        size_t i;
        if (!json_is_object(root)) {
                corral_usage(ret_err, "a manifest is a JSON object {\"entries\": [...]}, not %s",
                             json_type_phrase(root));
                goto out;
        }
        json_object_foreach(root, key, v) {
                if (strcmp(key, "entries") != 0) {
                        cleanup_free char *shown = utf8_sanitize(key, strlen(key), NULL);
                        corral_usage(ret_err, "unknown key \"%s\" (a manifest has \"entries\" only)",
                                     shown ? shown : "?");
                        goto out;
                }
        }
        if (!json_is_array(entries)) {
                corral_usage(ret_err, entries ? "\"entries\" must be an array" : "no \"entries\" array");
                goto out;
        }
        if (m->n + json_array_size(entries) > WS_MANIFEST_MAX_ENTRIES) {
                corral_usage(ret_err, "too many entries (%zu; at most %u)", m->n + json_array_size(entries),
                             WS_MANIFEST_MAX_ENTRIES);
                goto out;
        }
        add.v = calloc(m->n + json_array_size(entries) + 1, sizeof(*add.v));
        if (add.v == NULL) {
                corral_fail(ret_err, ENOMEM, "cannot parse the manifest");
                goto out;
        }
        /* Earlier entries (from --input) are shared until the end. */
        if (m->n)
                memcpy(add.v, m->v, m->n * sizeof(*add.v));
        add.n = m->n;
        json_array_foreach(entries, i, v) {
                if (parse_entry(v, i, base_dir, &add.v[add.n++], ret_err) < 0)
                        goto out;
        }
        /* Entries from --input first: their indexes in messages are the
         * manifest's when there were none. */
        if (ws_manifest_check(&add, ret_err) < 0)
                goto out;
        free(m->v);
        *m = add;
        add = (struct ws_manifest){ 0 };
        r = 0;
out:
        if (add.v) {
                for (size_t k = m->n; k < add.n; k++) {
                        free(add.v[k].dest);
                        free(add.v[k].source);
                        free(add.v[k].content);
                }
                free(add.v);
        }
        json_decref(root);
        return r;
}

int ws_manifest_load(struct ws_manifest *m, const char *path, corral_error **ret_err)
{
        cleanup_close int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot read the manifest '%s'", path);
        if (!S_ISREG(st.st_mode))
                return corral_usage(ret_err, "the manifest '%s' is %s, not a regular file", path,
                                    ws_type_phrase(st.st_mode));
        if ((uint64_t)st.st_size > WS_MANIFEST_MAX_BYTES)
                return corral_usage(ret_err, "the manifest '%s' is too large (%jd bytes; at most %u)", path,
                                    (intmax_t)st.st_size, WS_MANIFEST_MAX_BYTES);
        struct capbuf b = { .cap = WS_MANIFEST_MAX_BYTES + 1 };
        char chunk[16384];
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        capbuf_release(&b);
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, e, "cannot read the manifest '%s'", path);
                }
                if (n == 0)
                        break;
                if (capbuf_append(&b, chunk, (size_t)n) != (size_t)n) {
                        capbuf_release(&b);
                        return corral_usage(ret_err, "the manifest '%s' is too large (at most %u bytes)", path,
                                            WS_MANIFEST_MAX_BYTES);
                }
        }
        size_t len = 0;
        cleanup_free char *text = capbuf_detach(&b, &len);
        if (text == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the manifest '%s'", path);
        /* Relative sources are the manifest's neighbours. */
        cleanup_free char *real = realpath(path, NULL);
        if (real == NULL)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot resolve '%s'", path);
        char *slash = strrchr(real, '/');
        if (slash == real)
                slash[1] = '\0';
        else
                *slash = '\0';
        if (ws_manifest_parse(m, text, len, real, ret_err) < 0)
                return corral_error_prefix(ret_err, "manifest '%s'", path);
        return 0;
}
