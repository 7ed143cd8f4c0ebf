/* result.c: names for result enums and the schema-1 JSON form of a result,
 * and of a run that could not start, so that every front end prints the same
 * object.  The JSON only ever gains fields (docs/exec-json.md).  Program output may be
 * any bytes: invalid UTF-8 and NUL become U+FFFD, so the object is always
 * valid JSON. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "jail-internal.h"

const char *corral_status_to_string(enum corral_status s)
{
        switch (s) {
        case CORRAL_STATUS_OK:
                return "ok";
        case CORRAL_STATUS_ERROR:
                return "error";
        case CORRAL_STATUS_TIMEOUT:
                return "timeout";
        case CORRAL_STATUS_OOM:
                return "oom";
        case CORRAL_STATUS_KILLED:
                return "killed";
        default:
                break;
        }
        return "error";
}

const char *corral_limit_to_string(enum corral_limit l)
{
        switch (l) {
        case CORRAL_LIMIT_NONE:
                return NULL;
        case CORRAL_LIMIT_WALL_TIME:
                return "wall-time";
        case CORRAL_LIMIT_CPU_TIME:
                return "cpu-time";
        case CORRAL_LIMIT_MEMORY:
                return "memory";
        case CORRAL_LIMIT_PIDS:
                return "pids";
        case CORRAL_LIMIT_SECCOMP:
                return "seccomp";
        case CORRAL_LIMIT_FILE_SIZE:
                return "file-size";
        case CORRAL_LIMIT_SIGNAL:
                return "signal";
        case CORRAL_LIMIT_CANCELLED:
                return "cancelled";
        default:
                break;
        }
        return NULL;
}

const char *corral_limits_backend_to_string(enum corral_limits_backend b)
{
        switch (b) {
        case CORRAL_BACKEND_CGROUP_V2:
                return "cgroup-v2";
        case CORRAL_BACKEND_CGROUP_V1:
                return "cgroup-v1";
        case CORRAL_BACKEND_RLIMIT:
                return "rlimit";
        default:
                break;
        }
        return "rlimit";
}

static json_t *text(const char *data, size_t len)
{
        if (data == NULL)
                return json_string("");
        size_t n;
        char *clean = utf8_sanitize(data, len, &n);
        if (clean == NULL)
                return NULL;
        json_t *s = json_stringn_nocheck(clean, n);
        free(clean);
        return s;
}

static json_t *ms(double v)
{
        if (!isfinite(v) || v > 1e15 || v < -1e15)
                return json_null(); /* cannot happen with monotonic times; never fail the object */
        return json_real(round_ms(v));
}

static json_t *net_conn_json(const struct corral_net_conn *c)
{
        const char *h = c->host ? c->host : "", *m = c->method ? c->method : "";
        return json_pack("{s:o, s:i, s:o, s:b, s:b, s:o, s:o, s:I, s:I, s:o}", "host", text(h, strlen(h)), "port",
                         (int)c->port, "method", text(m, strlen(m)), "allowed", c->allowed, "brokered", c->brokered,
                         "reason",
                         c->reason ? text(c->reason, strlen(c->reason)) : json_null(), "address",
                         c->address ? text(c->address, strlen(c->address)) : json_null(), "bytes_up",
                         (json_int_t)c->bytes_up, "bytes_down", (json_int_t)c->bytes_down, "ms", ms(c->ms));
}

char *corral_net_conn_to_json(const struct corral_net_conn *c)
{
        json_t *o = net_conn_json(c);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
        json_decref(o);
        return s;
}

json_t *jail_result_object(const corral_jail_result *r)
{
        const char *limit = corral_limit_to_string(r->limit);
        json_t *phases = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "prepare", ms(r->phases.prepare), "clone",
                                   ms(r->phases.clone), "mounts", ms(r->phases.mounts), "exec", ms(r->phases.exec),
                                   "seccomp", ms(r->phases.seccomp), "teardown", ms(r->phases.teardown));
        json_t *o = json_pack("{s:i, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:b, s:b, s:I, s:I, s:o, s:o, s:I, s:s, s:o}",
                              "schema", 1, "status", corral_status_to_string(r->status), "exit_code", r->exit_code,
                              "signal", r->signal ? json_integer(r->signal) : json_null(), "reason",
                              r->reason ? text(r->reason, strlen(r->reason)) : json_null(), "limit",
                              limit ? json_string(limit) : json_null(), "stdout", text(r->stdout_buf, r->stdout_len),
                              "stderr", text(r->stderr_buf, r->stderr_len), "stdout_truncated", r->stdout_truncated,
                              "stderr_truncated", r->stderr_truncated, "stdout_bytes", (json_int_t)r->stdout_total,
                              "stderr_bytes", (json_int_t)r->stderr_total, "wall_ms", ms(r->wall_ms), "cpu_ms",
                              ms(r->cpu_ms), "memory_peak_bytes", (json_int_t)r->memory_peak_bytes, "limits_backend",
                              corral_limits_backend_to_string(r->backend), "phases", phases);
        if (o == NULL)
                return NULL;
        if (r->limit == CORRAL_LIMIT_SECCOMP && r->seccomp_syscall_name)
                json_object_set_new(o, "syscall", text(r->seccomp_syscall_name, strlen(r->seccomp_syscall_name)));
        if (r->n_denied > 0) {
                json_t *d = json_array();
                for (size_t i = 0; d && i < r->n_denied; i++)
                        json_array_append_new(d, text(r->denied[i], strlen(r->denied[i])));
                json_object_set_new(o, "denied", d);
        }
        if (r->net_proxy) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < r->n_network; i++)
                        json_array_append_new(a, net_conn_json(&r->network[i]));
                json_object_set_new(o, "network", a);
                if (r->network_dropped)
                        json_object_set_new(o, "network_dropped", json_integer((json_int_t)r->network_dropped));
        }
        return o;
}

char *corral_jail_result_to_json(const corral_jail_result *r)
{
        json_t *o = jail_result_object(r);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
        json_decref(o);
        return s;
}

char *corral_jail_failure_to_json(const corral_error *err, const char *message)
{
        const char *msg = message ? message : err ? err->msg : "unknown error";
        json_t *o = json_pack("{s:i, s:s, s:i, s:s, s:{s:s, s:s, s:s?}}", "schema", 1, "status", "failed",
                              "exit_code", /* the CLI's EXIT_CORRAL */ 125, "reason", msg, "error", "kind",
                              corral_error_kind_to_string(err ? err->kind : 0), "message", msg, "field",
                              err ? err->field : NULL);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return s;
}

/* ---- back from JSON (a pooled jail's result, sent by the session host) ---- */

static double num(const json_t *o, const char *key)
{
        const json_t *v = json_object_get(o, key);
        return json_is_number(v) ? json_number_value(v) : 0;
}

static char *dup_string(const json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s ? strdup(s) : NULL;
}

int jail_result_from_json(const json_t *o, corral_jail_result *r)
{
        memset(r, 0, sizeof(*r));
        const char *status = json_string_value(json_object_get(o, "status"));
        const char *limit = json_string_value(json_object_get(o, "limit"));
        const char *backend = json_string_value(json_object_get(o, "limits_backend"));
        if (!json_is_object(o) || status == NULL || backend == NULL)
                return -1;
        bool known = false;
        for (int s = CORRAL_STATUS_OK; s <= CORRAL_STATUS_KILLED && !known; s++)
                if (strcmp(status, corral_status_to_string((enum corral_status)s)) == 0) {
                        r->status = (enum corral_status)s;
                        known = true;
                }
        for (int l = CORRAL_LIMIT_WALL_TIME; limit && l <= CORRAL_LIMIT_CANCELLED; l++)
                if (strcmp(limit, corral_limit_to_string((enum corral_limit)l)) == 0)
                        r->limit = (enum corral_limit)l;
        r->backend = CORRAL_BACKEND_RLIMIT;
        for (int b = CORRAL_BACKEND_CGROUP_V2; b <= CORRAL_BACKEND_RLIMIT; b++)
                if (strcmp(backend, corral_limits_backend_to_string((enum corral_limits_backend)b)) == 0)
                        r->backend = (enum corral_limits_backend)b;
        if (!known || (limit && r->limit == CORRAL_LIMIT_NONE))
                return -1;
        r->exit_code = (int)num(o, "exit_code");
        r->signal = (int)num(o, "signal");
        r->reason = dup_string(o, "reason");
        r->wall_ms = num(o, "wall_ms");
        r->cpu_ms = num(o, "cpu_ms");
        r->memory_peak_bytes = (uint64_t)num(o, "memory_peak_bytes");
        r->seccomp_syscall_name = dup_string(o, "syscall");
        const json_t *ph = json_object_get(o, "phases");
        r->phases = (struct corral_jail_phases){ .prepare = num(ph, "prepare"), .clone = num(ph, "clone"),
                                                 .mounts = num(ph, "mounts"), .seccomp = num(ph, "seccomp"),
                                                 .exec = num(ph, "exec"), .teardown = num(ph, "teardown") };
        const json_t *denied = json_object_get(o, "denied");
        size_t n = json_is_array(denied) ? json_array_size(denied) : 0;
        r->denied = n ? calloc(n, sizeof(*r->denied)) : NULL;
        for (size_t i = 0; r->denied && i < n; i++) {
                const char *s = json_string_value(json_array_get(denied, i));
                if (s && (r->denied[r->n_denied] = strdup(s)) != NULL)
                        r->n_denied++;
        }
        return 0;
}
