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
 * the result.  Status 0 whenever the line was printed.  With
 * PREMADE_HAND_OUT=1 in the environment the output is read as a claimant
 * over host.sock would: the pipes taken out of the jail
 * (jail_premade_take_output()) and read by another thread
 * (jail_output_pump()), the result's output fields from that.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

struct pump {
        int out, err;
        const corral_jail_config *cfg;
        corral_jail_result res;
        int rc;
};

static void *pump_thread(void *arg)
{
        struct pump *p = arg;
        p->rc = jail_output_pump(p->out, p->err, -1, p->cfg, NULL, -1, &p->res, NULL);
        close(p->out);
        close(p->err);
        return NULL;
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
                const char *hand = getenv("PREMADE_HAND_OUT");
                struct pump pump = { .cfg = &claim, .rc = -1 };
                pthread_t th;
                bool handed = hand && strcmp(hand, "1") == 0;
                if (handed) {
                        jail_premade_take_output(pm, &pump.out, &pump.err);
                        if (pthread_create(&th, NULL, pump_thread, &pump) != 0)
                                return 1;
                }
                rc = jail_premade_run(pm, &claim, NULL, &res, &err);
                jail_premade_free(pm);
                if (handed) {
                        pthread_join(th, NULL);
                        if (pump.rc < 0)
                                return 1;
                        /* the pump's output fields, the jail's everything else */
                        free(res.stdout_buf);
                        free(res.stderr_buf);
                        res.stdout_buf = pump.res.stdout_buf;
                        res.stderr_buf = pump.res.stderr_buf;
                        res.stdout_len = pump.res.stdout_len;
                        res.stderr_len = pump.res.stderr_len;
                        res.stdout_total = pump.res.stdout_total;
                        res.stderr_total = pump.res.stderr_total;
                        res.stdout_truncated = pump.res.stdout_truncated;
                        res.stderr_truncated = pump.res.stderr_truncated;
                }
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
