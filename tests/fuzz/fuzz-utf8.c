/* fuzz-utf8.c: utf8_valid() and utf8_sanitize() (src/lib/util.c) on
 * arbitrary bytes, as a jailed program may write them.
 *
 * Invariants: sanitize's output is valid UTF-8 with no NUL and is
 * NUL-terminated; valid input comes back unchanged; sanitizing twice changes
 * nothing more.  Both functions are also checked byte for byte against an
 * independent reference written from the Unicode standard's table of
 * well-formed sequences (Table 3-7), with the library's two policies: NUL
 * counts as invalid, and every byte of an ill-formed sequence becomes one
 * U+FFFD (then decoding resumes at the next byte). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util.h"

/* Length (1-4) of the well-formed sequence at p, or 0: Table 3-7. */
static size_t ref_seq(const uint8_t *p, size_t left)
{
        static const struct {
                uint8_t lead_lo, lead_hi, len;
                uint8_t second_lo, second_hi; /* later bytes are 80..BF */
        } rows[] = {
                { 0x01, 0x7f, 1, 0, 0 },       { 0xc2, 0xdf, 2, 0x80, 0xbf }, { 0xe0, 0xe0, 3, 0xa0, 0xbf },
                { 0xe1, 0xec, 3, 0x80, 0xbf }, { 0xed, 0xed, 3, 0x80, 0x9f }, { 0xee, 0xef, 3, 0x80, 0xbf },
                { 0xf0, 0xf0, 4, 0x90, 0xbf }, { 0xf1, 0xf3, 4, 0x80, 0xbf }, { 0xf4, 0xf4, 4, 0x80, 0x8f },
        };
        for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
                if (p[0] < rows[r].lead_lo || p[0] > rows[r].lead_hi)
                        continue;
                size_t n = rows[r].len;
                if (left < n)
                        return 0;
                if (n > 1 && (p[1] < rows[r].second_lo || p[1] > rows[r].second_hi))
                        return 0;
                for (size_t i = 2; i < n; i++)
                        if (p[i] < 0x80 || p[i] > 0xbf)
                                return 0;
                return n;
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *in = (const char *)data;

        /* The reference: validity, and the sanitized text it implies. */
        bool ref_valid = true;
        char *ref = malloc(size * 3 + 1);
        FUZZ_ASSERT(ref != NULL);
        size_t ref_len = 0;
        for (size_t i = 0; i < size;) {
                size_t n = ref_seq(data + i, size - i);
                if (n == 0) {
                        ref_valid = false;
                        memcpy(ref + ref_len, "\xef\xbf\xbd", 3);
                        ref_len += 3;
                        i++;
                } else {
                        memcpy(ref + ref_len, data + i, n);
                        ref_len += n;
                        i += n;
                }
        }

        bool valid = utf8_valid(in, size);
        FUZZ_ASSERT(valid == ref_valid, "utf8_valid says %d for %zu bytes", valid, size);

        size_t len = (size_t)-1;
        char *out = utf8_sanitize(in, size, &len);
        FUZZ_ASSERT(out != NULL);
        FUZZ_ASSERT(len <= size * 3, "%zu bytes from %zu", len, size);
        FUZZ_ASSERT(out[len] == '\0', "output not NUL-terminated");
        FUZZ_ASSERT(memchr(out, '\0', len) == NULL, "NUL in output");
        FUZZ_ASSERT(utf8_valid(out, len), "output is not valid UTF-8");
        if (valid)
                FUZZ_ASSERT(len == size && memcmp(out, in, size) == 0, "valid input changed");
        FUZZ_ASSERT(len == ref_len && memcmp(out, ref, len) == 0, "output differs from the reference");

        /* Idempotent, and ret_len may be NULL. */
        size_t len2 = 0;
        char *again = utf8_sanitize(out, len, &len2);
        FUZZ_ASSERT(again != NULL && len2 == len && memcmp(again, out, len) == 0, "sanitizing twice changed it");
        char *no_len = utf8_sanitize(in, size, NULL);
        FUZZ_ASSERT(no_len != NULL && memcmp(no_len, out, len + 1) == 0);

        free(no_len);
        free(again);
        free(out);
        free(ref);
        return 0;
}
