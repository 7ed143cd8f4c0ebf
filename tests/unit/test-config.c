/* test-config.c: corral_jail_config defaults, setters, validation and
 * release (src/lib/config.c).
 *
 * Run under ASan/LSan, the release tests double as leak checks: every
 * config built here, complete or abandoned half-way, is released once. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
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

static size_t strv_len(char **v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

/* The error must be a usage error that contains `needle`. */
static void check_usage(int r, corral_error **errp, const char *needle)
{
        const corral_error *err = *errp;
        CHECK_INT(r, -1);
        CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
        CHECK(err != NULL && err->msg != NULL && strstr(err->msg, needle) != NULL);
        if (err && err->msg && !strstr(err->msg, needle))
                printf("#   message '%s' lacks '%s'\n", err->msg, needle);
}

TEST(defaults)
{
        corral_jail_config cfg;
        memset(&cfg, 0xa5, sizeof(cfg)); /* init must not rely on a zeroed struct */
        corral_jail_config_init(&cfg);
        CHECK(cfg.timeout_s == 30.0);
        CHECK(cfg.cpu_time_s == 0.0);
        CHECK(cfg.memory_bytes == 512ull << 20);
        CHECK(cfg.pids == 128);
        CHECK(cfg.cpus == 0.0);
        CHECK(cfg.nofile == 256);
        CHECK(cfg.disk_bytes == 256ull << 20);
        CHECK(cfg.output_limit == 1ull << 20);
        CHECK(cfg.net == CORRAL_NET_NONE);
        CHECK(cfg.stdin_mode == CORRAL_STDIN_NULL);
        CHECK(!cfg.require_cgroups);
        /* A server's settings are opt-in: limits on time and output by default. */
        CHECK(!cfg.no_timeout && !cfg.stream_unlimited);
        CHECK(cfg.address_space_bytes == 0);
        CHECK(cfg.argv == NULL && cfg.env == NULL && cfg.script == NULL && cfg.script_name == NULL);
        CHECK(cfg.script_len == 0);
        CHECK(cfg.workspace == NULL && cfg.rootfs == NULL);
        CHECK(cfg.binds == NULL && cfg.n_binds == 0);
        CHECK_INT(cfg.uid_base, JAIL_DEFAULT_UID_BASE);
        CHECK_INT(cfg.uid_count, JAIL_DEFAULT_UID_COUNT);

        /* Defaults are valid except that there is nothing to run yet. */
        corral_error *err = NULL;
        check_usage(corral_jail_config_validate(&cfg, &err), &err, "no program");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

TEST(set_argv)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;

        check_usage(corral_jail_config_set_argv(&cfg, NULL, &err), &err, "no program");
        char *const empty[] = { NULL };
        check_usage(corral_jail_config_set_argv(&cfg, empty, &err), &err, "no program");
        CHECK(cfg.argv == NULL);
        corral_error_clear(&err);

        char a0[] = "/bin/echo", a1[] = "hello world";
        char *const argv[] = { a0, a1, NULL };
        CHECK_INT(corral_jail_config_set_argv(&cfg, argv, &err), 0);
        CHECK(err == NULL);
        CHECK_INT(strv_len(cfg.argv), 2);
        CHECK_STR(cfg.argv[0], "/bin/echo");
        CHECK_STR(cfg.argv[1], "hello world");
        CHECK(cfg.argv[0] != a0); /* copied, not borrowed */
        a1[0] = 'X';
        CHECK_STR(cfg.argv[1], "hello world");
        CHECK_INT(corral_jail_config_validate(&cfg, &err), 0);

        /* Setting again replaces (the old vector is freed: ASan). */
        char *const argv2[] = { "python3", NULL };
        CHECK_INT(corral_jail_config_set_argv(&cfg, argv2, &err), 0);
        CHECK_INT(strv_len(cfg.argv), 1);
        CHECK_STR(cfg.argv[0], "python3");

        /* A failed set keeps the previous argv. */
        check_usage(corral_jail_config_set_argv(&cfg, empty, &err), &err, "no program");
        CHECK_STR(cfg.argv[0], "python3");
        corral_error_free(err);

        /* An empty program name does not validate. */
        char *const blank[] = { "", NULL };
        err = NULL;
        CHECK_INT(corral_jail_config_set_argv(&cfg, blank, &err), 0);
        check_usage(corral_jail_config_validate(&cfg, &err), &err, "no program");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

TEST(add_env)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;

        CHECK_INT(corral_jail_config_add_env(&cfg, "A=1", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "B=two words", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "AB=3", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "_under_score9=", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "EQ==x=y", &err), 0);
        CHECK(err == NULL);
        CHECK_INT(strv_len(cfg.env), 5);
        /* Same NAME replaces in place; a NAME that is a prefix of another does not. */
        CHECK_INT(corral_jail_config_add_env(&cfg, "A=replaced", &err), 0);
        CHECK_INT(strv_len(cfg.env), 5);
        CHECK_STR(cfg.env[0], "A=replaced");
        CHECK_STR(cfg.env[1], "B=two words");
        CHECK_STR(cfg.env[2], "AB=3");
        CHECK_STR(cfg.env[3], "_under_score9=");
        CHECK_STR(cfg.env[4], "EQ==x=y");
        CHECK(cfg.env[5] == NULL);
        CHECK_INT(corral_jail_config_add_env(&cfg, "AB=4", &err), 0);
        CHECK_STR(cfg.env[0], "A=replaced");
        CHECK_STR(cfg.env[2], "AB=4");

        static const char *const bad[] = { "1X=y", "=v", "NOEQ", "", "A-B=1", "A B=1", "A.B=1", "É=1", "9=9",
                                           " A=1", "A =1" };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                printf("# add_env('%s') is refused\n", bad[i]);
                char quoted[64];
                snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
                check_usage(corral_jail_config_add_env(&cfg, bad[i], &err), &err, quoted);
        }
        check_usage(corral_jail_config_add_env(&cfg, NULL, &err), &err, "NAME=VALUE");
        CHECK_INT(strv_len(cfg.env), 5);
        corral_error_free(err);

        err = NULL;
        cfg.argv = calloc(2, sizeof(char *));
        cfg.argv[0] = strdup("/bin/true");
        CHECK_INT(corral_jail_config_validate(&cfg, &err), 0);
        corral_jail_config_release(&cfg);
}

struct bind_case {
        const char *spec;
        const char *src, *dst; /* NULL dst: must be refused */
        const char *needle;    /* in the error message */
};

TEST(add_bind)
{
        static const struct bind_case cases[] = {
                { "/data", "/data", "/data", NULL },
                { "/srv/x:/data", "/srv/x", "/data", NULL },
                { "/srv/x:/mnt/deep/data", "/srv/x", "/mnt/deep/data", NULL },
                { "rel/src:/data", "rel/src", "/data", NULL }, /* the source is resolved when planning */
                { "/srv/x:/data/", "/srv/x", "/data", NULL },
                { "/srv/x:/data///", "/srv/x", "/data", NULL },
                { "/srv/x/:/opt/x/", "/srv/x/", "/opt/x", NULL },
                { "/srv/x:/tmp/sub", "/srv/x", "/tmp/sub", NULL },
                { "/srv/x:/workspace/sub", "/srv/x", "/workspace/sub", NULL },
                { "/srv/x:/...", "/srv/x", "/...", NULL },
                { "/srv/x:/a..b", "/srv/x", "/a..b", NULL },
                /* refused */
                { "", NULL, NULL, "empty" },
                { ":/data", NULL, NULL, "empty source" },
                { "/srv/x:", NULL, NULL, "absolute" },
                { "/srv/x:data", NULL, NULL, "absolute" },
                { "relative", NULL, NULL, "absolute" },
                { "/srv/x:/a/../etc", NULL, NULL, "'..'" },
                { "/srv/x:/..", NULL, NULL, "'..'" },
                { "/srv/x:/a/..", NULL, NULL, "'..'" },
                { "/srv/x:/a/./b", NULL, NULL, "'.'" },
                { "/srv/x:/.", NULL, NULL, "'.'" },
                { "/srv/x:/a//b", NULL, NULL, "malformed" },
                { "/srv/x:/", NULL, NULL, "managed by corral" },
                { "/srv/x://", NULL, NULL, "managed by corral" },
                { "/srv/x:/proc", NULL, NULL, "managed by corral" },
                { "/srv/x:/proc/", NULL, NULL, "managed by corral" },
                { "/srv/x:/proc/sys", NULL, NULL, "managed by corral" },
                { "/srv/x:/proc/self/fd", NULL, NULL, "managed by corral" },
                { "/srv/x:/dev", NULL, NULL, "managed by corral" },
                { "/srv/x:/dev/x", NULL, NULL, "managed by corral" },
                { "/srv/x:/dev/shm/", NULL, NULL, "managed by corral" },
                { "/srv/x:/etc", NULL, NULL, "managed by corral" },
                { "/srv/x:/etc/", NULL, NULL, "managed by corral" },
                { "/srv/x:/workspace", NULL, NULL, "managed by corral" },
                { "/srv/x:/workspace//", NULL, NULL, "managed by corral" },
                { "/srv/x:/tmp", NULL, NULL, "managed by corral" },
                { "/srv/x:/tmp/", NULL, NULL, "managed by corral" },
                { "/srv/x:/run/corral", NULL, NULL, "managed by corral" },
                { "/srv/x:/home", NULL, NULL, "managed by corral" },
                { "/srv/x:/home/user", NULL, NULL, "managed by corral" },
                { "/srv/x:/home/user/data", NULL, NULL, "managed by corral" },
                { "/tmp", NULL, NULL, "managed by corral" },
                { "/proc", NULL, NULL, "managed by corral" },
                { "/etc", NULL, NULL, "managed by corral" },
        };
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        size_t n = 0;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                const struct bind_case *c = &cases[i];
                corral_error *err = NULL;
                bool writable = i % 2 == 0;
                int r = corral_jail_config_add_bind(&cfg, c->spec, writable, &err);
                if (c->dst) {
                        printf("# add_bind('%s') -> %s at %s\n", c->spec, c->src, c->dst);
                        CHECK_INT(r, 0);
                        CHECK(err == NULL);
                        if (r == 0) {
                                n++;
                                CHECK_INT(cfg.n_binds, n);
                                CHECK_STR(cfg.binds[n - 1].src, c->src);
                                CHECK_STR(cfg.binds[n - 1].dst, c->dst);
                                CHECK(cfg.binds[n - 1].writable == writable);
                        }
                } else {
                        printf("# add_bind('%s') is refused\n", c->spec);
                        check_usage(r, &err, c->needle);
                        CHECK_INT(cfg.n_binds, n);
                }
                corral_error_free(err);
        }
        corral_error *err = NULL;
        check_usage(corral_jail_config_add_bind(&cfg, NULL, false, &err), &err, "empty");
        corral_error_free(err);

        /* The rest of the jail's own machinery (see plan.c): the script lives
         * in /run/corral/NAME.  /proc/... and /dev/... are refused here, but
         * a bind at /run/corral/main.py is accepted and `corral exec -c`
         * then fails in the jail's setup ("write '/run/corral/main.py':
         * File exists") instead of with a usage error. */
        err = NULL;
        int r = corral_jail_config_add_bind(&cfg, "/srv/x:/run/corral/main.py", false, &err);
        CHECK(r == -1);
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

TEST(set_script)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;

        static const char text[] = "print('hi')\n\0tail";
        CHECK_INT(corral_jail_config_set_script(&cfg, "main.py", text, sizeof(text) - 1, &err), 0);
        CHECK(err == NULL);
        CHECK_STR(cfg.script_name, "main.py");
        CHECK_INT(cfg.script_len, sizeof(text) - 1);
        CHECK(cfg.script != NULL && memcmp(cfg.script, text, sizeof(text) - 1) == 0); /* NUL kept */
        CHECK(cfg.script != NULL && cfg.script[cfg.script_len] == '\0');

        /* Replace (the first copy is freed: ASan). */
        CHECK_INT(corral_jail_config_set_script(&cfg, "run.sh", "echo hi", 7, &err), 0);
        CHECK_STR(cfg.script_name, "run.sh");
        CHECK_INT(cfg.script_len, 7);
        CHECK_STR(cfg.script, "echo hi");

        /* Empty text is fine. */
        CHECK_INT(corral_jail_config_set_script(&cfg, "empty.py", "", 0, &err), 0);
        CHECK_INT(cfg.script_len, 0);
        CHECK_STR(cfg.script, "");

        static const char *const bad_names[] = { "a/b", "/main.py", "main.py/", "", ".", ".." };
        for (size_t i = 0; i < ARRAY_SIZE(bad_names); i++) {
                printf("# set_script name '%s' is refused\n", bad_names[i]);
                check_usage(corral_jail_config_set_script(&cfg, bad_names[i], "x", 1, &err), &err, "script name");
                CHECK_STR(cfg.script_name, "empty.py"); /* unchanged */
        }
        check_usage(corral_jail_config_set_script(&cfg, NULL, "x", 1, &err), &err, "script name");

        /* At the limit and one past it. */
        char *big = malloc(JAIL_MAX_SCRIPT + 1);
        CHECK(big != NULL);
        if (big) {
                memset(big, 'x', JAIL_MAX_SCRIPT + 1);
                CHECK_INT(corral_jail_config_set_script(&cfg, "big.py", big, JAIL_MAX_SCRIPT, &err), 0);
                CHECK_INT(cfg.script_len, JAIL_MAX_SCRIPT);
                check_usage(corral_jail_config_set_script(&cfg, "bigger.py", big, JAIL_MAX_SCRIPT + 1, &err), &err,
                            "limit");
                CHECK_STR(cfg.script_name, "big.py");
                CHECK_INT(cfg.script_len, JAIL_MAX_SCRIPT);
                free(big);
        }
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

/* A valid config to break one field at a time. */
static void valid_config(corral_jail_config *cfg)
{
        corral_jail_config_init(cfg);
        char *const argv[] = { "/bin/true", NULL };
        corral_jail_config_set_argv(cfg, argv, NULL);
}

#define EXPECT_INVALID(field, value, needle)                                                                          \
        do {                                                                                                          \
                corral_jail_config c;                                                                                 \
                valid_config(&c);                                                                                     \
                c.field = (value);                                                                                    \
                corral_error *e = NULL;                                                                               \
                printf("# validate: %s = %s is refused\n", #field, #value);                                          \
                check_usage(corral_jail_config_validate(&c, &e), &e, needle);                                         \
                corral_error_free(e);                                                                                 \
                corral_jail_config_release(&c);                                                                       \
        } while (0)

#define EXPECT_VALID(field, value)                                                                                    \
        do {                                                                                                          \
                corral_jail_config c;                                                                                 \
                valid_config(&c);                                                                                     \
                c.field = (value);                                                                                    \
                corral_error *e = NULL;                                                                               \
                printf("# validate: %s = %s is accepted\n", #field, #value);                                         \
                CHECK_INT(corral_jail_config_validate(&c, &e), 0);                                                   \
                if (e)                                                                                                \
                        printf("#   error: %s\n", e->msg);                                                           \
                corral_error_free(e);                                                                                 \
                corral_jail_config_release(&c);                                                                       \
        } while (0)

/* Values that must be refused (non-finite and out-of-range ones). */
#define EXPECT_REFUSED(field, value, why)                                                                        \
        do {                                                                                                          \
                corral_jail_config c;                                                                                 \
                valid_config(&c);                                                                                     \
                c.field = (value);                                                                                    \
                corral_error *e = NULL;                                                                               \
                printf("# validate: %s = %s should be refused\n", #field, #value);                                   \
                CHECK(corral_jail_config_validate(&c, &e) == -1);                                           \
                corral_error_free(e);                                                                                 \
                corral_jail_config_release(&c);                                                                       \
        } while (0)

TEST(validate)
{
        corral_jail_config cfg;
        valid_config(&cfg);
        corral_error *err = NULL;
        CHECK_INT(corral_jail_config_validate(&cfg, &err), 0);
        CHECK(err == NULL);
        /* NULL ret_err is allowed. */
        corral_jail_config_release(&cfg);
        corral_jail_config_init(&cfg);
        CHECK_INT(corral_jail_config_validate(&cfg, NULL), -1);
        corral_jail_config_release(&cfg);

        EXPECT_INVALID(timeout_s, 0.0, "timeout");
        EXPECT_INVALID(timeout_s, -1.0, "timeout");
        EXPECT_INVALID(timeout_s, NAN, "timeout");
        EXPECT_INVALID(cpu_time_s, -1.0, "CPU-time");
        EXPECT_INVALID(memory_bytes, (8u << 20) - 1, "memory");
        EXPECT_INVALID(memory_bytes, 0, "memory");
        EXPECT_INVALID(pids, 0, "process limit");
        EXPECT_INVALID(pids, (1u << 22) + 1, "process limit");
        EXPECT_INVALID(nofile, 7, "open-file");
        EXPECT_INVALID(nofile, (1u << 20) + 1, "open-file");
        EXPECT_INVALID(nofile, 0, "open-file");
        EXPECT_INVALID(disk_bytes, 65535, "disk");
        EXPECT_INVALID(disk_bytes, 0, "disk");
        EXPECT_INVALID(output_limit, 0, "output");
        EXPECT_INVALID(cpus, -0.5, "CPU share");
        EXPECT_INVALID(cpus, 4096.5, "CPU share");
        EXPECT_INVALID(uid_count, 0, "uid range");
        EXPECT_INVALID(uid_base, 999, "uid range");
        EXPECT_INVALID(uid_base, 0xffffffffu - 10, "uid range");

        EXPECT_VALID(timeout_s, 0.001);
        EXPECT_VALID(cpu_time_s, 0.0);
        EXPECT_VALID(cpu_time_s, 2.5);
        EXPECT_VALID(memory_bytes, 8u << 20);
        EXPECT_VALID(pids, 2);
        EXPECT_INVALID(pids, 1, "the jail's init is one process");
        EXPECT_VALID(pids, 1u << 22);
        EXPECT_VALID(nofile, 8);
        EXPECT_VALID(nofile, 1u << 20);
        EXPECT_VALID(disk_bytes, 65536);
        EXPECT_VALID(output_limit, 1);
        EXPECT_VALID(cpus, 0.0);
        EXPECT_VALID(cpus, 4096.0);
        EXPECT_VALID(uid_base, 1000);
        EXPECT_VALID(net, CORRAL_NET_HOST);
        EXPECT_VALID(net, CORRAL_NET_DOWN);

        EXPECT_VALID(address_space_bytes, 0);
        EXPECT_VALID(address_space_bytes, 16ull << 30);
        EXPECT_VALID(address_space_bytes, 512ull << 20); /* the memory limit itself */
        EXPECT_INVALID(address_space_bytes, (512ull << 20) - 1, "address-space");

        /* No wall-clock limit only when asked for: a timeout of 0 is refused
         * unless no_timeout is set, and then no timeout value is checked. */
        {
                corral_jail_config c;
                valid_config(&c);
                c.no_timeout = true;
                c.timeout_s = 0;
                CHECK_INT(corral_jail_config_validate(&c, NULL), 0);
                c.timeout_s = NAN;
                CHECK_INT(corral_jail_config_validate(&c, NULL), 0);
                c.no_timeout = false;
                corral_error *e = NULL;
                check_usage(corral_jail_config_validate(&c, &e), &e, "timeout");
                corral_error_free(e);
                corral_jail_config_release(&c);
        }

        /* A hand-built env entry without '=' is caught. */
        {
                corral_jail_config c;
                valid_config(&c);
                c.env = calloc(2, sizeof(char *));
                c.env[0] = strdup("NOEQ");
                corral_error *e = NULL;
                check_usage(corral_jail_config_validate(&c, &e), &e, "'NOEQ'");
                corral_error_free(e);
                corral_jail_config_release(&c);
        }

        /* Values the supervisor later converts to integers (spawn.c: the
         * timerfd's seconds, RLIMIT_CPU): out of range that conversion is
         * undefined; on x86-64 a timeout of 1e300 or infinity becomes a
         * negative tv_sec and every run fails with "cannot arm the wall-clock
         * timer: Invalid argument" instead of a usage error.  NaN compares
         * false everywhere, so it silently means "no limit". */
        EXPECT_REFUSED(timeout_s, INFINITY, "config.c validate accepts an infinite timeout (spawn.c (time_t)t)");
        EXPECT_REFUSED(timeout_s, 1e300, "config.c validate accepts timeout 1e300 (spawn.c (time_t)t)");
        EXPECT_REFUSED(cpu_time_s, NAN, "config.c validate accepts a NaN CPU time (then no RLIMIT_CPU)");
        EXPECT_REFUSED(cpu_time_s, 1e300, "config.c validate accepts CPU time 1e300 (spawn.c (uint64_t)ceil)");
        EXPECT_REFUSED(cpus, NAN, "config.c validate accepts NaN cpus (then no CPU limit)");
        /* "No limit" spelled UINT64_MAX: the supervisor's capbuf gets cap
         * SIZE_MAX, cap + 1 wraps to 0 in capbuf_append (util.c), the buffer
         * is realloc'd to 0 bytes and the program's output overflows it. */
        EXPECT_REFUSED(output_limit, UINT64_MAX, "config.c validate: output_limit UINT64_MAX accepted; "
                                                      "util.c capbuf_append cap+1 wraps");
}

TEST(drop_unreachable_secrets)
{
        /* A narrowed allow-list keeps the credentials of the hosts it still
         * reaches (a wildcard or a port entry included) and drops the rest;
         * no allow-list drops them all (corral serve's sandboxes). */
        corral_jail_config cfg;
        corral_error *err = NULL;
        corral_jail_config_init(&cfg);
        cfg.net = CORRAL_NET_ALLOW;
        CHECK_INT(corral_jail_config_add_net_allow(&cfg, "a.test,*.b.test,c.test:8443", &err), 0);
        CHECK_INT(corral_jail_config_add_net_secret(&cfg, "a.test", "X-Key", "value-a", &err), 0);
        CHECK_INT(corral_jail_config_add_net_secret(&cfg, "x.b.test", "X-Key", "value-b", &err), 0);
        CHECK_INT(corral_jail_config_add_net_secret(&cfg, "c.test", "X-Key", "value-c", &err), 0);
        CHECK_INT(corral_jail_config_add_net_secret(&cfg, "d.test", "X-Key", "value-d", &err), 0);
        corral_jail_config_drop_unreachable_secrets(&cfg);
        CHECK_INT((int)cfg.n_net_secrets, 3);
        CHECK(strcmp(cfg.net_secrets[0].host, "a.test") == 0 && strcmp(cfg.net_secrets[1].host, "x.b.test") == 0 &&
              strcmp(cfg.net_secrets[2].host, "c.test") == 0);
        cfg.net = CORRAL_NET_NONE;
        corral_jail_config_drop_unreachable_secrets(&cfg);
        CHECK_INT((int)cfg.n_net_secrets, 0);
        corral_jail_config_release(&cfg);
        corral_error_free(err);
}

TEST(release)
{
        /* Zeroed and default configs release cleanly, twice. */
        corral_jail_config cfg;
        memset(&cfg, 0, sizeof(cfg));
        corral_jail_config_release(&cfg);
        corral_jail_config_init(&cfg);
        corral_jail_config_release(&cfg);
        corral_jail_config_release(&cfg);

        /* Partially filled: some setters succeed, some fail half-way. */
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *const argv[] = { "python3", "-c", "print(1)", NULL };
        CHECK_INT(corral_jail_config_set_argv(&cfg, argv, &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "A=1", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "A=2", &err), 0);
        CHECK_INT(corral_jail_config_add_env(&cfg, "1X=y", &err), -1);
        CHECK_INT(corral_jail_config_add_bind(&cfg, "/srv:/data", true, &err), 0);
        CHECK_INT(corral_jail_config_add_bind(&cfg, "/srv:/proc", true, &err), -1);
        CHECK_INT(corral_jail_config_add_bind(&cfg, "/srv:/a/../b", true, &err), -1);
        CHECK_INT(corral_jail_config_set_script(&cfg, "main.py", "print(1)", 8, &err), 0);
        CHECK_INT(corral_jail_config_set_script(&cfg, "a/b", "x", 1, &err), -1);
        cfg.workspace = strdup("/srv/ws");
        cfg.rootfs = strdup("/srv/root");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        /* Release leaves a zeroed struct behind. */
        corral_jail_config zero;
        memset(&zero, 0, sizeof(zero));
        CHECK(memcmp(&cfg, &zero, sizeof(cfg)) == 0);
        corral_jail_config_release(&cfg);

        /* Only binds. */
        corral_jail_config_init(&cfg);
        for (int i = 0; i < 100; i++) {
                char spec[64];
                snprintf(spec, sizeof(spec), "/srv/%d:/mnt/%d", i, i);
                corral_jail_config_add_bind(&cfg, spec, i & 1, NULL);
        }
        CHECK_INT(cfg.n_binds, 100);
        corral_jail_config_release(&cfg);
        CHECK(cfg.binds == NULL && cfg.n_binds == 0);
}

/* Code as a server or `corral exec -c` gives it: the interpreter on
 * /run/corral/NAME, the arguments after; text only. */
TEST(set_code)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *args[] = { "a", "b c", NULL };
        CHECK(corral_jail_config_set_code(&cfg, "python", "main.py", "print(1)", 8, args, "the code", &err) == 0);
        CHECK(cfg.argv && cfg.argv[0] && strcmp(cfg.argv[0], "python3") == 0);
        CHECK_STR(cfg.argv[1], "/run/corral/main.py");
        CHECK_STR(cfg.argv[2], "a");
        CHECK_STR(cfg.argv[3], "b c");
        CHECK(cfg.argv[4] == NULL);
        CHECK_STR(cfg.script_name, "main.py");
        CHECK(cfg.script_len == 8 && memcmp(cfg.script, "print(1)", 8) == 0);
        CHECK(corral_jail_config_set_code(&cfg, "bash", "s.sh", "echo hi", 7, NULL, "s.sh", &err) == 0);
        CHECK_STR(cfg.argv[0], "bash");
        CHECK_STR(cfg.argv[1], "/run/corral/s.sh");
        CHECK(cfg.argv[2] == NULL);
        CHECK(corral_jail_config_set_code(&cfg, "python", "x.py", "a\0b", 3, NULL, "the code", &err) < 0);
        CHECK(err && err->kind == CORRAL_ERR_USAGE && strstr(err->msg, "the code contains a NUL byte"));
        corral_error_clear(&err);
        CHECK(corral_jail_config_set_code(&cfg, "python", "x.py", "\xff", 1, NULL, "'x.py'", &err) < 0);
        CHECK(err && strstr(err->msg, "'x.py' is not valid UTF-8"));
        corral_error_clear(&err);
        CHECK(corral_jail_config_set_code(&cfg, "ruby", "x.rb", "1", 1, NULL, "the code", &err) < 0);
        CHECK(err && strstr(err->msg, "unknown language 'ruby'"));
        corral_error_clear(&err);
        /* A failure leaves the last good program. */
        CHECK_STR(cfg.argv[1], "/run/corral/s.sh");
        CHECK_STR(corral_lang_from_name("dir/a.py"), "python");
        CHECK_STR(corral_lang_from_name("b.sh"), "bash");
        CHECK(corral_lang_from_name("c.txt") == NULL && corral_lang_from_name("py") == NULL);
        corral_jail_config_release(&cfg);
}

int main(void)
{
        RUN(defaults);
        RUN(set_argv);
        RUN(add_env);
        RUN(add_bind);
        RUN(set_script);
        RUN(set_code);
        RUN(validate);
        RUN(drop_unreachable_secrets);
        RUN(release);
        return DONE();
}
