/* test-cgroup.c: cgroup layout detection, limits and accounting
 * (src/lib/cgroup.c) against prepared directory trees.
 *
 * Each case writes a fake mountinfo and /proc/self/cgroup into a temporary
 * directory together with the cgroup directories they point to, runs
 * cgroup_layout_detect_from(), then cgroup_create() with layout.test_tree set
 * (plain files instead of cgroupfs), and checks the files written and the
 * stats read back from fake memory.events, cpu.stat, ...  This covers cgroup
 * v2, v1 and the hybrid layout on any host.  A last test uses the real
 * kernel, only where cgroup v2 has the memory controller. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "jail-internal.h"

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

static char tmp[256];

static char *pathf(const char *fmt, ...) CORRAL_PRINTF(1, 2);
static char *pathf(const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                abort();
        va_end(ap);
        return s;
}

static void put(const char *dir, const char *file, const char *text)
{
        cleanup_free char *p = pathf("%s/%s", dir, file);
        FILE *f = fopen(p, "we");
        if (f == NULL) {
                printf("# cannot write %s: %s\n", p, strerror(errno));
                abort();
        }
        fputs(text, f);
        fclose(f);
}

/* Contents of dir/file, or NULL when absent. */
static char *get(const char *dir, const char *file)
{
        cleanup_free char *p = pathf("%s/%s", dir, file);
        return read_file_at(AT_FDCWD, p, 4096);
}

static bool file_is(const char *dir, const char *file, const char *want)
{
        cleanup_free char *got = get(dir, file);
        bool ok = got != NULL && strcmp(got, want) == 0;
        if (!ok)
                printf("#   %s/%s: got '%s', expected '%s'\n", dir, file, got ? got : "(absent)", want);
        return ok;
}

static bool absent(const char *dir, const char *file)
{
        cleanup_free char *p = pathf("%s/%s", dir, file);
        return access(p, F_OK) != 0 && errno == ENOENT;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

/* A fresh case directory <tmp>/<name>. */
static char *case_dir(const char *name)
{
        char *d = pathf("%s/%s", tmp, name);
        nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        mkdir_p(d, 0755);
        return d;
}

#define CHECK_PATH(got, ...)                                                                                          \
        do {                                                                                                          \
                cleanup_free char *_want = pathf(__VA_ARGS__);                                                        \
                CHECK_STR(got, _want);                                                                                \
        } while (0)

/* ---- cgroup v2 ---- */

TEST(v2_detect_create_stats)
{
        cleanup_free char *d = case_dir("v2");
        cleanup_free char *cg = pathf("%s/cg", d);
        mkdir_p(cg, 0755);
        put(cg, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        put(cg, "cgroup.subtree_control", "cpu memory pids\n");
        put(d, "cgroup", "0::/\n");
        cleanup_free char *mi =
                pathf("22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                      "25 22 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                      "30 22 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                      "rw,nsdelegate,memory_recursiveprot\n",
                      cg);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);

        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, cg);
        CHECK(l.v2_memory && l.v2_pids && l.v2_cpu);
        CHECK(l.v1_memory == NULL && l.v1_pids == NULL && l.v1_cpu == NULL && l.v1_cpuacct == NULL);
        l.test_tree = true;

        struct cgroup_limits lim = { .memory_bytes = 256ull << 20, .pids = 64, .cpus = 0.5 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        CHECK_INT(cgroup_create(&l, "corral-1-0", &lim, &j, &err), 0);
        CHECK(err == NULL);
        if (err)
                printf("#   %s\n", err->msg);
        CHECK_PATH(j.v2, "%s/corral-1-0", cg);
        CHECK(j.v2_fd >= 0);
        CHECK(j.layout == &l);
        CHECK(j.memory == CG_V2 && j.pids == CG_V2 && j.cpu == CG_V2);
        CHECK(j.v1_memory == NULL && j.v1_pids == NULL && j.v1_cpu == NULL && j.v1_cpuacct == NULL);
        CHECK(file_is(j.v2, "memory.max", "268435456"));
        CHECK(file_is(j.v2, "memory.swap.max", "0"));
        CHECK(file_is(j.v2, "pids.max", "64"));
        CHECK(file_is(j.v2, "cpu.max", "50000 100000"));

        /* Nothing reported before the files exist. */
        struct cgroup_stats st;
        memset(&st, 0xff, sizeof(st));
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 0 && st.oom_kills == 0 && st.pids_max_hits == 0 && st.cpu_usec == 0 &&
              !st.have_cpu);

        put(j.v2, "memory.events", "low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n");
        put(j.v2, "memory.peak", "12345678\n");
        put(j.v2, "pids.events", "max 3\n");
        put(j.v2, "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 12345678);
        CHECK(st.oom_kills == 1);
        CHECK(st.pids_max_hits == 3);
        CHECK(st.cpu_usec == 1500);
        CHECK(st.have_cpu);

        /* Keys are whole words: "max.imposed" is not "max", "oom_group_kill"
         * is not "oom_kill"; their order does not matter. */
        put(j.v2, "memory.events", "oom_group_kill 9\noom_kill 4\n");
        put(j.v2, "pids.events", "max.imposed 5\nmax 2\n");
        put(j.v2, "cpu.stat", "usage_usec_other 77\nusage_usec 2500\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.oom_kills == 4);
        CHECK(st.pids_max_hits == 2);
        CHECK(st.cpu_usec == 2500);
        /* A peak file that does not start with a number is ignored. */
        put(j.v2, "memory.peak", "max\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 0);

        /* With the files kept open (a pre-made jail), each read is of what
         * they hold then, from their start. */
        put(j.v2, "memory.peak", "4096\n");
        cgroup_open_stats(&j);
        CHECK(j.stats_open && j.stat_fds[CG_STAT_PEAK] >= 0 && j.stat_fds[CG_STAT_CPU] >= 0);
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 4096 && st.oom_kills == 4 && st.pids_max_hits == 2 && st.cpu_usec == 2500);
        put(j.v2, "memory.peak", "8192\n");
        put(j.v2, "cpu.stat", "usage_usec 3500\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 8192 && st.cpu_usec == 3500 && st.have_cpu);

        /* kill and a late attach (no CLONE_INTO_CGROUP) write their files. */
        cgroup_kill(&j);
        CHECK(file_is(j.v2, "cgroup.kill", "1"));
        CHECK_INT(cgroup_attach_v1(&j, 4242, &err), 0);
        CHECK(file_is(j.v2, "cgroup.procs", "4242"));
        /* ... but not when the jail was cloned into the cgroup. */
        put(j.v2, "cgroup.procs", "");
        j.v2_cloned_into = true;
        CHECK_INT(cgroup_attach_v1(&j, 4343, &err), 0);
        CHECK(file_is(j.v2, "cgroup.procs", ""));

        /* destroy leaves a prepared tree alone and resets the handle. */
        cleanup_free char *v2 = strdup(j.v2);
        cgroup_destroy(&j);
        CHECK(j.v2 == NULL && j.v2_fd == -1 && j.layout == NULL);
        CHECK(access(v2, F_OK) == 0);
        cgroup_destroy(&j); /* twice is harmless */

        /* cpus: none, tiny (clamped to 1 ms per period), several. */
        struct {
                double cpus;
                const char *want; /* NULL: no cpu.max */
        } cpu_cases[] = { { 0, NULL }, { 0.001, "1000 100000" }, { 0.25, "25000 100000" }, { 2, "200000 100000" },
                          { 4096, "409600000 100000" } };
        for (size_t i = 0; i < ARRAY_SIZE(cpu_cases); i++) {
                char name[32];
                snprintf(name, sizeof(name), "corral-1-%zu", 10 + i);
                lim.cpus = cpu_cases[i].cpus;
                printf("# cpus %g\n", lim.cpus);
                CHECK_INT(cgroup_create(&l, name, &lim, &j, &err), 0);
                if (cpu_cases[i].want) {
                        CHECK(file_is(j.v2, "cpu.max", cpu_cases[i].want));
                        CHECK(j.cpu == CG_V2);
                } else {
                        CHECK(absent(j.v2, "cpu.max"));
                        CHECK(j.cpu == CG_NONE);
                }
                cgroup_destroy(&j);
        }

        /* Limits at their extremes are written exactly. */
        lim = (struct cgroup_limits){ .memory_bytes = 18446744073709551615ull, .pids = 4194304, .cpus = 0 };
        CHECK_INT(cgroup_create(&l, "corral-1-99", &lim, &j, &err), 0);
        CHECK(file_is(j.v2, "memory.max", "18446744073709551615"));
        CHECK(file_is(j.v2, "pids.max", "4194304"));
        cgroup_destroy(&j);
        corral_error_free(err);
        cgroup_layout_release(&l);
        CHECK(l.v2_dir == NULL);
}

TEST(v2_partial_controllers)
{
        /* v2 with only memory: pids and cpu are not set (the caller then
         * falls back to RLIMIT_NPROC), CPU accounting still comes from v2. */
        cleanup_free char *d = case_dir("v2-partial");
        cleanup_free char *cg = pathf("%s/cg/user.slice/user-1000.slice/session-3.scope", d);
        mkdir_p(cg, 0755);
        put(cg, "cgroup.controllers", "memory\n");
        put(cg, "cgroup.subtree_control", "memory\n");
        put(d, "cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n");
        cleanup_free char *mi = pathf("30 22 0:26 / %s/cg rw shared:4 - cgroup2 cgroup2 rw\n", d);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);

        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, cg);
        CHECK(l.v2_memory && !l.v2_pids && !l.v2_cpu);
        l.test_tree = true;
        struct cgroup_limits lim = { .memory_bytes = 1 << 30, .pids = 10, .cpus = 1 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        CHECK_INT(cgroup_create(&l, "corral-2-0", &lim, &j, &err), 0);
        CHECK(j.memory == CG_V2 && j.pids == CG_NONE && j.cpu == CG_NONE);
        CHECK(file_is(j.v2, "memory.max", "1073741824"));
        CHECK(absent(j.v2, "pids.max"));
        CHECK(absent(j.v2, "cpu.max"));
        put(j.v2, "cpu.stat", "usage_usec 42\n");
        put(j.v2, "pids.events", "max 5\n");
        struct cgroup_stats st;
        cgroup_read_stats(&j, &st);
        CHECK(st.have_cpu && st.cpu_usec == 42);
        CHECK(st.pids_max_hits == 0); /* pids not handled by this cgroup */
        cgroup_destroy(&j);
        cgroup_layout_release(&l);

        /* "cpuset" alone must not count as "cpu". */
        put(cg, "cgroup.controllers", "cpuset io\n");
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(!l.v2_memory && !l.v2_pids && !l.v2_cpu);
        cgroup_layout_release(&l);

        /* No cgroup.controllers at all: a v2 dir without controllers. */
        cleanup_free char *ctl = pathf("%s/cgroup.controllers", cg);
        unlink(ctl);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, cg);
        CHECK(!l.v2_memory && !l.v2_pids && !l.v2_cpu);
        cgroup_layout_release(&l);
        corral_error_free(err);
}

TEST(v2_create_errors)
{
        cleanup_free char *d = case_dir("v2-missing");
        struct cgroup_layout l;
        memset(&l, 0, sizeof(l));
        l.v2_dir = pathf("%s/does/not/exist", d);
        l.v2_memory = true;
        l.test_tree = true;
        struct cgroup_limits lim = { .memory_bytes = 1 << 30, .pids = 10 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        CHECK_INT(cgroup_create(&l, "corral-3-0", &lim, &j, &err), -1);
        CHECK(err != NULL && strstr(err->msg, l.v2_dir) != NULL && err->errnum == ENOENT);
        if (err)
                printf("#   %s\n", err->msg);
        cgroup_destroy(&j); /* what the caller does on failure */
        CHECK(j.v2 == NULL && j.v2_fd == -1);
        corral_error_free(err);
        cgroup_layout_release(&l);
}

TEST(v2_without_swap_accounting)
{
        /* Kernels without swap accounting (CONFIG_SWAP off, swapaccount=0)
         * have no memory.swap.max.  In the prepared tree a directory of that
         * name makes the write fail the same way.  v1 treats memsw as
         * optional; v2 fails the whole cgroup, and the jail falls back to
         * rlimits although memory.max works. */
        cleanup_free char *d = case_dir("v2-noswap");
        cleanup_free char *cg = pathf("%s/cg", d);
        mkdir_p(cg, 0755);
        put(cg, "cgroup.controllers", "memory pids\n");
        put(d, "cgroup", "0::/\n");
        cleanup_free char *mi = pathf("30 22 0:26 / %s rw - cgroup2 cgroup2 rw\n", cg);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);
        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        l.test_tree = true;
        cleanup_free char *swap = pathf("%s/corral-6-0/memory.swap.max", cg);
        mkdir_p(swap, 0755);
        struct cgroup_limits lim = { .memory_bytes = 1 << 30, .pids = 10 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        int r = cgroup_create(&l, "corral-6-0", &lim, &j, &err);
        CHECK(r == 0 && j.memory == CG_V2);
        if (err)
                printf("#   %s\n", err->msg);
        cgroup_destroy(&j);
        corral_error_free(err);
        cgroup_layout_release(&l);
}

/* ---- cgroup v1 ---- */

TEST(v1_detect_create_stats)
{
        cleanup_free char *d = case_dir("v1");
        cleanup_free char *mem = pathf("%s/v1/memory/user.slice/session-1.scope", d);
        cleanup_free char *pids = pathf("%s/v1/pids/user.slice", d);
        cleanup_free char *cpu = pathf("%s/v1/cpu,cpuacct/user.slice", d);
        mkdir_p(mem, 0755);
        mkdir_p(pids, 0755);
        mkdir_p(cpu, 0755);
        put(d, "cgroup",
            "12:pids:/user.slice\n"
            "11:cpu,cpuacct:/user.slice\n"
            "10:blkio:/user.slice\n"
            "5:memory:/user.slice/session-1.scope\n"
            "1:name=systemd:/user.slice/session-1.scope\n"
            "0::/user.slice/session-1.scope\n");
        cleanup_free char *mi = pathf(
                "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                "31 22 0:28 / %s/v1 ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
                "32 31 0:29 / %s/v1/systemd rw shared:10 - cgroup cgroup rw,xattr,name=systemd\n"
                "33 31 0:30 / %s/v1/memory rw shared:14 - cgroup cgroup rw,memory\n"
                "34 31 0:31 / %s/v1/pids rw shared:15 - cgroup cgroup rw,pids\n"
                "35 31 0:32 / %s/v1/cpu,cpuacct rw shared:16 - cgroup cgroup rw,cpu,cpuacct\n"
                "36 31 0:33 / %s/v1/blkio rw shared:17 - cgroup cgroup rw,blkio\n",
                d, d, d, d, d, d);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);

        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v2_dir == NULL);
        CHECK_STR(l.v1_memory, mem);
        CHECK_STR(l.v1_pids, pids);
        CHECK_STR(l.v1_cpu, cpu);
        CHECK_STR(l.v1_cpuacct, cpu);
        l.test_tree = true;

        struct cgroup_limits lim = { .memory_bytes = 100ull << 20, .pids = 32, .cpus = 0.5 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        CHECK_INT(cgroup_create(&l, "corral-4-0", &lim, &j, &err), 0);
        if (err)
                printf("#   %s\n", err->msg);
        CHECK(j.v2 == NULL && j.v2_fd == -1);
        CHECK(j.memory == CG_V1 && j.pids == CG_V1 && j.cpu == CG_V1);
        CHECK_PATH(j.v1_memory, "%s/corral-4-0", mem);
        CHECK_PATH(j.v1_pids, "%s/corral-4-0", pids);
        CHECK_PATH(j.v1_cpu, "%s/corral-4-0", cpu);
        CHECK_PATH(j.v1_cpuacct, "%s/corral-4-0", cpu); /* shared cpu,cpuacct mount */
        CHECK(file_is(j.v1_memory, "memory.limit_in_bytes", "104857600"));
        CHECK(file_is(j.v1_memory, "memory.memsw.limit_in_bytes", "104857600"));
        CHECK(file_is(j.v1_memory, "memory.swappiness", "0"));
        CHECK(file_is(j.v1_pids, "pids.max", "32"));
        CHECK(file_is(j.v1_cpu, "cpu.cfs_period_us", "100000"));
        CHECK(file_is(j.v1_cpu, "cpu.cfs_quota_us", "50000"));

        put(j.v1_memory, "memory.max_usage_in_bytes", "5555\n");
        put(j.v1_memory, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
        put(j.v1_pids, "pids.events", "max 4\n");
        put(j.v1_cpu, "cpuacct.usage", "3000000\n"); /* nanoseconds */
        struct cgroup_stats st;
        cgroup_read_stats(&j, &st);
        CHECK(st.memory_peak == 5555);
        CHECK(st.oom_kills == 2);
        CHECK(st.pids_max_hits == 4);
        CHECK(st.have_cpu && st.cpu_usec == 3000);

        /* The setup child is attached to every v1 cgroup. */
        CHECK_INT(cgroup_attach_v1(&j, 777, &err), 0);
        CHECK(file_is(j.v1_memory, "cgroup.procs", "777"));
        CHECK(file_is(j.v1_pids, "cgroup.procs", "777"));
        CHECK(file_is(j.v1_cpu, "cgroup.procs", "777"));
        cgroup_kill(&j); /* v1 has no cgroup.kill: nothing written */
        CHECK(absent(j.v1_memory, "cgroup.kill"));
        cgroup_destroy(&j);
        CHECK(j.v1_memory == NULL && j.v1_cpuacct == NULL);

        /* Without a CPU share the cpu cgroup is not made, but accounting
         * still gets its own cgroup in the cpuacct hierarchy. */
        lim.cpus = 0;
        CHECK_INT(cgroup_create(&l, "corral-4-1", &lim, &j, &err), 0);
        CHECK(j.cpu == CG_NONE && j.v1_cpu == NULL);
        CHECK_PATH(j.v1_cpuacct, "%s/corral-4-1", cpu);
        CHECK(absent(j.v1_cpuacct, "cpu.cfs_quota_us"));
        put(j.v1_cpuacct, "cpuacct.usage", "1000\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.have_cpu && st.cpu_usec == 1);
        cgroup_destroy(&j);
        corral_error_free(err);
        cgroup_layout_release(&l);
}

TEST(v1_separate_cpu_cpuacct_and_hybrid)
{
        /* This host's shape: separate cpu and cpuacct mounts, memory in a
         * nested cgroup, and a cgroup2 "unified" mount with no controllers. */
        cleanup_free char *d = case_dir("hybrid");
        cleanup_free char *mem = pathf("%s/fs/memory/process_api/75ea74b6", d);
        cleanup_free char *cpu = pathf("%s/fs/cpu", d), *acct = pathf("%s/fs/cpuacct", d);
        cleanup_free char *pids = pathf("%s/fs/pids", d), *uni = pathf("%s/fs/unified", d);
        mkdir_p(mem, 0755);
        mkdir_p(cpu, 0755);
        mkdir_p(acct, 0755);
        mkdir_p(pids, 0755);
        mkdir_p(uni, 0755);
        put(uni, "cgroup.controllers", "hugetlb\n");
        put(d, "cgroup",
            "9:name=systemd:/\n8:pids:/\n7:blkio:/\n4:memory:/process_api/75ea74b6\n3:cpuset:/\n2:cpuacct:/\n"
            "1:cpu:/\n0::/\n");
        cleanup_free char *mi = pathf(
                "31 23 0:28 / %s/fs rw,relatime - tmpfs tmpfs rw,mode=755\n"
                "32 31 0:29 / %s/fs/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                "33 31 0:30 / %s/fs/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
                "34 31 0:31 / %s/fs/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
                "35 31 0:32 / %s/fs/memory rw,relatime - cgroup cgroup rw,memory\n"
                "39 31 0:36 / %s/fs/pids rw,relatime - cgroup cgroup rw,pids\n"
                "41 31 0:38 / %s/fs/unified rw,relatime - cgroup2 cgroup2 rw,favordynmods\n",
                d, d, d, d, d, d, d);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);

        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, uni);
        CHECK(!l.v2_memory && !l.v2_pids && !l.v2_cpu);
        CHECK_STR(l.v1_memory, mem);
        CHECK_STR(l.v1_pids, pids);
        CHECK_STR(l.v1_cpu, cpu);
        CHECK_STR(l.v1_cpuacct, acct);
        l.test_tree = true;

        struct cgroup_limits lim = { .memory_bytes = 64ull << 20, .pids = 16, .cpus = 1.5 };
        struct jail_cgroup j;
        corral_error *err = NULL;
        CHECK_INT(cgroup_create(&l, "corral-5-0", &lim, &j, &err), 0);
        /* v2 cgroup made (cgroup.kill, cpu.stat, CLONE_INTO_CGROUP), limits in v1 */
        CHECK_PATH(j.v2, "%s/corral-5-0", uni);
        CHECK(j.v2_fd >= 0);
        CHECK(j.memory == CG_V1 && j.pids == CG_V1 && j.cpu == CG_V1);
        CHECK(file_is(j.v1_memory, "memory.limit_in_bytes", "67108864"));
        CHECK(file_is(j.v1_pids, "pids.max", "16"));
        CHECK(file_is(j.v1_cpu, "cpu.cfs_quota_us", "150000"));
        CHECK(absent(j.v2, "memory.max"));
        CHECK(absent(j.v2, "pids.max"));
        /* CPU time comes from v2's cpu.stat; no cpuacct cgroup needed. */
        CHECK(j.v1_cpuacct == NULL);
        put(j.v2, "cpu.stat", "usage_usec 900\n");
        put(j.v1_memory, "memory.max_usage_in_bytes", "4096\n");
        struct cgroup_stats st;
        cgroup_read_stats(&j, &st);
        CHECK(st.have_cpu && st.cpu_usec == 900);
        CHECK(st.memory_peak == 4096);

        /* Attach: every v1 cgroup, and v2 too when clone3 could not. */
        CHECK_INT(cgroup_attach_v1(&j, 31337, &err), 0);
        CHECK(file_is(j.v1_memory, "cgroup.procs", "31337"));
        CHECK(file_is(j.v1_pids, "cgroup.procs", "31337"));
        CHECK(file_is(j.v1_cpu, "cgroup.procs", "31337"));
        CHECK(file_is(j.v2, "cgroup.procs", "31337"));
        cgroup_destroy(&j);

        /* Without a v2 mount, accounting uses the separate cpuacct mount. */
        cleanup_free char *mi1 = pathf("32 31 0:29 / %s/fs/cpu rw - cgroup cgroup rw,cpu\n"
                                       "33 31 0:30 / %s/fs/cpuacct rw - cgroup cgroup rw,cpuacct\n"
                                       "35 31 0:32 / %s/fs/memory rw - cgroup cgroup rw,memory\n",
                                       d, d, d);
        put(d, "mountinfo", mi1);
        cgroup_layout_release(&l);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v2_dir == NULL && l.v1_pids == NULL);
        l.test_tree = true;
        CHECK_INT(cgroup_create(&l, "corral-5-1", &lim, &j, &err), 0);
        CHECK(j.pids == CG_NONE);
        CHECK_PATH(j.v1_cpu, "%s/corral-5-1", cpu);
        CHECK_PATH(j.v1_cpuacct, "%s/corral-5-1", acct);
        put(j.v1_cpuacct, "cpuacct.usage", "5000000\n");
        cgroup_read_stats(&j, &st);
        CHECK(st.have_cpu && st.cpu_usec == 5000);
        cgroup_destroy(&j);
        corral_error_free(err);
        cgroup_layout_release(&l);
}

/* ---- detection details ---- */

TEST(detect_nested_and_escaped)
{
        /* A mount point with a space (mountinfo writes it as \040), a
         * cgroup2 mount whose root is not "/" (a container's view), and a
         * nested path in /proc/self/cgroup. */
        cleanup_free char *d = case_dir("escaped");
        cleanup_free char *mnt = pathf("%s/with space/cg", d);
        cleanup_free char *self = pathf("%s/b/c d", mnt);
        mkdir_p(self, 0755);
        put(self, "cgroup.controllers", "memory pids\n");
        put(d, "cgroup", "0::/a/b/c d\n");
        /* The real mount (root "/") is listed after a bind of /a elsewhere. */
        cleanup_free char *mi = pathf(
                "40 31 0:38 /a %s/with\\040space/cg rw,relatime shared:9 master:2 - cgroup2 cgroup2 rw\n"
                "41 31 0:38 / %s/elsewhere rw,relatime shared:10 - cgroup2 cgroup2 rw\n",
                d, d);
        put(d, "mountinfo", mi);
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);
        struct cgroup_layout l;
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, self);
        CHECK(l.v2_memory && l.v2_pids && !l.v2_cpu);
        cgroup_layout_release(&l);

        /* A mount whose root is not an ancestor of our cgroup is skipped for
         * the next one. */
        cleanup_free char *other = pathf("%s/other", d);
        cleanup_free char *other_self = pathf("%s/a/b/c d", other);
        mkdir_p(other_self, 0755);
        cleanup_free char *mi2 = pathf("40 31 0:38 /x/y %s/with\\040space/cg rw - cgroup2 cgroup2 rw\n"
                                       "41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n",
                                       d, other);
        put(d, "mountinfo", mi2);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v2_dir, other_self);
        cgroup_layout_release(&l);

        /* Escapes for tab, newline and backslash too; v1 paths as well. */
        cleanup_free char *v1 = pathf("%s/t\ta\\b", d);
        cleanup_free char *v1_self = pathf("%s/jobs/42", v1);
        mkdir_p(v1_self, 0755);
        put(d, "cgroup", "3:memory:/jobs/42\n0::/\n");
        cleanup_free char *mi3 = pathf("50 31 0:40 / %s/t\\011a\\134b rw - cgroup cgroup rw,memory\n", d);
        put(d, "mountinfo", mi3);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK_STR(l.v1_memory, v1_self);
        CHECK(l.v2_dir == NULL);
        cgroup_layout_release(&l);

        /* A root that is a string prefix but not a path prefix of our
         * cgroup ("/a" vs "/ab/c") does not contain it. */
        put(d, "cgroup", "0::/ab/c\n");
        cleanup_free char *mi4 = pathf("40 31 0:38 /a %s/prefix rw - cgroup2 cgroup2 rw\n", d);
        put(d, "mountinfo", mi4);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v2_dir == NULL);
        if (l.v2_dir)
                printf("#   v2_dir = %s\n", l.v2_dir);
        cgroup_layout_release(&l);
}

TEST(detect_missing_inputs)
{
        cleanup_free char *d = case_dir("missing");
        cleanup_free char *mi_path = pathf("%s/mountinfo", d), *pc_path = pathf("%s/cgroup", d);
        struct cgroup_layout l;
        /* No mountinfo: an error. */
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), -1);
        CHECK(l.v2_dir == NULL && l.v1_memory == NULL);
        /* Mounts but no /proc/self/cgroup: nothing found, no error. */
        cleanup_free char *mi = pathf("41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n"
                                      "35 31 0:32 / %s/m rw - cgroup cgroup rw,memory\n",
                                      d, d);
        put(d, "mountinfo", mi);
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v2_dir == NULL && l.v1_memory == NULL);
        cgroup_layout_release(&l);
        /* Garbage lines are skipped. */
        put(d, "mountinfo", "\n\nnonsense\n1 2 3\n1 2 3 4 5 6 -\n1 2 3 / /x rw - cgroup\n");
        put(d, "cgroup", "garbage\n0::/\n");
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v2_dir == NULL && l.v1_memory == NULL);
        cgroup_layout_release(&l);
        /* A controller listed in /proc/self/cgroup but not mounted. */
        put(d, "mountinfo", "22 1 0:21 / / rw - ext4 /dev/vda rw\n");
        put(d, "cgroup", "4:memory:/x\n");
        CHECK_INT(cgroup_layout_detect_from(&l, mi_path, pc_path), 0);
        CHECK(l.v1_memory == NULL);
        cgroup_layout_release(&l);
}

/* ---- the real kernel ---- */

static bool host_v2_has_memory(void)
{
        static const char *const files[] = { "/sys/fs/cgroup/cgroup.controllers",
                                             "/sys/fs/cgroup/unified/cgroup.controllers" };
        for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
                cleanup_free char *text = read_file_at(AT_FDCWD, files[i], 4096);
                if (text == NULL)
                        continue;
                for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                        if (strcmp(w, "memory") == 0)
                                return true;
        }
        return false;
}

static void skip(const char *why)
{
        printf("# SKIP %s\n", why);
        printf("ok %d # SKIP %s\n", ++harness_n, why);
}

TEST(real_kernel_v2)
{
        if (!host_v2_has_memory()) {
                skip("real-kernel cgroup v2 test: no v2 controllers on this host");
                return;
        }
        const struct cgroup_layout *l = cgroup_host_layout();
        if (l->v2_dir == NULL || !l->v2_memory) {
                skip("real-kernel cgroup v2 test: the v2 memory controller is not delegated to this process");
                return;
        }
        corral_jail_config cfg;
        corral_jail_config_init(&cfg);
        char *const argv[] = { "/bin/true", NULL };
        corral_jail_config_set_argv(&cfg, argv, NULL);
        cfg.memory_bytes = 64ull << 20;
        corral_jail_result res;
        corral_error *err = NULL;
        int r = corral_jail_run(&cfg, NULL, &res, &err);
        CHECK_INT(r, 0);
        if (r < 0) {
                printf("#   %s\n", err ? err->msg : "?");
        } else {
                CHECK_STR(corral_limits_backend_to_string(res.backend), "cgroup-v2");
                CHECK(res.status == CORRAL_STATUS_OK);
                corral_jail_result_release(&res);
        }
        corral_error_free(err);
        corral_jail_config_release(&cfg);
}

int main(void)
{
        snprintf(tmp, sizeof(tmp), "%s/corral-test-cgroup-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(tmp) == NULL) {
                printf("Bail out! cannot create a temporary directory: %s\n", strerror(errno));
                return 1;
        }
        RUN(v2_detect_create_stats);
        RUN(v2_partial_controllers);
        RUN(v2_create_errors);
        RUN(v2_without_swap_accounting);
        RUN(v1_detect_create_stats);
        RUN(v1_separate_cpu_cpuacct_and_hybrid);
        RUN(detect_nested_and_escaped);
        RUN(detect_missing_inputs);
        RUN(real_kernel_v2);
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return DONE();
}
