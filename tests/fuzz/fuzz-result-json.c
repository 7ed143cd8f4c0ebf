/* fuzz-result-json.c: corral_jail_result_to_json (src/lib/result.c) with
 * program output, reason and syscall name made of arbitrary bytes.
 *
 * Input: a 48-byte header that sets the scalar fields and says how to split
 * the rest, then the bytes of stderr, reason, syscall name and stdout (stdout
 * takes whatever is left, so most mutations land in it).  Shorter inputs are
 * zero-padded.  stdout and stderr are handed over in buffers of exactly their
 * length (no NUL after them), as the code must go by *_len.
 *
 * Invariants: the JSON is always produced (every measured double here is
 * finite, as real ones are), parses back with jansson rejecting duplicate
 * keys, and carries stdout, stderr, reason and syscall exactly as
 * utf8_sanitize() makes them, plus the scalar fields. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "jail-internal.h"

#define HEADER 48

struct reader {
        const uint8_t *p;
        size_t left;
};

static uint64_t take(struct reader *r, size_t n)
{
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) {
                v = (v << 8) | (r->left ? *r->p : 0);
                if (r->left) {
                        r->p++;
                        r->left--;
                }
        }
        return v;
}

/* A copy of n bytes in a buffer of exactly n (1 when n is 0). */
static char *copy_exact(const uint8_t *p, size_t n)
{
        char *c = malloc(n ? n : 1);
        FUZZ_ASSERT(c != NULL);
        memcpy(c, p, n);
        return c;
}

static char *copy_string(const uint8_t *p, size_t n)
{
        char *c = malloc(n + 1);
        FUZZ_ASSERT(c != NULL);
        memcpy(c, p, n);
        c[n] = '\0';
        return c;
}

/* The JSON string at key must be exactly utf8_sanitize(data, len). */
static void check_text(json_t *o, const char *key, const char *data, size_t len)
{
        json_t *v = json_object_get(o, key);
        FUZZ_ASSERT(json_is_string(v), "'%s' is not a string", key);
        size_t want_len = 0;
        char *want = data ? utf8_sanitize(data, len, &want_len) : strdup("");
        FUZZ_ASSERT(want != NULL);
        FUZZ_ASSERT(json_string_length(v) == want_len && memcmp(json_string_value(v), want, want_len) == 0,
                    "'%s' does not round-trip (%zu bytes, want %zu)", key, json_string_length(v), want_len);
        free(want);
}

static double ms_value(uint64_t raw)
{
        return (double)(raw & 0xffffffffu) / 64.0; /* 0 .. 67 million ms, finite */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct reader hdr = { data, size < HEADER ? size : HEADER };
        struct reader body = { data + hdr.left, size - hdr.left };

        corral_jail_result res;
        memset(&res, 0, sizeof(res));
        uint64_t flags = take(&hdr, 2);
        res.status = (enum corral_status)(take(&hdr, 1) % 5);
        res.limit = (enum corral_limit)(take(&hdr, 1) % 9);
        res.backend = (enum corral_limits_backend)(take(&hdr, 1) % 3);
        res.exit_code = (int)(uint32_t)take(&hdr, 4);
        res.signal = (int)(take(&hdr, 1) % 65);
        res.seccomp_syscall = (int)(uint32_t)take(&hdr, 2);
        res.stdout_truncated = flags & 1;
        res.stderr_truncated = flags & 2;
        res.stdout_total = take(&hdr, 8);
        res.stderr_total = take(&hdr, 3);
        res.memory_peak_bytes = take(&hdr, 8);
        res.wall_ms = ms_value(take(&hdr, 4));
        res.cpu_ms = ms_value(take(&hdr, 3));
        res.phases.prepare = ms_value(take(&hdr, 1));
        res.phases.clone = ms_value(take(&hdr, 1));
        res.phases.mounts = ms_value(take(&hdr, 1));
        res.phases.seccomp = ms_value(take(&hdr, 1));
        res.phases.exec = ms_value(take(&hdr, 1));
        res.phases.teardown = ms_value(take(&hdr, 1));
        size_t err_len = (size_t)take(&hdr, 2) % (body.left + 1);
        size_t reason_len = (size_t)take(&hdr, 1) % (body.left - err_len + 1);
        size_t sys_len = (size_t)take(&hdr, 1) % (body.left - err_len - reason_len + 1);
        size_t out_len = body.left - err_len - reason_len - sys_len;

        const uint8_t *p = body.p;
        if (!(flags & 4))
                res.stderr_buf = copy_exact(p, err_len);
        res.stderr_len = err_len;
        p += err_len;
        if (flags & 8)
                res.reason = copy_string(p, reason_len);
        p += reason_len;
        if (flags & 16)
                res.seccomp_syscall_name = copy_string(p, sys_len);
        p += sys_len;
        if (!(flags & 32))
                res.stdout_buf = copy_exact(p, out_len);
        res.stdout_len = out_len;

        char *s = corral_jail_result_to_json(&res);
        FUZZ_ASSERT(s != NULL, "corral_jail_result_to_json returned NULL");
        FUZZ_ASSERT(utf8_valid(s, strlen(s)), "the JSON text is not valid UTF-8");
        json_error_t jerr;
        json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        FUZZ_ASSERT(o != NULL, "json_loads: %s at %d:%d", jerr.text, jerr.line, jerr.column);
        FUZZ_ASSERT(json_is_object(o));

        check_text(o, "stdout", res.stdout_buf, res.stdout_len);
        check_text(o, "stderr", res.stderr_buf, res.stderr_len);
        if (res.reason)
                check_text(o, "reason", res.reason, strlen(res.reason));
        else
                FUZZ_ASSERT(json_is_null(json_object_get(o, "reason")));
        if (res.limit == CORRAL_LIMIT_SECCOMP && res.seccomp_syscall_name)
                check_text(o, "syscall", res.seccomp_syscall_name, strlen(res.seccomp_syscall_name));
        else
                FUZZ_ASSERT(json_object_get(o, "syscall") == NULL);
        FUZZ_ASSERT(json_object_get(o, "denied") == NULL); /* none denied: the object as before */

        FUZZ_ASSERT(json_integer_value(json_object_get(o, "schema")) == 1);
        FUZZ_ASSERT(strcmp(json_string_value(json_object_get(o, "status")), corral_status_to_string(res.status)) == 0);
        FUZZ_ASSERT(json_integer_value(json_object_get(o, "exit_code")) == res.exit_code);
        json_t *sig = json_object_get(o, "signal");
        FUZZ_ASSERT(res.signal ? json_integer_value(sig) == res.signal : json_is_null(sig));
        const char *limit = corral_limit_to_string(res.limit);
        json_t *lim = json_object_get(o, "limit");
        FUZZ_ASSERT(limit ? json_is_string(lim) && strcmp(json_string_value(lim), limit) == 0 : json_is_null(lim));
        FUZZ_ASSERT(json_is_true(json_object_get(o, "stdout_truncated")) == res.stdout_truncated);
        FUZZ_ASSERT(json_is_true(json_object_get(o, "stderr_truncated")) == res.stderr_truncated);
        FUZZ_ASSERT((uint64_t)json_integer_value(json_object_get(o, "stdout_bytes")) == res.stdout_total);
        FUZZ_ASSERT((uint64_t)json_integer_value(json_object_get(o, "stderr_bytes")) == res.stderr_total);
        FUZZ_ASSERT((uint64_t)json_integer_value(json_object_get(o, "memory_peak_bytes")) == res.memory_peak_bytes);
        FUZZ_ASSERT(fabs(json_number_value(json_object_get(o, "wall_ms")) - res.wall_ms) <= 0.0051);
        FUZZ_ASSERT(strcmp(json_string_value(json_object_get(o, "limits_backend")),
                           corral_limits_backend_to_string(res.backend)) == 0);
        json_t *phases = json_object_get(o, "phases");
        FUZZ_ASSERT(json_is_object(phases) && json_object_size(phases) == 6);

        json_decref(o);
        free(s);
        corral_jail_result_release(&res);
        return 0;
}
