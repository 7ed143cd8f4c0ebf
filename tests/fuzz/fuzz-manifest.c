/* fuzz-manifest.c: the manifest parser (src/workspace/manifest.c) on
 * arbitrary bytes, as a user (or a tool writing manifests for them) may
 * hand it over.  Nothing is staged: sources are never opened.
 *
 * Invariants: no crash or leak; a failed parse sets an error with a message
 * and leaves the manifest empty; a parsed manifest passes ws_manifest_check
 * (every destination relative, clean, not reserved, not overlapping another),
 * file and dir entries have an absolute source without NUL, inline entries
 * have content of the length they claim.  And the round trip: the manifest
 * printed back as JSON (content as base64) parses again to the same entries. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/workspace/workspace.h"
#include "fuzz.h"
#include "util.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *encode(const char *s, size_t n)
{
        char *out = malloc(n / 3 * 4 + 5), *p = out;
        FUZZ_ASSERT(out != NULL);
        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned char)s[i] << 16;
                if (i + 1 < n)
                        v |= (unsigned char)s[i + 1] << 8;
                if (i + 2 < n)
                        v |= (unsigned char)s[i + 2];
                *p++ = b64[(v >> 18) & 63];
                *p++ = b64[(v >> 12) & 63];
                *p++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
                *p++ = i + 2 < n ? b64[v & 63] : '=';
        }
        *p = '\0';
        return out;
}

static char *print(const struct ws_manifest *m)
{
        json_t *entries = json_array();
        for (size_t i = 0; i < m->n; i++) {
                const struct ws_manifest_entry *e = &m->v[i];
                json_t *o = json_pack("{s:s, s:b, s:b}", "dest", e->dest, "writable", e->writable, "ephemeral",
                                      e->ephemeral);
                FUZZ_ASSERT(o != NULL, "dest '%s' does not print", e->dest);
                if (e->kind == WS_SOURCE_CONTENT) {
                        char *enc = encode(e->content, e->content_len);
                        json_object_set_new(o, "base64", json_string(enc));
                        free(enc);
                } else {
                        json_object_set_new(o, e->kind == WS_SOURCE_FILE ? "file" : "dir", json_string(e->source));
                }
                json_array_append_new(entries, o);
        }
        json_t *root = json_pack("{s:o}", "entries", entries);
        char *text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        FUZZ_ASSERT(text != NULL);
        return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ws_manifest m = { 0 };
        corral_error *err = NULL;
        int r = ws_manifest_parse(&m, (const char *)data, size, "/base", &err);
        FUZZ_ASSERT(r == 0 || r == -1, "parse returned %d", r);
        if (r < 0) {
                FUZZ_ASSERT(err && err->msg && err->msg[0], "no error message");
                FUZZ_ASSERT(m.n == 0 && m.v == NULL, "entries kept after an error");
                corral_error_free(err);
                return 0;
        }
        FUZZ_ASSERT(err == NULL, "error set on success: %s", err->msg);
        FUZZ_ASSERT(ws_manifest_check(&m, &err) == 0, "parsed but does not check: %s", err ? err->msg : "?");
        for (size_t i = 0; i < m.n; i++) {
                const struct ws_manifest_entry *e = &m.v[i];
                FUZZ_ASSERT(e->dest && e->dest[0] && e->dest[0] != '/', "entries[%zu].dest", i);
                if (e->kind == WS_SOURCE_CONTENT)
                        FUZZ_ASSERT(e->content && e->source == NULL && e->content[e->content_len] == '\0');
                else
                        FUZZ_ASSERT(e->source && e->source[0] == '/' && e->content == NULL);
        }
        /* Printed back (if it is UTF-8: paths may not be), it parses the same. */
        bool printable = true;
        for (size_t i = 0; i < m.n; i++)
                printable &= utf8_valid(m.v[i].dest, strlen(m.v[i].dest)) &&
                             (m.v[i].source == NULL || utf8_valid(m.v[i].source, strlen(m.v[i].source)));
        if (printable) {
                char *text = print(&m);
                struct ws_manifest again = { 0 };
                FUZZ_ASSERT(ws_manifest_parse(&again, text, strlen(text), "/other", &err) == 0,
                            "printed manifest does not parse: %s\n%s", err ? err->msg : "?", text);
                FUZZ_ASSERT(again.n == m.n);
                for (size_t i = 0; i < m.n; i++) {
                        const struct ws_manifest_entry *a = &m.v[i], *b = &again.v[i];
                        FUZZ_ASSERT(strcmp(a->dest, b->dest) == 0 && a->kind == b->kind &&
                                            a->writable == b->writable && a->ephemeral == b->ephemeral,
                                    "entries[%zu] differs after the round trip", i);
                        FUZZ_ASSERT(a->source == NULL || strcmp(a->source, b->source) == 0);
                        FUZZ_ASSERT(a->content_len == b->content_len &&
                                    (a->content_len == 0 || memcmp(a->content, b->content, a->content_len) == 0));
                }
                ws_manifest_release(&again);
                free(text);
        }
        ws_manifest_release(&m);
        return 0;
}
