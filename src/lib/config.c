/* config.c: defaults, setters and validation for corral_jail_config. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <strings.h>

#include "jail-internal.h"
#include "proxy.h"
#include "redact.h"

void corral_jail_config_init(corral_jail_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->timeout_s = 30.0;
        cfg->memory_bytes = 512ull << 20;
        cfg->pids = 128;
        cfg->nofile = 256;
        cfg->disk_bytes = 256ull << 20;
        cfg->output_limit = 1ull << 20;
        cfg->net = CORRAL_NET_NONE;
        cfg->stdin_mode = CORRAL_STDIN_NULL;
        cfg->uid_base = JAIL_DEFAULT_UID_BASE;
        cfg->uid_count = JAIL_DEFAULT_UID_COUNT;
        cfg->net_bytes = 1ull << 30;
        cfg->net_conns = 32;
}

static void free_strv(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

void corral_jail_config_release(corral_jail_config *cfg)
{
        free_strv(cfg->argv);
        free_strv(cfg->env);
        free(cfg->script);
        free(cfg->script_name);
        free(cfg->workspace);
        free(cfg->rootfs);
        for (size_t i = 0; i < cfg->n_binds; i++) {
                free(cfg->binds[i].src);
                free(cfg->binds[i].dst);
        }
        free(cfg->binds);
        free_strv(cfg->net_allow);
        free_strv(cfg->net_resolve);
        for (size_t i = 0; i < cfg->n_net_secrets; i++) {
                free(cfg->net_secrets[i].host);
                free(cfg->net_secrets[i].header);
                if (cfg->net_secrets[i].value)
                        explicit_bzero(cfg->net_secrets[i].value, strlen(cfg->net_secrets[i].value));
                free(cfg->net_secrets[i].value);
        }
        free(cfg->net_secrets);
        free(cfg->net_upstream_ca);
        memset(cfg, 0, sizeof(*cfg));
}

static char **copy_strv(char *const *v, bool *oom)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        if (v == NULL)
                return NULL;
        char **c = calloc(n + 1, sizeof(char *));
        for (size_t i = 0; c && i < n; i++) {
                if ((c[i] = strdup(v[i])) == NULL) {
                        free_strv(c);
                        c = NULL;
                }
        }
        if (c == NULL)
                *oom = true;
        return c;
}

static char *copy_str(const char *s, bool *oom)
{
        char *c = s ? strdup(s) : NULL;
        if (s && c == NULL)
                *oom = true;
        return c;
}

int corral_jail_config_copy(corral_jail_config *dst, const corral_jail_config *src, corral_error **ret_err)
{
        bool oom = false;
        *dst = *src;
        dst->argv = copy_strv(src->argv, &oom);
        dst->env = copy_strv(src->env, &oom);
        dst->net_allow = copy_strv(src->net_allow, &oom);
        dst->net_resolve = copy_strv(src->net_resolve, &oom);
        dst->net_upstream_ca = copy_str(src->net_upstream_ca, &oom);
        dst->net_secrets = NULL;
        dst->n_net_secrets = 0;
        if (src->n_net_secrets) {
                dst->net_secrets = calloc(src->n_net_secrets, sizeof(*dst->net_secrets));
                if (dst->net_secrets == NULL)
                        oom = true;
                for (size_t i = 0; dst->net_secrets && i < src->n_net_secrets; i++) {
                        dst->net_secrets[i].host = copy_str(src->net_secrets[i].host, &oom);
                        dst->net_secrets[i].header = copy_str(src->net_secrets[i].header, &oom);
                        dst->net_secrets[i].value = copy_str(src->net_secrets[i].value, &oom);
                        dst->n_net_secrets++;
                }
        }
        dst->script = NULL;
        if (src->script && (dst->script = malloc(src->script_len + 1)) != NULL) {
                memcpy(dst->script, src->script, src->script_len);
                dst->script[src->script_len] = '\0';
        } else if (src->script) {
                oom = true;
        }
        dst->script_name = copy_str(src->script_name, &oom);
        dst->workspace = copy_str(src->workspace, &oom);
        dst->rootfs = copy_str(src->rootfs, &oom);
        dst->binds = NULL;
        dst->n_binds = 0;
        if (src->n_binds && (dst->binds = calloc(src->n_binds, sizeof(*dst->binds))) == NULL)
                oom = true;
        for (size_t i = 0; dst->binds && i < src->n_binds; i++) {
                dst->binds[i].src = copy_str(src->binds[i].src, &oom);
                dst->binds[i].dst = copy_str(src->binds[i].dst, &oom);
                dst->binds[i].writable = src->binds[i].writable;
                dst->binds[i].src_fd = src->binds[i].src_fd;
                dst->n_binds++;
        }
        if (oom) {
                corral_jail_config_release(dst);
                return corral_fail(ret_err, ENOMEM, "cannot copy the jail configuration");
        }
        return 0;
}

int corral_jail_config_set_argv(corral_jail_config *cfg, char *const *argv, corral_error **ret_err)
{
        size_t n = 0;
        while (argv && argv[n])
                n++;
        if (n == 0)
                return corral_usage(ret_err, "no program to run");
        char **v = calloc(n + 1, sizeof(char *));
        if (v == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the command line");
        for (size_t i = 0; i < n; i++) {
                if ((v[i] = strdup(argv[i])) == NULL) {
                        free_strv(v);
                        return corral_fail(ret_err, ENOMEM, "cannot copy the command line");
                }
        }
        free_strv(cfg->argv);
        cfg->argv = v;
        return 0;
}

int corral_jail_config_set_script(corral_jail_config *cfg, const char *name, const char *text, size_t len,
                                  corral_error **ret_err)
{
        if (name == NULL || name[0] == '\0' || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return corral_usage(ret_err, "invalid script name '%s'", name ? name : "");
        if (len > JAIL_MAX_SCRIPT)
                return corral_usage(ret_err, "program text is %zu bytes; the limit is %u", len, JAIL_MAX_SCRIPT);
        char *t = malloc(len + 1);
        char *n = strdup(name);
        if (t == NULL || n == NULL) {
                free(t);
                free(n);
                return corral_fail(ret_err, ENOMEM, "cannot copy the program text");
        }
        memcpy(t, text, len);
        t[len] = '\0';
        free(cfg->script);
        free(cfg->script_name);
        cfg->script = t;
        cfg->script_len = len;
        cfg->script_name = n;
        return 0;
}

const char *corral_lang_from_name(const char *name)
{
        const char *dot = strrchr(name, '.');
        if (dot && strcmp(dot, ".py") == 0)
                return "python";
        if (dot && strcmp(dot, ".sh") == 0)
                return "bash";
        return NULL;
}

int corral_jail_config_set_code(corral_jail_config *cfg, const char *lang, const char *name, const char *code,
                                size_t len, char *const *args, const char *what, corral_error **ret_err)
{
        bool py = lang && strcmp(lang, "python") == 0;
        if (!py && !(lang && strcmp(lang, "bash") == 0))
                return corral_usage(ret_err, "unknown language '%s': python or bash", lang ? lang : "");
        if (memchr(code, '\0', len) != NULL)
                return corral_usage(ret_err, "%s contains a NUL byte; only text programs can be run this way", what);
        if (!utf8_valid(code, len))
                return corral_usage(ret_err, "%s is not valid UTF-8", what);
        if (corral_jail_config_set_script(cfg, name, code, len, ret_err) < 0)
                return -1;
        size_t n = 0;
        while (args && args[n])
                n++;
        cleanup_free char *at = NULL;
        char **v = calloc(n + 3, sizeof(char *));
        if (v == NULL || asprintf(&at, "/run/corral/%s", name) < 0) {
                free(v);
                return corral_fail(ret_err, ENOMEM, "out of memory");
        }
        v[0] = (char *)(py ? "python3" : "bash");
        v[1] = at;
        for (size_t i = 0; i < n; i++)
                v[i + 2] = args[i];
        int r = corral_jail_config_set_argv(cfg, v, ret_err);
        free(v);
        return r;
}

bool jail_env_name_valid(const char *s, size_t n)
{
        if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                        return false;
        }
        return true;
}

int corral_jail_config_add_env(corral_jail_config *cfg, const char *assignment, corral_error **ret_err)
{
        const char *eq = assignment ? strchr(assignment, '=') : NULL;
        if (eq == NULL || !jail_env_name_valid(assignment, (size_t)(eq - assignment)))
                return corral_usage(ret_err, "invalid environment assignment '%s': expected NAME=VALUE",
                                    assignment ? assignment : "");
        size_t name_len = (size_t)(eq - assignment) + 1, n = 0;
        for (; cfg->env && cfg->env[n]; n++) {
                if (strncmp(cfg->env[n], assignment, name_len) == 0) {
                        char *d = strdup(assignment);
                        if (d == NULL)
                                return corral_fail(ret_err, ENOMEM, "cannot copy the environment");
                        free(cfg->env[n]);
                        cfg->env[n] = d;
                        return 0;
                }
        }
        char **v = realloc(cfg->env, (n + 2) * sizeof(char *));
        if (v == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the environment");
        cfg->env = v;
        if ((v[n] = strdup(assignment)) == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the environment");
        v[n + 1] = NULL;
        return 0;
}

/* Jail paths that a bind may not cover: the jail's own machinery. */
static bool reserved_target(const char *dst)
{
        static const char *const reserved[] = { "/", "/proc", "/dev", "/etc", "/run", "/tmp", "/workspace", "/home" };
        for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
                if (strcmp(dst, reserved[i]) == 0)
                        return true;
        return strncmp(dst, "/proc/", 6) == 0 || strncmp(dst, "/dev/", 5) == 0 || strcmp(dst, "/run/corral") == 0 ||
               strncmp(dst, "/run/corral/", 12) == 0 || strcmp(dst, "/home/user") == 0 ||
               strncmp(dst, "/home/user/", 11) == 0;
}

int jail_config_add_bind_paths(corral_jail_config *cfg, const char *src_in, const char *dst_in, bool writable,
                               corral_error **ret_err)
{
        cleanup_free char *src = strdup(src_in);
        cleanup_free char *dst = strdup(dst_in);
        if (src == NULL || dst == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the bind");
        if (src[0] == '\0')
                return corral_usage(ret_err, "empty source");
        if (dst[0] != '/')
                return corral_usage(ret_err, "the destination '%s' must be an absolute path", dst_in);
        /* Normalise: no "..", ".", or empty components; no trailing slash. */
        for (const char *c = dst; *c;) {
                while (*c == '/')
                        c++;
                const char *e = strchrnul(c, '/');
                size_t n = (size_t)(e - c);
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return corral_usage(ret_err, "the destination '%s' may not contain '.' or '..'", dst_in);
                c = e;
        }
        size_t l = strlen(dst);
        while (l > 1 && dst[l - 1] == '/')
                dst[--l] = '\0';
        if (strstr(dst, "//"))
                return corral_usage(ret_err, "malformed destination '%s'", dst_in);
        if (reserved_target(dst))
                return corral_usage(ret_err, "'%s' is managed by corral and cannot be replaced", dst);
        struct corral_bind *b = realloc(cfg->binds, (cfg->n_binds + 1) * sizeof(*b));
        if (b == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the bind");
        cfg->binds = b;
        b[cfg->n_binds].src = TAKE_PTR(src);
        b[cfg->n_binds].dst = TAKE_PTR(dst);
        b[cfg->n_binds].writable = writable;
        b[cfg->n_binds].src_fd = -1;
        cfg->n_binds++;
        return 0;
}

int corral_jail_config_add_bind(corral_jail_config *cfg, const char *spec, bool writable, corral_error **ret_err)
{
        if (spec == NULL || spec[0] == '\0')
                return corral_usage(ret_err, "empty bind specification");
        const char *colon = strchr(spec, ':');
        cleanup_free char *src = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
        if (src == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot copy the bind");
        if (src[0] == '\0')
                return corral_usage(ret_err, "bind '%s': empty source", spec);
        if (jail_config_add_bind_paths(cfg, src, colon ? colon + 1 : spec, writable, ret_err) < 0)
                return corral_error_prefix(ret_err, "bind '%s'", spec);
        return 0;
}

int corral_jail_config_add_bind_at(corral_jail_config *cfg, const char *src, const char *dst, bool writable,
                                   corral_error **ret_err)
{
        return jail_config_add_bind_paths(cfg, src, dst, writable, ret_err);
}

int corral_jail_config_add_bind_fd(corral_jail_config *cfg, int src_fd, const char *name, const char *dst,
                                   corral_error **ret_err)
{
        if (src_fd < 0)
                return corral_usage(ret_err, "bind '%s': no source fd", dst ? dst : "");
        if (jail_config_add_bind_paths(cfg, name && name[0] ? name : "(fd)", dst, false, ret_err) < 0)
                return -1;
        cfg->binds[cfg->n_binds - 1].src_fd = src_fd;
        return 0;
}

static int resolve_valid(const char *spec, corral_error **ret_err);

/* Does cfg's allow-list allow the credential's host (on some port)? */
static bool secret_reachable(const corral_jail_config *cfg, const struct corral_net_secret *sec)
{
        struct net_allow_entry e;
        bool allowed = false;
        for (size_t k = 0; cfg->net == CORRAL_NET_ALLOW && cfg->net_allow && cfg->net_allow[k] && !allowed; k++)
                if (net_allow_parse(cfg->net_allow[k], &e, NULL) == 0)
                        allowed = net_allow_matches(&e, sec->host, e.port ? e.port : 443) ||
                                  net_allow_matches(&e, sec->host, 80);
        return allowed;
}

void corral_jail_config_drop_unreachable_secrets(corral_jail_config *cfg)
{
        size_t kept = 0;
        for (size_t i = 0; i < cfg->n_net_secrets; i++) {
                struct corral_net_secret *sec = &cfg->net_secrets[i];
                if (secret_reachable(cfg, sec)) {
                        cfg->net_secrets[kept++] = *sec;
                        continue;
                }
                free(sec->host);
                free(sec->header);
                explicit_bzero(sec->value, strlen(sec->value));
                free(sec->value);
        }
        cfg->n_net_secrets = kept;
}

int corral_jail_config_validate(const corral_jail_config *cfg, corral_error **ret_err)
{
        if (cfg->argv == NULL || cfg->argv[0] == NULL || cfg->argv[0][0] == '\0')
                return corral_usage(ret_err, "no program to run");
        if (!cfg->no_timeout &&
            (!(cfg->timeout_s > 0) || !isfinite(cfg->timeout_s) || cfg->timeout_s > 31536000.0))
                return corral_usage(ret_err, "the timeout must be between 0 and a year");
        if (!(cfg->cpu_time_s >= 0) || !isfinite(cfg->cpu_time_s) || cfg->cpu_time_s > 31536000.0)
                return corral_usage(ret_err, "the CPU-time limit must be between 0 and a year");
        if (cfg->memory_bytes < (8u << 20))
                return corral_usage(ret_err, "the memory limit must be at least 8M");
        if (cfg->address_space_bytes != 0 && cfg->address_space_bytes < cfg->memory_bytes)
                return corral_usage(ret_err, "the address-space allowance must be at least the memory limit");
        /* corral-init is one process of the jail: the program is the second. */
        if (cfg->pids < 2 || cfg->pids > 1u << 22)
                return corral_usage(ret_err, "the process limit must be between 2 and 4194304 (the jail's init "
                                             "is one process, the program another)");
        if (cfg->nofile < 8 || cfg->nofile > 1u << 20)
                return corral_usage(ret_err, "the open-file limit must be between 8 and 1048576");
        if (cfg->disk_bytes < 65536)
                return corral_usage(ret_err, "the disk limit must be at least 64K");
        if (cfg->output_limit < 1 || cfg->output_limit > (1ull << 30))
                return corral_usage(ret_err, "the output limit must be between 1 byte and 1G");
        if (!(cfg->cpus >= 0) || !isfinite(cfg->cpus) || cfg->cpus > 4096)
                return corral_usage(ret_err, "the CPU share must be between 0 and 4096");
        if (cfg->uid_count == 0 || (uint64_t)cfg->uid_base + cfg->uid_count > 0xfffffffeull || cfg->uid_base < 1000)
                return corral_usage(ret_err, "the jail uid range must lie between 1000 and 4294967294");
        for (size_t i = 0; cfg->env && cfg->env[i]; i++)
                if (strchr(cfg->env[i], '=') == NULL)
                        return corral_usage(ret_err, "invalid environment assignment '%s'", cfg->env[i]);
        if ((unsigned)cfg->net > CORRAL_NET_ALLOW)
                return corral_usage(ret_err, "unknown network mode %d", (int)cfg->net);
        struct net_allow_entry e;
        for (size_t i = 0; cfg->net_allow && cfg->net_allow[i]; i++)
                if (net_allow_parse(cfg->net_allow[i], &e, ret_err) < 0)
                        return -1;
        for (size_t i = 0; cfg->net_resolve && cfg->net_resolve[i]; i++)
                if (resolve_valid(cfg->net_resolve[i], ret_err) < 0)
                        return -1;
        if (cfg->net == CORRAL_NET_ALLOW && (cfg->net_allow == NULL || cfg->net_allow[0] == NULL))
                return corral_usage(ret_err, "the network allow-list is empty");
        for (size_t i = 0; i < cfg->n_net_secrets; i++) {
                const struct corral_net_secret *sec = &cfg->net_secrets[i];
                if (cfg->net != CORRAL_NET_ALLOW)
                        return corral_usage(ret_err, "a brokered credential for '%s' needs a network allow-list: "
                                                     "the proxy adds it",
                                            sec->host);
                if (!secret_reachable(cfg, sec))
                        return corral_usage(ret_err, "the brokered credential's host '%s' is not in the network "
                                                     "allow-list: add it there too",
                                            sec->host);
        }
        if (cfg->net_conns < 1 || cfg->net_conns > 1024)
                return corral_usage(ret_err, "the network connection limit must be between 1 and 1024");
        if (cfg->net_bytes < 1)
                return corral_usage(ret_err, "the network byte limit must be at least 1 byte");
        return 0;
}

static int strv_push(char ***v, const char *s, corral_error **ret_err)
{
        size_t n = 0;
        while (*v && (*v)[n])
                n++;
        char **nv = realloc(*v, (n + 2) * sizeof(char *));
        if (nv == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        *v = nv;
        if ((nv[n] = strdup(s)) == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        nv[n + 1] = NULL;
        return 0;
}

int corral_jail_config_add_net_allow(corral_jail_config *cfg, const char *list, corral_error **ret_err)
{
        cleanup_free char *copy = strdup(list);
        if (copy == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        if (copy[0] == '\0')
                return corral_usage(ret_err, "the network allow-list is empty");
        /* All checked before any is added: a bad list changes nothing. */
        struct net_allow_entry e;
        for (char *item = copy, *next; item; item = next) {
                next = strchr(item, ',');
                if (next)
                        *next = '\0';
                if (net_allow_parse(item, &e, ret_err) < 0)
                        return -1;
                if (next)
                        *next++ = ',';
        }
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
                if (strv_push(&cfg->net_allow, item, ret_err) < 0)
                        return -1;
        return 0;
}

static int resolve_valid(const char *spec, corral_error **ret_err)
{
        const char *colon = strchr(spec, ':');
        char host[NET_HOST_MAX + 1];
        unsigned char addr[16];
        struct net_allow_entry e;
        if (colon == NULL || colon == spec || (size_t)(colon - spec) > NET_HOST_MAX)
                return corral_usage(ret_err, "invalid resolve entry '%s': expected HOST:ADDR", spec);
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        const char *a = colon + 1;
        char v6[64];
        size_t an = strlen(a);
        if (an > 2 && an < sizeof(v6) && a[0] == '[' && a[an - 1] == ']') {
                memcpy(v6, a + 1, an - 2);
                v6[an - 2] = '\0';
                a = v6;
        }
        if (net_allow_parse(host, &e, NULL) < 0 || e.literal || e.port ||
            (inet_pton(AF_INET, a, addr) != 1 && inet_pton(AF_INET6, a, addr) != 1))
                return corral_usage(ret_err, "invalid resolve entry '%s': expected HOST:ADDR", spec);
        return 0;
}

/* Request fields a credential may not set: the proxy or the framing owns them. */
static bool header_reserved(const char *name)
{
        static const char *const reserved[] = { "host", "content-length", "transfer-encoding", "connection",
                                                "keep-alive", "proxy-connection", "proxy-authorization", "upgrade",
                                                "te", "trailer", "accept-encoding" };
        for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
                if (strcasecmp(name, reserved[i]) == 0)
                        return true;
        return false;
}

int corral_jail_config_add_net_secret(corral_jail_config *cfg, const char *host, const char *header,
                                      const char *value, corral_error **ret_err)
{
        struct net_allow_entry e;
        if (net_allow_parse(host, &e, NULL) < 0 || e.wildcard || e.port)
                return corral_usage(ret_err, "invalid credential host '%s': expected a host name or an IP address, "
                                             "without a port or wildcard",
                                    host);
        bool token = header[0] != '\0';
        for (const char *p = header; *p && token; p++)
                token = isalnum((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~", *p) != NULL;
        if (!token)
                return corral_usage(ret_err, "invalid credential header name '%s': expected an HTTP field name such as "
                                             "Authorization",
                                    header);
        if (header_reserved(header))
                return corral_usage(ret_err, "the credential header '%s' is one the proxy sets itself: use another "
                                             "header",
                                    header);
        /* The value is never quoted in a message. */
        if (strpbrk(value, "\r\n") != NULL)
                return corral_usage(ret_err, "the credential value for '%s' holds a line break: it must be one line",
                                    host);
        if (strlen(value) > NET_SECRET_MAX)
                return corral_usage(ret_err, "the credential value for '%s' is longer than %d bytes", host,
                                    NET_SECRET_MAX);
        if (strlen(value) < REDACT_MIN_SECRET)
                return corral_usage(ret_err, "the credential value for '%s' is shorter than %d bytes: too short to "
                                             "be masked in what comes back",
                                    host, REDACT_MIN_SECRET);
        struct corral_net_secret *v = realloc(cfg->net_secrets, (cfg->n_net_secrets + 1) * sizeof(*v));
        if (v == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        cfg->net_secrets = v;
        struct corral_net_secret *sec = &v[cfg->n_net_secrets];
        sec->host = strdup(e.host);
        sec->header = strdup(header);
        sec->value = strdup(value);
        if (sec->host == NULL || sec->header == NULL || sec->value == NULL) {
                free(sec->host);
                free(sec->header);
                free(sec->value);
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        }
        cfg->n_net_secrets++;
        return 0;
}

int corral_jail_config_add_net_secret_env(corral_jail_config *cfg, const char *spec, corral_error **ret_err)
{
        const char *eq = strchr(spec, '='), *colon = eq ? strrchr(eq, ':') : NULL;
        if (eq == NULL || colon == NULL || eq == spec || colon == eq + 1 || colon[1] == '\0')
                return corral_usage(ret_err, "invalid '%s': expected HOST=HEADER:ENV (the value is read from the "
                                             "environment variable ENV)",
                                    spec);
        cleanup_free char *host = strndup(spec, (size_t)(eq - spec));
        cleanup_free char *header = strndup(eq + 1, (size_t)(colon - eq - 1));
        if (host == NULL || header == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot add to the jail configuration");
        const char *value = getenv(colon + 1);
        if (value == NULL || value[0] == '\0')
                return corral_usage(ret_err, "the environment variable '%s' is not set: export it with the "
                                             "credential's value",
                                    colon + 1);
        return corral_jail_config_add_net_secret(cfg, host, header, value, ret_err);
}

int corral_jail_config_add_net_resolve(corral_jail_config *cfg, const char *spec, corral_error **ret_err)
{
        if (resolve_valid(spec, ret_err) < 0)
                return -1;
        return strv_push(&cfg->net_resolve, spec, ret_err);
}
