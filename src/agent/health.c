/* health.c: the host report (health.h), gathered from each module's
 * checks; nothing here probes or prints. */
#include "../lib/probe.h"
#include "../model/model.h"
#include "../session/client.h"
#include "../trace/cmark-dl.h"
#include "../workspace/archive-dl.h"
#include "health.h"

json_t *health_report(void)
{
        json_t *checks = json_array();
        json_t *report = json_pack("{s:o,s:o}", "host", probe_host(), "checks", checks);
        if (report == NULL)
                return NULL;
        bool ran = probe_jail(checks);
        if (ran) {
                probe_python(checks);
                probe_net_proxy(checks);
        }
        model_probe_library(checks);
        archive_probe(checks);
        cmark_probe(checks);
        probe_openssl(checks);
        model_probe(checks);
        session_client_probe(checks);
        json_object_set_new(report, "can_run", json_boolean(ran));
        return report;
}
