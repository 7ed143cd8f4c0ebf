/* plan.c: turn a config into the list of steps the setup child performs.
 *
 * Everything that allocates, resolves a host path or formats a string is
 * done here, in the caller, before clone(): the child only replays the plan
 * (see enter.c).  Host paths are canonicalised here, so a symlink cannot
 * point a bind elsewhere once the child resolves it under /oldroot.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "devpts.h"
#include "jail-internal.h"

static const char *keep(struct jail_plan *p, char *s)
{
        if (s == NULL)
                return NULL;
        char **n = realloc(p->strings, (p->n_strings + 1) * sizeof(char *));
        if (n == NULL) {
                free(s);
                return NULL;
        }
        p->strings = n;
        p->strings[p->n_strings++] = s;
        return s;
}

static const char *fmt(struct jail_plan *p, const char *f, ...) CORRAL_PRINTF(2, 3);
static const char *fmt(struct jail_plan *p, const char *f, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, f);
        int r = vasprintf(&s, f, ap);
        va_end(ap);
        return r < 0 ? NULL : keep(p, s);
}

static struct mount_op *add(struct jail_plan *p, enum mount_op_kind kind, const char *src, const char *dst)
{
        if (dst == NULL || (kind == OP_BIND && src == NULL))
                return NULL;
        if (p->n_ops == p->cap_ops) {
                size_t cap = p->cap_ops ? p->cap_ops * 2 : 64;
                struct mount_op *ops = realloc(p->ops, cap * sizeof(*ops));
                if (ops == NULL)
                        return NULL;
                p->ops = ops;
                p->cap_ops = cap;
        }
        struct mount_op *op = &p->ops[p->n_ops++];
        memset(op, 0, sizeof(*op));
        op->kind = kind;
        op->src = src;
        op->dst = dst;
        return op;
}

static int add_host_bind(struct jail_plan *p, const char *real, const char *dst, bool writable, bool is_dir);

/* Bind host path `host` (absolute) read-only at `dst`, or mirror it when it
 * is a symlink (merged-/usr systems link /bin to usr/bin). */
static int add_system_path(struct jail_plan *p, const char *host, const char *dst, bool from_user)
{
        struct stat st;
        if (lstat(host, &st) < 0)
                return 0; /* not on this system */
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlink(host, target, sizeof(target) - 1);
                if (n < 0)
                        return 0;
                target[n] = '\0';
                return add(p, OP_SYMLINK, fmt(p, "%s", target), dst) ? 0 : -1;
        }
        if (p->attach_trees && from_user)
                return add_host_bind(p, host, dst, false, S_ISDIR(st.st_mode));
        struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s", host), dst);
        if (op == NULL)
                return -1;
        op->src_is_dir = S_ISDIR(st.st_mode);
        return 0;
}

static int keep_tree(struct jail_plan *p, int tree)
{
        int *fds = realloc(p->tree_fds, (p->n_tree_fds + 1) * sizeof(int));
        if (fds == NULL) {
                close(tree);
                return -1;
        }
        p->tree_fds = fds;
        fds[p->n_tree_fds++] = tree;
        return 0;
}

static void set_notice(struct jail_plan *p, const char *real, const corral_error *e)
{
        if (p->notice == NULL &&
            asprintf(&p->notice, "'%s' is bound without an idmapping (%s), so the jail's uid may not be able to write "
                                 "to it; run corral as an ordinary user or use a filesystem with idmapped-mount support",
                     real, e ? e->msg : "unsupported") < 0)
                p->notice = NULL;
}

/* A host path the caller named (workspace, binds, rootfs).  As root, the
 * caller clones its mount (the jail's uid may not be able to reach it) and,
 * for a writable directory, idmaps it so the jail's uid can write there.
 * Otherwise the child binds it by path from /oldroot.  Returns -2 for a
 * writable system directory, which is refused. */
bool jail_path_is_system(const char *real)
{
        /* What the jail writes lands as the directory's owner: never hand it
         * the host's system directories, nor anything beneath them (a
         * writable /usr/local/bin would let it plant programs root runs). */
        static const char *const system_trees[] = { "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                                    "/libx32", "/boot", "/proc", "/sys", "/dev" };
        static const char *const system_dirs[] = { "/", "/var", "/var/lib", "/run", "/root", "/home", "/opt",
                                                   "/srv" };
        for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
                if (strcmp(real, system_dirs[i]) == 0)
                        return true;
        for (size_t i = 0; i < ARRAY_SIZE(system_trees); i++) {
                size_t n = strlen(system_trees[i]);
                if (strncmp(real, system_trees[i], n) == 0 && (real[n] == '\0' || real[n] == '/'))
                        return true;
        }
        return false;
}

static int add_host_bind(struct jail_plan *p, const char *real, const char *dst, bool writable, bool is_dir)
{
        if (writable && jail_path_is_system(real))
                return -2;
        if (p->attach_trees) {
                corral_error *e = NULL;
                bool idmap = writable && is_dir && p->idmap_to != 0;
                int tree = idmap_open_tree(real, !writable, idmap ? p->idmap_to : 0, writable, &e);
                if (tree < 0 && idmap) {
                        set_notice(p, real, e);
                        corral_error_clear(&e);
                        tree = idmap_open_tree(real, false, 0, writable, &e);
                }
                corral_error_free(e);
                if (tree >= 0) {
                        if (keep_tree(p, tree) < 0)
                                return -1;
                        /* src only names it in messages; the child attaches tree_fd. */
                        struct mount_op *op = add(p, OP_ATTACH, fmt(p, "%s", real), dst);
                        if (op == NULL)
                                return -1;
                        op->tree_fd = tree;
                        op->writable = writable;
                        op->src_is_dir = is_dir;
                        return 0;
                }
        }
        struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s", real), dst);
        if (op == NULL)
                return -1;
        op->src_is_dir = is_dir;
        op->writable = writable;
        return 0;
}

/* A read-only bind of what b->src_fd refers to (corral_jail_config_add_bind_fd).
 * As root the fd's own mount is cloned, so no path is looked up again.
 * Otherwise the child binds the path the fd has now and checks that the
 * mount is that very file (device and inode). */
static int add_fd_bind(struct jail_plan *p, const struct corral_bind *b, corral_error **ret_err)
{
        struct stat st;
        if (fstat(b->src_fd, &st) < 0)
                return corral_fail(ret_err, errno, "bind source '%s'", b->src);
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                return corral_usage(ret_err, "bind source '%s' is neither a regular file nor a directory", b->src);
        const char *dst = b->dst + 1;
        for (const char *s = strchr(dst, '/'); s; s = strchr(s + 1, '/'))
                if (add(p, OP_DIR, NULL, fmt(p, "%.*s", (int)(s - dst), dst)) == NULL)
                        goto oom;
        if (p->attach_trees) {
                corral_error *e = NULL;
                /* Idmapped to the jail's uid where the filesystem allows, so
                 * a file only its owner may read stays readable in the jail. */
                int tree = p->idmap_to ? idmap_open_tree_fd(b->src_fd, b->src, true, p->idmap_to, false, &e) : -1;
                corral_error_clear(&e);
                if (tree < 0)
                        tree = idmap_open_tree_fd(b->src_fd, b->src, true, 0, false, ret_err);
                if (tree < 0)
                        return -1;
                if (keep_tree(p, tree) < 0)
                        goto oom;
                struct mount_op *op = add(p, OP_ATTACH, fmt(p, "%s", b->src), fmt(p, "%s", dst));
                if (op == NULL)
                        goto oom;
                op->tree_fd = tree;
                op->src_is_dir = S_ISDIR(st.st_mode);
                return 0;
        }
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", b->src_fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0 || target[0] != '/')
                return corral_fail(ret_err, n < 0 ? errno : ENOENT, "bind source '%s'", b->src);
        target[n] = '\0';
        struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s", target), fmt(p, "%s", dst));
        if (op == NULL)
                goto oom;
        op->src_is_dir = S_ISDIR(st.st_mode);
        op->check_id = true;
        op->expect_dev = st.st_dev;
        op->expect_ino = st.st_ino;
        return 0;
oom:
        return corral_fail(ret_err, ENOMEM, "cannot plan the jail's file system");
}

/* --net allow without a credential: the system's bundle (the rootfs's
 * under --rootfs) bound read-only at JAIL_CA_BUNDLE, so that OpenSSL's
 * default paths, curl, requests and Debian's pip verify public hosts
 * reached through the proxy's tunnels.  A bind, not a copy: no bytes in
 * the jail's tmpfs, one mount (docs/network.md), of the very file opened
 * here.  None: the jail has no trust store.
 *
 * The host's file is bound by its path, checked by device and inode when
 * mounted, as the other /etc files are: any uid may walk to it.  A
 * rootfs's may lie where the jail's uid cannot walk (a 0700 directory of
 * root's), so it goes as a bind of the opened fd does (add_fd_bind: as
 * root a clone of the file's mount, idmapped); that clone costs ~4 ms,
 * the path bind ~0.3 ms. */
static int add_trust_store(struct jail_plan *p, const char *sysroot, corral_error **ret_err)
{
        int fd = jail_trust_store_open(sysroot);
        if (fd < 0)
                return 0;
        int r = 0;
        if (sysroot) {
                struct corral_bind b = { .src = (char *)"the rootfs's " JAIL_CA_BUNDLE, .dst = (char *)JAIL_CA_BUNDLE,
                                         .src_fd = fd };
                r = add_fd_bind(p, &b, ret_err);
                close(fd);
                return r;
        }
        char link[64], real[PATH_MAX];
        struct stat st;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, real, sizeof(real) - 1);
        if (n <= 0 || real[0] != '/' || fstat(fd, &st) < 0) {
                r = corral_fail(ret_err, n < 0 ? errno : ENOENT, "cannot bind '%s' into the jail", JAIL_CA_BUNDLE);
                close(fd);
                return r;
        }
        close(fd);
        real[n] = '\0';
        struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s", real), JAIL_CA_BUNDLE + 1);
        if (op == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot plan the jail's file system");
        op->check_id = true;
        op->expect_dev = st.st_dev;
        op->expect_ino = st.st_ino;
        return 0;
}

static int add_file(struct jail_plan *p, const char *dst, const char *content)
{
        const char *c = fmt(p, "%s", content);
        struct mount_op *op = add(p, OP_FILE, NULL, dst);
        if (op == NULL || c == NULL)
                return -1;
        op->data = c;
        op->data_len = strlen(c);
        return 0;
}

static int add_tmpfs(struct jail_plan *p, const char *dst, uint64_t size, const char *mode)
{
        struct mount_op *op = add(p, OP_TMPFS, NULL, dst);
        if (op == NULL)
                return -1;
        op->data = fmt(p, "size=%" PRIu64 ",nr_inodes=%" PRIu64 ",mode=%s", size, size / 1024 + 1024, mode);
        return op->data ? 0 : -1;
}

/* Resolve a user-given host path; usage error when missing. */
static char *resolve_host(const char *path, const char *what, corral_error **ret_err)
{
        char *real = realpath(path, NULL);
        if (real == NULL)
                corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "%s '%s'", what, path);
        return real;
}

/* rel opened beneath sysroot (NULL or "": the host's own root), its links
 * resolved inside it: a rootfs's link naming a host file (absolutely or by
 * "..") is that rootfs's file, never the host's, however privileged corral
 * is.  Kernels without openat2 (before 5.6) open the host's own files only. */
static int open_in_sysroot(const char *sysroot, const char *rel, int flags)
{
        bool host = !(sysroot && sysroot[0]);
        int dirfd = open(host ? "/" : sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return -1;
        struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
                                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS && host)
                fd = openat(dirfd, rel, flags | O_CLOEXEC);
        int e = errno;
        close(dirfd);
        errno = e;
        return fd;
}

int jail_trust_store_open(const char *sysroot)
{
        int fd = open_in_sysroot(sysroot, JAIL_CA_BUNDLE + 1, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
                        (uint64_t)st.st_size > JAIL_MAX_TRUST_STORE)) {
                close(fd);
                return -1;
        }
        return fd;
}

/* The host path of rel in sysroot (open_in_sysroot()) and its stat, or
 * NULL: what a bind by path names. */
static char *resolve_in_sysroot(const char *sysroot, const char *rel, struct stat *st)
{
        cleanup_close int fd = open_in_sysroot(sysroot, rel, O_PATH);
        if (fd < 0 || fstat(fd, st) < 0)
                return NULL;
        char link[64], real[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, real, sizeof(real) - 1);
        if (n <= 0)
                return NULL;
        real[n] = '\0';
        return strdup(real);
}

static int build_etc(struct jail_plan *p, const char *sysroot)
{
        char host[PATH_MAX];
        if (add(p, OP_DIR, NULL, "etc") == NULL)
                return -1;
        int r = 0;
        r |= add_file(p, "etc/passwd",
                      "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
                      "sandbox:x:1000:1000:corral sandbox:/tmp:/bin/sh\n"
                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
        r |= add_file(p, "etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n");
        r |= add_file(p, "etc/hosts", "127.0.0.1\tlocalhost corral\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        r |= add_file(p, "etc/hostname", "corral\n");
        r |= add_file(p, "etc/nsswitch.conf",
                      "passwd: files\ngroup: files\nhosts: files\nservices: files\nprotocols: files\n");
        if (p->ca_bundle || p->ssl_certs_dir || p->trust_store) {
                r |= add(p, OP_DIR, NULL, "etc/ssl") == NULL;
                r |= add(p, OP_DIR, NULL, "etc/ssl/certs") == NULL;
        }
        if (p->ca_bundle)
                r |= add_file(p, JAIL_CA_BUNDLE + 1, p->ca_bundle);
        if (r)
                return -1;
        /* Harmless host files the runtime reads: the loader cache, time zone,
         * Debian's alternatives links, fontconfig and matplotlib defaults, and
         * the public tables of service and protocol names
         * (getaddrinfo("127.0.0.1", "http"), getprotobyname("tcp")). */
        static const char *const passthrough[] = { "ld.so.cache", "alternatives", "fonts", "matplotlibrc",
                                                   "mime.types", "services", "protocols" };
        for (size_t i = 0; i < ARRAY_SIZE(passthrough); i++) {
                snprintf(host, sizeof(host), "etc/%s", passthrough[i]);
                struct stat st;
                char *real = resolve_in_sysroot(sysroot, host, &st);
                if (real == NULL)
                        continue;
                if (!(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
                        free(real);
                        continue;
                }
                int r2;
                if (sysroot[0]) {
                        /* a rootfs's file, cloned as corral (the jail's uid may
                         * not reach it through the rootfs's parents) */
                        r2 = add_host_bind(p, real, fmt(p, "%s", host), false, S_ISDIR(st.st_mode));
                } else {
                        struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s", real), fmt(p, "%s", host));
                        if (op)
                                op->src_is_dir = S_ISDIR(st.st_mode);
                        r2 = op ? 0 : -1;
                }
                free(real);
                if (r2 < 0)
                        return -1;
        }
        struct stat tz_st;
        char *tz = resolve_in_sysroot(sysroot, "etc/localtime", &tz_st);
        if (tz != NULL && !S_ISREG(tz_st.st_mode)) {
                free(tz);
                tz = NULL;
        }
        if (tz != NULL) {
                int r2 = 0;
                if (sysroot[0])
                        r2 = add_host_bind(p, tz, "etc/localtime", false, false);
                else if (add(p, OP_BIND, fmt(p, "/oldroot%s", tz), "etc/localtime") == NULL)
                        r2 = -1;
                free(tz);
                if (r2 < 0)
                        return -1;
        }
        return 0;
}

/* matplotlib's font cache, pre-built (fontcache.c), read-only in the
 * otherwise writable MPLCONFIGDIR. */
static int add_fontcache(struct jail_plan *p, const corral_jail_config *cfg)
{
        cleanup_free char *dir = fontcache_dir(cfg, p->on_notice, p->notice_userdata);
        if (dir == NULL)
                return 0;
        DIR *d = opendir(dir);
        if (d == NULL)
                return 0;
        int r = add(p, OP_DIR, NULL, "tmp/matplotlib") ? 0 : -1;
        struct dirent *e;
        while (r == 0 && (e = readdir(d)) != NULL) {
                if (strncmp(e->d_name, "fontlist-", 9) != 0)
                        continue;
                struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot%s/%s", dir, e->d_name),
                                          fmt(p, "tmp/matplotlib/%s", e->d_name));
                if (op == NULL)
                        r = -1;
        }
        closedir(d);
        return r;
}

static int build_dev(struct jail_plan *p)
{
        if (add_tmpfs(p, "dev", 65536, "0755") < 0)
                return -1;
        /* tty: whatever terminal the opener controls, which in a jail can
         * only be one of its own ptys (init starts the program in a new
         * session, and no host terminal fd crosses), else ENXIO. */
        static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
        for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
                struct stat st;
                char host[64];
                snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
                if (strcmp(nodes[i], "tty") == 0 && (stat(host, &st) < 0 || !S_ISCHR(st.st_mode)))
                        continue; /* optional: a host without it */
                struct mount_op *op = add(p, OP_BIND, fmt(p, "/oldroot/dev/%s", nodes[i]), fmt(p, "dev/%s", nodes[i]));
                if (op == NULL)
                        return -1;
                op->writable = true;
                op->device = true;
        }
        static const char *const links[][2] = {
                { "/proc/self/fd", "dev/fd" },    { "/proc/self/fd/0", "dev/stdin" },
                { "/proc/self/fd/1", "dev/stdout" }, { "/proc/self/fd/2", "dev/stderr" },
                /* POSIX semaphores and shm_open land in the capped /tmp. */
                { "/tmp", "dev/shm" },
                /* Terminals: the jail's own devpts (below), as bubblewrap and
                 * container runtimes give one. */
                { "pts/ptmx", "dev/ptmx" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(links); i++)
                if (add(p, OP_SYMLINK, links[i][0], links[i][1]) == NULL)
                        return -1;
        struct mount_op *pts = add(p, OP_DEVPTS, NULL, "dev/pts");
        if (pts == NULL)
                return -1;
        pts->data = JAIL_DEVPTS_OPTIONS;
        return add(p, OP_READONLY, NULL, "dev") ? 0 : -1;
}

size_t jail_plan_root_bytes(const corral_jail_config *cfg, const char *ca_bundle)
{
        size_t n = 4u << 20;
        if (cfg->script)
                n += cfg->script_len;
        if (ca_bundle)
                n += strlen(ca_bundle);
        return n;
}

int jail_plan_build(struct jail_plan *p, const corral_jail_config *cfg, corral_error **ret_err)
{
        char host[PATH_MAX];
        cleanup_free char *sysroot = NULL;
        if (cfg->rootfs) {
                sysroot = resolve_host(cfg->rootfs, "rootfs", ret_err);
                if (sysroot == NULL)
                        return -1;
                struct stat st;
                if (stat(sysroot, &st) < 0 || !S_ISDIR(st.st_mode))
                        return corral_usage(ret_err, "rootfs '%s' is not a directory", cfg->rootfs);
        }
        const char *base = sysroot ? sysroot : "";

        size_t root_size = jail_plan_root_bytes(cfg, p->ca_bundle);
        p->root_tmpfs_data = NULL;
        if (asprintf(&p->root_tmpfs_data, "size=%zu,nr_inodes=4096,mode=0755", root_size) < 0)
                goto oom;

        static const char *const system_dirs[] = { "usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32" };
        for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++) {
                snprintf(host, sizeof(host), "%s/%s", base, system_dirs[i]);
                if (add_system_path(p, host, system_dirs[i], sysroot != NULL) < 0)
                        goto oom;
        }
        if (build_etc(p, base) < 0 || build_dev(p) < 0)
                goto oom;
        if (p->trust_store && !p->ca_bundle && add_trust_store(p, sysroot, ret_err) < 0)
                return -1;
        if (add(p, OP_PROC, NULL, "proc") == NULL)
                goto oom;
        /* /proc/sys read-only: bind it onto itself, then flip the flag. */
        struct mount_op *op = add(p, OP_BIND, "/proc/sys", "proc/sys");
        if (op == NULL)
                goto oom;
        op->src_is_dir = true;
        if (add_tmpfs(p, "tmp", cfg->disk_bytes, "1777") < 0)
                goto oom;
        if (add_fontcache(p, cfg) < 0)
                goto oom;

        if (cfg->workspace) {
                cleanup_free char *ws = resolve_host(cfg->workspace, "workspace", ret_err);
                if (ws == NULL)
                        return -1;
                struct stat st;
                if (stat(ws, &st) < 0 || !S_ISDIR(st.st_mode))
                        return corral_usage(ret_err, "workspace '%s' is not a directory", cfg->workspace);
                int r = add_host_bind(p, ws, "workspace", true, true);
                if (r == -2)
                        return corral_usage(ret_err, "refusing to give the jail write access to the system "
                                                     "directory '%s'", ws);
                if (r < 0)
                        goto oom;
        } else if (add_tmpfs(p, "workspace", cfg->disk_bytes, "0755") < 0) {
                goto oom;
        }

        for (size_t i = 0; i < cfg->n_binds; i++) {
                const struct corral_bind *b = &cfg->binds[i];
                if (b->src_fd >= 0) {
                        if (add_fd_bind(p, b, ret_err) < 0)
                                return -1;
                        continue;
                }
                cleanup_free char *real = resolve_host(b->src, "bind source", ret_err);
                if (real == NULL)
                        return -1;
                struct stat st;
                if (stat(real, &st) < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "bind source '%s'", b->src);
                /* Parents of the target: mkdir each level (ignored if present). */
                const char *dst = b->dst + 1;
                for (const char *s = strchr(dst, '/'); s; s = strchr(s + 1, '/'))
                        if (add(p, OP_DIR, NULL, fmt(p, "%.*s", (int)(s - dst), dst)) == NULL)
                                goto oom;
                int r = add_host_bind(p, real, fmt(p, "%s", dst), b->writable, S_ISDIR(st.st_mode));
                if (r == -2)
                        return corral_usage(ret_err, "refusing to give the jail write access to the system "
                                                     "directory '%s'", real);
                if (r < 0)
                        goto oom;
        }

        /* /home/user is the workspace too: programs written for E2B's
         * sandboxes (and others) keep their files there.  After the binds,
         * none of which may cover it (config.c), so the link is made in
         * the jail's own root. */
        if (add(p, OP_DIR, NULL, "home") == NULL || add(p, OP_SYMLINK, "/workspace", "home/user") == NULL)
                goto oom;

        if (cfg->script) {
                if (add(p, OP_DIR, NULL, "run") == NULL || add(p, OP_DIR, NULL, "run/corral") == NULL)
                        goto oom;
                op = add(p, OP_FILE, NULL, fmt(p, "run/corral/%s", cfg->script_name));
                if (op == NULL)
                        goto oom;
                op->data = cfg->script;
                op->data_len = cfg->script_len;
                op->mode = 0644;
        }
        /* Last, so binds above cannot be shadowed by a later user bind. */
        if (add(p, OP_READONLY, NULL, "proc/sys") == NULL)
                goto oom;
        return 0;
oom:
        return corral_fail(ret_err, ENOMEM, "cannot plan the jail's file system");
}

void jail_plan_release(struct jail_plan *p)
{
        for (size_t i = 0; i < p->n_strings; i++)
                free(p->strings[i]);
        free(p->strings);
        free(p->ops);
        free(p->root_tmpfs_data);
        for (size_t i = 0; i < p->n_tree_fds; i++)
                close(p->tree_fds[i]);
        free(p->tree_fds);
        p->tree_fds = NULL;
        p->n_tree_fds = 0;
        free(p->notice);
        p->notice = NULL;
        p->strings = NULL;
        p->ops = NULL;
        p->n_ops = p->n_strings = p->cap_ops = 0;
        p->root_tmpfs_data = NULL;
}

const char *jail_plan_step_name(const struct jail_plan *p, int step, char *buf, size_t len)
{
        static const char *const fixed[] = {
                [-STEP_SYNC] = "wait for the supervisor",
                [-STEP_IDS] = "switch to the jail's uid and gid",
                [-STEP_CAPS] = "raise capabilities inside the user namespace",
                [-STEP_PRIVATE] = "make mounts private",
                [-STEP_ROOT_TMPFS] = "mount the new root",
                [-STEP_PIVOT] = "pivot_root into the new root",
                [-STEP_DETACH_OLDROOT] = "detach the old root",
                [-STEP_ROOT_READONLY] = "make the new root read-only",
                [-STEP_HOSTNAME] = "set the hostname",
                [-STEP_LOOPBACK] = "bring up loopback",
                [-STEP_DROP_CAPS] = "drop capabilities",
                [-STEP_NO_NEW_PRIVS] = "set no_new_privs",
                [-STEP_FDS] = "arrange file descriptors",
                [-STEP_EXEC_INIT] = "execute corral-init",
                [-STEP_PDEATHSIG] = "set the parent-death signal",
                [-STEP_NETNS] = "create the network namespace",
                [-STEP_PROXY] = "make the network proxy's listening socket",
                [-STEP_CGROUP] = "enter the jail's cgroups",
                [-STEP_ORDERS] = "receive its caller's orders",
                [-STEP_RESIZE] = "resize /tmp and /workspace to the caller's disk limit",
                [-STEP_ATTACH] = "attach its caller's workspace and binds",
                [-STEP_SCRIPT] = "write its caller's program text",
                [-STEP_PROGRAM_PROCESS] = "start the process that waits for its caller's program",
        };
        if (step < 0 && (size_t)-step < ARRAY_SIZE(fixed) && fixed[-step])
                return fixed[-step];
        if (step >= 0 && (size_t)step < p->n_ops) {
                const struct mount_op *op = &p->ops[step];
                static const char *const kinds[] = { [OP_DIR] = "create directory", [OP_TMPFS] = "mount tmpfs at",
                                                     [OP_BIND] = "bind mount", [OP_PROC] = "mount proc at",
                                                     [OP_FILE] = "write", [OP_SYMLINK] = "create symlink",
                                                     [OP_ATTACH] = "attach a bind at",
                                                     [OP_READONLY] = "make read-only",
                                                     [OP_DEVPTS] = "mount devpts at" };
                if (op->kind == OP_BIND || (op->kind == OP_ATTACH && op->src))
                        snprintf(buf, len, "bind mount '%s' at '/%s'",
                                 strncmp(op->src, "/oldroot", 8) == 0 ? op->src + 8 : op->src, op->dst);
                else
                        snprintf(buf, len, "%s '/%s'", kinds[op->kind], op->dst);
                return buf;
        }
        return "set up the jail";
}
