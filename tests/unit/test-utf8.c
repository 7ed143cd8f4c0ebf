/* test-utf8.c: utf8_valid, utf8_sanitize and the capped buffer
 * (src/lib/util.c).
 *
 * Program output reaches JSON through utf8_sanitize, so whatever bytes go in,
 * valid UTF-8 without NUL must come out, and valid text must pass unchanged.
 * capbuf holds that output under output_limit. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#define FFFD "\xef\xbf\xbd"

struct vcase {
        const char *bytes;
        size_t len;
        bool valid;
        const char *clean; /* utf8_sanitize's output */
        size_t clean_len;
};
#define V(b, ok, c) { b, sizeof(b) - 1, ok, c, sizeof(c) - 1 }

static const struct vcase cases[] = {
        V("", true, ""),
        V("hello, world\n", true, "hello, world\n"),
        V("\x7f", true, "\x7f"),
        /* valid multi-byte, at each length and boundary */
        V("\xc2\x80", true, "\xc2\x80"),                 /* U+0080 */
        V("caf\xc3\xa9", true, "caf\xc3\xa9"),           /* é */
        V("\xdf\xbf", true, "\xdf\xbf"),                 /* U+07FF */
        V("\xe0\xa0\x80", true, "\xe0\xa0\x80"),         /* U+0800 */
        V("\xe2\x82\xac", true, "\xe2\x82\xac"),         /* € */
        V("\xed\x9f\xbf", true, "\xed\x9f\xbf"),         /* U+D7FF */
        V("\xee\x80\x80", true, "\xee\x80\x80"),         /* U+E000 */
        V("\xef\xbf\xbd", true, "\xef\xbf\xbd"),         /* U+FFFD itself */
        V("\xef\xbf\xbf", true, "\xef\xbf\xbf"),         /* U+FFFF */
        V("\xf0\x90\x80\x80", true, "\xf0\x90\x80\x80"), /* U+10000 */
        V("\xf0\x9f\x98\x80", true, "\xf0\x9f\x98\x80"), /* 😀 */
        V("\xf4\x8f\xbf\xbf", true, "\xf4\x8f\xbf\xbf"), /* U+10FFFF */
        /* NUL is valid UTF-8 but not wanted in output: it becomes U+FFFD */
        V("\0", false, FFFD),
        V("a\0b", false, "a" FFFD "b"),
        /* overlongs */
        V("\xc0\x80", false, FFFD FFFD),
        V("\xc0\xaf", false, FFFD FFFD),
        V("\xc1\xbf", false, FFFD FFFD),
        V("\xe0\x80\x80", false, FFFD FFFD FFFD),
        V("\xe0\x9f\xbf", false, FFFD FFFD FFFD),
        V("\xf0\x80\x80\x80", false, FFFD FFFD FFFD FFFD),
        V("\xf0\x8f\xbf\xbf", false, FFFD FFFD FFFD FFFD),
        /* surrogates */
        V("\xed\xa0\x80", false, FFFD FFFD FFFD),
        V("\xed\xbf\xbf", false, FFFD FFFD FFFD),
        V("\xed\xa0\xbd\xed\xb8\x80", false, FFFD FFFD FFFD FFFD FFFD FFFD), /* CESU-8 pair */
        /* beyond U+10FFFF and bytes that never start a sequence */
        V("\xf4\x90\x80\x80", false, FFFD FFFD FFFD FFFD),
        V("\xf5\x80\x80\x80", false, FFFD FFFD FFFD FFFD),
        V("\xf7\xbf\xbf\xbf", false, FFFD FFFD FFFD FFFD),
        V("\xf8\x88\x80\x80\x80", false, FFFD FFFD FFFD FFFD FFFD),
        V("\xfc\x84\x80\x80\x80\x80", false, FFFD FFFD FFFD FFFD FFFD FFFD),
        V("\xfe", false, FFFD),
        V("\xff", false, FFFD),
        /* stray continuation bytes */
        V("\x80", false, FFFD),
        V("\xbf", false, FFFD),
        V("a\x80\x80z", false, "a" FFFD FFFD "z"),
        /* truncated sequences, at the end and before another character */
        V("\xc3", false, FFFD),
        V("\xe2\x82", false, FFFD FFFD),
        V("\xf0\x9f\x98", false, FFFD FFFD FFFD),
        V("\xc3" "a", false, FFFD "a"),
        V("\xe2\x82" "a", false, FFFD FFFD "a"),
        V("\xf0\x9f\x98" "\xc3\xa9", false, FFFD FFFD FFFD "\xc3\xa9"),
        /* a valid character right after an invalid byte is kept */
        V("\xff\xe2\x82\xac", false, FFFD "\xe2\x82\xac"),
        V("ok \xc3\xa9 \xff ok", false, "ok \xc3\xa9 " FFFD " ok"),
};

static void print_hex(const char *prefix, const char *s, size_t n)
{
        printf("%s", prefix);
        for (size_t i = 0; i < n; i++)
                printf("%02x", (unsigned char)s[i]);
        printf("\n");
}

TEST(valid_and_sanitize_cases)
{
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                const struct vcase *c = &cases[i];
                print_hex("# case ", c->bytes, c->len);
                CHECK(utf8_valid(c->bytes, c->len) == c->valid);
                size_t n = 12345;
                char *out = utf8_sanitize(c->bytes, c->len, &n);
                CHECK(out != NULL);
                if (out == NULL)
                        continue;
                CHECK_INT(n, c->clean_len);
                CHECK(n == c->clean_len && memcmp(out, c->clean, n) == 0);
                if (n != c->clean_len || memcmp(out, c->clean, n) != 0)
                        print_hex("#   got ", out, n);
                CHECK(out[n] == '\0');
                CHECK(utf8_valid(out, n));
                CHECK(memchr(out, '\0', n) == NULL);
                free(out);
        }
}

TEST(sanitize_edges)
{
        /* ret_len may be NULL. */
        char *out = utf8_sanitize("a\xff", 2, NULL);
        CHECK_STR(out, "a" FFFD);
        free(out);
        /* Length is honoured: bytes past len are not read. */
        out = utf8_sanitize("abc\xff", 3, NULL);
        CHECK_STR(out, "abc");
        free(out);
        /* A sequence cut by len is invalid even if the bytes after it would
         * complete it. */
        size_t n;
        out = utf8_sanitize("\xe2\x82\xac", 2, &n);
        CHECK(out != NULL && n == 6 && memcmp(out, FFFD FFFD, 6) == 0);
        free(out);
        CHECK(!utf8_valid("\xe2\x82\xac", 2));
        CHECK(utf8_valid("\xe2\x82\xac", 3));
        CHECK(utf8_valid("abc\xff", 3));

        /* The worst case: every byte becomes three. */
        char all_bad[4096];
        memset(all_bad, 0xff, sizeof(all_bad));
        out = utf8_sanitize(all_bad, sizeof(all_bad), &n);
        CHECK(out != NULL);
        CHECK_INT(n, 3 * sizeof(all_bad));
        CHECK(out != NULL && utf8_valid(out, n));
        free(out);

        /* An impossible length fails cleanly instead of overflowing. */
        CHECK(utf8_sanitize("x", SIZE_MAX, &n) == NULL);
        CHECK(utf8_sanitize("x", SIZE_MAX / 3 + 1, &n) == NULL);
}

/* xorshift: reproducible pseudo-random bytes. */
static uint32_t rng_state = 0x12345678;
static uint32_t rng(void)
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 17;
        rng_state ^= rng_state << 5;
        return rng_state;
}

TEST(sanitize_random)
{
        /* Whatever goes in, the output is valid, NUL-free, at most 3x as long,
         * and valid input comes back byte for byte. */
        int bad = 0, changed_valid = 0, valid_inputs = 0;
        char buf[64];
        for (int iter = 0; iter < 200000; iter++) {
                size_t len = rng() % sizeof(buf);
                bool high = rng() & 1;
                for (size_t i = 0; i < len; i++) {
                        uint32_t r = rng();
                        /* Bias towards bytes that form or almost form sequences. */
                        buf[i] = (char)(high ? 0x80 + r % 0x78 : r % 256);
                }
                size_t n;
                char *out = utf8_sanitize(buf, len, &n);
                if (out == NULL || n > 3 * len || !utf8_valid(out, n) || memchr(out, '\0', n) || out[n] != '\0') {
                        bad++;
                } else if (utf8_valid(buf, len)) {
                        valid_inputs++;
                        if (n != len || memcmp(out, buf, len) != 0)
                                changed_valid++;
                }
                free(out);
        }
        printf("# %d valid random inputs\n", valid_inputs);
        CHECK_INT(bad, 0);
        CHECK_INT(changed_valid, 0);
        CHECK(valid_inputs > 0);
}

TEST(valid_exhaustive_two_and_three_bytes)
{
        /* Compare utf8_valid with a reference decoder over every 1-, 2- and
         * 3-byte string (16.8 million), and 4-byte strings with the lead
         * byte F0..F4 and any continuation. */
        int mismatches = 0;
        unsigned char b[4];
        for (uint32_t v = 0; v < (1u << 24); v++) {
                b[0] = (unsigned char)(v >> 16);
                b[1] = (unsigned char)(v >> 8);
                b[2] = (unsigned char)v;
                /* reference: a single code point of 3 bytes */
                bool ref = false;
                if (b[0] >= 0xe0 && b[0] <= 0xef && (b[1] & 0xc0) == 0x80 && (b[2] & 0xc0) == 0x80) {
                        uint32_t cp = ((uint32_t)(b[0] & 0x0f) << 12) | ((uint32_t)(b[1] & 0x3f) << 6) | (b[2] & 0x3f);
                        ref = cp >= 0x800 && !(cp >= 0xd800 && cp <= 0xdfff);
                } else {
                        /* otherwise: valid iff each part is (1+2, 2+1, 1+1+1) */
                        bool a1 = b[0] >= 1 && b[0] < 0x80, a2 = b[1] >= 1 && b[1] < 0x80,
                             a3 = b[2] >= 1 && b[2] < 0x80;
                        bool p01 = b[0] >= 0xc2 && b[0] <= 0xdf && (b[1] & 0xc0) == 0x80;
                        bool p12 = b[1] >= 0xc2 && b[1] <= 0xdf && (b[2] & 0xc0) == 0x80;
                        ref = (a1 && a2 && a3) || (p01 && a3) || (a1 && p12);
                }
                if (utf8_valid((const char *)b, 3) != ref) {
                        if (mismatches++ < 5)
                                printf("#   mismatch for %02x %02x %02x: ref %d\n", b[0], b[1], b[2], ref);
                }
        }
        CHECK_INT(mismatches, 0);

        mismatches = 0;
        for (uint32_t lead = 0xf0; lead <= 0xff; lead++) {
                for (uint32_t v = 0; v < (1u << 18); v++) {
                        b[0] = (unsigned char)lead;
                        b[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3f));
                        b[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3f));
                        b[3] = (unsigned char)(0x80 | (v & 0x3f));
                        uint32_t cp = ((lead & 0x07) << 18) | v;
                        bool ref = lead <= 0xf4 && cp >= 0x10000 && cp <= 0x10ffff;
                        if (utf8_valid((const char *)b, 4) != ref && mismatches++ < 5)
                                printf("#   mismatch for %02x %02x %02x %02x\n", b[0], b[1], b[2], b[3]);
                }
        }
        CHECK_INT(mismatches, 0);
}

TEST(capbuf_basic)
{
        struct capbuf b = { .cap = 10 };
        CHECK_INT(capbuf_append(&b, "hello", 5), 5);
        CHECK_INT(b.len, 5);
        CHECK_INT(b.total, 5);
        CHECK(!b.truncated);
        CHECK_STR(b.data, "hello");
        CHECK(b.alloc <= b.cap + 1);

        /* Crossing the cap: keep what fits, count everything, mark it. */
        CHECK_INT(capbuf_append(&b, "world!!", 7), 5);
        CHECK_INT(b.len, 10);
        CHECK_INT(b.total, 12);
        CHECK(b.truncated);
        CHECK(b.data != NULL && memcmp(b.data, "helloworld", 10) == 0 && b.data[10] == '\0');
        CHECK(b.alloc <= b.cap + 1);

        /* Full: nothing kept, still counted. */
        CHECK_INT(capbuf_append(&b, "more", 4), 0);
        CHECK_INT(b.len, 10);
        CHECK_INT(b.total, 16);
        CHECK_STR(b.data, "helloworld");

        size_t n = 0;
        char *d = capbuf_detach(&b, &n);
        CHECK_STR(d, "helloworld");
        CHECK_INT(n, 10);
        CHECK(b.data == NULL && b.len == 0 && b.alloc == 0);
        free(d);
        capbuf_release(&b);
        capbuf_release(&b);
}

TEST(capbuf_edges)
{
        /* Zero-length appends change nothing. */
        struct capbuf b = { .cap = 4 };
        CHECK_INT(capbuf_append(&b, "", 0), 0);
        CHECK(!b.truncated);
        CHECK_INT(b.total, 0);
        /* Exactly the cap: not truncated. */
        CHECK_INT(capbuf_append(&b, "abcd", 4), 4);
        CHECK(!b.truncated);
        CHECK_STR(b.data, "abcd");
        CHECK_INT(capbuf_append(&b, "", 0), 0);
        CHECK(!b.truncated);
        CHECK_INT(capbuf_append(&b, "e", 1), 0);
        CHECK(b.truncated);
        capbuf_release(&b);

        /* A zero cap keeps nothing; detach still gives a string. */
        struct capbuf z = { .cap = 0 };
        CHECK_INT(capbuf_append(&z, "x", 1), 0);
        CHECK(z.truncated);
        CHECK_INT(z.total, 1);
        CHECK(z.data == NULL);
        size_t n = 99;
        char *d = capbuf_detach(&z, &n);
        CHECK_STR(d, "");
        CHECK_INT(n, 0);
        free(d);
        d = capbuf_detach(&z, NULL);
        CHECK_STR(d, "");
        free(d);

        /* Binary data with NULs is kept byte for byte. */
        struct capbuf bin = { .cap = 100 };
        CHECK_INT(capbuf_append(&bin, "a\0b\0", 4), 4);
        CHECK(bin.data != NULL && memcmp(bin.data, "a\0b\0", 5) == 0);
        capbuf_release(&bin);
}

TEST(capbuf_growth)
{
        /* Byte by byte past a large cap: always NUL-terminated, never more
         * than cap + 1 allocated, totals exact. */
        struct capbuf b = { .cap = 100000 };
        int bad = 0;
        for (int i = 0; i < 150000; i++) {
                char c = (char)('a' + i % 26);
                size_t kept = capbuf_append(&b, &c, 1);
                if (kept != (i < 100000 ? 1u : 0u) || b.data == NULL || b.data[b.len] != '\0' ||
                    b.alloc > b.cap + 1 || b.alloc < b.len + 1)
                        bad++;
        }
        CHECK_INT(bad, 0);
        CHECK_INT(b.len, 100000);
        CHECK_INT(b.total, 150000);
        CHECK(b.truncated);
        CHECK(b.data != NULL && b.data[99999] == (char)('a' + 99999 % 26));
        capbuf_release(&b);

        /* One large chunk over a small cap allocates only cap + 1. */
        static char big[1 << 20];
        memset(big, 'q', sizeof(big));
        struct capbuf s = { .cap = 5000 };
        CHECK_INT(capbuf_append(&s, big, sizeof(big)), 5000);
        CHECK_INT(s.alloc, 5001);
        CHECK_INT(s.total, sizeof(big));
        CHECK(s.data != NULL && s.data[5000] == '\0');
        capbuf_release(&s);

        /* The default output limit: 1 MiB in 64 KiB reads, then more. */
        struct capbuf o = { .cap = 1 << 20 };
        for (int i = 0; i < 20; i++)
                capbuf_append(&o, big, 65536);
        CHECK_INT(o.len, 1 << 20);
        CHECK_INT(o.total, 20 * 65536);
        CHECK(o.truncated);
        CHECK(o.alloc == (1u << 20) + 1);
        CHECK(o.data != NULL && o.data[1 << 20] == '\0');
        capbuf_release(&o);
}

TEST(capbuf_unbounded_cap)
{
        /* cap = SIZE_MAX ("no limit", e.g. output_limit = UINT64_MAX through
         * the library API, which validate accepts): cap + 1 wraps to 0, the
         * buffer is realloc'd to 0 bytes and then written.  Run in a child so
         * a sanitizer abort is contained. */
        int errpipe[2];
        CHECK(pipe(errpipe) == 0);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
                /* A sanitizer's report comes back as one TAP comment. */
                dup2(errpipe[1], 2);
                close(errpipe[0]);
                struct capbuf b = { .cap = SIZE_MAX };
                size_t kept = capbuf_append(&b, "hello", 5);
                bool ok = kept == 5 && b.alloc >= b.len + 1 && b.data && memcmp(b.data, "hello", 6) == 0;
                _exit(ok ? 0 : 1);
        }
        close(errpipe[1]);
        static char report[65536];
        size_t n = 0;
        ssize_t r;
        while (n < sizeof(report) - 1 && (r = read(errpipe[0], report + n, sizeof(report) - 1 - n)) > 0)
                n += (size_t)r;
        report[n] = '\0';
        close(errpipe[0]);
        char *line = strstr(report, "ERROR: ");
        if (line) {
                line[strcspn(line, "\n")] = '\0';
                printf("# child: %s\n", line);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A write to a pipe with no reader between sigpipe_block() and
 * sigpipe_unblock() fails with EPIPE and leaves no SIGPIPE behind, with
 * the default disposition (which would kill): run in a child. */
static int sigpipe_child(void)
{
        signal(SIGPIPE, SIG_DFL);
        int p[2];
        if (pipe(p) < 0)
                return 2;
        close(p[0]);
        struct sigpipe_guard g;
        sigpipe_block(&g);
        ssize_t w = write(p[1], "x", 1);
        int e = errno;
        sigpipe_unblock(&g);
        if (w != -1 || e != EPIPE)
                return 3;
        sigset_t pending, mask;
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
                return 4;
        pthread_sigmask(SIG_SETMASK, NULL, &mask);
        if (sigismember(&mask, SIGPIPE))
                return 5; /* the mask is restored */
        /* One pending before the guard is the caller's: left alone. */
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &only, NULL);
        raise(SIGPIPE);
        sigpipe_block(&g);
        sigpipe_unblock(&g);
        sigpending(&pending);
        if (!sigismember(&pending, SIGPIPE))
                return 6;
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

TEST(sigpipe_guard)
{
        fflush(stdout); /* the child must not print the TAP lines again */
        pid_t pid = fork();
        if (pid == 0)
                _exit(sigpipe_child());
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st));
        CHECK_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), 0);
}

int main(void)
{
        RUN(valid_and_sanitize_cases);
        RUN(sanitize_edges);
        RUN(sanitize_random);
        RUN(valid_exhaustive_two_and_three_bytes);
        RUN(capbuf_basic);
        RUN(capbuf_edges);
        RUN(sigpipe_guard);
        RUN(capbuf_growth);
        RUN(capbuf_unbounded_cap);
        return DONE();
}
