/* redact.c: secrets replaced by "[REDACTED]" in text and JSON (see redact.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "redact.h"

#define REDACTED "[REDACTED]"

static int secret_cmp(const void *a, const void *b)
{
        size_t la = strlen(*(const char *const *)a), lb = strlen(*(const char *const *)b);
        return la < lb ? 1 : la > lb ? -1 : strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fill set from a NULL-terminated list; the strings stay borrowed.  Returns
 * -1 on allocation failure (the set is then empty). */
int secret_set_init(struct secret_set *set, const char *const *secrets)
{
        memset(set, 0, sizeof(*set));
        size_t n = 0;
        for (size_t i = 0; secrets && secrets[i]; i++)
                n++;
        if (n == 0)
                return 0;
        set->s = calloc(n, sizeof(*set->s));
        set->len = calloc(n, sizeof(*set->len));
        if (set->s == NULL || set->len == NULL) {
                free(set->s);
                free(set->len);
                memset(set, 0, sizeof(*set));
                return -1;
        }
        for (size_t i = 0; i < n; i++)
                if (strlen(secrets[i]) >= REDACT_MIN_SECRET)
                        set->s[set->n++] = secrets[i];
        qsort(set->s, set->n, sizeof(*set->s), secret_cmp);
        size_t k = 0;
        for (size_t i = 0; i < set->n; i++) {
                if (k > 0 && strcmp(set->s[k - 1], set->s[i]) == 0)
                        continue;
                set->s[k] = set->s[i];
                set->len[k] = strlen(set->s[i]);
                k++;
        }
        set->n = k;
        return 0;
}

void secret_set_release(struct secret_set *set)
{
        free(set->s);
        free(set->len);
        memset(set, 0, sizeof(*set));
}

/* Redact text[0..len): every byte covered by an occurrence of any secret is
 * marked first, then each maximal run of marked bytes becomes one
 * "[REDACTED]".  Marking the union of all occurrences means overlapping
 * secrets ("xxabc" and "abcdef" in "xxabcdef") leave nothing of either
 * behind, and a secret containing another is replaced whole.  Returns NULL
 * when nothing matched (or on allocation failure: *ret_oom set); otherwise a
 * malloc'd NUL-terminated string and its length. */
static char *redact_bytes(const char *text, size_t len, const struct secret_set *set, size_t *ret_len,
                          bool *ret_oom)
{
        *ret_oom = false;
        unsigned char *mask = NULL;
        for (size_t i = 0; i < set->n; i++) {
                const char *p = text, *end = text + len;
                while ((size_t)(end - p) >= set->len[i]) {
                        const char *hit = memmem(p, (size_t)(end - p), set->s[i], set->len[i]);
                        if (hit == NULL)
                                break;
                        if (mask == NULL) {
                                mask = calloc(len, 1);
                                if (mask == NULL) {
                                        *ret_oom = true;
                                        return NULL;
                                }
                        }
                        memset(mask + (hit - text), 1, set->len[i]);
                        p = hit + 1; /* overlapping occurrences of one secret too */
                }
        }
        if (mask == NULL)
                return NULL;
        /* The result is never longer than len + (runs * strlen(REDACTED)) <= len * (1 + 10/4). */
        size_t cap = len + (len / REDACT_MIN_SECRET + 1) * (sizeof(REDACTED) - 1) + 1;
        char *out = malloc(cap);
        if (out == NULL) {
                free(mask);
                *ret_oom = true;
                return NULL;
        }
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                if (!mask[i]) {
                        out[o++] = text[i++];
                        continue;
                }
                memcpy(out + o, REDACTED, sizeof(REDACTED) - 1);
                o += sizeof(REDACTED) - 1;
                while (i < len && mask[i])
                        i++;
        }
        out[o] = '\0';
        free(mask);
        *ret_len = o;
        return out;
}

/* A secret that is not valid UTF-8 on its own could, in theory, match part
 * of a multi-byte character; jansson strings must stay valid UTF-8. */
static int string_set_redacted(json_t *s, char *text, size_t len)
{
        if (utf8_valid(text, len))
                return json_string_setn(s, text, len);
        cleanup_free char *clean = utf8_sanitize(text, len, &len);
        return clean ? json_string_setn(s, clean, len) : -1;
}

/* Rebuild an object whose keys need redaction, in order.  Two keys that
 * become equal get " (2)", " (3)"... so no value is lost.  Out of memory,
 * values are dropped rather than a secret kept. */
static void redact_object_keys(json_t *obj, const struct secret_set *set)
{
        size_t n = json_object_size(obj);
        bool any = false;
        const char *key;
        json_t *v;
        json_object_foreach (obj, key, v) {
                bool oom;
                size_t l;
                char *r = redact_bytes(key, strlen(key), set, &l, &oom);
                if (r || oom) {
                        any = true;
                        free(r);
                        break;
                }
        }
        if (!any)
                return;
        char **keys = calloc(n, sizeof(*keys));
        json_t **vals = calloc(n, sizeof(*vals));
        if (keys == NULL || vals == NULL) {
                free(keys);
                free(vals);
                json_object_clear(obj); /* out of memory: drop the object rather than let a secret through */
                return;
        }
        size_t i = 0;
        json_object_foreach (obj, key, v) {
                bool oom;
                size_t l;
                char *r = redact_bytes(key, strlen(key), set, &l, &oom);
                keys[i] = r ? r : strdup(oom ? REDACTED : key); /* a NULL key drops its value */
                vals[i] = json_incref(v);
                i++;
        }
        json_object_clear(obj);
        for (i = 0; i < n; i++) {
                if (keys[i] != NULL) {
                        const char *k = keys[i];
                        char *alt = NULL;
                        for (unsigned d = 2; json_object_get(obj, k) != NULL && d < 1000000; d++) {
                                free(alt);
                                alt = NULL;
                                if (asprintf(&alt, "%s (%u)", keys[i], d) < 0)
                                        break;
                                k = alt;
                        }
                        if (k != NULL)
                                json_object_set(obj, k, vals[i]);
                        free(alt);
                }
                json_decref(vals[i]);
                free(keys[i]);
        }
        free(keys);
        free(vals);
}

void redact_json_set(json_t *value, const struct secret_set *set)
{
        if (value == NULL || set->n == 0)
                return;
        switch (json_typeof(value)) {
        case JSON_STRING: {
                bool oom;
                size_t l;
                char *r = redact_bytes(json_string_value(value), json_string_length(value), set, &l, &oom);
                if (r != NULL) {
                        if (string_set_redacted(value, r, l) < 0)
                                json_string_set(value, REDACTED);
                        free(r);
                } else if (oom) {
                        json_string_set(value, REDACTED); /* never let a secret through for lack of memory */
                }
                return;
        }
        case JSON_ARRAY:
                for (size_t i = 0; i < json_array_size(value); i++)
                        redact_json_set(json_array_get(value, i), set);
                return;
        case JSON_OBJECT: {
                redact_object_keys(value, set);
                const char *key;
                json_t *v;
                json_object_foreach (value, key, v)
                        redact_json_set(v, set);
                return;
        }
        default:
                return;
        }
}

void redact_json(json_t *value, const char *const *secrets)
{
        struct secret_set set;
        if (secret_set_init(&set, secrets) < 0) {
                /* Out of memory: nothing of value may be trusted to be clean. */
                if (json_is_string(value))
                        json_string_set(value, REDACTED);
                else if (json_is_array(value))
                        json_array_clear(value);
                else if (json_is_object(value))
                        json_object_clear(value);
                return;
        }
        redact_json_set(value, &set);
        secret_set_release(&set);
}

char *redact_text(const char *text, const char *const *secrets)
{
        if (text == NULL)
                return NULL;
        struct secret_set set;
        if (secret_set_init(&set, secrets) < 0)
                return NULL;
        bool oom;
        size_t l;
        char *r = redact_bytes(text, strlen(text), &set, &l, &oom);
        secret_set_release(&set);
        if (r == NULL && !oom)
                r = strdup(text);
        return r;
}
