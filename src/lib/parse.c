/* parse.c: strict parsers for command-line and profile values.  They accept
 * what a person would write ("256M", "1.5G", "0.5", "30s") and reject the rest
 * with a message that says what was expected. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <corral/jail.h>

#include "util.h"

/* Parse "DIGITS[.DIGITS]" at the start of text; returns chars used, 0 if none. */
static size_t parse_decimal(const char *text, double *ret)
{
        size_t i = 0;
        while (isdigit((unsigned char)text[i]))
                i++;
        size_t int_digits = i;
        if (text[i] == '.') {
                i++;
                size_t frac_start = i;
                while (isdigit((unsigned char)text[i]))
                        i++;
                if (i == frac_start)
                        return 0;
        }
        if (int_digits == 0 && i == 0)
                return 0;
        if (i > 40)
                return 0;
        char tmp[48];
        memcpy(tmp, text, i);
        tmp[i] = '\0';
        errno = 0;
        *ret = strtod(tmp, NULL);
        return errno ? 0 : i;
}

int corral_parse_size(const char *text, uint64_t *ret_bytes, corral_error **ret_err)
{
        static const struct {
                const char *suffix;
                double mult;
        } units[] = {
                { "", 1.0 },           { "b", 1.0 },
                { "k", 1024.0 },       { "kb", 1024.0 },       { "kib", 1024.0 },
                { "m", 1048576.0 },    { "mb", 1048576.0 },    { "mib", 1048576.0 },
                { "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
                { "t", 1099511627776.0 }, { "tb", 1099511627776.0 }, { "tib", 1099511627776.0 },
        };
        double v;
        size_t n = text ? parse_decimal(text, &v) : 0;
        if (n == 0)
                return corral_usage(ret_err, "invalid size '%s': expected a positive number with an optional unit, "
                                             "e.g. 512M or 1G", text ? text : "");
        for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
                if (strcasecmp(text + n, units[i].suffix) != 0)
                        continue;
                /* Whole numbers exactly (a double holds only 53 bits). */
                if (strchr(text, '.') == NULL) {
                        errno = 0;
                        unsigned long long whole = strtoull(text, NULL, 10), mult = (unsigned long long)units[i].mult;
                        if (errno == 0 && whole > 0 && whole <= 9223372036854775807ull / mult) {
                                *ret_bytes = whole * mult;
                                return 0;
                        }
                }
                double bytes = v * units[i].mult;
                if (bytes < 1.0)
                        return corral_usage(ret_err, "invalid size '%s': must be at least 1 byte", text);
                if (bytes >= 9223372036854775807.0) /* sizes travel as JSON integers */
                        return corral_usage(ret_err, "invalid size '%s': too large", text);
                *ret_bytes = (uint64_t)bytes;
                return 0;
        }
        return corral_usage(ret_err, "invalid size '%s': unknown unit '%s' (use K, M, G or T)", text, text + n);
}

int corral_parse_seconds(const char *text, double *ret_seconds, corral_error **ret_err)
{
        double v;
        size_t n = text ? parse_decimal(text, &v) : 0;
        if (n == 0)
                return corral_usage(ret_err, "invalid duration '%s': expected seconds, e.g. 30 or 0.5",
                                    text ? text : "");
        const char *unit = text + n;
        if (strcmp(unit, "ms") == 0)
                v /= 1000.0;
        else if (strcmp(unit, "m") == 0 || strcmp(unit, "min") == 0)
                v *= 60.0;
        else if (strcmp(unit, "h") == 0)
                v *= 3600.0;
        else if (strcmp(unit, "d") == 0)
                v *= 86400.0;
        else if (strcmp(unit, "") != 0 && strcmp(unit, "s") != 0)
                return corral_usage(ret_err, "invalid duration '%s': unknown unit '%s' (use ms, s, m, h or d)", text,
                                    unit);
        if (!(v > 0.0) || !isfinite(v))
                return corral_usage(ret_err, "invalid duration '%s': must be greater than zero", text);
        if (v > 31536000.0)
                return corral_usage(ret_err, "invalid duration '%s': longer than a year", text);
        if (v < 0.001)
                return corral_usage(ret_err, "invalid duration '%s': shorter than a millisecond", text);
        *ret_seconds = v;
        return 0;
}

int corral_parse_count(const char *text, uint64_t *ret_count, corral_error **ret_err)
{
        if (text == NULL || !isdigit((unsigned char)text[0]))
                return corral_usage(ret_err, "invalid number '%s': expected a positive integer", text ? text : "");
        errno = 0;
        char *end = NULL;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0')
                return corral_usage(ret_err, "invalid number '%s': expected a positive integer", text);
        if (v == 0)
                return corral_usage(ret_err, "invalid number '%s': must be greater than zero", text);
        *ret_count = v;
        return 0;
}
