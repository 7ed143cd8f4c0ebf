/* test-result.c: result enums' names and the schema-1 JSON form of a result
 * (src/lib/result.c).
 *
 * Results are crafted by hand, serialised with corral_jail_result_to_json()
 * and parsed back with jansson (strictly: no NUL escapes, no duplicates).
 * Whatever bytes the program wrote, the JSON must stay valid. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "jail-internal.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#define FFFD "\xef\xbf\xbd"

/* Serialise and parse back; NULL (and a failed check) when either fails. */
static json_t *round_trip(const corral_jail_result *r)
{
        char *s = corral_jail_result_to_json(r);
        CHECK(s != NULL);
        if (s == NULL)
                return NULL;
        CHECK(utf8_valid(s, strlen(s)));
        CHECK(strchr(s, '\n') == NULL); /* one line */
        json_error_t jerr;
        json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        CHECK(json_is_object(o));
        if (o == NULL)
                printf("#   %s: %s\n", jerr.text, s);
        free(s);
        return o;
}

static const char *str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

TEST(ok_result)
{
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_OK;
        r.stdout_buf = "hi\n";
        r.stdout_len = 3;
        r.stdout_total = 3;
        r.stderr_buf = "";
        r.wall_ms = 12.345;
        r.cpu_ms = 3.996;
        r.memory_peak_bytes = 765952;
        r.backend = CORRAL_BACKEND_CGROUP_V1;
        r.phases = (struct corral_jail_phases){ 1.111, 2.222, 3.333, 4.444, 5.555, 6.666 };
        json_t *o = round_trip(&r);
        if (o == NULL)
                return;
        CHECK(json_integer_value(json_object_get(o, "schema")) == 1);
        CHECK(json_is_integer(json_object_get(o, "schema")));
        CHECK_STR(str(o, "status"), "ok");
        CHECK(json_integer_value(json_object_get(o, "exit_code")) == 0);
        CHECK(json_is_null(json_object_get(o, "signal")));
        CHECK(json_is_null(json_object_get(o, "reason")));
        CHECK(json_is_null(json_object_get(o, "limit")));
        CHECK(json_object_get(o, "syscall") == NULL);
        CHECK_STR(str(o, "stdout"), "hi\n");
        CHECK_STR(str(o, "stderr"), "");
        CHECK(json_is_false(json_object_get(o, "stdout_truncated")));
        CHECK(json_is_false(json_object_get(o, "stderr_truncated")));
        CHECK(json_integer_value(json_object_get(o, "stdout_bytes")) == 3);
        CHECK(json_integer_value(json_object_get(o, "stderr_bytes")) == 0);
        /* times in ms, rounded to 0.01 */
        CHECK(json_real_value(json_object_get(o, "wall_ms")) == 12.35 ||
              json_real_value(json_object_get(o, "wall_ms")) == 12.34);
        CHECK(json_real_value(json_object_get(o, "cpu_ms")) == 4.0);
        CHECK(json_integer_value(json_object_get(o, "memory_peak_bytes")) == 765952);
        CHECK_STR(str(o, "limits_backend"), "cgroup-v1");
        json_t *ph = json_object_get(o, "phases");
        CHECK(json_is_object(ph));
        static const char *const phases[] = { "prepare", "clone", "mounts", "seccomp", "exec", "teardown" };
        for (size_t i = 0; i < ARRAY_SIZE(phases); i++)
                CHECK(json_is_number(json_object_get(ph, phases[i])));
        CHECK(json_real_value(json_object_get(ph, "prepare")) == 1.11);
        CHECK(json_real_value(json_object_get(ph, "clone")) == 2.22);
        CHECK(json_real_value(json_object_get(ph, "mounts")) == 3.33);
        CHECK(json_real_value(json_object_get(ph, "seccomp")) == 4.44);
        CHECK(json_real_value(json_object_get(ph, "exec")) == 5.56);
        CHECK(json_real_value(json_object_get(ph, "teardown")) == 6.67);
        /* Every documented key, and only those. */
        static const char *const keys[] = { "schema",           "status",           "exit_code",    "signal",
                                            "reason",           "limit",            "stdout",       "stderr",
                                            "stdout_truncated", "stderr_truncated", "stdout_bytes", "stderr_bytes",
                                            "wall_ms",          "cpu_ms",           "memory_peak_bytes",
                                            "limits_backend",   "phases" };
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                CHECK(json_object_get(o, keys[i]) != NULL);
        CHECK_INT(json_object_size(o), ARRAY_SIZE(keys));
        json_decref(o);
}

TEST(null_buffers)
{
        /* A result without captured output (io->capture false). */
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.stdout_total = 100;
        r.stdout_truncated = true;
        json_t *o = round_trip(&r);
        if (o == NULL)
                return;
        CHECK_STR(str(o, "stdout"), "");
        CHECK_STR(str(o, "stderr"), "");
        CHECK(json_integer_value(json_object_get(o, "stdout_bytes")) == 100);
        CHECK(json_is_true(json_object_get(o, "stdout_truncated")));
        CHECK_STR(str(o, "limits_backend"), "cgroup-v2"); /* enum value 0 */
        json_decref(o);
}

TEST(binary_output)
{
        /* Invalid UTF-8 and NUL bytes in stdout and stderr. */
        static const char out[] = "ok\0nul \xff\xfe bad \xc3\xa9 good \xed\xa0\x80 surrogate \xe2\x82";
        static const char err[] = "\0\0\x80\xf4\x90\x80\x80";
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_ERROR;
        r.exit_code = 1;
        r.stdout_buf = (char *)out;
        r.stdout_len = sizeof(out) - 1;
        r.stderr_buf = (char *)err;
        r.stderr_len = sizeof(err) - 1;
        json_t *o = round_trip(&r);
        if (o == NULL)
                return;
        CHECK_STR(str(o, "status"), "error");
        CHECK(json_integer_value(json_object_get(o, "exit_code")) == 1);
        CHECK_STR(str(o, "stdout"), "ok" FFFD "nul " FFFD FFFD " bad \xc3\xa9 good " FFFD FFFD FFFD
                                    " surrogate " FFFD FFFD);
        CHECK_STR(str(o, "stderr"), FFFD FFFD FFFD FFFD FFFD FFFD FFFD);
        /* No NUL reached the JSON: its string length equals strlen. */
        json_t *s = json_object_get(o, "stdout");
        CHECK(json_string_length(s) == strlen(json_string_value(s)));
        json_decref(o);

        /* Every byte value, 64 KiB of random-ish binary. */
        static char bin[65536];
        for (size_t i = 0; i < sizeof(bin); i++)
                bin[i] = (char)((i * 2654435761u) >> 13);
        r.stdout_buf = bin;
        r.stdout_len = sizeof(bin);
        r.stderr_buf = bin;
        r.stderr_len = 256;
        o = round_trip(&r);
        json_decref(o);
}

TEST(killed_result)
{
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_KILLED;
        r.signal = SIGKILL;
        r.exit_code = 137;
        r.limit = CORRAL_LIMIT_SIGNAL;
        r.reason = "killed by signal 9 (Killed)";
        r.backend = CORRAL_BACKEND_RLIMIT;
        json_t *o = round_trip(&r);
        if (o == NULL)
                return;
        CHECK_STR(str(o, "status"), "killed");
        CHECK(json_integer_value(json_object_get(o, "signal")) == 9);
        CHECK(json_integer_value(json_object_get(o, "exit_code")) == 137);
        CHECK_STR(str(o, "limit"), "signal");
        CHECK_STR(str(o, "reason"), "killed by signal 9 (Killed)");
        CHECK_STR(str(o, "limits_backend"), "rlimit");
        CHECK(json_object_get(o, "syscall") == NULL);
        json_decref(o);
}

TEST(seccomp_result)
{
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_KILLED;
        r.signal = SIGSYS;
        r.exit_code = 128 + SIGSYS;
        r.limit = CORRAL_LIMIT_SECCOMP;
        r.seccomp_syscall = 101;
        r.seccomp_syscall_name = "ptrace";
        r.reason = "blocked system call 'ptrace': not allowed in the jail";
        json_t *o = round_trip(&r);
        if (o == NULL)
                return;
        CHECK_STR(str(o, "limit"), "seccomp");
        CHECK_STR(str(o, "syscall"), "ptrace");
        CHECK(json_integer_value(json_object_get(o, "exit_code")) == 159);
        CHECK(json_integer_value(json_object_get(o, "signal")) == SIGSYS);
        json_decref(o);

        /* seccomp without a name: no "syscall" key. */
        r.seccomp_syscall_name = NULL;
        o = round_trip(&r);
        CHECK(o != NULL && json_object_get(o, "syscall") == NULL);
        json_decref(o);

        /* A name left over with another limit: not reported. */
        r.seccomp_syscall_name = "ptrace";
        r.limit = CORRAL_LIMIT_MEMORY;
        r.status = CORRAL_STATUS_OOM;
        o = round_trip(&r);
        CHECK(o != NULL && json_object_get(o, "syscall") == NULL);
        CHECK_STR(o ? str(o, "limit") : NULL, "memory");
        CHECK_STR(o ? str(o, "status") : NULL, "oom");
        json_decref(o);
}

TEST(denied_in_json)
{
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_OK;
        /* None denied: no "denied" key, the object as before. */
        json_t *o = round_trip(&r);
        CHECK(o != NULL && json_object_get(o, "denied") == NULL);
        json_decref(o);
        char *names[] = { "chroot", "clock_settime" };
        r.denied = names;
        r.n_denied = 2;
        o = round_trip(&r);
        json_t *d = o ? json_object_get(o, "denied") : NULL;
        CHECK(json_is_array(d) && json_array_size(d) == 2);
        CHECK_STR(json_string_value(json_array_get(d, 0)), "chroot");
        CHECK_STR(json_string_value(json_array_get(d, 1)), "clock_settime");
        CHECK_STR(o ? str(o, "status") : NULL, "ok");
        json_decref(o);
}

TEST(every_limit_in_json)
{
        static const struct {
                enum corral_limit l;
                const char *name;
        } limits[] = { { CORRAL_LIMIT_WALL_TIME, "wall-time" }, { CORRAL_LIMIT_CPU_TIME, "cpu-time" },
                       { CORRAL_LIMIT_MEMORY, "memory" },       { CORRAL_LIMIT_PIDS, "pids" },
                       { CORRAL_LIMIT_SECCOMP, "seccomp" },     { CORRAL_LIMIT_FILE_SIZE, "file-size" },
                       { CORRAL_LIMIT_SIGNAL, "signal" },       { CORRAL_LIMIT_CANCELLED, "cancelled" } };
        for (size_t i = 0; i < ARRAY_SIZE(limits); i++) {
                corral_jail_result r;
                memset(&r, 0, sizeof(r));
                r.status = CORRAL_STATUS_KILLED;
                r.limit = limits[i].l;
                r.reason = "limit";
                json_t *o = round_trip(&r);
                CHECK_STR(o ? str(o, "limit") : NULL, limits[i].name);
                json_decref(o);
        }
}

TEST(reason_from_program)
{
        /* spawn.c builds "cannot execute '%s'" from argv[0], which the caller
         * (or a model) chooses: invalid UTF-8 there makes json_string() fail
         * and the whole object is lost (`corral exec --json -- $'\xff'`
         * prints nothing). */
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = CORRAL_STATUS_ERROR;
        r.exit_code = 127;
        r.reason = "cannot execute '/bin/\xff': No such file or directory";
        char *s = corral_jail_result_to_json(&r);
        CHECK(s != NULL);
        free(s);
}

TEST(enum_names)
{
        CHECK_STR(corral_status_to_string(CORRAL_STATUS_OK), "ok");
        CHECK_STR(corral_status_to_string(CORRAL_STATUS_ERROR), "error");
        CHECK_STR(corral_status_to_string(CORRAL_STATUS_TIMEOUT), "timeout");
        CHECK_STR(corral_status_to_string(CORRAL_STATUS_OOM), "oom");
        CHECK_STR(corral_status_to_string(CORRAL_STATUS_KILLED), "killed");
        CHECK_STR(corral_status_to_string((enum corral_status)99), "error");
        CHECK_STR(corral_status_to_string((enum corral_status)-1), "error");

        CHECK(corral_limit_to_string(CORRAL_LIMIT_NONE) == NULL);
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_WALL_TIME), "wall-time");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_CPU_TIME), "cpu-time");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_MEMORY), "memory");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_PIDS), "pids");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_SECCOMP), "seccomp");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_FILE_SIZE), "file-size");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_SIGNAL), "signal");
        CHECK_STR(corral_limit_to_string(CORRAL_LIMIT_CANCELLED), "cancelled");
        CHECK(corral_limit_to_string((enum corral_limit)99) == NULL);

        CHECK_STR(corral_limits_backend_to_string(CORRAL_BACKEND_CGROUP_V2), "cgroup-v2");
        CHECK_STR(corral_limits_backend_to_string(CORRAL_BACKEND_CGROUP_V1), "cgroup-v1");
        CHECK_STR(corral_limits_backend_to_string(CORRAL_BACKEND_RLIMIT), "rlimit");
        CHECK_STR(corral_limits_backend_to_string((enum corral_limits_backend)99), "rlimit");

        /* Out-of-range values still serialise. */
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.status = (enum corral_status)42;
        r.limit = (enum corral_limit)42;
        r.backend = (enum corral_limits_backend)42;
        json_t *o = round_trip(&r);
        CHECK_STR(o ? str(o, "status") : NULL, "error");
        CHECK(o != NULL && json_is_null(json_object_get(o, "limit")));
        json_decref(o);
}

TEST(result_release)
{
        /* release frees every owned pointer and zeroes (ASan checks). */
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.reason = strdup("x");
        r.stdout_buf = strdup("out");
        r.stderr_buf = strdup("err");
        r.seccomp_syscall_name = strdup("ptrace");
        corral_jail_result_release(&r);
        CHECK(r.reason == NULL && r.stdout_buf == NULL && r.seccomp_syscall_name == NULL);
        corral_jail_result_release(&r);
}

TEST(failure_json)
{
        corral_error *err = NULL;
        corral_usage(&err, "--memory: invalid size '1Q'");
        char *s = corral_jail_failure_to_json(err, NULL);
        CHECK_STR(s, "{\"schema\":1,\"status\":\"failed\",\"exit_code\":125,\"reason\":\"--memory: invalid size "
                     "'1Q'\",\"error\":{\"kind\":\"usage\",\"message\":\"--memory: invalid size '1Q'\",\"field\":null}}");
        free(s);
        /* A front end's wording, and the field at fault. */
        corral_error_set_field(&err, "memory");
        s = corral_jail_failure_to_json(err, "the memory limit: invalid size '1Q' (--memory)");
        CHECK_STR(s, "{\"schema\":1,\"status\":\"failed\",\"exit_code\":125,\"reason\":\"the memory limit: "
                     "invalid size '1Q' (--memory)\",\"error\":{\"kind\":\"usage\",\"message\":\"the memory limit: "
                     "invalid size '1Q' (--memory)\",\"field\":\"memory\"}}");
        free(s);
        corral_error_free(err);
        s = corral_jail_failure_to_json(NULL, NULL);
        json_t *o = s ? json_loads(s, 0, NULL) : NULL;
        CHECK_STR(json_string_value(json_object_get(o, "reason")), "unknown error");
        CHECK_STR(json_string_value(json_object_get(json_object_get(o, "error"), "kind")), "internal");
        json_decref(o);
        free(s);
}

/* corral's round() and fmod() (util.c: it links no libm) against libm's. */
static void test_rounding_without_libm(void)
{
        static const double xs[] = { 0,    0.5,    1.5,    2.5,     -0.5,   -1.5,   0.49999999999999994,
                                     1234.5, -1234.5, 12.345 * 100, 1e15 + 0.5, 4503599627370497.0,
                                     1e300,  -1e300, 0.25,  -0.75,  123456.789 };
        for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++)
                CHECK(round_half_away(xs[i]) == round(xs[i]));
        CHECK(isnan(round_half_away(NAN)) && round_half_away(INFINITY) == INFINITY);
        static const double as[] = { 0, 999.4, 1000, 1500.25, 59999.9, 61234, 3599999, 7.5e9 };
        for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
                CHECK(fabs(fmod_positive(as[i], 1000) - fmod(as[i], 1000)) < 1e-6);
                CHECK(fabs(fmod_positive(as[i], 60) - fmod(as[i], 60)) < 1e-6);
        }
        CHECK(min_double(1, INFINITY) == 1 && min_double(-2, 3) == -2);
        CHECK(round_ms(12.345678) == 12.35 && round_ms(-0.004) == 0);
}

int main(void)
{
        RUN(rounding_without_libm);
        RUN(ok_result);
        RUN(null_buffers);
        RUN(binary_output);
        RUN(killed_result);
        RUN(seccomp_result);
        RUN(denied_in_json);
        RUN(every_limit_in_json);
        RUN(reason_from_program);
        RUN(enum_names);
        RUN(result_release);
        RUN(failure_json);
        return DONE();
}
