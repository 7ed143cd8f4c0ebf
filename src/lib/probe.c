/* probe.c: the host's mechanisms for the jail, checked (probe.h).
 *
 * Reads /proc and /sys, the cgroup layout corral found (cgroup.c), tries
 * a user namespace in a child, and runs real jails: /bin/true, and Python
 * with the data libraries.  Reports; never fails and never prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corral/jail.h>

#include "jail-internal.h"
#include "probe.h"
#include "ssl-dl.h"

json_t *probe_add(json_t *checks, const char *name, bool ok, const char *state, const char *detail,
                  const char *advice)
{
        json_t *c = json_pack("{s:s,s:b,s:s,s:s}", "name", name, "ok", ok, "state", state, "detail",
                              detail ? detail : "");
        if (c && advice && !ok)
                json_object_set_new(c, "advice", json_string(advice));
        if (c == NULL || json_array_append_new(checks, c) < 0)
                return NULL;
        return c;
}

json_t *probe_host(void)
{
        struct utsname u;
        if (uname(&u) < 0)
                return json_pack("{s:i}", "uid", (int)geteuid());
        return json_pack("{s:s,s:s,s:i}", "system", u.sysname, "release", u.release, "uid", (int)geteuid());
}

static char *first_line(const char *path)
{
        char *s = read_file_at(AT_FDCWD, path, 4096);
        if (s)
                s[strcspn(s, "\n")] = '\0';
        return s;
}

/* Can this process create a user namespace right now? */
static bool probe_userns(int *ret_errno)
{
        pid_t pid = fork();
        if (pid == 0)
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0)
                return false;
        *ret_errno = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void check_userns(json_t *checks)
{
        char buf[512];
        int e = 0;
        bool userns = probe_userns(&e);
        cleanup_free char *maxns = first_line("/proc/sys/user/max_user_namespaces");
        cleanup_free char *deb = first_line("/proc/sys/kernel/unprivileged_userns_clone");
        cleanup_free char *apparmor = first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
        snprintf(buf, sizeof(buf), "max_user_namespaces=%s%s%s%s%s%s", maxns ? maxns : "?",
                 deb ? ", unprivileged_userns_clone=" : "", deb ? deb : "",
                 apparmor ? ", apparmor_restrict_unprivileged_userns=" : "", apparmor ? apparmor : "",
                 userns ? "" : (e ? ", unshare failed" : ""));
        probe_add(checks, "user namespaces", userns, userns ? "ok" : "missing", buf,
                  apparmor && strcmp(apparmor, "1") == 0
                          ? "AppArmor restricts unprivileged user namespaces: allow corral with an AppArmor profile "
                            "(userns,) or set kernel.apparmor_restrict_unprivileged_userns=0"
                          : "enable user namespaces: sysctl user.max_user_namespaces=15000 (and "
                            "kernel.unprivileged_userns_clone=1 on Debian kernels before 6.1)");
}

static void check_cgroups(json_t *checks)
{
        char buf[512];
        const struct cgroup_layout *l = cgroup_host_layout();
        if (l->v2_dir) {
                snprintf(buf, sizeof(buf), "%s (controllers for jails:%s%s%s%s)%s", l->v2_dir,
                         l->v2_memory ? " memory" : "", l->v2_pids ? " pids" : "", l->v2_cpu ? " cpu" : "",
                         l->v2_memory || l->v2_pids || l->v2_cpu ? "" : " none; used for kill and accounting",
                         l->v2_moved_self ? ", supervisor moved to corral-supervisor" : "");
                probe_add(checks, "cgroup v2", true, "ok", buf, NULL);
        } else {
                probe_add(checks, "cgroup v2", false, "missing", "no writable cgroup v2 directory for this process",
                          "run corral in a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes corral "
                          "...");
        }
        bool v1 = l->v1_memory || l->v1_pids || l->v1_cpu;
        snprintf(buf, sizeof(buf), "memory:%s pids:%s cpu:%s", l->v1_memory ? l->v1_memory : "-",
                 l->v1_pids ? l->v1_pids : "-", l->v1_cpu ? l->v1_cpu : "-");
        probe_add(checks, "cgroup v1", v1, v1 ? "ok" : "none",
                  v1 ? buf : "no writable v1 controllers (fine on v2 hosts)", NULL);

        if (l->v1_memory || l->v1_pids) {
                /* Moving another process into a v1 cgroup costs an RCU grace
                 * period unless the hierarchy favours dynamic changes.  A
                 * one-shot jail moves itself, which does not (cgroup.c); a
                 * warm session's init is still moved by us at its claim. */
                cleanup_free char *mi = read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20);
                bool fav = mi && strstr(mi, "favordynmods") != NULL;
                probe_add(checks, "cgroup migration", fav, fav ? "fast" : "slow",
                          fav ? "favordynmods is set"
                              : "one-shot jails enter their cgroups themselves (fast); each warm session claim "
                                "waits for an RCU grace period (~5-10 ms); to avoid it: mount -o "
                                "remount,favordynmods /sys/fs/cgroup/unified (Linux 6.0+)",
                          NULL);
        }
        const char *backend = l->v2_memory ? "cgroup-v2" : l->v1_memory ? "cgroup-v1" : "rlimit";
        bool cg = strcmp(backend, "rlimit") != 0;
        snprintf(buf, sizeof(buf), "%s%s", backend,
                 cg ? "" : " (memory is limited per process with RLIMIT_AS, processes with RLIMIT_NPROC)");
        probe_add(checks, "limits backend", cg, cg ? "ok" : "missing", buf,
                  "without a cgroup, memory is capped per process, not per tree; a jail that requires cgroups is "
                  "refused instead");
}

bool probe_jail(json_t *checks)
{
        char buf[512];
        check_userns(checks);
        cleanup_free char *actions = first_line("/proc/sys/kernel/seccomp/actions_avail");
        bool seccomp = actions && strstr(actions, "user_notif") != NULL;
        probe_add(checks, "seccomp", seccomp, seccomp ? "ok" : "missing", actions ? actions : "not available",
                  "corral needs seccomp filters with user notification (Linux 5.0+, CONFIG_SECCOMP_FILTER)");
        probe_add(checks, "no_new_privs", true, "ok", "always available (Linux 3.5+)", NULL);
        check_cgroups(checks);

        cleanup_free char *lsm = first_line("/sys/kernel/security/lsm");
        bool landlock = lsm && strstr(lsm, "landlock");
        probe_add(checks, "landlock", landlock, landlock ? "yes" : "none",
                  landlock ? "available (corral does not need it: the jail has its own mount namespace)"
                           : "not enabled (corral does not need it)",
                  NULL);

        /* The real thing. */
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *true_argv[] = { (char *)"true", NULL };
        corral_jail_result res;
        bool ran = corral_jail_config_set_argv(&cfg, true_argv, &err) == 0 &&
                   corral_jail_run(&cfg, NULL, &res, &err) == 0;
        if (ran) {
                snprintf(buf, sizeof(buf), "/bin/true ran in a jail: status %s, limits %s, setup %.2f ms",
                         corral_status_to_string(res.status), corral_limits_backend_to_string(res.backend),
                         res.phases.prepare + res.phases.clone + res.phases.mounts + res.phases.exec +
                                 res.phases.seccomp);
                ran = res.status == CORRAL_STATUS_OK;
                corral_jail_result_release(&res);
        } else {
                snprintf(buf, sizeof(buf), "%s", err ? err->msg : "failed");
        }
        probe_add(checks, "jail", ran, ran ? "ok" : "missing", buf,
                  "corral refuses to run code here; fix the missing mechanisms above");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        return ran;
}

void probe_openssl(json_t *checks)
{
        corral_error *err = NULL;
        const struct ssl_api *S = ssl_api_get(&err);
        char buf[256];
        if (S)
                snprintf(buf, sizeof(buf), "%s (for brokered credentials' TLS)", S->OpenSSL_version(OPENSSL_VERSION));
        probe_add(checks, "libssl", S != NULL, S ? "ok" : "missing", S ? buf : err ? err->msg : "not found",
                  "apt-get install libssl3 (brokered credentials for HTTPS hosts need it; allow-lists without one "
                  "do not)");
        corral_error_free(err);
}

void probe_net_proxy(json_t *checks)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *argv[] = { (char *)"bash", (char *)"-c",
                         (char *)"exec 3<>/dev/tcp/127.0.0.1/3128 && "
                                 "printf 'GET http://doctor.invalid/ HTTP/1.0\\r\\n\\r\\n' >&3 && dd bs=12 count=1 status=none <&3; "
                                 "echo; grep \"this jail's CA\" /etc/ssl/certs/ca-certificates.crt >/dev/null && echo 1",
                         NULL };
        corral_jail_io io = { .capture = true, .cancel_fd = -1 };
        corral_jail_result res;
        char buf[512];
        cfg.timeout_s = 10;
        cfg.net = CORRAL_NET_ALLOW;
        /* A brokered credential too (a fixed, worthless value): the jail's
         * CA must be made and be in the jail's trust store.  Without
         * OpenSSL, which only that needs, the allow-list alone. */
        corral_error *ssl_err = NULL;
        const struct ssl_api *S = ssl_api_get(&ssl_err);
        bool ran = corral_jail_config_set_argv(&cfg, argv, &err) == 0 &&
                   corral_jail_config_add_net_allow(&cfg, "allowed.invalid", &err) == 0 &&
                   (S == NULL || corral_jail_config_add_net_secret(&cfg, "allowed.invalid", "X-Doctor",
                                                                   "doctor-check", &err) == 0) &&
                   corral_jail_run(&cfg, &io, &res, &err) == 0;
        bool ok = false, ca = false;
        char ca_buf[256];
        snprintf(ca_buf, sizeof(ca_buf), "%s",
                 ssl_err ? ssl_err->msg : err ? err->msg : "the proxy's check did not run");
        if (ran) {
                const char *out = res.stdout_buf ? res.stdout_buf : "";
                ok = strncmp(out, "HTTP/1.1 403\n", 13) == 0 && res.n_network == 1 && !res.network[0].allowed;
                ca = S && ok && strcmp(out + 13, "1\n") == 0;
                if (S)
                        snprintf(ca_buf, sizeof(ca_buf),
                                 ca ? "a CA made for a jail is in its /etc/ssl/certs (%s)"
                                    : "the jail's CA bundle is missing inside the jail (%s)",
                                 S->OpenSSL_version(OPENSSL_VERSION));
                snprintf(buf, sizeof(buf), ok ? "answers inside a jail at 127.0.0.1:%d (a refused request, %.1f ms)"
                                              : "no answer from the proxy inside a jail (port %d, %.1f ms)",
                         CORRAL_NET_PROXY_PORT, res.wall_ms);
                corral_jail_result_release(&res);
        } else {
                snprintf(buf, sizeof(buf), "%s", err ? err->msg : "failed");
        }
        probe_add(checks, "net allow proxy", ok, ok ? "ok" : "missing", buf,
                  "network allow-lists will not work here; the rest of corral does not need them");
        probe_add(checks, "net brokered TLS", ca, ca ? "ok" : "missing", ca_buf,
                  "brokered credentials for HTTPS hosts will not work here; plain allow-lists do not need them");
        corral_error_free(err);
        corral_error_free(ssl_err);
        corral_jail_config_release(&cfg);

        /* The system's bundle that every allow-list jail without a
         * credential gets (plan.c; tests/e2e/test_net_allow.py checks it
         * inside jails): here, whether the host has one to give. */
        int fd = jail_trust_store_open(NULL);
        size_t certs = 0;
        if (fd >= 0) {
                static const char begin[] = "-----BEGIN CERTIFICATE-----";
                char chunk[65536 + sizeof(begin)];
                size_t keep = 0;
                ssize_t n;
                while ((n = read(fd, chunk + keep, sizeof(chunk) - keep - 1)) > 0) {
                        size_t len = keep + (size_t)n;
                        chunk[len] = '\0';
                        for (char *at = chunk; (at = strstr(at, begin)) != NULL; at += sizeof(begin) - 1)
                                certs++;
                        /* a marker split between reads is counted in the next */
                        keep = len < sizeof(begin) - 1 ? len : sizeof(begin) - 2;
                        memmove(chunk, chunk + len - keep, keep);
                }
                close(fd);
        }
        bool trust = certs > 0;
        if (trust)
                snprintf(buf, sizeof(buf),
                         "%zu certificates in " JAIL_CA_BUNDLE ", given read-only to allow-list jails", certs);
        else
                snprintf(buf, sizeof(buf), "no certificate bundle at " JAIL_CA_BUNDLE);
        probe_add(checks, "net trust store", trust, trust ? "ok" : "missing", buf,
                  "programs in allow-list jails cannot verify HTTPS hosts; install the ca-certificates package");
}

void probe_python(json_t *checks)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        corral_error *err = NULL;
        char *argv[] = { (char *)"python3", (char *)"-c",
                         (char *)"import sys\nv = ['Python ' + sys.version.split()[0]]\nmissing = []\n"
                                 "for m in ('numpy', 'pandas', 'matplotlib', 'scipy'):\n"
                                 "    try:\n        v.append(m + ' ' + __import__(m).__version__)\n"
                                 "    except Exception:\n        missing.append(m)\n"
                                 "print(', '.join(v))\nprint(' '.join(missing))",
                         NULL };
        corral_jail_io io = { .capture = true, .cancel_fd = -1 };
        corral_jail_result res;
        cfg.timeout_s = 60;
        cfg.memory_bytes = 1ull << 30;
        bool ran = corral_jail_config_set_argv(&cfg, argv, &err) == 0 && corral_jail_run(&cfg, &io, &res, &err) == 0;
        if (!ran) {
                probe_add(checks, "python in a jail", false, "missing", err ? err->msg : "failed", "install python3");
        } else {
                char *out = res.stdout_buf ? res.stdout_buf : "";
                char *nl = strchr(out, '\n');
                if (nl)
                        *nl = '\0';
                const char *missing = nl ? nl + 1 : "";
                bool ok = res.status == CORRAL_STATUS_OK && missing[strspn(missing, " \n")] == '\0';
                char found[512];
                snprintf(found, sizeof(found), "%s%s%s", res.status == CORRAL_STATUS_OK ? out : "python3 did not run",
                         ok ? "" : "; missing: ", ok ? "" : missing);
                found[strcspn(found, "\n")] = '\0';
                probe_add(checks, "python in a jail", ok, ok ? "ok" : "missing", found,
                          "apt-get install python3-numpy python3-pandas python3-matplotlib python3-scipy");
                corral_jail_result_release(&res);
        }
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}
