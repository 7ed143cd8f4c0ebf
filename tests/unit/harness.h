/* harness.h: a tiny TAP test harness for the C unit tests.
 *
 *   TEST(name) { CHECK(expr); CHECK_STR(a, b); CHECK_INT(a, b); }
 *   int main(void) { RUN(name); ...; return DONE(); }
 *
 * Each CHECK prints "ok N" or "not ok N - file:line: expr"; DONE() prints
 * the plan and returns the exit status meson's TAP protocol expects. */
#ifndef CORRAL_TEST_HARNESS_H
#define CORRAL_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

static int harness_n, harness_failed;

#define CHECK(expr)                                                                                                   \
        do {                                                                                                          \
                harness_n++;                                                                                          \
                if (expr) {                                                                                           \
                        printf("ok %d - %s\n", harness_n, #expr);                                                    \
                } else {                                                                                              \
                        harness_failed++;                                                                             \
                        printf("not ok %d - %s:%d: %s\n", harness_n, __FILE__, __LINE__, #expr);                     \
                }                                                                                                     \
        } while (0)

#define CHECK_STR(a, b)                                                                                               \
        do {                                                                                                          \
                const char *_a = (a), *_b = (b);                                                                      \
                CHECK(_a != NULL && _b != NULL && strcmp(_a, _b) == 0);                                              \
                if (!(_a != NULL && _b != NULL && strcmp(_a, _b) == 0))                                              \
                        printf("#   got '%s', expected '%s'\n", _a ? _a : "(null)", _b ? _b : "(null)");            \
        } while (0)

#define CHECK_INT(a, b)                                                                                               \
        do {                                                                                                          \
                long long _a = (long long)(a), _b = (long long)(b);                                                   \
                CHECK(_a == _b);                                                                                      \
                if (_a != _b)                                                                                         \
                        printf("#   got %lld, expected %lld\n", _a, _b);                                             \
        } while (0)

#define TEST(name) static void test_##name(void)
#define RUN(name)                                                                                                     \
        do {                                                                                                          \
                printf("# %s\n", #name);                                                                             \
                test_##name();                                                                                        \
        } while (0)
#define DONE() (printf("1..%d\n", harness_n), harness_failed ? 1 : 0)

#endif
