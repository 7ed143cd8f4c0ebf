/* test-parse.c: corral_parse_size, corral_parse_seconds and
 * corral_parse_count (src/lib/parse.c).
 *
 * Good values must give the exact number; bad ones must return -1, leave the
 * output untouched and fill a usage error whose message quotes the input, so
 * a person can see which of several options was wrong. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corral/jail.h>

#include "harness.h"
#include "util.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
#define TIB (1024ull * GIB)

/* Inputs every parser must refuse. */
static const char *const bad_common[] = {
        "12XB", "-1", "0", "", "abc", "1e3", "1..2", "inf", "nan", "99999999999T", " 5", "5 ",
        "+5", "0x10", "1,5", "5\n", "1.", ".", "NaN", "Infinity", "-0", "5 M",
};

/* Print s on a TAP comment line, control characters escaped. */
static void print_escaped(const char *s)
{
        for (; *s; s++) {
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        printf("\\x%02x", (unsigned char)*s);
                else
                        putchar(*s);
        }
}

/* The message must name the input between quotes: "... '<input>' ...". */
static void check_usage_error(const char *what, const char *input, int r, corral_error *err)
{
        printf("# %s('", what);
        print_escaped(input);
        printf("') is refused\n");
        CHECK_INT(r, -1);
        CHECK(err != NULL);
        if (err == NULL)
                return;
        CHECK_INT(err->kind, CORRAL_ERR_USAGE);
        CHECK_INT(err->errnum, 0);
        char quoted[128];
        snprintf(quoted, sizeof(quoted), "'%s'", input);
        CHECK(err->msg != NULL && strstr(err->msg, quoted) != NULL);
        if (err->msg && !strstr(err->msg, quoted)) {
                printf("#   message '");
                print_escaped(err->msg);
                printf("' does not name the input\n");
        }
}

static void size_ok(const char *input, uint64_t want)
{
        uint64_t v = 0xdeadbeef;
        corral_error *err = NULL;
        printf("# size('%s') == %llu\n", input, (unsigned long long)want);
        CHECK_INT(corral_parse_size(input, &v, &err), 0);
        CHECK(err == NULL);
        CHECK(v == want);
        if (v != want)
                printf("#   got %llu\n", (unsigned long long)v);
        corral_error_free(err);
}

static void size_bad(const char *input)
{
        uint64_t v = 0xdeadbeef;
        corral_error *err = NULL;
        int r = corral_parse_size(input, &v, &err);
        check_usage_error("size", input, r, err);
        CHECK(v == 0xdeadbeef);
        corral_error_free(err);
}

static void seconds_ok(const char *input, double want)
{
        double v = -42.0;
        corral_error *err = NULL;
        printf("# seconds('%s') == %g\n", input, want);
        CHECK_INT(corral_parse_seconds(input, &v, &err), 0);
        CHECK(err == NULL);
        CHECK(v == want);
        if (v != want)
                printf("#   got %.17g\n", v);
        corral_error_free(err);
}

static void seconds_bad(const char *input)
{
        double v = -42.0;
        corral_error *err = NULL;
        int r = corral_parse_seconds(input, &v, &err);
        check_usage_error("seconds", input, r, err);
        CHECK(v == -42.0);
        corral_error_free(err);
}

static void count_ok(const char *input, uint64_t want)
{
        uint64_t v = 0xdeadbeef;
        corral_error *err = NULL;
        printf("# count('%s') == %llu\n", input, (unsigned long long)want);
        CHECK_INT(corral_parse_count(input, &v, &err), 0);
        CHECK(err == NULL);
        CHECK(v == want);
        corral_error_free(err);
}

static void count_bad(const char *input)
{
        uint64_t v = 0xdeadbeef;
        corral_error *err = NULL;
        int r = corral_parse_count(input, &v, &err);
        check_usage_error("count", input, r, err);
        CHECK(v == 0xdeadbeef);
        corral_error_free(err);
}

TEST(size_good)
{
        size_ok("512", 512);
        size_ok("512K", 512 * KIB);
        size_ok("256M", 256 * MIB);
        size_ok("1G", GIB);
        size_ok("1.5G", 3 * GIB / 2);
        size_ok("2GiB", 2 * GIB);
        size_ok("10mb", 10 * MIB);
        size_ok("10MB", 10 * MIB);
        size_ok("10m", 10 * MIB);
        size_ok("64k", 64 * KIB);
        size_ok("64KiB", 64 * KIB);
        size_ok("1b", 1);
        size_ok("30", 30);
        size_ok("1", 1);
        size_ok("0.5K", 512);
        size_ok("0.25M", 256 * KIB);
        size_ok("1.1G", 1181116006); /* 1.1 * 2^30 = 1181116006.4, truncated */
        size_ok("1T", TIB);
        size_ok("007M", 7 * MIB);
        /* The largest T value below 2^64. */
        size_ok("8388607T", 8388607ull * TIB);  /* the largest: sizes travel as JSON integers */
}

TEST(size_bad)
{
        for (size_t i = 0; i < ARRAY_SIZE(bad_common); i++)
                size_bad(bad_common[i]);
        size_bad("0.5");        /* half a byte */
        size_bad("0K");
        size_bad("8388608T");   /* exactly 2^63 */
        size_bad("16777216T");  /* exactly 2^64 */
        size_bad("18446744073709551616");
        size_bad("1KK");
        size_bad("1 K");
        size_bad("1Kx");
        size_bad("1ms");
        size_bad("12345678901234567890123456789012345678901234567890"); /* too many digits */

        /* NULL text and a NULL error pointer are both tolerated. */
        uint64_t v = 7;
        corral_error *err = NULL;
        CHECK_INT(corral_parse_size(NULL, &v, &err), -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
        CHECK_INT(v, 7);
        corral_error_free(err);
        CHECK_INT(corral_parse_size("12XB", &v, NULL), -1);
        CHECK_INT(v, 7);
}

TEST(size_error_replaces_previous)
{
        /* A stale error in *ret_err is freed, not leaked (ASan checks). */
        uint64_t v;
        corral_error *err = NULL;
        CHECK_INT(corral_parse_size("x", &v, &err), -1);
        CHECK_INT(corral_parse_size("y", &v, &err), -1);
        CHECK(err != NULL && strstr(err->msg, "'y'") != NULL);
        corral_error_free(err);
}

TEST(seconds_good)
{
        seconds_ok("30", 30.0);
        seconds_ok("0.5", 0.5);
        seconds_ok("250ms", 0.25);
        seconds_ok("2m", 120.0);
        seconds_ok("2min", 120.0);
        seconds_ok("30s", 30.0);
        seconds_ok("1.5", 1.5);
        seconds_ok("1ms", 0.001);
        seconds_ok("0.001", 0.001);
        seconds_ok("31536000", 31536000.0); /* a year exactly */
        seconds_ok("525600m", 31536000.0);
        seconds_ok("5h", 18000.0);
        seconds_ok("1.5h", 5400.0);
        seconds_ok("7d", 604800.0);
        seconds_ok("365d", 31536000.0);
}

TEST(seconds_bad)
{
        for (size_t i = 0; i < ARRAY_SIZE(bad_common); i++)
                seconds_bad(bad_common[i]);
        seconds_bad("0.0001");     /* shorter than a millisecond */
        seconds_bad("0.5ms");
        seconds_bad("31536001");   /* longer than a year */
        seconds_bad("99999999999");
        seconds_bad("366d");       /* longer than a year */
        seconds_bad("5H");
        seconds_bad("5hours");
        seconds_bad("5S");
        seconds_bad("5 s");
        seconds_bad("1M");
        seconds_bad("0s");
        seconds_bad("0ms");

        double v = 3.0;
        corral_error *err = NULL;
        CHECK_INT(corral_parse_seconds(NULL, &v, &err), -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
        CHECK(v == 3.0);
        corral_error_free(err);
        CHECK_INT(corral_parse_seconds("abc", &v, NULL), -1);
}

TEST(count_good)
{
        count_ok("30", 30);
        count_ok("512", 512);
        count_ok("1", 1);
        count_ok("007", 7);
        count_ok("4194304", 4194304);
        count_ok("18446744073709551615", UINT64_MAX);
}

TEST(count_bad)
{
        for (size_t i = 0; i < ARRAY_SIZE(bad_common); i++)
                count_bad(bad_common[i]);
        count_bad("0.5");
        count_bad("1.0");
        count_bad("512K");
        count_bad("18446744073709551616"); /* 2^64: overflow */
        count_bad("99999999999999999999999");
        count_bad("00");

        uint64_t v = 9;
        corral_error *err = NULL;
        CHECK_INT(corral_parse_count(NULL, &v, &err), -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
        CHECK_INT(v, 9);
        corral_error_free(err);
        CHECK_INT(corral_parse_count("-1", &v, NULL), -1);
}

int main(void)
{
        RUN(size_good);
        RUN(size_bad);
        RUN(size_error_replaces_previous);
        RUN(seconds_good);
        RUN(seconds_bad);
        RUN(count_good);
        RUN(count_bad);
        return DONE();
}
