/* premade-jails: pre-made jails of the library driven from a test
 * (tests/e2e/test_premade.py), before and beside the session host's pool.
 *
 *   premade-jails MADE CLAIM -- PROGRAM ARGS...
 *
 * MADE and CLAIM are profiles' texts (docs/profile.md): a jail is made in
 * advance with MADE, then claimed for PROGRAM with CLAIM.  Prints a JSON
 * line {"made_pid": P} once it is made (its init's pid on the host), then
 * {"made_pid": P, "misfit": null|"why", "rc": 0|-1|-2 (-3: not made),
 * "error": null|"...", "result": {...}|null}; the program's output is in
 * the result.  Status 0 whenever the line was printed.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jail-internal.h"

static int load(corral_jail_config *cfg, const char *text, const char *name, char **argv)
{
        corral_error *err = NULL;
        corral_jail_config_init(cfg);
        if (corral_jail_config_load_profile_text(cfg, text, strlen(text), name, &err) < 0 ||
            corral_jail_config_set_argv(cfg, argv, &err) < 0) {
                fprintf(stderr, "premade-jails: %s: %s\n", name, err ? err->msg : "?");
                return -1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc < 5 || strcmp(argv[3], "--") != 0) {
                fprintf(stderr, "usage: premade-jails MADE CLAIM -- PROGRAM ARGS...\n");
                return 2;
        }
        corral_jail_config made, claim;
        char *made_argv[] = { (char *)"/bin/true", NULL };
        if (load(&made, argv[1], "made", made_argv) < 0 || load(&claim, argv[2], "claim", argv + 4) < 0)
                return 2;
        corral_jail_result res;
        memset(&res, 0, sizeof(res));
        corral_error *err = NULL;
        struct jail_premade *pm = NULL;
        json_t *out = json_object();
        int rc;
        if (jail_premade_make(&made, &pm, &err) < 0) {
                rc = -3;
        } else {
                json_object_set_new(out, "made_pid", json_integer(jail_premade_pid(pm)));
                printf("{\"made_pid\": %d}\n", (int)jail_premade_pid(pm));
                fflush(stdout);
                const char *misfit = jail_premade_misfit(pm, &claim);
                json_object_set_new(out, "misfit", misfit ? json_string(misfit) : json_null());
                rc = jail_premade_run(pm, &claim, NULL, &res, &err);
        }
        json_object_set_new(out, "rc", json_integer(rc));
        json_object_set_new(out, "error", err ? json_string(err->msg) : json_null());
        char *r = rc == 0 ? corral_jail_result_to_json(&res) : NULL;
        json_object_set_new(out, "result", r ? json_loads(r, 0, NULL) : json_null());
        char *s = json_dumps(out, JSON_COMPACT);
        puts(s);
        free(s);
        free(r);
        json_decref(out);
        corral_error_free(err);
        corral_jail_result_release(&res);
        corral_jail_config_release(&made);
        corral_jail_config_release(&claim);
        return 0;
}
