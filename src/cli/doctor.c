/* doctor.c: `corral doctor`, what this host offers and what corral will use.
 *
 * Each check prints one line: the mechanism, what was found, and, when it is
 * missing, what to do.  The last check runs a real jail.  Exit status: 0 when
 * corral can run code here, 1 when it cannot, 2 on usage errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corral/jail.h>

#include "../lib/jail-internal.h"
#include "../model/curl-dl.h"
#include "../model/model.h"
#include "../model/provider.h"
#include "../workspace/archive-dl.h"
#include "cli.h"
#include "../session/client.h"

static char *first_line(const char *path)
{
        char *s = read_file_at(AT_FDCWD, path, 4096);
        if (s)
                s[strcspn(s, "\n")] = '\0';
        return s;
}

static void line(const char *what, bool ok, const char *found, const char *advice)
{
        printf("%-22s %-4s %s", what, ok ? "ok" : "MISSING", found);
        if (!ok && advice)
                printf("\n%-27s -> %s", "", advice);
        putchar('\n');
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

/* Python and the data libraries as a jail sees them. */
static void check_python(void)
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
                line("python in a jail", false, err ? err->msg : "failed", "install python3");
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
                line("python in a jail", ok, found,
                     "apt-get install python3-numpy python3-pandas python3-matplotlib python3-scipy");
                corral_jail_result_release(&res);
        }
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

/* The libraries loaded on first use (dlopen): a run needs libcurl, archives
 * libarchive. */
static void check_libraries(void)
{
        corral_error *err = NULL;
        const struct curl_api *c = curl_api_get(&err);
        char buf[256];
        if (c) {
                const curl_version_info_data *v = c->version_info(CURLVERSION_NOW);
                snprintf(buf, sizeof(buf), "libcurl %s (for model endpoints)", v && v->version ? v->version : "?");
        }
        line("libcurl", c != NULL, c ? buf : err ? err->msg : "not found",
             "apt-get install libcurl4 (corral run talks to models with it)");
        corral_error_clear(&err);
        const struct archive_api *a = archive_api_get(&err);
        line("libarchive", a != NULL, a ? "loaded (for workspace archives)" : err ? err->msg : "not found",
             "apt-get install libarchive13 (for --archive, --from and corral workspace)");
        corral_error_free(err);
}

/* Which model `corral run` would use with no flags, and whether it
 * answers; else whether a local Ollama does.  Says, never fails. */
static void check_model(void)
{
        struct provider_request req = { 0 };
        struct provider_choice ch;
        corral_error *err = NULL;
        char buf[512];
        bool configured = provider_resolve(&req, &ch, &err) == 0 && ch.model && ch.model[0];
        if (!configured) {
                corral_error_clear(&err);
                if (provider_resolve(&(struct provider_request){ .provider = "ollama", .model = "any" }, &ch,
                                     &err) < 0) {
                        corral_error_free(err);
                        return;
                }
        }
        struct model_settings s;
        model_settings_init(&s);
        s.base_url = ch.base_url;
        s.model = ch.model;
        s.api_key = ch.api_key;
        s.provider = ch.provider;
        s.quirks = ch.quirks;
        s.connect_timeout_s = 2;
        s.request_timeout_s = 5;
        s.max_retries = 0;
        model_client *m = NULL;
        json_t *ids = NULL;
        bool answers = strncmp(ch.model, "replay:", 7) == 0 ||
                       (model_client_open(&s, &m, &err) == 0 && model_client_list(m, &ids, &err) == 0);
        if (configured) {
                snprintf(buf, sizeof(buf), "%s at %s: %s%s", ch.model, ch.base_url ? ch.base_url : "(replay)",
                         answers ? "the endpoint answers" : "the endpoint does not answer: ",
                         answers ? "" : err ? err->msg : "?");
                line("model", answers, buf, "check --base-url, $OPENAI_BASE_URL and the config file (docs/providers.md)");
        } else if (answers) {
                snprintf(buf, sizeof(buf), "none configured; Ollama answers at %s with %zu model%s: corral run "
                                           "--provider ollama --model NAME",
                         ch.base_url, json_array_size(ids), json_array_size(ids) == 1 ? "" : "s");
                printf("%-22s %-4s %s\n", "model", "-", buf);
        } else {
                printf("%-22s %-4s %s\n", "model", "-",
                       "none configured and no Ollama on localhost:11434: give --model and --base-url, set "
                       "$CORRAL_MODEL or the config file (docs/providers.md); replay:FILE works offline");
        }
        json_decref(ids);
        model_client_free(m);
        corral_error_free(err);
        provider_choice_release(&ch);
}

static void check_session_host(void)
{
        corral_error *err = NULL;
        int fd = session_client_connect_host(false, &err);
        if (fd >= 0) {
                close(fd);
                printf("%-22s %-4s %s\n", "session host", "ok", "running (corral session status says more)");
        } else {
                printf("%-22s %-4s %s\n", "session host", "-",
                       "not running: the first `corral session start` launches it (with its zygote, ~1.5 s)");
        }
        corral_error_free(err);
}

int cmd_doctor(int argc, char **argv)
{
        if (argc > 1) {
                if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                        puts("usage: corral doctor\n\nShow which isolation and limit mechanisms this host offers,\n"
                             "which ones corral will use, and what to do about missing ones.\n"
                             "Exit status: 0 corral can run code here, 1 it cannot, 2 usage error.");
                        return 0;
                }
                cli_error("doctor", "unexpected argument '%s' (see 'corral doctor --help')", argv[1]);
                return EXIT_USAGE_SUBCOMMAND;
        }
        char buf[512];
        struct utsname u;
        uname(&u);
        printf("corral doctor: %s %s, running as uid %d\n\n", u.sysname, u.release, (int)geteuid());

        int e = 0;
        bool userns = probe_userns(&e);
        cleanup_free char *maxns = first_line("/proc/sys/user/max_user_namespaces");
        cleanup_free char *deb = first_line("/proc/sys/kernel/unprivileged_userns_clone");
        cleanup_free char *apparmor = first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
        snprintf(buf, sizeof(buf), "max_user_namespaces=%s%s%s%s%s%s", maxns ? maxns : "?",
                 deb ? ", unprivileged_userns_clone=" : "", deb ? deb : "",
                 apparmor ? ", apparmor_restrict_unprivileged_userns=" : "", apparmor ? apparmor : "",
                 userns ? "" : (e ? ", unshare failed" : ""));
        line("user namespaces", userns, buf,
             apparmor && strcmp(apparmor, "1") == 0
                     ? "AppArmor restricts unprivileged user namespaces: allow corral with an AppArmor profile "
                       "(userns,) or set kernel.apparmor_restrict_unprivileged_userns=0"
                     : "enable user namespaces: sysctl user.max_user_namespaces=15000 (and "
                       "kernel.unprivileged_userns_clone=1 on Debian kernels before 6.1)");

        cleanup_free char *actions = first_line("/proc/sys/kernel/seccomp/actions_avail");
        bool seccomp = actions && strstr(actions, "user_notif") != NULL;
        line("seccomp", seccomp, actions ? actions : "not available",
             "corral needs seccomp filters with user notification (Linux 5.0+, CONFIG_SECCOMP_FILTER)");
        line("no_new_privs", true, "always available (Linux 3.5+)", NULL);

        const struct cgroup_layout *l = cgroup_host_layout();
        if (l->v2_dir) {
                snprintf(buf, sizeof(buf), "%s (controllers for jails:%s%s%s%s)%s", l->v2_dir,
                         l->v2_memory ? " memory" : "", l->v2_pids ? " pids" : "", l->v2_cpu ? " cpu" : "",
                         l->v2_memory || l->v2_pids || l->v2_cpu ? "" : " none; used for kill and accounting",
                         l->v2_moved_self ? ", supervisor moved to corral-supervisor" : "");
                line("cgroup v2", true, buf, NULL);
        } else {
                line("cgroup v2", false, "no writable cgroup v2 directory for this process",
                     "run corral in a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes corral ...");
        }
        bool v1 = l->v1_memory || l->v1_pids || l->v1_cpu;
        snprintf(buf, sizeof(buf), "memory:%s pids:%s cpu:%s", l->v1_memory ? l->v1_memory : "-",
                 l->v1_pids ? l->v1_pids : "-", l->v1_cpu ? l->v1_cpu : "-");
        printf("%-22s %-4s %s\n", "cgroup v1", v1 ? "ok" : "-", v1 ? buf : "no writable v1 controllers (fine on v2 hosts)");

        if (l->v1_memory || l->v1_pids) {
                /* v1 controllers need a migration per jail, which costs an RCU
                 * grace period unless the hierarchy favours dynamic changes. */
                cleanup_free char *mi = read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20);
                bool fav = mi && strstr(mi, "favordynmods") != NULL;
                printf("%-22s %-4s %s\n", "cgroup migration", fav ? "fast" : "slow",
                       fav ? "favordynmods is set" :
                             "each jail start waits for an RCU grace period (~5-10 ms); to avoid it: "
                             "mount -o remount,favordynmods /sys/fs/cgroup/unified (Linux 6.0+)");
        }
        const char *backend = l->v2_memory ? "cgroup-v2" : l->v1_memory ? "cgroup-v1" : "rlimit";
        snprintf(buf, sizeof(buf), "%s%s", backend,
                 strcmp(backend, "rlimit") == 0
                         ? " (memory is limited per process with RLIMIT_AS, processes with RLIMIT_NPROC)"
                         : "");
        line("limits backend", strcmp(backend, "rlimit") != 0, buf,
             "without a cgroup, memory is capped per process, not per tree; --require-cgroups refuses instead");

        cleanup_free char *lsm = first_line("/sys/kernel/security/lsm");
        bool landlock = lsm && strstr(lsm, "landlock");
        printf("%-22s %-4s %s\n", "landlock", landlock ? "yes" : "-",
               landlock ? "available (corral does not need it: the jail has its own mount namespace)"
                        : "not enabled (corral does not need it)");

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
        line("jail", ran, buf, "corral refuses to run code here; fix the MISSING lines above");
        corral_error_free(err);
        corral_jail_config_release(&cfg);
        if (ran) {
                printf("\nwhat `corral run` and sessions need:\n");
                check_python();
        }
        check_libraries();
        check_model();
        check_session_host();
        printf("\n%s\n", ran ? "corral can run code on this host." : "corral cannot run code on this host.");
        return ran ? 0 : 1;
}
