/* fuzz-parse.c: corral_parse_size, corral_parse_seconds and
 * corral_parse_count (src/lib/parse.c) on a NUL-terminated copy of the input:
 * the text of a command-line option or a profile string.
 *
 * Invariants: each returns 0 or -1.  On 0 the value is positive (sizes at
 * most INT64_MAX, as they travel as JSON integers; durations between a
 * millisecond and a year), no error is set, and the text has the documented
 * shape: DIGITS[.DIGITS] and a known unit, no signs, spaces or exponents.
 * On -1 a usage error with a non-empty message is set and the output is left
 * alone. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <corral/jail.h>

#include "fuzz.h"

/* Length of DIGITS[.DIGITS] (or .DIGITS) at the start of s; 0 if none. */
static size_t number_len(const char *s)
{
        size_t i = 0;
        while (isdigit((unsigned char)s[i]))
                i++;
        if (s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
                i++;
                while (isdigit((unsigned char)s[i]))
                        i++;
        }
        return i;
}

static bool one_of(const char *s, const char *const *list, size_t n, bool nocase)
{
        for (size_t i = 0; i < n; i++)
                if ((nocase ? strcasecmp(s, list[i]) : strcmp(s, list[i])) == 0)
                        return true;
        return false;
}

static void check_error(int r, corral_error *err, const char *what)
{
        FUZZ_ASSERT(r == -1, "%s returned %d", what, r);
        FUZZ_ASSERT(err != NULL && err->msg != NULL && err->msg[0] != '\0', "%s: no error message", what);
        FUZZ_ASSERT(err->kind == CORRAL_ERR_USAGE, "%s: error kind %d: %s", what, err->kind, err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        FUZZ_ASSERT(text != NULL);
        memcpy(text, data, size);
        text[size] = '\0';
        size_t num = number_len(text);

        static const char *const size_units[] = { "", "b", "k", "kb", "kib", "m", "mb", "mib",
                                                   "g", "gb", "gib", "t", "tb", "tib" };
        uint64_t bytes = 12345;
        corral_error *err = NULL;
        int r = corral_parse_size(text, &bytes, &err);
        if (r == 0) {
                FUZZ_ASSERT(err == NULL, "size: error set on success");
                FUZZ_ASSERT(bytes > 0 && bytes <= INT64_MAX, "size '%s' gave %llu", text,
                            (unsigned long long)bytes);
                FUZZ_ASSERT(num > 0 && one_of(text + num, size_units, sizeof(size_units) / sizeof(size_units[0]),
                                              true),
                            "size '%s' accepted", text);
        } else {
                check_error(r, err, "corral_parse_size");
                FUZZ_ASSERT(bytes == 12345, "size: output written on failure");
        }
        corral_error_clear(&err);

        static const char *const time_units[] = { "", "s", "ms", "m", "min" };
        double seconds = -1.0;
        r = corral_parse_seconds(text, &seconds, &err);
        if (r == 0) {
                FUZZ_ASSERT(err == NULL, "seconds: error set on success");
                FUZZ_ASSERT(isfinite(seconds) && seconds >= 0.001 && seconds <= 31536000.0, "'%s' gave %.17g s",
                            text, seconds);
                FUZZ_ASSERT(num > 0 && one_of(text + num, time_units, sizeof(time_units) / sizeof(time_units[0]),
                                              false),
                            "duration '%s' accepted", text);
        } else {
                check_error(r, err, "corral_parse_seconds");
                FUZZ_ASSERT(seconds == -1.0, "seconds: output written on failure");
        }
        corral_error_clear(&err);

        uint64_t count = 12345;
        r = corral_parse_count(text, &count, &err);
        if (r == 0) {
                FUZZ_ASSERT(err == NULL, "count: error set on success");
                FUZZ_ASSERT(count > 0, "count '%s' gave 0", text);
                FUZZ_ASSERT(text[0] != '\0' && strspn(text, "0123456789") == strlen(text), "count '%s' accepted", text);
                FUZZ_ASSERT(strtoull(text, NULL, 10) == count, "count '%s' gave %llu", text,
                            (unsigned long long)count);
        } else {
                check_error(r, err, "corral_parse_count");
                FUZZ_ASSERT(count == 12345, "count: output written on failure");
        }
        corral_error_clear(&err);

        /* NULL text is an error, not a crash. */
        FUZZ_ASSERT(corral_parse_size(NULL, &bytes, NULL) == -1);
        FUZZ_ASSERT(corral_parse_seconds(NULL, &seconds, NULL) == -1);
        FUZZ_ASSERT(corral_parse_count(NULL, &count, NULL) == -1);
        free(text);
        return 0;
}
