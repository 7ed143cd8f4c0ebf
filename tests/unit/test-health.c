/* test-health.c: the host report (src/agent/health.h) and its checks
 * (src/lib/probe.h): the shape a server's GET /health serves, whatever
 * this host offers. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/health.h"
#include "../../src/lib/probe.h"
#include "harness.h"

TEST(probe_add)
{
        json_t *checks = json_array();
        json_t *c = probe_add(checks, "x", true, "ok", "found", "do this");
        CHECK(c != NULL && json_array_size(checks) == 1);
        CHECK(json_object_get(c, "advice") == NULL); /* advice only when not ok */
        CHECK(json_is_true(json_object_get(c, "ok")));
        c = probe_add(checks, "y", false, "missing", NULL, "do this");
        CHECK_STR(json_string_value(json_object_get(c, "advice")), "do this");
        CHECK_STR(json_string_value(json_object_get(c, "detail")), "");
        CHECK_STR(json_string_value(json_object_get(c, "state")), "missing");
        json_decref(checks);
}

static bool known_state(const char *s)
{
        static const char *const states[] = { "ok", "missing", "none", "yes", "fast", "slow", NULL };
        for (size_t i = 0; s && states[i]; i++)
                if (strcmp(s, states[i]) == 0)
                        return true;
        return false;
}

TEST(report_shape)
{
        /* no model configured, nowhere to find one */
        setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", 1);
        setenv("CORRAL_MODEL", "gpt-test", 1);
        json_t *r = health_report();
        CHECK(json_is_object(r));
        CHECK(json_is_string(json_object_get(json_object_get(r, "host"), "release")));
        CHECK(json_is_integer(json_object_get(json_object_get(r, "host"), "uid")));
        json_t *checks = json_object_get(r, "checks");
        CHECK(json_array_size(checks) >= 10);
        CHECK_STR(json_string_value(json_object_get(json_array_get(checks, 0), "name")), "user namespaces");
        size_t i;
        json_t *c, *jail = NULL, *model = NULL, *python = NULL;
        json_array_foreach (checks, i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                const char *state = json_string_value(json_object_get(c, "state"));
                bool ok = json_is_true(json_object_get(c, "ok"));
                CHECK(name && json_is_boolean(json_object_get(c, "ok")) && known_state(state) &&
                      json_is_string(json_object_get(c, "detail")));
                CHECK(!ok || json_object_get(c, "advice") == NULL);
                CHECK(!ok || strcmp(state, "missing") != 0);
                if (name && strcmp(name, "jail") == 0)
                        jail = c;
                if (name && strcmp(name, "model") == 0)
                        model = c;
                if (name && strcmp(name, "python in a jail") == 0)
                        python = c;
        }
        CHECK(jail != NULL);
        CHECK(json_is_true(json_object_get(r, "can_run")) == json_is_true(json_object_get(jail, "ok")));
        CHECK((python != NULL) == json_is_true(json_object_get(r, "can_run")));
        /* the configured model, which does not answer: missing, with advice */
        CHECK(model != NULL);
        CHECK_STR(json_string_value(json_object_get(model, "model")), "gpt-test");
        CHECK_STR(json_string_value(json_object_get(model, "state")), "missing");
        CHECK(json_is_string(json_object_get(model, "advice")));
        json_decref(r);
}

int main(void)
{
        RUN(probe_add);
        RUN(report_shape);
        return DONE();
}
