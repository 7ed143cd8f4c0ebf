/* fuzz-profile.c: JSON profiles (src/lib/profile.c), read from a memfd by
 * its /proc/self/fd path as from any file.
 *
 * Each input is loaded into a fresh default config, which is then validated
 * and printed with corral_jail_config_to_profile_json(), whatever the load
 * did.  Invariants: no crash or leak; a failed load sets an error with a
 * message; the printed profile is always produced and is a JSON object.  When
 * the profile loaded and the config validated, the printed profile must load
 * again into a fresh config with the same limits, paths, environment and
 * binds, validate, and print the same text (a fixed point). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "jail-internal.h"

static void config_fresh(corral_jail_config *cfg)
{
        static char *const argv[] = { "true", NULL };
        corral_jail_config_init(cfg);
        FUZZ_ASSERT(corral_jail_config_set_argv(cfg, argv, NULL) == 0);
}

/* Load text as a profile into a fresh config; returns load_profile's result. */
static int load(const void *text, size_t len, corral_jail_config *cfg, corral_error **err)
{
        char path[64];
        int fd = fuzz_memfd("profile", text, len, path, sizeof(path));
        config_fresh(cfg);
        int r = corral_jail_config_load_profile(cfg, path, err);
        close(fd);
        FUZZ_ASSERT(r == 0 || r == -1, "load_profile returned %d", r);
        if (r < 0)
                FUZZ_ASSERT(*err != NULL && (*err)->msg != NULL && (*err)->msg[0] != '\0', "no error message");
        else
                FUZZ_ASSERT(*err == NULL, "error set on success: %s", (*err)->msg);
        return r;
}

static bool str_eq(const char *a, const char *b)
{
        return a == b || (a && b && strcmp(a, b) == 0);
}

static void check_same(const corral_jail_config *a, const corral_jail_config *b)
{
        FUZZ_ASSERT(a->timeout_s == b->timeout_s, "timeout %.17g != %.17g", a->timeout_s, b->timeout_s);
        FUZZ_ASSERT(a->cpu_time_s == b->cpu_time_s, "cpu_time %.17g != %.17g", a->cpu_time_s, b->cpu_time_s);
        FUZZ_ASSERT(a->cpus == b->cpus, "cpus %.17g != %.17g", a->cpus, b->cpus);
        FUZZ_ASSERT(a->memory_bytes == b->memory_bytes);
        FUZZ_ASSERT(a->pids == b->pids);
        FUZZ_ASSERT(a->nofile == b->nofile);
        FUZZ_ASSERT(a->disk_bytes == b->disk_bytes);
        FUZZ_ASSERT(a->output_limit == b->output_limit);
        FUZZ_ASSERT(a->net == b->net);
        FUZZ_ASSERT(a->require_cgroups == b->require_cgroups);
        FUZZ_ASSERT(str_eq(a->rootfs, b->rootfs), "rootfs '%s' != '%s'", a->rootfs, b->rootfs);
        FUZZ_ASSERT(str_eq(a->workspace, b->workspace), "workspace '%s' != '%s'", a->workspace, b->workspace);
        size_t i = 0;
        for (; a->env && a->env[i]; i++)
                FUZZ_ASSERT(b->env && str_eq(a->env[i], b->env[i]), "env[%zu] '%s' differs", i, a->env[i]);
        FUZZ_ASSERT(b->env == NULL || b->env[i] == NULL, "env has more entries after the round trip");
        FUZZ_ASSERT(a->n_binds == b->n_binds, "%zu binds became %zu", a->n_binds, b->n_binds);
        for (i = 0; i < a->n_binds; i++) {
                FUZZ_ASSERT(str_eq(a->binds[i].src, b->binds[i].src), "binds[%zu].src differs", i);
                FUZZ_ASSERT(str_eq(a->binds[i].dst, b->binds[i].dst), "binds[%zu].dst differs", i);
                FUZZ_ASSERT(a->binds[i].writable == b->binds[i].writable);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        corral_jail_config cfg;
        corral_error *err = NULL;
        int loaded = load(data, size, &cfg, &err);
        corral_error_clear(&err);

        int valid = corral_jail_config_validate(&cfg, &err);
        FUZZ_ASSERT(valid == 0 || (valid == -1 && err != NULL && err->msg != NULL), "validate returned %d", valid);
        corral_error_clear(&err);

        char *printed = corral_jail_config_to_profile_json(&cfg);
        FUZZ_ASSERT(printed != NULL, "to_profile_json returned NULL");
        json_error_t jerr;
        json_t *o = json_loads(printed, JSON_REJECT_DUPLICATES, &jerr);
        FUZZ_ASSERT(json_is_object(o), "printed profile does not parse: %s\n%s", jerr.text, printed);
        json_decref(o);

        if (loaded == 0 && valid == 0) {
                corral_jail_config again;
                int r = load(printed, strlen(printed), &again, &err);
                FUZZ_ASSERT(r == 0, "printed profile does not load: %s\n%s", err ? err->msg : "?", printed);
                check_same(&cfg, &again);
                FUZZ_ASSERT(corral_jail_config_validate(&again, &err) == 0, "reloaded config does not validate: %s",
                            err ? err->msg : "?");
                char *printed2 = corral_jail_config_to_profile_json(&again);
                FUZZ_ASSERT(printed2 != NULL && strcmp(printed, printed2) == 0, "not a fixed point:\n%s\n---\n%s",
                            printed, printed2 ? printed2 : "(null)");
                free(printed2);
                corral_jail_config_release(&again);
        }
        free(printed);
        corral_jail_config_release(&cfg);
        return 0;
}
