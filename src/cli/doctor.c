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
#include "cli.h"

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
        printf("\n%s\n", ran ? "corral can run code on this host." : "corral cannot run code on this host.");
        return ran ? 0 : 1;
}
