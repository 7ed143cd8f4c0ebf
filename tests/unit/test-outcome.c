/* test-outcome.c: the one classifier of a jail's end (src/lib/outcome.c).
 *
 * Each case feeds jail_outcome_classify() the facts a cold or warm jail
 * gathers and checks status, limit, exit code, signal and the reason's exact
 * words (docs/exec-json.md, docs/limits.md quote them), then the order in
 * which the facts win over each other. */
#define _GNU_SOURCE
#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "harness.h"
#include "jail-internal.h"

/* Facts with the CLI's default limits (30 s, 512 MiB, 256 MiB disk, 128
 * processes) and a CPU-time limit of 5 s; the program exited 0. */
static struct jail_outcome facts(void)
{
        return (struct jail_outcome){
                .end = JAIL_END_EXITED,
                .program = "python3",
                .backend = CORRAL_BACKEND_CGROUP_V2,
                .cpu_s = -1,
                .limits = { .timeout_s = 30, .cpu_time_s = 5, .memory_bytes = 512u << 20,
                            .disk_bytes = 256u << 20, .pids = 128 },
        };
}

struct want {
        enum corral_status status;
        enum corral_limit limit;
        int exit_code, signal;
        const char *reason; /* NULL: none */
};

static void check(const struct jail_outcome *o, struct want w)
{
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        r.reason = strdup("stale"); /* replaced, not leaked (ASan) */
        jail_outcome_classify(o, &r);
        CHECK_STR(corral_status_to_string(r.status), corral_status_to_string(w.status));
        CHECK_INT(r.limit, w.limit);
        CHECK_INT(r.exit_code, w.exit_code);
        CHECK_INT(r.signal, w.signal);
        if (w.reason)
                CHECK_STR(r.reason, w.reason);
        else
                CHECK(r.reason == NULL);
        corral_jail_result_release(&r);
}

TEST(program_ends)
{
        struct jail_outcome o = facts();
        check(&o, (struct want){ CORRAL_STATUS_OK, CORRAL_LIMIT_NONE, 0, 0, NULL });
        o.code = 3;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_NONE, 3, 0, NULL });
        o.end = JAIL_END_SIGNALED;
        o.code = SIGSEGV;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 139, SIGSEGV,
                                 "killed by signal 11 (Segmentation fault)" });
        o.end = JAIL_END_NO_REPORT;
        o.code = 0;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 137, SIGKILL,
                                 "the jail's init ended without a report" });
}

TEST(wait_status)
{
        struct jail_outcome o = facts();
        jail_outcome_set_wait_status(&o, 7 << 8); /* exited 7 */
        CHECK_INT(o.end, JAIL_END_EXITED);
        CHECK_INT(o.code, 7);
        jail_outcome_set_wait_status(&o, SIGTERM); /* killed by SIGTERM */
        CHECK_INT(o.end, JAIL_END_SIGNALED);
        CHECK_INT(o.code, SIGTERM);
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 143, SIGTERM,
                                 "killed by signal 15 (Terminated)" });
}

TEST(limits_set_from_config)
{
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *argv[] = { "/bin/sh", NULL };
        cfg.argv = argv;
        cfg.timeout_s = 2.5;
        cfg.memory_bytes = 256u << 20;
        struct jail_outcome o = facts();
        jail_outcome_set_limits(&o, &cfg);
        CHECK_STR(o.program, "/bin/sh");
        o.timed_out = true;
        check(&o, (struct want){ CORRAL_STATUS_TIMEOUT, CORRAL_LIMIT_WALL_TIME, 124, SIGKILL,
                                 "wall-clock limit of 2.5 s reached" });
        o.timed_out = false;
        o.end = JAIL_END_SIGNALED;
        o.code = SIGKILL;
        o.oom_kills = 1;
        check(&o, (struct want){ CORRAL_STATUS_OOM, CORRAL_LIMIT_MEMORY, 137, SIGKILL,
                                 "memory limit of 256 MiB reached" });
        cfg.argv = NULL; /* not the config's to free */
        corral_jail_config_release(&cfg);
}

TEST(each_limit)
{
        struct jail_outcome o = facts();
        o.exec_failed = true;
        o.exec_errno = ENOENT;
        o.end = JAIL_END_EXITED;
        o.code = 127;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_NONE, 127, 0,
                                 "cannot execute 'python3': No such file or directory" });
        o.exec_errno = EACCES;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_NONE, 126, 0,
                                 "cannot execute 'python3': Permission denied" });

        o = facts();
        o.end = JAIL_END_NO_REPORT;
        o.violation = true;
        o.violation_nr = __NR_ptrace;
        o.violation_arch = seccomp_arch_native();
        corral_jail_result r;
        memset(&r, 0, sizeof(r));
        jail_outcome_classify(&o, &r);
        CHECK_INT(r.seccomp_syscall, __NR_ptrace);
        CHECK_STR(r.seccomp_syscall_name, "ptrace");
        corral_jail_result_release(&r);
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SECCOMP, 159, SIGSYS,
                                 "blocked system call 'ptrace': not allowed in the jail" });

        o = facts();
        o.end = JAIL_END_NO_REPORT;
        o.cancelled = true;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CANCELLED, 137, SIGKILL, "cancelled" });

        o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGKILL;
        o.cpu_exceeded = true;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CPU_TIME, 137, SIGKILL,
                                 "CPU-time limit of 5 s reached (whole process tree)" });

        o = facts();
        o.end = JAIL_END_NO_REPORT;
        o.timed_out = true;
        check(&o, (struct want){ CORRAL_STATUS_TIMEOUT, CORRAL_LIMIT_WALL_TIME, 124, SIGKILL,
                                 "wall-clock limit of 30 s reached" });

        o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGKILL;
        o.oom_kills = 2;
        check(&o, (struct want){ CORRAL_STATUS_OOM, CORRAL_LIMIT_MEMORY, 137, SIGKILL,
                                 "memory limit of 512 MiB reached" });

        /* The program exited 1 after a child of it was OOM-killed. */
        o.end = JAIL_END_EXITED;
        o.code = 1;
        check(&o, (struct want){ CORRAL_STATUS_OOM, CORRAL_LIMIT_MEMORY, 1, 0, "memory limit of 512 MiB reached" });

        o = facts();
        o.backend = CORRAL_BACKEND_RLIMIT;
        o.code = 1;
        o.stderr_memory_error = true;
        check(&o, (struct want){ CORRAL_STATUS_OOM, CORRAL_LIMIT_MEMORY, 1, 0,
                                 "memory limit of 512 MiB reached (allocation failed under RLIMIT_AS)" });

        o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGXCPU;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CPU_TIME, 128 + SIGXCPU, SIGXCPU,
                                 "CPU-time limit of 5 s reached" });
        /* RLIMIT_CPU's hard limit: SIGKILL, told apart by the CPU time used */
        o.code = SIGKILL;
        o.cpu_s = 5;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CPU_TIME, 137, SIGKILL,
                                 "CPU-time limit of 5 s reached" });

        o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGXFSZ;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_FILE_SIZE, 128 + SIGXFSZ, SIGXFSZ,
                                 "file-size limit of 268435456 bytes reached" });

        o = facts();
        o.code = 1;
        o.pids_max_hits = 4;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_PIDS, 1, 0, "process limit of 128 reached" });
}

/* A fact that does not explain the end leaves it alone. */
TEST(facts_that_do_not_apply)
{
        struct jail_outcome o = facts();
        /* OOM kills of a child the program survived: it ended OK */
        o.oom_kills = 1;
        o.pids_max_hits = 1;
        check(&o, (struct want){ CORRAL_STATUS_OK, CORRAL_LIMIT_NONE, 0, 0, NULL });
        /* MemoryError on stderr counts only under rlimits */
        o = facts();
        o.code = 1;
        o.stderr_memory_error = true;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_NONE, 1, 0, NULL });
        /* a SIGKILL with CPU time unknown, or under the limit, is a signal */
        o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGKILL;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 137, SIGKILL,
                                 "killed by signal 9 (Killed)" });
        o.cpu_s = 4;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 137, SIGKILL,
                                 "killed by signal 9 (Killed)" });
        o.limits.cpu_time_s = 0;
        o.cpu_s = 100;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SIGNAL, 137, SIGKILL,
                                 "killed by signal 9 (Killed)" });
}

TEST(precedence)
{
        /* Everything at once: the blocked call explains it. */
        struct jail_outcome o = facts();
        o.end = JAIL_END_SIGNALED;
        o.code = SIGKILL;
        o.violation = true;
        o.violation_nr = __NR_ptrace;
        o.violation_arch = seccomp_arch_native();
        o.cancelled = o.cpu_exceeded = o.timed_out = true;
        o.oom_kills = 1;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SECCOMP, 159, SIGSYS,
                                 "blocked system call 'ptrace': not allowed in the jail" });
        /* an exec failure is overruled by a violation (init's own kill) */
        o.exec_failed = true;
        o.exec_errno = ENOENT;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_SECCOMP, 159, SIGSYS,
                                 "blocked system call 'ptrace': not allowed in the jail" });
        o.exec_failed = false;
        o.violation = false;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CANCELLED, 137, SIGKILL, "cancelled" });
        o.cancelled = false;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CPU_TIME, 137, SIGKILL,
                                 "CPU-time limit of 5 s reached (whole process tree)" });
        o.cpu_exceeded = false;
        check(&o, (struct want){ CORRAL_STATUS_TIMEOUT, CORRAL_LIMIT_WALL_TIME, 124, SIGKILL,
                                 "wall-clock limit of 30 s reached" });
        o.timed_out = false;
        o.pids_max_hits = 1;
        o.cpu_s = 9;
        check(&o, (struct want){ CORRAL_STATUS_OOM, CORRAL_LIMIT_MEMORY, 137, SIGKILL,
                                 "memory limit of 512 MiB reached" });
        o.oom_kills = 0;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CPU_TIME, 137, SIGKILL,
                                 "CPU-time limit of 5 s reached" });
        o.cpu_s = -1;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_PIDS, 137, SIGKILL,
                                 "process limit of 128 reached" });
        /* an exec failure wins over init's exit status, a cancel over it */
        o = facts();
        o.code = 1;
        o.exec_failed = true;
        o.exec_errno = ENOENT;
        check(&o, (struct want){ CORRAL_STATUS_ERROR, CORRAL_LIMIT_NONE, 127, 0,
                                 "cannot execute 'python3': No such file or directory" });
        o.cancelled = true;
        check(&o, (struct want){ CORRAL_STATUS_KILLED, CORRAL_LIMIT_CANCELLED, 137, SIGKILL, "cancelled" });
}

TEST(memory_error_line)
{
        static const char *yes[] = { "Traceback...\nMemoryError\n", "MemoryError", "MemoryError: out\r\n\n",
                                     "terminate called after throwing an instance of 'std::bad_alloc'\n" };
        static const char *no[] = { "", "print('MemoryError')\nok\n", "no MemoryError here\n",
                                    "MemoryError\nbut then more\n" };
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
                CHECK(jail_outcome_memory_error(yes[i], strlen(yes[i])));
        for (size_t i = 0; i < ARRAY_SIZE(no); i++)
                CHECK(!jail_outcome_memory_error(no[i], strlen(no[i])));
        CHECK(!jail_outcome_memory_error(NULL, 0));
}

int main(void)
{
        RUN(program_ends);
        RUN(wait_status);
        RUN(limits_set_from_config);
        RUN(each_limit);
        RUN(facts_that_do_not_apply);
        RUN(precedence);
        RUN(memory_error_line);
        return DONE();
}
