/* sandbox.c: the sandboxes of a server and whose they are (docs/api.md,
 * "Sandboxes").  A sandbox is a session of the server's own session host
 * (session/host.h), named by the host's id; the server adds its owner,
 * the caller's metadata and the caps: in all, per token, and each limit no
 * higher than the server's own (`corral serve --profile`). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../session/warm.h"
#include "e2b.h"
#include "server-internal.h"

/* The host calls this when a session has ended on its own (idle timeout,
 * lifetime): its sandbox leaves the registry. */
static void on_session_end(void *userdata, const char *id)
{
        struct server *s = userdata;
        struct sandbox *gone = NULL;
        pthread_mutex_lock(&s->lock);
        for (struct sandbox **p = &s->sandboxes; *p; p = &(*p)->next) {
                if (strcmp((*p)->id, id) != 0)
                        continue;
                atomic_store(&(*p)->session_ended, true);
                s->n_sandboxes--;
                if ((*p)->pausing)
                        break; /* stopped to be paused: it stays, without a session */
                gone = *p;
                *p = gone->next;
                s->sandboxes_of[gone->owner]--;
                break;
        }
        pthread_mutex_unlock(&s->lock);
        if (gone)
                sandbox_put(s, gone);
}

/* The host ends a session only when asked to look (session_host_expire()):
 * this thread asks at each deadline, and at once when one moved; MCP's
 * idle sessions too (mcp_http_expire()). */
static void *expire_thread(void *arg)
{
        struct server *s = arg;
        for (;;) {
                double next = min_double(session_host_expire(s->host), mcp_http_expire(s)) - monotonic_ms();
                struct pollfd p[2] = { { .fd = s->stop_fd, .events = POLLIN },
                                       { .fd = s->expire_wake_fd, .events = POLLIN } };
                int r = poll(p, 2, next > 60000 ? 60000 : next < 0 ? 0 : (int)next + 1);
                if (r > 0 && p[0].revents)
                        return NULL;
                uint64_t n;
                if (r > 0 && p[1].revents && read(s->expire_wake_fd, &n, sizeof(n)) < 0) {
                        /* another wake-up drained it first */
                }
        }
}

void sandboxes_expiry_moved(struct server *s)
{
        uint64_t one = 1;
        if (write(s->expire_wake_fd, &one, sizeof(one)) < 0) {
                /* an eventfd's counter does not overflow from this */
        }
}

int sandboxes_init(struct server *s, corral_error **ret_err)
{
        size_t n = auth_count(s->auth);
        s->sandboxes_of = calloc(n, sizeof(unsigned));
        s->steps_of = calloc(n, sizeof(unsigned));
        s->bucket = calloc(n, sizeof(double));
        s->bucket_ms = calloc(n, sizeof(double));
        if (s->sandboxes_of == NULL || s->steps_of == NULL || s->bucket == NULL || s->bucket_ms == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start the server");
        struct session_host_options ho = { .on_session_end = on_session_end, .userdata = s };
        if (session_host_new(&ho, &s->host, ret_err) < 0)
                return -1;
        s->expire_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->expire_wake_fd < 0 || pthread_create(&s->expirer, NULL, expire_thread, s) != 0)
                return corral_fail(ret_err, errno ? errno : EAGAIN, "cannot start the server's expiry thread");
        s->expirer_started = true;
        return 0;
}

static void sandbox_free(struct sandbox *sb)
{
        e2b_sandbox_free(sb->e2b);
        if (sb->archive)
                unlink(sb->archive);
        free(sb->archive);
        corral_jail_config_release(&sb->cfg);
        json_decref(sb->metadata);
        json_decref(sb->limits);
        free(sb->workspace);
        if (sb->interrupt_fd >= 0)
                close(sb->interrupt_fd);
        free(sb);
}

void sandbox_put(struct server *s, struct sandbox *sb)
{
        if (sb == NULL)
                return;
        pthread_mutex_lock(&s->lock);
        bool last = --sb->refs == 0;
        pthread_mutex_unlock(&s->lock);
        if (last)
                sandbox_free(sb);
}

void sandboxes_end(struct server *s)
{
        if (s->expirer_started) {
                uint64_t one = 1;
                if (write(s->stop_fd, &one, sizeof(one)) < 0) {
                        /* an eventfd written once does not fail */
                }
                pthread_join(s->expirer, NULL);
                s->expirer_started = false;
        }
        if (s->expire_wake_fd > 0)
                close(TAKE_FD(s->expire_wake_fd));
        if (s->host) {
                /* Every session stopped; on_session_end() empties the list. */
                session_host_free(s->host);
                s->host = NULL;
        }
        pthread_mutex_lock(&s->lock);
        struct sandbox *left = TAKE_PTR(s->sandboxes);
        pthread_mutex_unlock(&s->lock);
        while (left) {
                struct sandbox *next = left->next;
                sandbox_put(s, left);
                left = next;
        }
        free(TAKE_PTR(s->sandboxes_of));
        free(TAKE_PTR(s->steps_of));
        free(TAKE_PTR(s->bucket));
        free(TAKE_PTR(s->bucket_ms));
}

/* ---- creating one ---- */

/* The keys of a sandbox's "limits" a caller may set: a profile's
 * (docs/profile.md) without its host paths (rootfs, workspace, binds). */
static const char *const limit_keys[] = { "timeout", "cpu_time", "memory", "disk", "output_limit",
                                          "pids", "nofile", "cpus", "net", "env", "net_bytes", "net_conns" };

/* lim over the server's own limits: each no higher. */
static int check_ceiling(const corral_jail_config *max, const corral_jail_config *c, corral_error **ret_err)
{
#define ABOVE(field, name, fmt, cast)                                                                                  \
        if (max->field > 0 && (c->field > max->field || c->field == 0))                                                \
                return corral_usage_field(ret_err, "limits", "limits." name " may be at most " fmt " on this server", \
                                          (cast)max->field);
        ABOVE(timeout_s, "timeout", "%g s", double)
        ABOVE(cpu_time_s, "cpu_time", "%g s", double)
        ABOVE(memory_bytes, "memory", "%ju bytes", uintmax_t)
        ABOVE(disk_bytes, "disk", "%ju bytes", uintmax_t)
        ABOVE(output_limit, "output_limit", "%ju bytes", uintmax_t)
        ABOVE(pids, "pids", "%ju", uintmax_t)
        ABOVE(nofile, "nofile", "%ju", uintmax_t)
        ABOVE(cpus, "cpus", "%g", double)
        ABOVE(net_bytes, "net_bytes", "%ju bytes", uintmax_t)
        ABOVE(net_conns, "net_conns", "%ju", uintmax_t)
#undef ABOVE
        if (c->net == CORRAL_NET_HOST && max->net != CORRAL_NET_HOST)
                return corral_usage_field(ret_err, "limits", "limits.net may be none or down on this server");
        return 0;
}

/* limits.net onto cfg (the server's copy, its allow-list and resolve map
 * included): "none", "down", or with a server started with an allow-list,
 * "allow" (the server's list) or "allow=A,B" (entries of the server's list,
 * spelt as there, without case).  A caller never widens the server's list
 * nor maps a name to an address (resolve is the operator's). */
static int apply_net(const corral_jail_config *max, corral_jail_config *cfg, json_t *net, corral_error **ret_err)
{
        const char *v = json_string_value(net);
        if (v && (strcmp(v, "none") == 0 || strcmp(v, "loopback") == 0 || strcmp(v, "down") == 0)) {
                cfg->net = v[0] == 'd' ? CORRAL_NET_DOWN : CORRAL_NET_NONE;
                return 0;
        }
        bool allow = v && (strcmp(v, "allow") == 0 || strncmp(v, "allow=", 6) == 0);
        if (!allow)
                return corral_usage_field(ret_err, "limits", "limits.net may be none or down%s on this server",
                                          max->net == CORRAL_NET_ALLOW ? ", \"allow\" or \"allow=HOST[:PORT],...\""
                                                                       : "");
        if (max->net != CORRAL_NET_ALLOW)
                return corral_usage_field(ret_err, "limits", "limits.net may be none or down on this server: it "
                                                             "was started without a network allow-list");
        cfg->net = CORRAL_NET_ALLOW;
        if (v[5] == '\0')
                return 0;
        cleanup_free char *list = strdup(v + 6);
        if (list == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the limits");
        size_t n = 0, cap = 1;
        for (const char *p = list; *p; p++)
                cap += *p == ',';
        char **mine = calloc(cap + 1, sizeof(char *));
        if (mine == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read the limits");
        char *save = NULL;
        int rc = 0;
        for (char *e = strtok_r(list, ",", &save); e && rc == 0; e = strtok_r(NULL, ",", &save)) {
                e += strspn(e, " ");
                const char *found = NULL;
                for (size_t i = 0; max->net_allow && max->net_allow[i] && !found; i++)
                        if (strcasecmp(max->net_allow[i], e) == 0)
                                found = max->net_allow[i];
                if (found == NULL)
                        rc = corral_usage_field(ret_err, "limits", "limits.net: '%s' is not on this server's "
                                                                   "allow-list", e);
                else if ((mine[n++] = strdup(found)) == NULL)
                        rc = corral_fail(ret_err, ENOMEM, "cannot read the limits");
        }
        if (rc == 0 && n == 0)
                rc = corral_usage_field(ret_err, "limits", "limits.net: \"allow=\" names no host");
        if (rc < 0) {
                for (size_t i = 0; i < n; i++)
                        free(mine[i]);
                free(mine);
                return rc;
        }
        for (size_t i = 0; cfg->net_allow && cfg->net_allow[i]; i++)
                free(cfg->net_allow[i]);
        free(cfg->net_allow);
        cfg->net_allow = mine;
        return 0;
}

/* The body's "limits" onto cfg (the server's copy). */
int sandbox_apply_limits(struct server *s, corral_jail_config *cfg, json_t *limits, corral_error **ret_err)
{
        if (limits == NULL)
                return 0;
        if (!json_is_object(limits))
                return corral_usage_field(ret_err, "limits", "limits must be an object");
        if (fields_known(limits, limit_keys, ARRAY_SIZE(limit_keys), "limits.", "a limit a sandbox may set", "limits",
                         ret_err) < 0)
                return -1;
        /* net by hand: a profile's "allow=" would add to the server's list. */
        json_t *rest = json_copy(limits);
        if (rest)
                json_object_del(rest, "net");
        cleanup_free char *text = rest ? json_dumps(rest, JSON_COMPACT) : NULL;
        json_decref(rest);
        if (text == NULL || corral_jail_config_load_profile_text(cfg, text, strlen(text), "limits", ret_err) < 0)
                return text ? corral_error_set_field(ret_err, "limits")
                            : corral_fail(ret_err, ENOMEM, "cannot read the limits");
        json_t *net = json_object_get(limits, "net");
        if (net && apply_net(&s->limits, cfg, net, ret_err) < 0)
                return -1;
        /* The operator's credentials (corral serve --secret) go with the
         * operator's hosts: a sandbox gets those of the hosts it may reach,
         * and a request can neither name nor add one (docs/api.md). */
        corral_jail_config_drop_unreachable_secrets(cfg);
        return check_ceiling(&s->limits, cfg, ret_err);
}

static int get_seconds(json_t *body, const char *key, double def, double max, double *ret, corral_error **ret_err)
{
        json_t *v = json_object_get(body, key);
        *ret = def;
        if (v == NULL)
                return 0;
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > max)
                return corral_usage_field(ret_err, key, "%s must be a number of seconds above 0 and at most %g", key,
                                          max);
        *ret = json_number_value(v);
        return 0;
}

/* Room for one more of who's: 0, or -1 with the status to answer. */
static int reserve(struct server *s, int who, corral_error **ret_err)
{
        int rc = 0;
        pthread_mutex_lock(&s->lock);
        if (s->n_sandboxes >= s->cfg.max_sandboxes)
                rc = corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0,
                                       "the server holds its most sandboxes (%u): try again later",
                                       s->cfg.max_sandboxes),
                corral_error_set_field(ret_err, "max_sandboxes"); /* the server's, not the caller's: 503 */
        else if (s->sandboxes_of[who] >= s->cfg.max_sandboxes_per_token)
                rc = corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0,
                                       "this token holds its most sandboxes (%u): delete one first",
                                       s->cfg.max_sandboxes_per_token);
        if (rc == 0) {
                s->n_sandboxes++;
                s->sandboxes_of[who]++;
        }
        pthread_mutex_unlock(&s->lock);
        return rc;
}

static void unreserve(struct server *s, int who)
{
        pthread_mutex_lock(&s->lock);
        s->n_sandboxes--;
        s->sandboxes_of[who]--;
        pthread_mutex_unlock(&s->lock);
}

/* A link of paused sandbox id's archive (who's), for a new sandbox to start
 * from: its own name, so that the paused one may be resumed or deleted
 * meanwhile. */
static int link_archive(struct server *s, int who, const char *id, char **ret_path, corral_error **ret_err)
{
        static unsigned serial;
        char name[64];
        snprintf(name, sizeof(name), "from-%u.tar", __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        cleanup_free char *path = server_work_path(s, name);
        if (path == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot start from '%s'", id);
        bool found = false, linked = false;
        int err = 0;
        pthread_mutex_lock(&s->lock);
        for (struct sandbox *sb = s->sandboxes; sb && !found; sb = sb->next) {
                found = strcmp(sb->id, id) == 0 && sb->owner == who && sb->paused && sb->archive;
                linked = found && link(sb->archive, path) == 0;
                err = errno;
        }
        pthread_mutex_unlock(&s->lock);
        if (!found)
                return corral_usage_field(ret_err, "from", "from: no paused sandbox '%s' of this token", id);
        if (!linked)
                return corral_fail(ret_err, err, "cannot start from '%s'", id);
        *ret_path = TAKE_PTR(path);
        return 0;
}

int sandbox_create(struct server *s, int who, json_t *body, json_t **ret, corral_error **ret_err)
{
        *ret = NULL;
        if (body && !json_is_object(body))
                return corral_usage(ret_err, "the body must be a JSON object");
        static const char *const known[] = { "limits", "warm", "idle_timeout", "lifetime", "metadata", "from" };
        if (fields_known(body, known, ARRAY_SIZE(known), "", "a field of a sandbox", "body", ret_err) < 0)
                return -1;
        json_t *warm = json_object_get(body, "warm");
        json_t *meta = json_object_get(body, "metadata");
        if (warm && !json_is_boolean(warm))
                return corral_usage_field(ret_err, "warm", "warm must be true or false");
        cleanup_free char *meta_text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
        if (meta && (!json_is_object(meta) || meta_text == NULL || strlen(meta_text) > 4096))
                return corral_usage_field(ret_err, "metadata", "metadata must be an object of at most 4 KiB of JSON");

        struct session_spec spec = { 0 };
        session_options_init(&spec.opt);
        if (corral_jail_config_copy(&spec.cfg, &s->limits, ret_err) < 0)
                return -1;
        char *placeholder[] = { "python3", NULL };
        double max_life = s->cfg.max_lifetime_s > 0 ? s->cfg.max_lifetime_s : 86400;
        if (sandbox_apply_limits(s, &spec.cfg, json_object_get(body, "limits"), ret_err) < 0 ||
            corral_jail_config_set_argv(&spec.cfg, placeholder, ret_err) < 0 ||
            get_seconds(body, "idle_timeout", spec.opt.idle_timeout_s, max_life, &spec.opt.idle_timeout_s,
                        ret_err) < 0 ||
            get_seconds(body, "lifetime", min_double(spec.opt.lifetime_s, max_life), max_life, &spec.opt.lifetime_s,
                        ret_err) < 0 ||
            corral_jail_config_validate(&spec.cfg, ret_err) < 0) {
                corral_jail_config_release(&spec.cfg);
                return -1;
        }
        spec.warm_asked = json_is_true(warm);
        spec.opt.warm = !json_is_false(warm) && warm_supported(&spec.cfg, NULL) == 0;
        const char *tmp = getenv("TMPDIR");
        spec.tmpdir = tmp && tmp[0] == '/' ? tmp : "/tmp";
        /* "from": a paused sandbox of this token, whose files the new one
         * starts with (the paused one stays). */
        json_t *from = json_object_get(body, "from");
        cleanup_free char *from_path = NULL;
        if (from && (!json_is_string(from) || link_archive(s, who, json_string_value(from), &from_path, ret_err) < 0)) {
                if (!json_is_string(from))
                        corral_usage_field(ret_err, "from", "from must be the id of a paused sandbox");
                corral_jail_config_release(&spec.cfg);
                return -1;
        }
        spec.from = from_path;
        cleanup_free char *profile = corral_jail_config_to_profile_json(&spec.cfg);
        json_t *granted = profile ? json_loads(profile, 0, NULL) : NULL;

        struct sandbox *sb = calloc(1, sizeof(*sb));
        if (sb == NULL || granted == NULL) {
                free(sb);
                json_decref(granted);
                corral_jail_config_release(&spec.cfg);
                return corral_fail(ret_err, ENOMEM, "cannot make a sandbox");
        }
        corral_jail_config_init(&sb->cfg);
        sb->interrupt_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        sb->owner = who;
        /* Copies, never shared: jansson's reference counts give another
         * thread's read no ordering against the last free. */
        sb->metadata = meta ? json_deep_copy(meta) : json_object();
        sb->limits = granted;
        json_object_del(granted, "workspace"); /* a host path */
        json_object_del(granted, "resolve");   /* the operator's map to addresses of its network */
        sb->max_upload = spec.cfg.disk_bytes && spec.cfg.disk_bytes < s->cfg.max_upload ? spec.cfg.disk_bytes
                                                                                          : s->cfg.max_upload;
        sb->created = (double)time(NULL);
        sb->refs = 1;
        if (sb->interrupt_fd < 0 || session_id_make(sb->id, ret_err) < 0) {
                if (sb->interrupt_fd < 0)
                        corral_fail(ret_err, errno, "cannot make a sandbox");
                sandbox_free(sb);
                corral_jail_config_release(&spec.cfg);
                return -1;
        }
        if (corral_jail_config_copy(&sb->cfg, &spec.cfg, ret_err) < 0) {
                corral_jail_config_init(&sb->cfg); /* released by the copy */
                sandbox_free(sb);
                corral_jail_config_release(&spec.cfg);
                return -1;
        }
        sb->opt = spec.opt;
        sb->warm_asked = spec.warm_asked;
        if (reserve(s, who, ret_err) < 0) {
                sandbox_free(sb);
                corral_jail_config_release(&spec.cfg);
                return -1;
        }
        double t0 = monotonic_ms();
        json_t *started = NULL;
        bool refused = false;
        int started_rc = session_host_start(s->host, sb->id, &spec, &started, &refused, ret_err);
        if (from_path)
                unlink(from_path);
        if (started_rc < 0) {
                /* The host's own cap (warm sessions a process may hold)
                 * is the server's capacity: 503, not the caller's 429. */
                if (ret_err && *ret_err && (*ret_err)->kind == CORRAL_ERR_LIMIT)
                        corral_error_set_field(ret_err, "max_sandboxes");
                unreserve(s, who);
                sandbox_free(sb);
                return -1;
        }
        sandboxes_expiry_moved(s); /* its deadline may be the nearest */
        bool is_warm = json_is_true(json_object_get(started, "warm"));
        metrics_observe(s->metrics, "corral_sandbox_start_seconds", is_warm ? "warm" : "cold",
                        (monotonic_ms() - t0) / 1000);
        sb->workspace = strdup(json_string_value(json_object_get(started, "workspace")) ?: "");
        const char *notice = json_string_value(json_object_get(started, "notice"));
        if (notice)
                json_object_set_new(sb->metadata, "corral_notice", json_string(notice));
        json_decref(started);
        pthread_mutex_lock(&s->lock);
        sb->next = s->sandboxes;
        s->sandboxes = sb;
        sb->refs++;
        pthread_mutex_unlock(&s->lock);
        *ret = sandbox_describe(s, sb);
        sandbox_put(s, sb);
        return 0;
}

/* ---- the rest of its life ---- */

struct sandbox *sandbox_get(struct server *s, int who, const char *id, unsigned *ret_status)
{
        struct sandbox *found = NULL;
        pthread_mutex_lock(&s->lock);
        for (struct sandbox *sb = s->sandboxes; sb; sb = sb->next)
                if (strcmp(sb->id, id) == 0)
                        found = sb;
        if (found && found->owner == who)
                found->refs++;
        pthread_mutex_unlock(&s->lock);
        if (found == NULL || found->owner != who) {
                *ret_status = found ? 403 : 404;
                return NULL;
        }
        return found;
}

static void iso_time(double when, char out[32])
{
        time_t t = (time_t)when;
        struct tm tm;
        strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

json_t *sandbox_describe(struct server *s, struct sandbox *sb)
{
        pthread_mutex_lock(&s->lock);
        bool paused = sb->paused;
        double paused_at = sb->paused_at;
        pthread_mutex_unlock(&s->lock);
        json_t *info = paused ? NULL : session_host_info(s->host, sb->id, NULL);
        char created[32];
        iso_time(sb->created, created);
        json_t *d = json_pack("{s:s,s:s,s:s,s:o,s:o}", "id", sb->id, "state", paused ? "paused" : "running",
                              "created_at", created, "metadata", json_deep_copy(sb->metadata), "limits",
                              json_deep_copy(sb->limits));
        if (d && paused) {
                char when[32];
                iso_time(paused_at, when);
                json_object_set_new(d, "paused_at", json_string(when));
        }
        if (d == NULL)
                return NULL;
        static const char *const copied[] = { "steps", "alive", "busy", "expires_in_s", "expires_by", "warm", "usage",
                                              "recent" };
        for (size_t i = 0; info && i < ARRAY_SIZE(copied); i++) {
                json_t *v = json_object_get(info, copied[i]);
                if (v)
                        json_object_set(d, copied[i], v);
        }
        json_decref(info);
        return d;
}

json_t *sandbox_list(struct server *s, int who)
{
        json_t *all = json_array();
        struct sandbox *mine[256];
        size_t n = 0;
        pthread_mutex_lock(&s->lock);
        for (struct sandbox *sb = s->sandboxes; sb && n < ARRAY_SIZE(mine); sb = sb->next)
                if (sb->owner == who) {
                        sb->refs++;
                        mine[n++] = sb;
                }
        pthread_mutex_unlock(&s->lock);
        /* Oldest first, as the list was built newest first. */
        for (size_t i = n; i-- > 0;) {
                json_array_append_new(all, sandbox_describe(s, mine[i]));
                sandbox_put(s, mine[i]);
        }
        return all;
}

int sandbox_delete(struct server *s, struct sandbox *sb, corral_error **ret_err)
{
        pthread_mutex_lock(&s->lock);
        bool paused = sb->paused, pausing = sb->pausing;
        if (paused) {
                /* No session: out of the registry here (its archive goes
                 * with the last reference). */
                for (struct sandbox **p = &s->sandboxes; *p; p = &(*p)->next)
                        if (*p == sb) {
                                *p = sb->next;
                                s->sandboxes_of[sb->owner]--;
                                sb->refs--;
                                break;
                        }
        }
        pthread_mutex_unlock(&s->lock);
        if (pausing)
                return corral_make_error(ret_err, CORRAL_ERR_BUSY, 0, "the sandbox is being paused or resumed: "
                                                                      "try again when that has ended");
        /* Deleting is killing: a running step is cancelled, not waited for. */
        return paused ? 0 : session_host_stop_now(s->host, sb->id, ret_err);
}

int sandbox_live(struct server *s, struct sandbox *sb, corral_error **ret_err)
{
        pthread_mutex_lock(&s->lock);
        bool paused = sb->paused;
        pthread_mutex_unlock(&s->lock);
        if (paused)
                return corral_make_error(ret_err, CORRAL_ERR_BUSY, 0,
                                         "the sandbox is paused: POST .../resume brings it back");
        return 0;
}

int sandbox_pause(struct server *s, struct sandbox *sb, corral_error **ret_err)
{
        pthread_mutex_lock(&s->lock);
        bool busy = sb->paused || sb->pausing;
        sb->pausing = !busy;
        pthread_mutex_unlock(&s->lock);
        if (busy)
                return corral_make_error(ret_err, CORRAL_ERR_BUSY, 0, "the sandbox is %s",
                                         sb->paused ? "paused already" : "being paused or resumed");
        cleanup_free char *name = NULL;
        char *path = asprintf(&name, "paused-%s.tar", sb->id) < 0 ? NULL : server_work_path(s, name);
        json_t *report = NULL;
        /* Written between steps; the session stops once it is. */
        int rc = path ? session_host_archive(s->host, sb->id, path, true, NULL, NULL, &report, ret_err)
                      : corral_fail(ret_err, ENOMEM, "cannot pause the sandbox");
        json_decref(report);
        pthread_mutex_lock(&s->lock);
        sb->pausing = false;
        if (rc == 0) {
                sb->paused = true;
                sb->paused_at = (double)time(NULL);
                free(sb->archive);
                sb->archive = TAKE_PTR(path);
        }
        pthread_mutex_unlock(&s->lock);
        if (path)
                unlink(path); /* not written whole */
        free(path);
        return rc;
}

int sandbox_resume(struct server *s, struct sandbox *sb, corral_error **ret_err)
{
        pthread_mutex_lock(&s->lock);
        bool ok = sb->paused && !sb->pausing;
        bool full = s->n_sandboxes >= s->cfg.max_sandboxes;
        if (ok && !full) {
                sb->pausing = true;
                s->n_sandboxes++;
        }
        pthread_mutex_unlock(&s->lock);
        if (!ok)
                return corral_make_error(ret_err, CORRAL_ERR_BUSY, 0, "the sandbox is not paused");
        if (full)
                return corral_make_error(ret_err, CORRAL_ERR_LIMIT, 0,
                                         "the server holds its most sandboxes (%u): try again later",
                                         s->cfg.max_sandboxes),
                       corral_error_set_field(ret_err, "max_sandboxes");
        struct session_spec spec = { .opt = sb->opt, .warm_asked = sb->warm_asked, .from = sb->archive };
        const char *tmp = getenv("TMPDIR");
        spec.tmpdir = tmp && tmp[0] == '/' ? tmp : "/tmp";
        json_t *started = NULL;
        bool refused = false;
        int rc = corral_jail_config_copy(&spec.cfg, &sb->cfg, ret_err);
        if (rc == 0) {
                spec.opt.warm = spec.opt.warm && warm_supported(&spec.cfg, NULL) == 0;
                rc = session_host_start(s->host, sb->id, &spec, &started, &refused, ret_err);
        }
        pthread_mutex_lock(&s->lock);
        sb->pausing = false;
        if (rc == 0) {
                sb->paused = false;
                free(sb->workspace);
                sb->workspace = strdup(json_string_value(json_object_get(started, "workspace")) ?: "");
        } else {
                s->n_sandboxes--;
        }
        pthread_mutex_unlock(&s->lock);
        json_decref(started);
        if (rc == 0 && sb->archive) {
                unlink(sb->archive);
                free(TAKE_PTR(sb->archive));
        }
        return rc;
}

bool step_begin(struct server *s, struct sandbox *sb)
{
        bool ok;
        pthread_mutex_lock(&s->lock);
        ok = s->steps_of[sb->owner] < s->cfg.max_execs_per_token;
        if (ok) {
                s->steps_of[sb->owner]++;
                s->steps++;
        }
        pthread_mutex_unlock(&s->lock);
        return ok;
}

void step_end(struct server *s, struct sandbox *sb)
{
        pthread_mutex_lock(&s->lock);
        s->steps_of[sb->owner]--;
        s->steps--;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

void sandbox_interrupt(struct sandbox *sb)
{
        uint64_t one = 1;
        if (write(sb->interrupt_fd, &one, sizeof(one)) < 0) {
                /* an eventfd's counter does not overflow from this */
        }
}
