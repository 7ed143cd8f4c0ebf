/* cgroup.c: resource limits through cgroups, v2 first, v1 where only that
 * exists, and nothing (the caller falls back to rlimits) where neither can be
 * used by this process.
 *
 * Rules this module keeps:
 *  - it only creates cgroups beneath the cgroups this process is already in;
 *  - a v2 cgroup is always made when the v2 hierarchy is writable, even with
 *    no controllers in it, because it still gives cgroup.kill, cpu.stat and
 *    clone3(CLONE_INTO_CGROUP), which puts the jail in it from birth;
 *  - in v1, the memory, pids and cpu controllers are used separately, each
 *    from its own mount; the jail's setup child enters them itself before
 *    it does anything else (cgroup_open_v1_tasks()), or is attached by the
 *    supervisor before it runs;
 *  - names carry the supervisor's pid, so cgroups left by a supervisor that
 *    was SIGKILLed are found and removed by the next one.
 * Paths come from /proc/self/mountinfo and /proc/self/cgroup, or from files
 * given by a test (cgroup_layout_detect_from) against a prepared tree.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jail-internal.h"

/* Is path at or beneath root (both absolute cgroup paths)? */
static bool path_under(const char *path, const char *root)
{
        size_t n = strlen(root);
        if (n == 1 && root[0] == '/')
                return path[0] == '/';
        return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static char *path_join(const char *a, const char *b)
{
        char *s = NULL;
        while (*b == '/')
                b++;
        size_t la = strlen(a);
        while (la > 1 && a[la - 1] == '/')
                la--;
        bool root = la == 1 && a[0] == '/';
        if (asprintf(&s, "%.*s%s%s", (int)la, a, *b && !root ? "/" : "", b) < 0)
                return NULL;
        return s;
}

void mountinfo_unescape(char *s)
{
        char *o = s;
        while (*s) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 4;
                } else {
                        *o++ = *s++;
                }
        }
        *o = '\0';
}

/* Cut a string at its first newline. */
static char *chomp(char *s)
{
        if (s)
                s[strcspn(s, "\n")] = '\0';
        return s;
}

static bool has_word(const char *list, const char *word, char sep)
{
        size_t n = strlen(word);
        for (const char *p = list; p && *p;) {
                const char *e = strchrnul(p, sep);
                if ((size_t)(e - p) == n && strncmp(p, word, n) == 0)
                        return true;
                p = *e ? e + 1 : e;
        }
        return false;
}

void cgroup_layout_release(struct cgroup_layout *l)
{
        free(l->v2_dir);
        free(l->v1_memory);
        free(l->v1_pids);
        free(l->v1_cpu);
        free(l->v1_cpuacct);
        memset(l, 0, sizeof(*l));
}

/* Our cgroup's path for a v1 controller (or "" for v2), from the text of
 * /proc/self/cgroup; a copy, or NULL. */
static char *self_path(const char *proc_cgroup_text, const char *controller)
{
        if (proc_cgroup_text == NULL)
                return NULL;
        for (const char *line = proc_cgroup_text; *line;) {
                const char *end = strchrnul(line, '\n');
                const char *c1 = memchr(line, ':', (size_t)(end - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
                if (c2 != NULL) {
                        cleanup_free char *ids = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
                        bool match = controller[0] == '\0' ? c1 - line == 1 && line[0] == '0' && c2 == c1 + 1
                                                           : ids && has_word(ids, controller, ',');
                        if (match)
                                return strndup(c2 + 1, (size_t)(end - c2 - 1));
                }
                line = *end ? end + 1 : end;
        }
        return NULL;
}

int cgroup_layout_detect_from(struct cgroup_layout *l, const char *mountinfo, const char *proc_cgroup)
{
        memset(l, 0, sizeof(*l));
        FILE *f = fopen(mountinfo, "re");
        if (f == NULL)
                return -1;
        cleanup_free char *self_text = read_file_at(AT_FDCWD, proc_cgroup, 65536);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
                /* id parent major:minor root mountpoint opts [optional...] - fstype source superopts */
                char *fields[6] = { 0 };
                char *save = NULL, *tok = strtok_r(line, " \n", &save);
                for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " \n", &save))
                        fields[i] = tok;
                while (tok && strcmp(tok, "-") != 0)
                        tok = strtok_r(NULL, " \n", &save);
                char *fstype = tok ? strtok_r(NULL, " \n", &save) : NULL;
                char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
                char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
                if (fields[4] == NULL || fstype == NULL)
                        continue;
                char *root = fields[3], *mnt = fields[4];
                mountinfo_unescape(root);
                mountinfo_unescape(mnt);
                const char *controllers[] = { "memory", "pids", "cpu", "cpuacct" };
                char **slots[] = { &l->v1_memory, &l->v1_pids, &l->v1_cpu, &l->v1_cpuacct };
                if (strcmp(fstype, "cgroup2") == 0 && l->v2_dir == NULL) {
                        char *self = self_path(self_text, "");
                        if (self && path_under(self, root))
                                l->v2_dir = path_join(mnt, strcmp(root, "/") == 0 ? self : self + strlen(root));
                        free(self);
                } else if (strcmp(fstype, "cgroup") == 0 && super != NULL) {
                        for (size_t i = 0; i < ARRAY_SIZE(controllers); i++) {
                                if (*slots[i] != NULL || !has_word(super, controllers[i], ','))
                                        continue;
                                char *self = self_path(self_text, controllers[i]);
                                if (self && path_under(self, root))
                                        *slots[i] = path_join(mnt, strcmp(root, "/") == 0 ? self : self + strlen(root));
                                free(self);
                        }
                }
        }
        free(line);
        fclose(f);
        if (l->v2_dir) {
                char *ctl = path_join(l->v2_dir, "cgroup.controllers");
                char *avail = ctl ? read_file_at(AT_FDCWD, ctl, 4096) : NULL;
                if (chomp(avail)) {
                        l->v2_memory = has_word(avail, "memory", ' ');
                        l->v2_pids = has_word(avail, "pids", ' ');
                        l->v2_cpu = has_word(avail, "cpu", ' ');
                }
                free(avail);
                free(ctl);
        }
        return 0;
}

int cgroup_layout_detect(struct cgroup_layout *l)
{
        return cgroup_layout_detect_from(l, "/proc/self/mountinfo", "/proc/self/cgroup");
}

static int cg_write(const struct cgroup_layout *l, const char *dir, const char *file, const char *value)
{
        cleanup_free char *p = path_join(dir, file);
        if (p == NULL)
                return -1;
        if (l->test_tree) { /* a prepared directory tree: files are plain */
                int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0)
                        return -1;
                int r = write_all(fd, value, strlen(value));
                close(fd);
                return r;
        }
        return write_file_at(AT_FDCWD, p, value);
}

static char *cg_read(const char *dir, const char *file)
{
        cleanup_free char *p = path_join(dir, file);
        return p ? read_file_at(AT_FDCWD, p, 65536) : NULL;
}

/* Value of "key N" in a flat-keyed file's text (memory.events, cpu.stat, ...). */
static bool text_key(const char *text, const char *key, uint64_t *ret)
{
        if (text == NULL)
                return false;
        size_t n = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                if (strncmp(p, key, n) == 0 && p[n] == ' ') {
                        *ret = strtoull(p + n + 1, NULL, 10);
                        return true;
                }
        }
        return false;
}

static bool text_u64(const char *text, uint64_t *ret)
{
        if (text == NULL || !(text[0] >= '0' && text[0] <= '9'))
                return false;
        *ret = strtoull(text, NULL, 10);
        return true;
}

static bool cg_read_u64(const char *dir, const char *file, uint64_t *ret)
{
        cleanup_free char *text = cg_read(dir, file);
        return text_u64(text, ret);
}

/* ---- the counters a result reads ---- */

/* Where each counter of cgroup_read_stats() is, given cg's versions. */
static const char *stat_file(const struct jail_cgroup *cg, int which, const char **ret_dir)
{
        switch (which) {
        case CG_STAT_PEAK:
                *ret_dir = cg->memory == CG_V2 ? cg->v2 : cg->v1_memory;
                return cg->memory == CG_V2 ? "memory.peak" : cg->memory == CG_V1 ? "memory.max_usage_in_bytes" : NULL;
        case CG_STAT_OOM:
                *ret_dir = cg->memory == CG_V2 ? cg->v2 : cg->v1_memory;
                return cg->memory == CG_V2 ? "memory.events" : cg->memory == CG_V1 ? "memory.oom_control" : NULL;
        case CG_STAT_PIDS:
                *ret_dir = cg->pids == CG_V2 ? cg->v2 : cg->v1_pids;
                return cg->pids != CG_NONE ? "pids.events" : NULL;
        default:
                *ret_dir = cg->v2 ? cg->v2 : cg->v1_cpuacct;
                return cg->v2 ? "cpu.stat" : cg->v1_cpuacct ? "cpuacct.usage" : NULL;
        }
}

void cgroup_open_stats(struct jail_cgroup *cg)
{
        for (int i = 0; i < CG_STATS; i++) {
                const char *dir = NULL, *file = stat_file(cg, i, &dir);
                cleanup_free char *p = file && dir ? path_join(dir, file) : NULL;
                cg->stat_fds[i] = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
        }
        cg->stats_open = true;
}

/* A counter file's text: read again from its descriptor kept open (a
 * pre-made jail's, whose result is on its caller's path), else by path. */
static char *stat_text(struct jail_cgroup *cg, int which)
{
        const char *dir = NULL, *file = stat_file(cg, which, &dir);
        if (!cg->stats_open)
                return file && dir ? cg_read(dir, file) : NULL;
        int fd = cg->stat_fds[which];
        char *buf = fd >= 0 ? malloc(4096) : NULL;
        ssize_t n = buf ? pread(fd, buf, 4095, 0) : -1;
        if (n < 0) {
                free(buf);
                return NULL;
        }
        buf[n] = '\0';
        return buf;
}

/* v2 controllers can only be handed to children through subtree_control,
 * and a non-root cgroup with processes in it cannot do that.  When we are
 * the only process in our (delegated) cgroup, move into a leaf beneath it;
 * otherwise leave it, and the caller falls back. */
static void v2_enable_controllers(struct cgroup_layout *l)
{
        cleanup_free char *current = NULL, *procs = NULL, *leaf = NULL;
        if (!(l->v2_memory || l->v2_pids || l->v2_cpu))
                return;
        char want[64];
        snprintf(want, sizeof(want), "%s%s%s", l->v2_memory ? "+memory " : "", l->v2_pids ? "+pids " : "",
                 l->v2_cpu ? "+cpu" : "");
        current = cg_read(l->v2_dir, "cgroup.subtree_control");
        if (current && (!l->v2_memory || has_word(chomp(current), "memory", ' ')) &&
            (!l->v2_pids || has_word(current, "pids", ' ')) && (!l->v2_cpu || has_word(current, "cpu", ' ')))
                return;
        if (cg_write(l, l->v2_dir, "cgroup.subtree_control", want) == 0)
                return;
        if (errno != EBUSY)
                goto unusable;
        procs = cg_read(l->v2_dir, "cgroup.procs");
        char self[32];
        snprintf(self, sizeof(self), "%d\n", (int)getpid());
        if (procs == NULL || strcmp(procs, self) != 0)
                goto unusable;
        leaf = path_join(l->v2_dir, "corral-supervisor");
        if (leaf == NULL || (mkdir(leaf, 0755) < 0 && errno != EEXIST))
                goto unusable;
        if (cg_write(l, leaf, "cgroup.procs", "0") < 0 ||
            cg_write(l, l->v2_dir, "cgroup.subtree_control", want) < 0)
                goto unusable;
        l->v2_moved_self = true;
        return;
unusable:
        l->v2_memory = l->v2_pids = l->v2_cpu = false;
}

/* Remove cgroups named corral-<pid>-<n> whose supervisor pid is gone. */
static void sweep_stale(const struct cgroup_layout *l, const char *dir)
{
        if (dir == NULL || l->test_tree)
                return;
        DIR *d = opendir(dir);
        if (d == NULL)
                return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
                int pid;
                unsigned n;
                if (sscanf(e->d_name, "corral-%d-%u", &pid, &n) != 2 || pid <= 0)
                        continue;
                if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                /* Only rmdir, which fails on a cgroup with processes: a
                 * supervisor in another pid namespace may look gone to us. */
                cleanup_free char *p = path_join(dir, e->d_name);
                if (p != NULL)
                        rmdir(p);
        }
        closedir(d);
}

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static struct cgroup_layout host_layout;

static void host_layout_init(void)
{
        if (cgroup_layout_detect(&host_layout) < 0)
                return;
        if (host_layout.v2_dir && access(host_layout.v2_dir, W_OK) != 0) {
                free(host_layout.v2_dir);
                host_layout.v2_dir = NULL;
        }
        char **v1[] = { &host_layout.v1_memory, &host_layout.v1_pids, &host_layout.v1_cpu, &host_layout.v1_cpuacct };
        for (size_t i = 0; i < ARRAY_SIZE(v1); i++) {
                if (*v1[i] && access(*v1[i], W_OK) != 0) {
                        free(*v1[i]);
                        *v1[i] = NULL;
                }
        }
        if (host_layout.v2_dir)
                v2_enable_controllers(&host_layout);
}

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;

static void sweep_all(void)
{
        sweep_stale(&host_layout, host_layout.v2_dir);
        sweep_stale(&host_layout, host_layout.v1_memory);
        sweep_stale(&host_layout, host_layout.v1_pids);
        sweep_stale(&host_layout, host_layout.v1_cpu);
}

/* Once per process, after a jail has run: off the start path. */
void cgroup_sweep_stale(void)
{
        pthread_once(&host_once, host_layout_init);
        pthread_once(&sweep_once, sweep_all);
}

const struct cgroup_layout *cgroup_host_layout(void)
{
        pthread_once(&host_once, host_layout_init);
        return &host_layout;
}

static char *make_child(const struct cgroup_layout *l, const char *parent, const char *name)
{
        char *p = path_join(parent, name);
        if (p == NULL)
                return NULL;
        if (mkdir(p, 0755) < 0 && !(l->test_tree && errno == EEXIST)) {
                free(p);
                return NULL;
        }
        return p;
}

/* lim written into cg's cgroups, made already: at their creation, and at
 * a pre-made jail's claim (reset_cpu: no CPU share undoes one). */
static int write_limits(struct jail_cgroup *cg, const struct cgroup_limits *lim, bool reset_cpu,
                        corral_error **ret_err)
{
        const struct cgroup_layout *l = cg->layout;
        char buf[64];
        snprintf(buf, sizeof(buf), "%" PRIu64, lim->memory_bytes);
        if (cg->memory == CG_V2 && cg_write(l, cg->v2, "memory.max", buf) < 0)
                return corral_fail(ret_err, errno, "cannot set memory.max in '%s'", cg->v2);
        if (cg->memory == CG_V1) {
                /* memsw exists only with swap accounting; it tops the limit
                 * up to forbid swap too.  It may not go below the limit, nor
                 * the limit above it: written in the order that keeps that
                 * true when a claim raises or lowers them. */
                if (cg_write(l, cg->v1_memory, "memory.limit_in_bytes", buf) == 0)
                        cg_write(l, cg->v1_memory, "memory.memsw.limit_in_bytes", buf);
                else if (cg_write(l, cg->v1_memory, "memory.memsw.limit_in_bytes", buf) < 0 ||
                         cg_write(l, cg->v1_memory, "memory.limit_in_bytes", buf) < 0)
                        return corral_fail(ret_err, errno, "cannot set memory.limit_in_bytes in '%s'",
                                           cg->v1_memory);
        }
        snprintf(buf, sizeof(buf), "%" PRIu64, lim->pids);
        if (cg->pids != CG_NONE && cg_write(l, cg->pids == CG_V2 ? cg->v2 : cg->v1_pids, "pids.max", buf) < 0)
                return corral_fail(ret_err, errno, "cannot set pids.max in '%s'",
                                   cg->pids == CG_V2 ? cg->v2 : cg->v1_pids);
        if (lim->cpus <= 0 && !reset_cpu)
                return 0;
        uint64_t period = 100000, quota = (uint64_t)(lim->cpus * (double)period);
        if (quota < 1000)
                quota = 1000;
        if (cg->v2 && l->v2_cpu) {
                if (lim->cpus > 0)
                        snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64, quota, period);
                else
                        snprintf(buf, sizeof(buf), "max %" PRIu64, period);
                if (cg_write(l, cg->v2, "cpu.max", buf) < 0)
                        return corral_fail(ret_err, errno, "cannot set cpu.max in '%s'", cg->v2);
        } else if (cg->v1_cpu) {
                if (lim->cpus > 0)
                        snprintf(buf, sizeof(buf), "%" PRIu64, quota);
                else
                        snprintf(buf, sizeof(buf), "-1");
                if (cg_write(l, cg->v1_cpu, "cpu.cfs_period_us", "100000") < 0 ||
                    cg_write(l, cg->v1_cpu, "cpu.cfs_quota_us", buf) < 0)
                        return corral_fail(ret_err, errno, "cannot set cpu.cfs_quota_us in '%s'", cg->v1_cpu);
        }
        return 0;
}

int cgroup_create(const struct cgroup_layout *l, const char *name, const struct cgroup_limits *lim,
                  struct jail_cgroup *cg, corral_error **ret_err)
{
        memset(cg, 0, sizeof(*cg));
        cg->v2_fd = -1;
        cg->layout = l;

        if (l->v2_dir) {
                cg->v2 = make_child(l, l->v2_dir, name);
                if (cg->v2 == NULL)
                        return corral_fail(ret_err, errno, "cannot create cgroup in '%s'", l->v2_dir);
                cg->v2_fd = open(cg->v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cg->v2_fd < 0)
                        return corral_fail(ret_err, errno, "cannot open cgroup '%s'", cg->v2);
        }
        /* Each controller's cgroup, the v2 one where it has the controller. */
        if (l->v2_memory && cg->v2) {
                /* memory.swap.max exists only with swap accounting; without it
                 * there is no swap to forbid (like memsw in v1). */
                cg_write(l, cg->v2, "memory.swap.max", "0");
                cg->memory = CG_V2;
        } else if (l->v1_memory) {
                cg->v1_memory = make_child(l, l->v1_memory, name);
                if (cg->v1_memory == NULL)
                        return corral_fail(ret_err, errno, "cannot create cgroup in '%s'", l->v1_memory);
                cg_write(l, cg->v1_memory, "memory.swappiness", "0");
                cg->memory = CG_V1;
        }
        if (l->v2_pids && cg->v2) {
                cg->pids = CG_V2;
        } else if (l->v1_pids) {
                cg->v1_pids = make_child(l, l->v1_pids, name);
                if (cg->v1_pids == NULL)
                        return corral_fail(ret_err, errno, "cannot create cgroup in '%s'", l->v1_pids);
                cg->pids = CG_V1;
        }
        /* A v1 cpu cgroup only for a CPU share. */
        if (lim->cpus > 0) {
                if (l->v2_cpu && cg->v2) {
                        cg->cpu = CG_V2;
                } else if (l->v1_cpu) {
                        cg->v1_cpu = make_child(l, l->v1_cpu, name);
                        if (cg->v1_cpu == NULL)
                                return corral_fail(ret_err, errno, "cannot create cgroup in '%s'", l->v1_cpu);
                        cg->cpu = CG_V1;
                }
        }
        if (write_limits(cg, lim, false, ret_err) < 0)
                return -1;
        if (l->v1_cpuacct && cg->v2 == NULL) {
                /* CPU accounting for the result when there is no v2 cgroup. */
                if (l->v1_cpu && l->v1_cpuacct && strcmp(l->v1_cpu, l->v1_cpuacct) == 0 && cg->v1_cpu)
                        cg->v1_cpuacct = strdup(cg->v1_cpu);
                else
                        cg->v1_cpuacct = make_child(l, l->v1_cpuacct, name);
        }
        return 0;
}

int cgroup_set_limits(struct jail_cgroup *cg, const struct cgroup_limits *lim, corral_error **ret_err)
{
        const struct cgroup_layout *l = cg->layout;
        uint64_t used = 0;
        /* Lowering the limit below what is in use would have the kernel
         * reclaim or kill in a jail its caller has not started yet. */
        bool have_used = cg->memory == CG_V2 ? cg_read_u64(cg->v2, "memory.current", &used)
                         : cg->memory == CG_V1 ? cg_read_u64(cg->v1_memory, "memory.usage_in_bytes", &used)
                                               : false;
        if (have_used && used > lim->memory_bytes)
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, 0,
                                         "the jail already uses %" PRIu64 " bytes, more than its memory limit",
                                         used);
        if (lim->cpus > 0 && !((cg->v2 && l->v2_cpu) || cg->v1_cpu))
                return corral_make_error(ret_err, CORRAL_ERR_UNSUPPORTED, 0, "the jail has no cpu cgroup");
        return write_limits(cg, lim, true, ret_err);
}

/* Why the child moves itself: writing a pid to a v1 `cgroup.procs` takes
 * the global threadgroup rwsem for writing, which waits for an RCU grace
 * period unless the hierarchy is mounted with `favordynmods` (2-28 ms per
 * controller measured on a loaded 2-CPU host without it, docs/benchmarks.md).
 * A single thread moving itself by writing "0" to `tasks` skips that lock
 * (0.4 ms).  The setup child is single-threaded and writes before it forks
 * anything.  The files are opened here, by the supervisor: v1 checks the
 * opener's credentials, and the child could not open them once it is in
 * its own user namespace. */
size_t cgroup_open_v1_tasks(struct jail_cgroup *cg, int ret_fds[CGROUP_V1_MAX])
{
        const char *dirs[CGROUP_V1_MAX] = { cg->v1_memory, cg->v1_pids, cg->v1_cpu, cg->v1_cpuacct };
        size_t n = 0;
        cg->v1_by_child = false;
        if (cg->layout->test_tree)
                return 0;
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                if (dirs[i] == NULL || (i == 3 && dirs[2] && strcmp(dirs[2], dirs[3]) == 0))
                        continue;
                cleanup_free char *p = path_join(dirs[i], "tasks");
                int fd = p ? open(p, O_WRONLY | O_CLOEXEC) : -1;
                if (fd < 0) {
                        while (n > 0)
                                close(ret_fds[--n]);
                        return 0;
                }
                ret_fds[n++] = fd;
        }
        cg->v1_by_child = n > 0;
        return n;
}

int cgroup_attach_v1(struct jail_cgroup *cg, pid_t pid, corral_error **ret_err)
{
        char buf[32];
        snprintf(buf, sizeof(buf), "%d", (int)pid);
        const char *dirs[] = { cg->v1_memory, cg->v1_pids, cg->v1_cpu, cg->v1_cpuacct };
        for (size_t i = 0; i < ARRAY_SIZE(dirs) && !cg->v1_by_child; i++) {
                if (dirs[i] && cg_write(cg->layout, dirs[i], "cgroup.procs", buf) < 0)
                        return corral_fail(ret_err, errno, "cannot move the jail into '%s'", dirs[i]);
        }
        /* Without CLONE_INTO_CGROUP (old kernels), attach to v2 here too. */
        if (cg->v2 && !cg->v2_cloned_into && cg_write(cg->layout, cg->v2, "cgroup.procs", buf) < 0)
                return corral_fail(ret_err, errno, "cannot move the jail into '%s'", cg->v2);
        return 0;
}

void cgroup_kill(struct jail_cgroup *cg)
{
        if (cg->v2)
                cg_write(cg->layout, cg->v2, "cgroup.kill", "1");
}

void cgroup_read_stats(struct jail_cgroup *cg, struct cgroup_stats *st)
{
        memset(st, 0, sizeof(*st));
        uint64_t v;
        cleanup_free char *peak = stat_text(cg, CG_STAT_PEAK), *oom = stat_text(cg, CG_STAT_OOM),
                          *pids = stat_text(cg, CG_STAT_PIDS);
        if (text_u64(peak, &v))
                st->memory_peak = v;
        if (text_key(oom, "oom_kill", &v))
                st->oom_kills = v;
        if (text_key(pids, "max", &v))
                st->pids_max_hits = v;
        st->have_cpu = cgroup_cpu_usage(cg, &st->cpu_usec);
}

bool cgroup_counts_usage(const struct jail_cgroup *cg)
{
        return cg->memory != CG_NONE && (cg->v2 || cg->v1_cpuacct);
}

bool cgroup_cpu_usage(struct jail_cgroup *cg, uint64_t *ret_usec)
{
        cleanup_free char *text = stat_text(cg, CG_STAT_CPU);
        uint64_t v;
        if (cg->v2 && text_key(text, "usage_usec", &v)) {
                *ret_usec = v;
                return true;
        }
        if (!cg->v2 && text_u64(text, &v)) {
                *ret_usec = v / 1000;
                return true;
        }
        return false;
}

/* rmdir can race with the last task's release; retry briefly. */
static void remove_dir(const struct cgroup_layout *l, char *dir)
{
        if (dir == NULL || l->test_tree)
                return;
        for (int i = 0; i < 200; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT)
                        return;
                if (errno != EBUSY)
                        return;
                struct timespec ts = { 0, 1000000 };
                nanosleep(&ts, NULL);
        }
}

void cgroup_destroy(struct jail_cgroup *cg)
{
        if (cg->layout == NULL)
                return;
        if (cg->v2_fd >= 0)
                close(cg->v2_fd);
        for (int i = 0; cg->stats_open && i < CG_STATS; i++)
                if (cg->stat_fds[i] >= 0)
                        close(cg->stat_fds[i]);
        remove_dir(cg->layout, cg->v1_memory);
        remove_dir(cg->layout, cg->v1_pids);
        remove_dir(cg->layout, cg->v1_cpu);
        if (cg->v1_cpuacct && (cg->v1_cpu == NULL || strcmp(cg->v1_cpuacct, cg->v1_cpu) != 0))
                remove_dir(cg->layout, cg->v1_cpuacct);
        remove_dir(cg->layout, cg->v2);
        free(cg->v2);
        free(cg->v1_memory);
        free(cg->v1_pids);
        free(cg->v1_cpu);
        free(cg->v1_cpuacct);
        memset(cg, 0, sizeof(*cg));
        cg->v2_fd = -1;
}
