/* jail-loop.c: many jails in one process, and nothing may pile up.
 *
 *   jail-loop [N]      (default 1000; CORRAL_INIT names corral-init)
 *
 * Runs N jails one after another through corral_jail_run(): mostly
 * /bin/true, every 10th `python3 -c print(1)` after a request refused by
 * the --net allow proxy (that and the timed-out ones run with a proxy), and once in a hundred one
 * that times out, one whose program is missing, one that overflows its
 * output limit and one cancelled through cancel_fd, so the error and kill
 * paths are repeated too.  After jail 50 (warm-up: caches, the seccomp
 * program, the cgroup layout) and after jail N it takes the process's open
 * fds, RSS, live heap, threads, child processes, mounts and the cgroup
 * directories named corral-<ourpid>-*; all must be unchanged, except RSS,
 * which may grow by 2 MiB, and the heap, by 64 KiB.  Works as root (cgroups)
 * and as an ordinary user (rlimits).  Prints TAP; exits 0 only when
 * everything is flat and every jail ended as expected. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <corral/jail.h>

/* Under AddressSanitizer freed memory sits in a quarantine (256 MiB by
 * default) and RSS grows until it is full, so RSS says nothing about leaks
 * there: the live heap, as the allocator counts it, is checked instead
 * (and LeakSanitizer runs at exit). */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
size_t __sanitizer_get_current_allocated_bytes(void);
static long heap_bytes(void)
{
        return (long)__sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static long heap_bytes(void)
{
        struct mallinfo2 mi = mallinfo2();
        return (long)(mi.uordblks + mi.hblkhd);
}
#endif

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

#define WARMUP 50
#define FLOOD_LINE "the quick brown fox jumps over the lazy dog"
#define FLOOD_LINES 200
#define FLOOD_LINES_STR "200"
#define RSS_SLACK_KB 2048
#define HEAP_SLACK 65536 /* bytes: glibc's count moves a little with its caches */

struct snapshot {
        long fds;
        long rss_kb;
        long heap;
        long threads;
        long children;
        long mounts;
        long cgroups;
};

static long count_dir(const char *path)
{
        DIR *d = opendir(path);
        if (d == NULL)
                return -1;
        long n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static long rss_kb(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        if (f == NULL)
                return -1;
        char line[256];
        long kb = -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "VmRSS:", 6) == 0)
                        kb = strtol(line + 6, NULL, 10);
        fclose(f);
        return kb;
}

static long count_lines(const char *path)
{
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return -1;
        long n = 0;
        int c;
        while ((c = getc(f)) != EOF)
                if (c == '\n')
                        n++;
        fclose(f);
        return n;
}

/* Children of this process, zombies included: /proc/self/task/<tid>/children
 * where the kernel has it (CONFIG_PROC_CHILDREN), else every /proc/<pid>/stat
 * whose ppid is us. */
static long count_children(void)
{
        long n = 0;
        pid_t self = getpid();
        DIR *tasks = opendir("/proc/self/task");
        bool have_children_file = false;
        if (tasks) {
                struct dirent *t;
                while ((t = readdir(tasks)) != NULL) {
                        if (t->d_name[0] == '.')
                                continue;
                        char path[300];
                        snprintf(path, sizeof(path), "/proc/self/task/%s/children", t->d_name);
                        FILE *f = fopen(path, "re");
                        if (f == NULL)
                                continue;
                        have_children_file = true;
                        long pid;
                        while (fscanf(f, "%ld", &pid) == 1)
                                n++;
                        fclose(f);
                }
                closedir(tasks);
        }
        if (have_children_file)
                return n;
        n = 0;
        DIR *proc = opendir("/proc");
        if (proc == NULL)
                return -1;
        struct dirent *e;
        while ((e = readdir(proc)) != NULL) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9')
                        continue;
                char path[300], buf[1024];
                snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t len = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (len <= 0)
                        continue;
                buf[len] = '\0';
                /* pid (comm) state ppid ...; comm may contain anything */
                char *rp = strrchr(buf, ')');
                char state;
                long ppid;
                if (rp && sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
                        n++;
        }
        closedir(proc);
        return n;
}

/* Directories named corral-<pid>-* below fd (which this takes), at most depth levels down. */
static long count_cgroups_at(int fd, const char *prefix, int depth)
{
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return 0;
        }
        long n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                bool is_dir = e->d_type == DT_DIR;
                if (e->d_type == DT_UNKNOWN) {
                        struct stat st;
                        is_dir = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
                }
                if (!is_dir)
                        continue;
                if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
                        n++;
                if (depth > 0) {
                        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                n += count_cgroups_at(sub, prefix, depth - 1);
                }
        }
        closedir(d);
        return n;
}

static long count_cgroups(void)
{
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "corral-%d-", (int)getpid());
        int fd = open("/sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        return count_cgroups_at(fd, prefix, 8);
}

static void take(struct snapshot *s)
{
        s->fds = count_dir("/proc/self/fd") - 1; /* opendir's own fd */
        s->rss_kb = rss_kb();
        s->heap = heap_bytes();
        s->threads = count_dir("/proc/self/task");
        s->children = count_children();
        s->mounts = count_lines("/proc/self/mountinfo");
        s->cgroups = count_cgroups();
}

static void print_snapshot(const char *when, const struct snapshot *s)
{
        printf("# %s: fds=%ld rss=%ldkB heap=%ldB threads=%ld children=%ld mounts=%ld cgroup_dirs=%ld\n", when,
               s->fds, s->rss_kb, s->heap, s->threads, s->children, s->mounts, s->cgroups);
}

enum kind { K_TRUE, K_PYTHON, K_TIMEOUT, K_MISSING, K_FLOOD, K_CANCEL, K_COUNT };
static const char *const kind_names[] = { "true", "python", "timeout", "missing", "flood", "cancel" };

static enum kind kind_of(long i, bool have_python)
{
        switch (i % 100) {
        case 5:
                return K_TIMEOUT;
        case 15:
                return K_MISSING;
        case 25:
                return K_FLOOD;
        case 35:
                return K_CANCEL;
        default:
                break;
        }
        return have_python && i % 10 == 0 ? K_PYTHON : K_TRUE;
}

static int setup(corral_jail_config *cfg, enum kind k)
{
        static char *const argv_true[] = { "/bin/true", NULL };
        /* Through the --net allow proxy: a refused request, then the answer. */
        static char *const argv_python[] = { "python3", "-c",
                                             "import socket; s = socket.create_connection(('127.0.0.1', 3128)); "
                                             "s.sendall(b'GET http://denied.test/ HTTP/1.0\\r\\n\\r\\n'); "
                                             "assert s.recv(12) == b'HTTP/1.1 403'; print(1)",
                                             NULL };
        static char *const argv_sleep[] = { "/bin/sleep", "10", NULL };
        static char *const argv_missing[] = { "/nonexistent/program", NULL };
        static char *const argv_flood[] = { "/bin/sh", "-c",
                                            "i=0; while [ $i -lt " FLOOD_LINES_STR " ]; do echo " FLOOD_LINE
                                            "; i=$((i+1)); done; echo done >&2",
                                            NULL };
        char *const *const argvs[] = { argv_true, argv_python, argv_sleep, argv_missing, argv_flood, argv_sleep };
        corral_jail_config_init(cfg);
        corral_error *err = NULL;
        if (corral_jail_config_set_argv(cfg, argvs[k], &err) < 0) {
                printf("# set_argv: %s\n", err->msg);
                corral_error_free(err);
                return -1;
        }
        /* Jails with a network proxy among the others: its threads and fds
         * must be gone with each. */
        if ((k == K_PYTHON || k == K_TIMEOUT) && corral_jail_config_add_net_allow(cfg, "allowed.test", &err) == 0)
                cfg->net = CORRAL_NET_ALLOW;
        corral_error_free(err);
        err = NULL;
        cfg->timeout_s = k == K_TIMEOUT ? 0.1 : 30;
        if (k == K_FLOOD)
                cfg->output_limit = 1000;
        return 0;
}

/* Did jail i end as its kind should? */
static bool as_expected(enum kind k, const corral_jail_result *r)
{
        switch (k) {
        case K_TRUE:
                return r->status == CORRAL_STATUS_OK && r->stdout_len == 0;
        case K_PYTHON:
                return r->status == CORRAL_STATUS_OK && r->stdout_buf && strcmp(r->stdout_buf, "1\n") == 0;
        case K_TIMEOUT:
                return r->status == CORRAL_STATUS_TIMEOUT && r->limit == CORRAL_LIMIT_WALL_TIME;
        case K_MISSING:
                return r->status == CORRAL_STATUS_ERROR && r->exit_code == 127;
        case K_FLOOD:
                return r->status == CORRAL_STATUS_OK && r->stdout_truncated && r->stdout_len == 1000 &&
                       r->stdout_total == FLOOD_LINES * sizeof(FLOOD_LINE) && r->stderr_buf &&
                       strcmp(r->stderr_buf, "done\n") == 0;
        case K_CANCEL:
                return r->status == CORRAL_STATUS_KILLED && r->limit == CORRAL_LIMIT_CANCELLED;
        case K_COUNT:
        default:
                break;
        }
        return false;
}

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
        if (n < WARMUP + 1) {
                fprintf(stderr, "usage: jail-loop [N > %d]\n", WARMUP);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        bool have_python = access("/usr/bin/python3", X_OK) == 0 || access("/usr/local/bin/python3", X_OK) == 0;
        printf("# %ld jails as uid %d%s\n", n, (int)getuid(), have_python ? "" : " (no python3: /bin/true only)");

        corral_jail_config cfgs[K_COUNT];
        for (int k = 0; k < K_COUNT; k++)
                if (setup(&cfgs[k], (enum kind)k) < 0)
                        return 1;

        struct snapshot warm = { 0 }, end = { 0 };
        long failures = 0, counts[K_COUNT] = { 0 };
        const char *backend = "?";
        double t0 = now_ms(), t_warm = 0;
        for (long i = 1; i <= n; i++) {
                enum kind k = kind_of(i, have_python);
                corral_jail_result res;
                corral_error *err = NULL;
                counts[k]++;
                /* K_CANCEL: the cancel fd is readable from the start. */
                int cancel[2] = { -1, -1 };
                corral_jail_io io = { .stdin_fd = -1, .capture = true, .cancel_fd = -1 };
                if (k == K_CANCEL) {
                        if (pipe2(cancel, O_CLOEXEC) < 0 || write(cancel[1], "x", 1) != 1) {
                                printf("# cannot make the cancel pipe: %s\n", strerror(errno));
                                return 1;
                        }
                        io.cancel_fd = cancel[0];
                }
                int r = corral_jail_run(&cfgs[k], k == K_CANCEL ? &io : NULL, &res, &err);
                if (cancel[0] >= 0) {
                        close(cancel[0]);
                        close(cancel[1]);
                }
                if (r < 0) {
                        if (failures++ < 10)
                                printf("# jail %ld (%s): %s\n", i, kind_names[k], err ? err->msg : "?");
                        corral_error_free(err);
                } else {
                        if (!as_expected(k, &res) && failures++ < 10)
                                printf("# jail %ld (%s): status %s, exit %d, reason %s, stdout %zu bytes\n", i,
                                       kind_names[k], corral_status_to_string(res.status), res.exit_code,
                                       res.reason ? res.reason : "-", res.stdout_len);
                        backend = corral_limits_backend_to_string(res.backend);
                        corral_jail_result_release(&res);
                }
                if (i == WARMUP) {
                        t_warm = now_ms();
                        take(&warm);
                        print_snapshot("after 50", &warm);
                }
        }
        double t_end = now_ms();
        take(&end);
        char when[32];
        snprintf(when, sizeof(when), "after %ld", n);
        print_snapshot(when, &end);
        printf("# limits backend %s; %.1f ms per jail after warm-up (%.1f s in all)\n", backend,
               (t_end - t_warm) / (double)(n - WARMUP), (t_end - t0) / 1e3);
        printf("# kinds:");
        for (int k = 0; k < K_COUNT; k++)
                printf(" %s=%ld", kind_names[k], counts[k]);
        printf("\n");

        int t = 0, bad = 0;
#define FLAT(cond, name)                                                                                              \
        do {                                                                                                          \
                t++;                                                                                                  \
                if (cond) {                                                                                           \
                        printf("ok %d - %s\n", t, name);                                                              \
                } else {                                                                                              \
                        bad++;                                                                                        \
                        printf("not ok %d - %s\n", t, name);                                                          \
                }                                                                                                     \
        } while (0)
        FLAT(failures == 0, "every jail ran and ended as expected");
        FLAT(end.fds == warm.fds && end.fds >= 0, "open fds flat");
#ifdef HAVE_ASAN
        printf("ok %d - RSS grew by at most 2 MiB # SKIP AddressSanitizer's quarantine holds freed memory\n", ++t);
#else
        FLAT(end.rss_kb - warm.rss_kb <= RSS_SLACK_KB, "RSS grew by at most 2 MiB");
#endif
        FLAT(end.heap - warm.heap <= HEAP_SLACK, "live heap grew by at most 64 KiB");
        FLAT(end.threads == warm.threads, "threads flat");
        FLAT(end.children == warm.children && end.children >= 0, "child processes flat");
        FLAT(end.mounts == warm.mounts && end.mounts >= 0, "mounts flat");
        FLAT(end.cgroups == warm.cgroups, "corral cgroup directories flat");
        printf("1..%d\n", t);

        for (int k = 0; k < K_COUNT; k++)
                corral_jail_config_release(&cfgs[k]);
        return bad ? 1 : 0;
}
