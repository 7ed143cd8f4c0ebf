/* test-profile.c: JSON profiles (src/lib/profile.c).
 *
 * corral_jail_config_load_profile() on files written to a temporary
 * directory: a full profile, each key's wrong types, unknown and duplicate
 * keys (a typo must never drop a limit silently), then the round trip through
 * corral_jail_config_to_profile_json(). */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "jail-internal.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

static char tmp[256];
static int n_files;

/* Write text to a new file in tmp; returns its malloc'd path. */
static char *profile(const char *text)
{
        char *p = NULL;
        if (asprintf(&p, "%s/profile-%d.json", tmp, n_files++) < 0)
                abort();
        FILE *f = fopen(p, "we");
        if (f == NULL)
                abort();
        fputs(text, f);
        fclose(f);
        return p;
}

/* Load text into a default config; returns load_profile's result. */
static int load(const char *text, corral_jail_config *cfg, corral_error **err)
{
        cleanup_free char *p = profile(text);
        corral_jail_config_init(cfg);
        return corral_jail_config_load_profile(cfg, p, err);
}

static size_t strv_len(char **v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

static const char full[] = "{\n"
                           "  \"timeout\": 10,\n"
                           "  \"cpu_time\": \"5s\",\n"
                           "  \"memory\": \"256M\",\n"
                           "  \"pids\": 64,\n"
                           "  \"cpus\": 1.5,\n"
                           "  \"nofile\": 128,\n"
                           "  \"disk\": 1048576,\n"
                           "  \"output_limit\": \"64K\",\n"
                           "  \"net\": \"loopback\",\n"
                           "  \"rootfs\": \"/srv/img\",\n"
                           "  \"workspace\": \"/srv/ws\",\n"
                           "  \"require_cgroups\": true,\n"
                           "  \"env\": {\"FOO\": \"bar\", \"EMPTY\": \"\", \"UNI\": \"caf\\u00e9\"},\n"
                           "  \"binds\": [\n"
                           "    {\"src\": \"/data\", \"dst\": \"/mnt/data\", \"writable\": true},\n"
                           "    {\"src\": \"/opt/x\"},\n"
                           "    {\"src\": \"/opt/y\", \"dst\": \"/y/\", \"writable\": false}\n"
                           "  ]\n"
                           "}\n";

static void check_full(const corral_jail_config *cfg)
{
        CHECK(cfg->timeout_s == 10.0);
        CHECK(cfg->cpu_time_s == 5.0);
        CHECK(cfg->memory_bytes == 256ull << 20);
        CHECK(cfg->pids == 64);
        CHECK(cfg->cpus == 1.5);
        CHECK(cfg->nofile == 128);
        CHECK(cfg->disk_bytes == 1048576);
        CHECK(cfg->output_limit == 64 * 1024);
        CHECK(cfg->net == CORRAL_NET_NONE); /* "loopback": the old name of none */
        CHECK_STR(cfg->rootfs, "/srv/img");
        CHECK_STR(cfg->workspace, "/srv/ws");
        CHECK(cfg->require_cgroups);
        CHECK_INT(strv_len(cfg->env), 3);
        CHECK_STR(cfg->env ? cfg->env[0] : NULL, "FOO=bar");
        CHECK_STR(cfg->env ? cfg->env[1] : NULL, "EMPTY=");
        CHECK_STR(cfg->env ? cfg->env[2] : NULL, "UNI=caf\xc3\xa9");
        CHECK_INT(cfg->n_binds, 3);
        if (cfg->n_binds == 3) {
                CHECK_STR(cfg->binds[0].src, "/data");
                CHECK_STR(cfg->binds[0].dst, "/mnt/data");
                CHECK(cfg->binds[0].writable);
                CHECK_STR(cfg->binds[1].src, "/opt/x");
                CHECK_STR(cfg->binds[1].dst, "/opt/x");
                CHECK(!cfg->binds[1].writable);
                CHECK_STR(cfg->binds[2].src, "/opt/y");
                CHECK_STR(cfg->binds[2].dst, "/y");
                CHECK(!cfg->binds[2].writable);
        }
}

TEST(full_profile)
{
        corral_jail_config cfg;
        corral_error *err = NULL;
        CHECK_INT(load(full, &cfg, &err), 0);
        CHECK(err == NULL);
        if (err)
                printf("#   %s\n", err->msg);
        check_full(&cfg);
        /* argv is not part of a profile. */
        CHECK(cfg.argv == NULL);
        corral_jail_config_release(&cfg);
}

TEST(empty_profile_keeps_defaults)
{
        corral_jail_config cfg, def;
        corral_error *err = NULL;
        CHECK_INT(load("{}", &cfg, &err), 0);
        corral_jail_config_init(&def);
        CHECK(memcmp(&cfg, &def, sizeof(cfg)) == 0);
        corral_jail_config_release(&cfg);
        corral_jail_config_release(&def);
}

TEST(profile_on_top_of_config)
{
        /* A profile only changes the keys it names; env merges by NAME. */
        cleanup_free char *p = profile("{\"memory\": \"1G\", \"env\": {\"A\": \"from-profile\"}}");
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        cfg.pids = 7;
        corral_jail_config_add_env(&cfg, "A=old", NULL);
        corral_jail_config_add_env(&cfg, "B=kept", NULL);
        corral_error *err = NULL;
        CHECK_INT(corral_jail_config_load_profile(&cfg, p, &err), 0);
        CHECK(cfg.memory_bytes == 1ull << 30);
        CHECK(cfg.pids == 7);
        CHECK(cfg.timeout_s == 30.0);
        CHECK_INT(strv_len(cfg.env), 2);
        CHECK_STR(cfg.env[0], "A=from-profile");
        CHECK_STR(cfg.env[1], "B=kept");
        /* Loading twice replaces strings (no leak: ASan) and appends binds. */
        cleanup_free char *p2 = profile("{\"rootfs\": \"/a\", \"binds\": [{\"src\": \"/x\"}]}");
        CHECK_INT(corral_jail_config_load_profile(&cfg, p2, &err), 0);
        CHECK_INT(corral_jail_config_load_profile(&cfg, p2, &err), 0);
        CHECK_STR(cfg.rootfs, "/a");
        CHECK_INT(cfg.n_binds, 2);
        corral_jail_config_release(&cfg);
}

TEST(sizes_and_durations)
{
        struct {
                const char *json;
                uint64_t memory;
        } sizes[] = {
                { "{\"memory\": 268435456}", 256ull << 20 },  { "{\"memory\": \"256M\"}", 256ull << 20 },
                { "{\"memory\": \"256mb\"}", 256ull << 20 },  { "{\"memory\": \"0.5G\"}", 512ull << 20 },
                { "{\"memory\": 1}", 1 },                     { "{\"memory\": \"1\"}", 1 },
                { "{\"memory\": 9007199254740993}", 9007199254740993ull }, /* above 2^53: exact as an int */
        };
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
                corral_jail_config cfg;
                corral_error *err = NULL;
                printf("# %s\n", sizes[i].json);
                CHECK_INT(load(sizes[i].json, &cfg, &err), 0);
                CHECK(cfg.memory_bytes == sizes[i].memory);
                corral_error_free(err);
                corral_jail_config_release(&cfg);
        }
        struct {
                const char *json;
                double timeout;
        } secs[] = {
                { "{\"timeout\": 10}", 10 },      { "{\"timeout\": 0.25}", 0.25 }, { "{\"timeout\": \"250ms\"}", 0.25 },
                { "{\"timeout\": \"2m\"}", 120 }, { "{\"timeout\": \"30\"}", 30 },
        };
        for (size_t i = 0; i < ARRAY_SIZE(secs); i++) {
                corral_jail_config cfg;
                corral_error *err = NULL;
                printf("# %s\n", secs[i].json);
                CHECK_INT(load(secs[i].json, &cfg, &err), 0);
                CHECK(cfg.timeout_s == secs[i].timeout);
                corral_error_free(err);
                corral_jail_config_release(&cfg);
        }
}

struct bad_case {
        const char *json;
        const char *needle; /* in the message, besides the path */
};

TEST(errors)
{
        static const struct bad_case cases[] = {
                /* unknown and duplicate keys */
                { "{\"timeot\": 5}", "unknown key 'timeot'" },
                { "{\"memory\": \"1G\", \"Memory\": \"2G\"}", "unknown key 'Memory'" },
                { "{\"timeout\": 5,\n \"timeout\": 6}", "duplicate" },
                { "{\"env\": {\"A\": \"1\",\n \"A\": \"2\"}}", "duplicate" },
                /* not a JSON object, or not JSON */
                { "[]", "expected a JSON object" },
                { "\"timeout\"", "line 1" },
                { "", "line" },
                { "{\"timeout\": 5,}", "line" },
                { "{\"timeout\": 5} {}", "line" },
                /* wrong types and values */
                { "{\"timeout\": \"abc\"}", "'abc'" },
                { "{\"timeout\": true}", "'timeout'" },
                { "{\"timeout\": null}", "'timeout'" },
                { "{\"timeout\": 0}", "'timeout'" },
                { "{\"timeout\": -1}", "'timeout'" },
                { "{\"timeout\": [5]}", "'timeout'" },
                { "{\"cpu_time\": \"-1\"}", "'cpu_time'" },
                { "{\"memory\": \"12XB\"}", "'12XB'" },
                { "{\"memory\": 1.5}", "'memory'" },
                { "{\"memory\": 0}", "'memory'" },
                { "{\"memory\": -5}", "'memory'" },
                { "{\"memory\": {}}", "'memory'" },
                { "{\"disk\": \"\"}", "'disk'" },
                { "{\"output_limit\": false}", "'output_limit'" },
                { "{\"pids\": \"64\"}", "'pids'" },
                { "{\"pids\": 0}", "'pids'" },
                { "{\"pids\": 6.5}", "'pids'" },
                { "{\"nofile\": -1}", "'nofile'" },
                { "{\"cpus\": \"1\"}", "'cpus'" },
                { "{\"cpus\": 0}", "'cpus'" },
                { "{\"cpus\": -1}", "'cpus'" },
                { "{\"net\": \"wifi\"}", "'net'" },
                { "{\"net\": 1}", "'net'" },
                { "{\"net\": \"None\"}", "'net'" },
                { "{\"rootfs\": 5}", "'rootfs'" },
                { "{\"workspace\": null}", "'workspace'" },
                { "{\"require_cgroups\": \"yes\"}", "'require_cgroups'" },
                { "{\"require_cgroups\": 1}", "'require_cgroups'" },
                { "{\"env\": []}", "'env'" },
                { "{\"env\": \"A=1\"}", "'env'" },
                { "{\"env\": {\"A\": 1}}", "'A'" },
                { "{\"env\": {\"A\": null}}", "'A'" },
                { "{\"env\": {\"1X\": \"y\"}}", "invalid variable name '1X'" },
                { "{\"env\": {\"\": \"y\"}}", "invalid variable name ''" },
                { "{\"binds\": {}}", "'binds'" },
                { "{\"binds\": \"/data\"}", "'binds'" },
                { "{\"binds\": [5]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/data\", \"dst\": \"/x\", \"writeable\": true}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/data\", \"dest\": \"/x\"}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/data\", \"dst\": 5}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/a\"}, \"/b\"]}", "binds[1]" },
                { "{\"binds\": [{\"dst\": \"/x\"}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": 5}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/a\", \"writable\": \"yes\"}]}", "binds[0]" },
                { "{\"binds\": [{\"src\": \"/a\", \"dst\": \"/proc\"}]}", "managed by corral" },
                { "{\"binds\": [{\"src\": \"/a\", \"dst\": \"rel\"}]}", "absolute" },
                { "{\"binds\": [{\"src\": \"/a\", \"dst\": \"/x/../etc\"}]}", "'..'" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                corral_jail_config cfg;
                corral_error *err = NULL;
                cleanup_free char *p = profile(cases[i].json);
                printf("# %s\n", cases[i].json);
                corral_jail_config_init(&cfg);
                CHECK_INT(corral_jail_config_load_profile(&cfg, p, &err), -1);
                CHECK(err != NULL && err->kind == CORRAL_ERR_USAGE);
                CHECK(err != NULL && strstr(err->msg, cases[i].needle) != NULL);
                CHECK(err != NULL && strstr(err->msg, p) != NULL); /* names the file */
                if (err)
                        printf("#   -> %s\n", err->msg);
                corral_error_free(err);
                corral_jail_config_release(&cfg);
        }
}

TEST(syntax_errors_locate)
{
        /* jansson's position is passed on: line and column. */
        corral_jail_config cfg;
        corral_error *err = NULL;
        CHECK_INT(load("{\n  \"timeout\": 5,\n  \"timeout\": 6\n}\n", &cfg, &err), -1);
        CHECK(err != NULL && strstr(err->msg, "duplicate object key") != NULL);
        CHECK(err != NULL && strstr(err->msg, "line 3") != NULL);
        CHECK(err != NULL && strstr(err->msg, "column") != NULL);
        if (err)
                printf("#   -> %s\n", err->msg);
        corral_error_free(err);
        corral_jail_config_release(&cfg);

        err = NULL;
        CHECK_INT(load("{\n\n  \"memory\": }\n", &cfg, &err), -1);
        CHECK(err != NULL && strstr(err->msg, "line 3, column") != NULL);
        corral_error_free(err);
        corral_jail_config_release(&cfg);

        /* A missing file names the file. */
        err = NULL;
        corral_jail_config_init(&cfg);
        cleanup_free char *missing = NULL;
        if (asprintf(&missing, "%s/does-not-exist.json", tmp) < 0)
                abort();
        CHECK_INT(corral_jail_config_load_profile(&cfg, missing, &err), -1);
        CHECK(err != NULL && strstr(err->msg, missing) != NULL);
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

TEST(fixed_bugs)
{
        /* An env key with '=' becomes a different variable: {"A=B": "c"}
         * is added as "A=B=c", i.e. A with the value "B=c". */
        corral_jail_config cfg;
        corral_error *err = NULL;
        int r = load("{\"env\": {\"A=B\": \"c\"}}", &cfg, &err);
        CHECK(r == -1);
        corral_error_free(err);
        corral_jail_config_release(&cfg);

        /* A bind source containing ':' is re-split by add_bind's "SRC:DST":
         * {"src": "/srv:/opt", "dst": "/data"} binds host /srv at "/opt:/data". */
        err = NULL;
        r = load("{\"binds\": [{\"src\": \"/srv:/opt\", \"dst\": \"/data\"}]}", &cfg, &err);
        CHECK(r == -1 || (cfg.n_binds == 1 && strcmp(cfg.binds[0].src, "/srv:/opt") == 0));
        if (r == 0 && cfg.n_binds == 1)
                printf("#   src '%s' dst '%s'\n", cfg.binds[0].src, cfg.binds[0].dst);
        corral_error_free(err);
        corral_jail_config_release(&cfg);

        /* A positive but absurd timeout loads and validates; spawn.c then
         * converts it to time_t (UB for 1e300). */
        err = NULL;
        r = load("{\"timeout\": 1e300}", &cfg, &err);
        char *const argv[] = { "/bin/true", NULL };
        corral_jail_config_set_argv(&cfg, argv, NULL);
        CHECK(r == -1 || corral_jail_config_validate(&cfg, NULL) == -1);
        corral_error_free(err);
        corral_jail_config_release(&cfg);

        /* Sizes above INT64_MAX (which parse_size accepts up to 2^64) are
         * written as negative JSON integers, so the profile cannot be read
         * back: `corral exec --memory 8388607T --print-profile`. */
        err = NULL;
        r = load("{\"memory\": \"8388607T\"}", &cfg, &err);
        CHECK_INT(r, 0);
        cleanup_free char *json = corral_jail_config_to_profile_json(&cfg);
        corral_jail_config back;
        corral_jail_config_init(&back);
        r = json ? load(json, &back, &err) : -1;
        CHECK(r == 0 && back.memory_bytes == cfg.memory_bytes);
        corral_error_free(err);
        corral_jail_config_release(&back);
        corral_jail_config_release(&cfg);
}

/* Profile JSON -> config -> profile JSON -> config: both configs agree. */
static void round_trip(const char *text)
{
        corral_jail_config a, b;
        corral_error *err = NULL;
        CHECK_INT(load(text, &a, &err), 0);
        cleanup_free char *json = corral_jail_config_to_profile_json(&a);
        CHECK(json != NULL);
        if (json == NULL) {
                corral_jail_config_release(&a);
                return;
        }
        /* Valid JSON, an object, with the documented keys. */
        json_error_t jerr;
        json_t *o = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
        CHECK(json_is_object(o));
        static const char *const keys[] = { "timeout", "memory", "pids", "nofile", "disk",
                                            "output_limit", "net", "require_cgroups", "env", "binds" };
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                CHECK(json_object_get(o, keys[i]) != NULL);
        CHECK(json_is_object(json_object_get(o, "env")));
        CHECK(json_is_array(json_object_get(o, "binds")));
        json_decref(o);

        CHECK_INT(load(json, &b, &err), 0);
        if (err)
                printf("#   reload: %s\n", err->msg);
        CHECK(a.timeout_s == b.timeout_s);
        CHECK(a.cpu_time_s == b.cpu_time_s);
        CHECK(a.memory_bytes == b.memory_bytes);
        CHECK(a.pids == b.pids);
        CHECK(a.cpus == b.cpus);
        CHECK(a.nofile == b.nofile);
        CHECK(a.disk_bytes == b.disk_bytes);
        CHECK(a.output_limit == b.output_limit);
        CHECK(a.net == b.net);
        CHECK(a.require_cgroups == b.require_cgroups);
        CHECK((a.rootfs == NULL) == (b.rootfs == NULL) && (!a.rootfs || strcmp(a.rootfs, b.rootfs) == 0));
        CHECK((a.workspace == NULL) == (b.workspace == NULL) &&
              (!a.workspace || strcmp(a.workspace, b.workspace) == 0));
        CHECK_INT(strv_len(a.env), strv_len(b.env));
        for (size_t i = 0; i < strv_len(a.env) && i < strv_len(b.env); i++)
                CHECK_STR(a.env[i], b.env[i]);
        CHECK_INT(a.n_binds, b.n_binds);
        for (size_t i = 0; i < a.n_binds && i < b.n_binds; i++) {
                CHECK_STR(a.binds[i].src, b.binds[i].src);
                CHECK_STR(a.binds[i].dst, b.binds[i].dst);
                CHECK(a.binds[i].writable == b.binds[i].writable);
        }
        /* And the second serialisation is identical to the first. */
        cleanup_free char *json2 = corral_jail_config_to_profile_json(&b);
        CHECK_STR(json2, json);
        /* From the text (how `corral session start` hands a session to
         * the host): the same configuration. */
        corral_jail_config c;
        corral_jail_config_init(&c);
        CHECK_INT(corral_jail_config_load_profile_text(&c, json, strlen(json), "request", &err), 0);
        cleanup_free char *json3 = corral_jail_config_to_profile_json(&c);
        CHECK_STR(json3, json);
        corral_jail_config_release(&c);
        corral_error_free(err);
        corral_jail_config_release(&a);
        corral_jail_config_release(&b);
}

TEST(round_trips)
{
        round_trip(full);
        round_trip("{}");
        round_trip("{\"net\": \"host\", \"timeout\": 0.001, \"memory\": \"8388607T\"}");
        round_trip("{\"net\": \"none\", \"cpus\": 4096, \"cpu_time\": 0.5, \"pids\": 4194304}");
        round_trip("{\"net\": \"down\"}");
        round_trip("{\"env\": {\"Q\": \"\\\"quoted\\\" \\\\ and \\n newline\"}}");
        round_trip("{\"net\": \"allow=a.test,*.b.test:8443,[::1]:80\", \"resolve\": [\"a.test:127.0.0.2\"], "
                   "\"net_bytes\": \"64K\", \"net_conns\": 3}");

        /* The defaults as a profile. */
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        cleanup_free char *json = corral_jail_config_to_profile_json(&cfg);
        json_error_t jerr;
        json_t *o = json_loads(json ? json : "", 0, &jerr);
        CHECK(json_is_object(o));
        CHECK(json_real_value(json_object_get(o, "timeout")) == 30.0);
        CHECK(json_integer_value(json_object_get(o, "memory")) == 512ll << 20);
        CHECK(json_integer_value(json_object_get(o, "pids")) == 128);
        CHECK_STR(json_string_value(json_object_get(o, "net")), "none");
        CHECK(json_is_false(json_object_get(o, "require_cgroups")));
        CHECK(json_object_get(o, "cpu_time") == NULL); /* 0: not written */
        CHECK(json_object_get(o, "cpus") == NULL);
        CHECK(json_object_get(o, "rootfs") == NULL);
        CHECK(json_object_size(json_object_get(o, "env")) == 0);
        CHECK(json_array_size(json_object_get(o, "binds")) == 0);
        json_decref(o);
        corral_jail_config_release(&cfg);
}

/* The allow-list keys (docs/network.md): what the session wire carries. */
TEST(net_allow_keys)
{
        corral_jail_config cfg;
        corral_error *err = NULL;
        CHECK_INT(load("{\"net\": \"allow=A.test,*.b.test:8443\", \"resolve\": [\"a.test:127.0.0.2\"], "
                       "\"net_bytes\": \"64K\", \"net_conns\": 3}", &cfg, &err), 0);
        CHECK(cfg.net == CORRAL_NET_ALLOW);
        CHECK_INT(strv_len(cfg.net_allow), 2);
        CHECK_STR(cfg.net_allow ? cfg.net_allow[1] : NULL, "*.b.test:8443");
        CHECK_INT(strv_len(cfg.net_resolve), 1);
        CHECK(cfg.net_bytes == 64 * 1024 && cfg.net_conns == 3);
        cleanup_free char *json = corral_jail_config_to_profile_json(&cfg);
        json_t *o = json_loads(json ? json : "", 0, NULL);
        CHECK_STR(json_string_value(json_object_get(o, "net")), "allow=A.test,*.b.test:8443");
        CHECK_STR(json_string_value(json_array_get(json_object_get(o, "resolve"), 0)), "a.test:127.0.0.2");
        CHECK(json_integer_value(json_object_get(o, "net_conns")) == 3);
        json_decref(o);
        corral_jail_config_release(&cfg);
        static const char *const bad[][2] = {
                { "{\"net\": \"allow=\"}", "profile key 'net'" },
                { "{\"net\": \"allow=*.com\"}", "profile key 'net'" },
                { "{\"net\": \"allowed\"}", "expected none, down, host or \"allow=HOST[:PORT],...\"" },
                { "{\"resolve\": \"a.test:127.0.0.2\"}", "expected an array" },
                { "{\"resolve\": [\"a.test\"]}", "profile resolve[0]" },
                { "{\"resolve\": [1]}", "profile resolve[0]" },
                { "{\"net_conns\": 0}", "profile key 'net_conns'" },
                { "{\"net_bytes\": \"lots\"}", "profile key 'net_bytes'" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                err = NULL;
                CHECK_INT(load(bad[i][0], &cfg, &err), -1);
                CHECK(err && err->kind == CORRAL_ERR_USAGE && strstr(err->msg, bad[i][1]) != NULL);
                if (err && strstr(err->msg, bad[i][1]) == NULL)
                        printf("#   %s -> %s\n", bad[i][0], err->msg);
                corral_error_free(err);
                corral_jail_config_release(&cfg);
        }
}

TEST(profile_text_errors)
{
        static const char *const bad[][2] = {
                { "{\"memory\": -1}", "profile key 'memory'" },
                { "{\"timeout\": 1, \"timeout\": 2}", "duplicate" },
                { "[1]", "expected a JSON object" },
                { "{\"memroy\": \"1G\"}", "memroy" },
                { "{", "cannot read profile 'request'" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                corral_jail_config cfg;
                corral_jail_config_init(&cfg);
                corral_error *err = NULL;
                CHECK_INT(corral_jail_config_load_profile_text(&cfg, bad[i][0], strlen(bad[i][0]), "request", &err), -1);
                CHECK(err && err->kind == CORRAL_ERR_USAGE && strstr(err->msg, bad[i][1]) != NULL);
                if (err && strstr(err->msg, bad[i][1]) == NULL)
                        printf("#   %s -> %s\n", bad[i][0], err->msg);
                corral_error_free(err);
                corral_jail_config_release(&cfg);
        }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

int main(void)
{
        snprintf(tmp, sizeof(tmp), "%s/corral-test-profile-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(tmp) == NULL) {
                printf("Bail out! cannot create a temporary directory: %s\n", strerror(errno));
                return 1;
        }
        RUN(full_profile);
        RUN(empty_profile_keeps_defaults);
        RUN(profile_on_top_of_config);
        RUN(sizes_and_durations);
        RUN(errors);
        RUN(syntax_errors_locate);
        RUN(fixed_bugs);
        RUN(round_trips);
        RUN(net_allow_keys);
        RUN(profile_text_errors);
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return DONE();
}
