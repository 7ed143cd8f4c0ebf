/* outcome.c: how a jail's program ended, in the result's terms.
 *
 * One classifier for every jail: a cold one (spawn.c) and a warm session's
 * (src/session/warm.c) gather the facts (how the program ended, what the
 * supervisor did to it, what the cgroup counted) and jail_outcome_classify()
 * turns them into status, limit, signal, exit code, reason and the blocked
 * call, so that the same end reads the same whichever path ran it.  It reads
 * no file and touches no process: everything it knows is in the facts.
 * A jail that could not be set up is not an outcome: its caller returns an
 * error instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

#include "jail-internal.h"

static void set_reason(corral_jail_result *r, const char *fmt, ...) CORRAL_PRINTF(2, 3);
static void set_reason(corral_jail_result *r, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&r->reason, fmt, ap);
        va_end(ap);
}

/* Under RLIMIT_AS an allocation past the limit fails instead of being
 * killed; Python then ends with "MemoryError" as its last line, C++ with
 * std::bad_alloc.  Only the last line counts, so that a program that merely
 * mentions the word is not called oom. */
bool jail_outcome_memory_error(const char *data, size_t len)
{
        if (data == NULL || len == 0)
                return false;
        size_t end = len;
        while (end > 0 && (data[end - 1] == '\n' || data[end - 1] == '\r'))
                end--;
        size_t start = end;
        while (start > 0 && data[start - 1] != '\n')
                start--;
        const char *line = data + start;
        size_t n = end - start;
        return (n >= 11 && memcmp(line, "MemoryError", 11) == 0) || memmem(line, n, "std::bad_alloc", 14) != NULL;
}

/* The program's own end, before any limit explains it. */
static void classify_end(const struct jail_outcome *o, corral_jail_result *r)
{
        switch (o->end) {
        case JAIL_END_EXITED:
                r->exit_code = o->code;
                r->status = r->exit_code == 0 ? CORRAL_STATUS_OK : CORRAL_STATUS_ERROR;
                break;
        case JAIL_END_SIGNALED:
                r->signal = o->code;
                r->exit_code = 128 + r->signal;
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_SIGNAL;
                set_reason(r, "killed by signal %d (%s)", r->signal, strsignal(r->signal));
                break;
        case JAIL_END_NO_REPORT:
        default:
                /* init itself is gone: the supervisor's kill, or nothing we know of */
                r->signal = SIGKILL;
                r->exit_code = 128 + SIGKILL;
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_SIGNAL;
                set_reason(r, "the jail's init ended without a report");
                break;
        }
}

/* Fill r's status, limit, signal, exit_code, reason and seccomp fields from
 * o (the rest of r is left alone; r->reason is replaced).  What explains the
 * end best wins, in this order: an exec failure, a blocked system call, a
 * cancel, the tree's CPU time, the wall clock, the memory limit (only when
 * the program did not end OK: a child's OOM kill that the program survived
 * is not its outcome), an allocation failing under RLIMIT_AS, the CPU and
 * file-size rlimits' signals, the process limit. */
void jail_outcome_classify(const struct jail_outcome *o, corral_jail_result *r)
{
        const struct jail_outcome_limits *lim = &o->limits;
        r->status = CORRAL_STATUS_OK;
        r->limit = CORRAL_LIMIT_NONE;
        r->signal = 0;
        r->exit_code = 0;
        r->seccomp_syscall = 0;
        free(r->seccomp_syscall_name);
        r->seccomp_syscall_name = NULL;
        free(r->reason);
        r->reason = NULL;
        classify_end(o, r);
        if (o->exec_failed) {
                r->status = CORRAL_STATUS_ERROR;
                r->exit_code = o->exec_errno == ENOENT ? 127 : 126;
                r->signal = 0;
                r->limit = CORRAL_LIMIT_NONE;
                set_reason(r, "cannot execute '%s': %s", o->program ? o->program : "?", strerror(o->exec_errno));
        }
        if (o->violation) {
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_SECCOMP;
                r->signal = SIGSYS;
                r->exit_code = 128 + SIGSYS;
                r->seccomp_syscall = o->violation_nr;
                r->seccomp_syscall_name = jail_seccomp_syscall_name(o->violation_nr, o->violation_arch);
                set_reason(r, "blocked system call '%s': not allowed in the jail",
                           r->seccomp_syscall_name ? r->seccomp_syscall_name : "?");
                return;
        }
        if (o->cancelled) {
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_CANCELLED;
                r->signal = SIGKILL;
                r->exit_code = 128 + SIGKILL;
                set_reason(r, "cancelled");
                return;
        }
        if (o->cpu_exceeded) {
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_CPU_TIME;
                r->signal = SIGKILL;
                r->exit_code = 128 + SIGKILL;
                set_reason(r, "CPU-time limit of %g s reached (whole process tree)", lim->cpu_time_s);
                return;
        }
        if (o->timed_out) {
                r->status = CORRAL_STATUS_TIMEOUT;
                r->limit = CORRAL_LIMIT_WALL_TIME;
                r->exit_code = 124;
                r->signal = SIGKILL;
                set_reason(r, "wall-clock limit of %g s reached", lim->timeout_s);
                return;
        }
        if (o->oom_kills > 0 && r->status != CORRAL_STATUS_OK) {
                r->status = CORRAL_STATUS_OOM;
                r->limit = CORRAL_LIMIT_MEMORY;
                set_reason(r, "memory limit of %" PRIu64 " MiB reached", lim->memory_bytes >> 20);
                return;
        }
        if (o->backend == CORRAL_BACKEND_RLIMIT && r->status == CORRAL_STATUS_ERROR && o->stderr_memory_error) {
                r->status = CORRAL_STATUS_OOM;
                r->limit = CORRAL_LIMIT_MEMORY;
                set_reason(r, "memory limit of %" PRIu64 " MiB reached (allocation failed under RLIMIT_AS)",
                           lim->memory_bytes >> 20);
                return;
        }
        /* RLIMIT_CPU sends SIGXCPU at the limit and SIGKILL a second later. */
        if (r->signal == SIGXCPU || (r->signal == SIGKILL && lim->cpu_time_s > 0 && o->cpu_s >= 0 &&
                                     o->cpu_s >= floor(lim->cpu_time_s))) {
                r->status = CORRAL_STATUS_KILLED;
                r->limit = CORRAL_LIMIT_CPU_TIME;
                set_reason(r, "CPU-time limit of %g s reached", lim->cpu_time_s);
                return;
        }
        if (r->signal == SIGXFSZ) {
                r->limit = CORRAL_LIMIT_FILE_SIZE;
                set_reason(r, "file-size limit of %" PRIu64 " bytes reached", lim->disk_bytes);
                return;
        }
        if (o->pids_max_hits > 0 && r->status != CORRAL_STATUS_OK) {
                r->limit = CORRAL_LIMIT_PIDS;
                set_reason(r, "process limit of %" PRIu64 " reached", lim->pids);
        }
}

void jail_outcome_set_wait_status(struct jail_outcome *o, int wait_status)
{
        if (WIFEXITED(wait_status)) {
                o->end = JAIL_END_EXITED;
                o->code = WEXITSTATUS(wait_status);
        } else if (WIFSIGNALED(wait_status)) {
                o->end = JAIL_END_SIGNALED;
                o->code = WTERMSIG(wait_status);
        } else {
                o->end = JAIL_END_NO_REPORT;
                o->code = 0;
        }
}

void jail_outcome_set_limits(struct jail_outcome *o, const corral_jail_config *cfg)
{
        o->limits = (struct jail_outcome_limits){ .timeout_s = cfg->timeout_s, .cpu_time_s = cfg->cpu_time_s,
                                                  .memory_bytes = cfg->memory_bytes, .disk_bytes = cfg->disk_bytes,
                                                  .pids = cfg->pids };
        o->program = cfg->argv ? cfg->argv[0] : NULL;
}
