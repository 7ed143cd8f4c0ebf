/* profile.c: JSON profiles holding limits, mounts and environment.
 *
 *   {"timeout": 30, "cpu_time": 10, "memory": "512M", "pids": 128,
 *    "cpus": 1.5, "nofile": 256, "disk": "256M", "output_limit": "1M",
 *    "net": "none", "rootfs": "/srv/img", "workspace": "/srv/ws",
 *    "resolve": ["HOST:ADDR"], "net_bytes": "1G", "net_conns": 32,
 *    "secrets": ["HOST=HEADER:ENV"], "upstream_ca": "/etc/corp-ca.pem",
 *    "require_cgroups": false, "env": {"NAME": "VALUE"},
 *    "binds": [{"src": "/data", "dst": "/data", "writable": false}]}
 *
 * Every key is optional; unknown keys and duplicate keys are errors (a typo
 * must not silently drop a limit).  Sizes are numbers of bytes or strings
 * with units; durations are numbers of seconds or strings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "jail-internal.h"

static int get_size(json_t *v, const char *key, uint64_t *ret, corral_error **ret_err)
{
        if (json_is_integer(v) && json_integer_value(v) > 0) {
                *ret = (uint64_t)json_integer_value(v);
                return 0;
        }
        if (json_is_string(v))
                return corral_parse_size(json_string_value(v), ret, ret_err) < 0
                               ? corral_error_prefix(ret_err, "profile key '%s'", key)
                               : 0;
        return corral_usage(ret_err, "profile key '%s': expected a positive size", key);
}

static int get_seconds(json_t *v, const char *key, double *ret, corral_error **ret_err)
{
        if (json_is_number(v) && json_number_value(v) > 0) {
                *ret = json_number_value(v);
                return 0;
        }
        if (json_is_string(v))
                return corral_parse_seconds(json_string_value(v), ret, ret_err) < 0
                               ? corral_error_prefix(ret_err, "profile key '%s'", key)
                               : 0;
        return corral_usage(ret_err, "profile key '%s': expected a positive number of seconds", key);
}

static int get_string(json_t *v, const char *key, char **ret, corral_error **ret_err)
{
        if (!json_is_string(v))
                return corral_usage(ret_err, "profile key '%s': expected a string", key);
        char *s = strdup(json_string_value(v));
        if (s == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot read profile");
        free(*ret);
        *ret = s;
        return 0;
}

static int apply_profile(corral_jail_config *cfg, json_t *root, const char *path, corral_error **ret_err);

int corral_jail_config_load_profile(corral_jail_config *cfg, const char *path, corral_error **ret_err)
{
        json_error_t jerr;
        json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        /* jansson says line -1 when the file could not be read at all. */
        if (root == NULL && jerr.line < 1)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno ? errno : EIO, "cannot read profile '%s'",
                                         path);
        if (root == NULL)
                return corral_usage(ret_err, "cannot read profile '%s': %s (line %d, column %d)", path, jerr.text,
                                    jerr.line, jerr.column);
        int r = apply_profile(cfg, root, path, ret_err);
        json_decref(root);
        return r;
}

int corral_jail_config_load_profile_text(corral_jail_config *cfg, const char *text, size_t len, const char *name,
                                         corral_error **ret_err)
{
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (root == NULL)
                return corral_usage(ret_err, "cannot read profile '%s': %s (line %d, column %d)", name, jerr.text,
                                    jerr.line, jerr.column);
        int r = apply_profile(cfg, root, name, ret_err);
        json_decref(root);
        return r;
}

int jail_config_apply_profile_object(corral_jail_config *cfg, json_t *root, const char *name, corral_error **ret_err)
{
        return apply_profile(cfg, root, name, ret_err);
}

static int apply_profile(corral_jail_config *cfg, json_t *root, const char *path, corral_error **ret_err)
{
        int r = 0;
        if (!json_is_object(root)) {
                r = corral_usage(ret_err, "profile '%s': expected a JSON object", path);
                goto out;
        }
        const char *key;
        json_t *v;
        json_object_foreach(root, key, v)
        {
                uint64_t u;
                if (strcmp(key, "timeout") == 0)
                        r = get_seconds(v, key, &cfg->timeout_s, ret_err);
                else if (strcmp(key, "cpu_time") == 0)
                        r = get_seconds(v, key, &cfg->cpu_time_s, ret_err);
                else if (strcmp(key, "memory") == 0)
                        r = get_size(v, key, &cfg->memory_bytes, ret_err);
                else if (strcmp(key, "disk") == 0)
                        r = get_size(v, key, &cfg->disk_bytes, ret_err);
                else if (strcmp(key, "output_limit") == 0)
                        r = get_size(v, key, &cfg->output_limit, ret_err);
                else if (strcmp(key, "pids") == 0 || strcmp(key, "nofile") == 0) {
                        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                                r = corral_usage(ret_err, "profile key '%s': expected a positive integer", key);
                        else {
                                u = (uint64_t)json_integer_value(v);
                                *(key[0] == 'p' ? &cfg->pids : &cfg->nofile) = u;
                        }
                } else if (strcmp(key, "cpus") == 0) {
                        if (!json_is_number(v) || json_number_value(v) <= 0)
                                r = corral_usage(ret_err, "profile key 'cpus': expected a positive number");
                        else
                                cfg->cpus = json_number_value(v);
                } else if (strcmp(key, "net") == 0) {
                        const char *s = json_string_value(v);
                        if (s && (strcmp(s, "none") == 0 || strcmp(s, "loopback") == 0))
                                cfg->net = CORRAL_NET_NONE; /* loopback: the old name */
                        else if (s && strcmp(s, "down") == 0)
                                cfg->net = CORRAL_NET_DOWN;
                        else if (s && strcmp(s, "host") == 0)
                                cfg->net = CORRAL_NET_HOST;
                        else if (s && strncmp(s, "allow=", 6) == 0) {
                                cfg->net = CORRAL_NET_ALLOW;
                                if ((r = corral_jail_config_add_net_allow(cfg, s + 6, ret_err)) < 0)
                                        corral_error_prefix(ret_err, "profile key 'net'");
                        } else
                                r = corral_usage(ret_err, "profile key 'net': expected none, down, host or "
                                                          "\"allow=HOST[:PORT],...\"");
                } else if (strcmp(key, "resolve") == 0) {
                        size_t i;
                        json_t *e;
                        if (!json_is_array(v))
                                r = corral_usage(ret_err, "profile key 'resolve': expected an array of \"HOST:ADDR\"");
                        json_array_foreach(v, i, e) {
                                if (r < 0)
                                        break;
                                if (!json_is_string(e))
                                        r = corral_usage(ret_err, "profile resolve[%zu]: expected \"HOST:ADDR\"", i);
                                else if ((r = corral_jail_config_add_net_resolve(cfg, json_string_value(e),
                                                                                 ret_err)) < 0)
                                        corral_error_prefix(ret_err, "profile resolve[%zu]", i);
                        }
                } else if (strcmp(key, "secrets") == 0) {
                        /* Brokered credentials, each "HOST=HEADER:ENV": the
                         * value from the environment of whoever loads the
                         * profile, never from the file. */
                        size_t i;
                        json_t *e;
                        if (!json_is_array(v))
                                r = corral_usage(ret_err, "profile key 'secrets': expected an array of "
                                                          "\"HOST=HEADER:ENV\"");
                        json_array_foreach(v, i, e) {
                                if (r < 0)
                                        break;
                                if (!json_is_string(e))
                                        r = corral_usage(ret_err, "profile secrets[%zu]: expected \"HOST=HEADER:ENV\"",
                                                         i);
                                else if ((r = corral_jail_config_add_net_secret_env(cfg, json_string_value(e),
                                                                                    ret_err)) < 0)
                                        corral_error_prefix(ret_err, "profile secrets[%zu]", i);
                        }
                } else if (strcmp(key, "upstream_ca") == 0) {
                        r = get_string(v, key, &cfg->net_upstream_ca, ret_err);
                } else if (strcmp(key, "net_bytes") == 0) {
                        r = get_size(v, key, &cfg->net_bytes, ret_err);
                } else if (strcmp(key, "net_conns") == 0) {
                        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                                r = corral_usage(ret_err, "profile key 'net_conns': expected a positive integer");
                        else
                                cfg->net_conns = (uint64_t)json_integer_value(v);
                } else if (strcmp(key, "rootfs") == 0)
                        r = get_string(v, key, &cfg->rootfs, ret_err);
                else if (strcmp(key, "workspace") == 0)
                        r = get_string(v, key, &cfg->workspace, ret_err);
                else if (strcmp(key, "require_cgroups") == 0) {
                        if (!json_is_boolean(v))
                                r = corral_usage(ret_err, "profile key 'require_cgroups': expected true or false");
                        else
                                cfg->require_cgroups = json_is_true(v);
                } else if (strcmp(key, "env") == 0) {
                        if (!json_is_object(v)) {
                                r = corral_usage(ret_err, "profile key 'env': expected an object of strings");
                        } else {
                                const char *name;
                                json_t *val;
                                json_object_foreach(v, name, val)
                                {
                                        if (!json_is_string(val)) {
                                                r = corral_usage(ret_err, "profile env '%s': expected a string", name);
                                                break;
                                        }
                                        if (!jail_env_name_valid(name, strlen(name))) {
                                                r = corral_usage(ret_err, "profile env: invalid variable name '%s'",
                                                                 name);
                                                break;
                                        }
                                        cleanup_free char *a = NULL;
                                        if (asprintf(&a, "%s=%s", name, json_string_value(val)) < 0) {
                                                r = corral_fail(ret_err, ENOMEM, "cannot read profile");
                                                break;
                                        }
                                        if ((r = corral_jail_config_add_env(cfg, a, ret_err)) < 0)
                                                break;
                                }
                        }
                } else if (strcmp(key, "binds") == 0) {
                        if (!json_is_array(v)) {
                                r = corral_usage(ret_err, "profile key 'binds': expected an array");
                        } else {
                                size_t i;
                                json_t *b;
                                json_array_foreach(v, i, b)
                                {
                                        const char *src = json_string_value(json_object_get(b, "src"));
                                        json_t *d = json_object_get(b, "dst");
                                        const char *dst = json_string_value(d);
                                        json_t *w = json_object_get(b, "writable");
                                        /* Exactly these keys: a misspelt "writeable" must
                                         * not silently make a read-only bind. */
                                        size_t known = 1 + (d != NULL) + (w != NULL);
                                        if (!json_is_object(b) || src == NULL || (w && !json_is_boolean(w)) ||
                                            (d && dst == NULL) || json_object_size(b) != known) {
                                                r = corral_usage(ret_err, "profile binds[%zu]: expected "
                                                                          "{\"src\": PATH, \"dst\": PATH, "
                                                                          "\"writable\": BOOL}", i);
                                                break;
                                        }
                                        if ((r = jail_config_add_bind_paths(cfg, src, dst ? dst : src, json_is_true(w),
                                                                            ret_err)) < 0) {
                                                corral_error_prefix(ret_err, "profile binds[%zu]", i);
                                                break;
                                        }
                                }
                        }
                } else {
                        static const char *const keys[] = { "timeout", "cpu_time", "memory", "disk", "output_limit",
                                                            "pids", "nofile", "cpus", "net", "rootfs", "workspace",
                                                            "require_cgroups", "env", "binds", "resolve",
                                                            "net_bytes", "net_conns", "secrets", "upstream_ca",
                                                            NULL };
                        const char *near = nearest_name(key, keys);
                        r = corral_usage(ret_err, "profile '%s': unknown key '%s'%s%s%s", path, key,
                                         near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
                }
                if (r < 0)
                        break;
        }
        if (r < 0 && ret_err && *ret_err && strstr((*ret_err)->msg, path) == NULL)
                corral_error_prefix(ret_err, "profile '%s'", path);
out:
        return r < 0 ? -1 : 0;
}

/* The allow-list as the profile keys that give it back: "net" as
 * "allow=A,B", "resolve", "net_bytes", "net_conns". */
static int profile_net_allow(json_t *o, const corral_jail_config *cfg)
{
        struct capbuf list = { .cap = SIZE_MAX };
        capbuf_append(&list, "allow=", 6);
        for (size_t i = 0; cfg->net_allow && cfg->net_allow[i]; i++) {
                if (i > 0)
                        capbuf_append(&list, ",", 1);
                capbuf_append(&list, cfg->net_allow[i], strlen(cfg->net_allow[i]));
        }
        capbuf_append(&list, "", 1);
        json_t *resolve = json_array();
        for (size_t i = 0; cfg->net_resolve && cfg->net_resolve[i]; i++)
                json_array_append_new(resolve, json_string(cfg->net_resolve[i]));
        int r = list.data && !list.truncated && resolve ? 0 : -1;
        if (r == 0) {
                json_object_set_new(o, "net", json_string(list.data));
                json_object_set_new(o, "resolve", resolve);
                json_object_set_new(o, "net_bytes", json_integer((json_int_t)cfg->net_bytes));
                json_object_set_new(o, "net_conns", json_integer((json_int_t)cfg->net_conns));
        } else {
                json_decref(resolve);
        }
        capbuf_release(&list);
        return r;
}

json_t *jail_config_profile_object(const corral_jail_config *cfg)
{
        static const char *const nets[] = { [CORRAL_NET_NONE] = "none", [CORRAL_NET_DOWN] = "down",
                                            [CORRAL_NET_HOST] = "host",
                                            [CORRAL_NET_ALLOW] = "allow" };
        json_t *o = json_pack("{s:f, s:I, s:I, s:I, s:I, s:I, s:s, s:b}", "timeout", cfg->timeout_s, "memory",
                              (json_int_t)cfg->memory_bytes, "pids", (json_int_t)cfg->pids, "nofile",
                              (json_int_t)cfg->nofile, "disk", (json_int_t)cfg->disk_bytes, "output_limit",
                              (json_int_t)cfg->output_limit, "net", nets[cfg->net], "require_cgroups",
                              cfg->require_cgroups);
        if (o == NULL)
                return NULL;
        if (cfg->net == CORRAL_NET_ALLOW && profile_net_allow(o, cfg) < 0) {
                json_decref(o);
                return NULL;
        }
        if (cfg->cpu_time_s > 0)
                json_object_set_new(o, "cpu_time", json_real(cfg->cpu_time_s));
        if (cfg->cpus > 0)
                json_object_set_new(o, "cpus", json_real(cfg->cpus));
        if (cfg->rootfs)
                json_object_set_new(o, "rootfs", json_string(cfg->rootfs));
        if (cfg->workspace)
                json_object_set_new(o, "workspace", json_string(cfg->workspace));
        json_t *env = json_object();
        for (size_t i = 0; cfg->env && cfg->env[i]; i++) {
                const char *eq = strchr(cfg->env[i], '=');
                cleanup_free char *name = strndup(cfg->env[i], (size_t)(eq - cfg->env[i]));
                if (name)
                        json_object_set_new(env, name, json_string(eq + 1));
        }
        json_object_set_new(o, "env", env);
        json_t *binds = json_array();
        for (size_t i = 0; i < cfg->n_binds; i++)
                json_array_append_new(binds, json_pack("{s:s, s:s, s:b}", "src", cfg->binds[i].src, "dst",
                                                       cfg->binds[i].dst, "writable", cfg->binds[i].writable));
        json_object_set_new(o, "binds", binds);
        return o;
}

char *corral_jail_config_to_profile_json(const corral_jail_config *cfg)
{
        json_t *o = jail_config_profile_object(cfg);
        char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        return s;
}
