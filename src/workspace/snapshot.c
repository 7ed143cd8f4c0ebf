/* snapshot.c: what a step changed in the workspace.
 *
 * A snapshot is the lstat of every entry outside input/ (a bounded walk that
 * never follows a symlink); two of them, compared by path, give the files
 * created, modified and deleted.  Nothing is read but metadata.
 *
 * Stat'ing every entry costs about 2 µs each here, 20 ms for 10,000 files:
 * too slow to do after every step.  So a snapshot also watches every
 * directory it walked with inotify, and workspace_snapshot_next() builds
 * the next snapshot from the previous one plus the entries the kernel said
 * changed: only those are stat'ed again (a directory that appeared or was
 * replaced is walked whole).  The kernel reports writes by any process
 * through any mount of the same directory (the jail's /workspace bind
 * included).  When it lost events (queue overflow), a watch could not be
 * added, or the walk was cut at a limit, the next snapshot is a full walk.
 *
 * Entries are kept sorted in "tree order" (bytewise, '/' before any other
 * byte), which is the order of a depth-first walk over sorted names, so no
 * snapshot is ever sorted as a whole.  Paths live in one arena per
 * snapshot; an incremental snapshot copies its parent's arena as is (one
 * memcpy) and keeps the offsets, so the diff tells most unchanged entries
 * by their offset without comparing paths.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>

#include "artifact.h"
#include "workspace-internal.h"

/* Watches count against the user's fs.inotify.max_user_watches, shared with
 * everything else the user runs: a tree with more directories than this is
 * walked whole every time instead. */
#define MAX_WATCHES 8192

static size_t max_watches = MAX_WATCHES;

void ws_snapshot_max_watches(size_t n)
{
        __atomic_store_n(&max_watches, n ? n : MAX_WATCHES, __ATOMIC_RELAXED);
}

#define WATCH_MASK                                                                                                     \
        (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |              \
         IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

struct ws_entry {
        size_t off; /* path: arena + off, NUL-terminated */
        uint32_t len;
        mode_t type; /* st_mode & S_IFMT */
        uint32_t nlink;
        uint64_t size;
        int64_t mtime_ns;
        ino_t ino;
};

/* inotify state: owned by the newest snapshot of a lineage. */
struct ws_watch {
        int fd;
        char **dir; /* by watch descriptor: the directory's path ("" the top) */
        size_t n_dir;
        size_t live; /* watches held */
};

struct ws_snapshot {
        struct ws_entry *v;
        size_t n, alloc;
        char *arena;
        size_t arena_len, arena_alloc, garbage;
        bool truncated;
        unsigned flags;
        int unreadable;
        uint64_t id, parent_id; /* lineage: offsets below base_len name the parent's bytes */
        size_t base_len;
        struct ws_watch *watch;
};

static uint64_t next_id = 1;

static const char *epath(const struct ws_snapshot *s, const struct ws_entry *e)
{
        return s->arena + e->off;
}

/* ---- tree order ---- */

static int rank(unsigned char c)
{
        return c == '/' ? 1 : c + 2;
}

/* Compare paths in tree order: a directory, then everything below it, then
 * its next sibling ("a", "a/z", "a-b"). */
static int cmp_tree(const char *a, size_t alen, const char *b, size_t blen)
{
        size_t n = alen < blen ? alen : blen;
        for (size_t i = 0; i < n; i++)
                if (a[i] != b[i])
                        return rank((unsigned char)a[i]) - rank((unsigned char)b[i]);
        return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* b is a or below it. */
static bool path_under(const char *b, size_t blen, const char *a, size_t alen)
{
        if (alen == 0)
                return true;
        return blen >= alen && memcmp(a, b, alen) == 0 && (blen == alen || b[alen] == '/');
}

/* ---- building ---- */

static void watch_free(struct ws_watch *w)
{
        if (w == NULL)
                return;
        if (w->fd >= 0)
                close(w->fd);
        for (size_t i = 0; i < w->n_dir; i++)
                free(w->dir[i]);
        free(w->dir);
        free(w);
}

void ws_snapshot_free(struct ws_snapshot *s)
{
        if (s == NULL)
                return;
        watch_free(s->watch);
        free(s->v);
        free(s->arena);
        free(s);
}

bool ws_snapshot_truncated(const struct ws_snapshot *s)
{
        return s && s->truncated;
}

size_t ws_snapshot_count(const struct ws_snapshot *s)
{
        return s ? s->n : 0;
}

bool ws_snapshot_tracking(const struct ws_snapshot *s)
{
        return s && s->watch != NULL;
}

bool ws_snapshot_incremental(const struct ws_snapshot *s)
{
        return s && s->parent_id != 0;
}

static int arena_add(struct ws_snapshot *s, const char *prefix, size_t plen, const char *name, size_t nlen,
                     size_t *ret_off)
{
        size_t need = plen + (plen ? 1 : 0) + nlen + 1;
        if (s->arena_len + need > s->arena_alloc) {
                size_t want = s->arena_alloc ? s->arena_alloc * 2 : 16384;
                while (want < s->arena_len + need)
                        want *= 2;
                char *a = realloc(s->arena, want);
                if (a == NULL)
                        return -1;
                s->arena = a;
                s->arena_alloc = want;
        }
        char *p = s->arena + s->arena_len;
        if (plen) {
                memcpy(p, prefix, plen);
                p[plen] = '/';
                p += plen + 1;
        }
        memcpy(p, name, nlen);
        p[nlen] = '\0';
        *ret_off = s->arena_len;
        s->arena_len += need;
        return 0;
}

static int entry_add(struct ws_snapshot *s, size_t off, size_t len, const struct stat *st)
{
        if (s->n == s->alloc) {
                size_t want = s->alloc ? s->alloc * 2 : 256;
                struct ws_entry *v = realloc(s->v, want * sizeof(*v));
                if (v == NULL)
                        return -1;
                s->v = v;
                s->alloc = want;
        }
        s->v[s->n++] = (struct ws_entry){
                .off = off,
                .len = (uint32_t)len,
                .type = st->st_mode & S_IFMT,
                .nlink = st->st_nlink > UINT32_MAX ? UINT32_MAX : (uint32_t)st->st_nlink,
                .size = (uint64_t)st->st_size,
                .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                .ino = st->st_ino,
        };
        return 0;
}

/* Give up tracking changes (a watch could not be added): later snapshots
 * walk the whole tree.  Whoever set s->watch frees it. */
static void watch_drop(struct ws_snapshot *s)
{
        s->watch = NULL;
}

/* Watch the directory open as fd, at path; a watch on an inode watched
 * already (a directory moved) is pointed at its new path. */
static void watch_add(struct ws_snapshot *s, int fd, const char *path)
{
        struct ws_watch *w = s->watch;
        if (w == NULL)
                return;
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        int wd = inotify_add_watch(w->fd, proc, WATCH_MASK);
        if (wd < 0 || (size_t)wd > WORKSPACE_MAX_ENTRIES * 4) {
                watch_drop(s); /* no /proc, no more watches (ENOSPC): full walks */
                return;
        }
        if ((size_t)wd >= w->n_dir) {
                size_t want = w->n_dir ? w->n_dir : 64;
                while (want <= (size_t)wd)
                        want *= 2;
                char **d = realloc(w->dir, want * sizeof(*d));
                if (d == NULL) {
                        watch_drop(s);
                        return;
                }
                memset(d + w->n_dir, 0, (want - w->n_dir) * sizeof(*d));
                w->dir = d;
                w->n_dir = want;
        }
        char *p = strdup(path);
        if (p == NULL) {
                watch_drop(s);
                return;
        }
        if (w->dir[wd] == NULL && ++w->live > __atomic_load_n(&max_watches, __ATOMIC_RELAXED)) {
                free(p);
                watch_drop(s);
                return;
        }
        free(w->dir[wd]);
        w->dir[wd] = p;
}

/* Stop watching path and everything below it. */
static void watch_remove_under(struct ws_watch *w, const char *path, size_t len)
{
        for (size_t i = 0; w && i < w->n_dir; i++) {
                if (w->dir[i] == NULL || !path_under(w->dir[i], strlen(w->dir[i]), path, len))
                        continue;
                inotify_rm_watch(w->fd, (int)i);
                free(w->dir[i]);
                w->dir[i] = NULL;
                w->live--;
        }
}

struct name {
        const char *s;
        size_t len;
};

static int cmp_names(const void *a, const void *b)
{
        const struct name *x = a, *y = b;
        size_t n = x->len < y->len ? x->len : y->len;
        int c = memcmp(x->s, y->s, n);
        return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

struct linux_dirent64 {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
};

/* The entries of the directory fd, read with getdents64 into *buf (grown
 * as needed) and sorted into names[]; at most max of them (more: *more). */
static int read_names(int fd, char **buf, size_t *buf_alloc, struct name **names, size_t *n_names, size_t max,
                      bool *more)
{
        size_t used = 0, n = 0, alloc = 0;
        struct name *v = NULL;
        *more = false;
        for (;;) {
                if (*buf_alloc - used < 32768) {
                        size_t want = *buf_alloc ? *buf_alloc * 2 : 65536;
                        char *b = realloc(*buf, want);
                        if (b == NULL)
                                goto nomem;
                        *buf = b;
                        *buf_alloc = want;
                }
                long r = syscall(SYS_getdents64, fd, *buf + used, *buf_alloc - used);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        free(v);
                        return -1;
                }
                if (r == 0)
                        break;
                used += (size_t)r;
                if (used >= (size_t)WORKSPACE_MAX_ENTRIES * 300)
                        break; /* bounded: names past this are not read */
        }
        for (size_t o = 0; o < used;) {
                struct linux_dirent64 *de = (struct linux_dirent64 *)(*buf + o);
                o += de->d_reclen;
                const char *nm = de->d_name;
                if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
                        continue;
                if (n >= max) {
                        *more = true;
                        break;
                }
                if (n == alloc) {
                        alloc = alloc ? alloc * 2 : 64;
                        struct name *nv = realloc(v, alloc * sizeof(*nv));
                        if (nv == NULL)
                                goto nomem;
                        v = nv;
                }
                v[n++] = (struct name){ nm, strlen(nm) };
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), cmp_names);
        *names = v;
        *n_names = n;
        return 0;
nomem:
        free(v);
        errno = ENOMEM;
        return -1;
}

struct walk {
        struct ws_snapshot *s;
        char *buf; /* getdents64 buffer, shared by the levels in turn */
        size_t buf_alloc;
        size_t max_entries;
        size_t entries;
        bool skip_input;
};

/* Walk the directory fd at path (depth: its entries' depth).  -1: out of
 * memory; 0 otherwise (limits mark the snapshot truncated). */
static int walk_dir(struct walk *w, int fd, const char *path, size_t plen, unsigned depth)
{
        struct ws_snapshot *s = w->s;
        watch_add(s, fd, path); /* before reading: nothing changed after it is missed */
        struct name *names = NULL;
        size_t n = 0;
        bool more = false;
        if (w->entries >= w->max_entries) {
                s->truncated = true;
                return 0;
        }
        if (read_names(fd, &w->buf, &w->buf_alloc, &names, &n, w->max_entries - w->entries, &more) < 0) {
                if (errno == ENOMEM)
                        return -1;
                s->unreadable++;
                return 0;
        }
        /* names point into w->buf, which deeper levels reuse: copy them. */
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++)
                bytes += names[i].len + 1;
        char *copy = malloc(bytes ? bytes : 1);
        if (copy == NULL) {
                free(names);
                return -1;
        }
        for (size_t i = 0, o = 0; i < n; i++) {
                memcpy(copy + o, names[i].s, names[i].len + 1);
                names[i].s = copy + o;
                o += names[i].len + 1;
        }
        if (more)
                s->truncated = true;
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                const char *nm = names[i].s;
                if (depth == 1 && w->skip_input && strcmp(nm, "input") == 0)
                        continue; /* staged inputs: read-only in every jail */
                struct stat st;
                if (fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone since it was listed */
                if (w->entries >= w->max_entries) {
                        s->truncated = true;
                        break;
                }
                w->entries++;
                size_t off;
                if (arena_add(s, path, plen, nm, names[i].len, &off) < 0 ||
                    entry_add(s, off, plen + (plen ? 1 : 0) + names[i].len, &st) < 0) {
                        r = -1;
                        break;
                }
                if (!S_ISDIR(st.st_mode))
                        continue;
                if (depth >= WORKSPACE_MAX_DEPTH) {
                        s->truncated = true;
                        continue;
                }
                int sub = openat(fd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0) {
                        s->unreadable++;
                        continue;
                }
                /* The arena may move: the child's path is copied out. */
                size_t clen = plen + (plen ? 1 : 0) + names[i].len;
                char *cpath = malloc(clen + 1);
                if (cpath == NULL) {
                        close(sub);
                        r = -1;
                        break;
                }
                memcpy(cpath, s->arena + off, clen + 1);
                r = walk_dir(w, sub, cpath, clen, depth + 1);
                free(cpath);
                close(sub);
        }
        free(copy);
        free(names);
        return r;
}

static struct ws_snapshot *snapshot_new(unsigned flags)
{
        struct ws_snapshot *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return NULL;
        s->flags = flags;
        s->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
        return s;
}

int ws_snapshot_dir(int dirfd, unsigned flags, struct ws_snapshot **ret, corral_error **ret_err)
{
        struct ws_snapshot *s = snapshot_new(flags);
        if (s == NULL)
                return corral_fail(ret_err, ENOMEM, "out of memory");
        struct ws_watch *own = calloc(1, sizeof(*own));
        if (own) {
                own->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (own->fd < 0) { /* out of inotify instances: full walks */
                        watch_free(own);
                        own = NULL;
                }
        }
        s->watch = own;
        struct walk w = { .s = s, .max_entries = WORKSPACE_MAX_ENTRIES, .skip_input = !(flags & WS_SNAPSHOT_ALL) };
        int top = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = top < 0 ? 0 : walk_dir(&w, top, "", 0, 1);
        if (top >= 0)
                close(top);
        free(w.buf);
        if (s->watch == NULL || s->truncated) {
                /* A watch failed, or an update could not tell what the
                 * limits left out: later snapshots are full walks. */
                watch_free(own);
                s->watch = NULL;
        }
        if (r < 0) {
                ws_snapshot_free(s);
                return corral_fail(ret_err, ENOMEM, "out of memory");
        }
        if (top < 0 || (s->unreadable && s->n == 0 && w.entries == 0)) {
                /* Not even the top could be read. */
                int e = top < 0 ? errno : EACCES;
                ws_snapshot_free(s);
                return corral_fail(ret_err, e, "cannot read the directory");
        }
        *ret = s;
        return 0;
}

int workspace_snapshot(struct workspace *ws, struct ws_snapshot **ret, corral_error **ret_err)
{
        if (ws_snapshot_dir(ws->root_fd, 0, ret, ret_err) < 0)
                return corral_error_prefix(ret_err, "cannot snapshot the workspace '%s'", ws->root);
        return 0;
}

/* ---- the next snapshot from the previous one and inotify's events ---- */

static int cmp_cstr_tree(const void *a, const void *b)
{
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        return cmp_tree(x, strlen(x), y, strlen(y));
}

/* The first entry at or after path in tree order. */
static size_t lower_bound(const struct ws_snapshot *s, const char *path, size_t len)
{
        size_t lo = 0, hi = s->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cmp_tree(epath(s, &s->v[mid]), s->v[mid].len, path, len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* The changed paths the events name, sorted and unique; NULL with *full
 * set when only a full walk will do. */
static char **read_events(struct ws_snapshot *prev, size_t *ret_n, bool *full)
{
        struct ws_watch *w = prev->watch;
        char **v = NULL;
        size_t n = 0, alloc = 0;
        char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
        *full = false;
        for (;;) {
                ssize_t len = read(w->fd, buf, sizeof(buf));
                if (len < 0 && errno == EINTR)
                        continue;
                if (len <= 0)
                        break; /* EAGAIN: drained */
                for (ssize_t o = 0; o < len;) {
                        const struct inotify_event *ev = (const struct inotify_event *)(buf + o);
                        o += (ssize_t)(sizeof(*ev) + ev->len);
                        if (ev->mask & IN_Q_OVERFLOW)
                                goto full;
                        if (ev->wd < 0 || (size_t)ev->wd >= w->n_dir || w->dir[ev->wd] == NULL)
                                continue; /* a watch we dropped */
                        const char *dir = w->dir[ev->wd];
                        if (ev->mask & IN_IGNORED) {
                                free(w->dir[ev->wd]); /* the directory is gone */
                                w->dir[ev->wd] = NULL;
                                w->live--;
                                continue;
                        }
                        if (ev->len == 0 || ev->name[0] == '\0') {
                                /* The directory itself: its parent hears of it
                                 * too, by name; the top has no parent. */
                                if (dir[0] == '\0' && (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)))
                                        goto full;
                                continue;
                        }
                        if (dir[0] == '\0' && (prev->flags & WS_SNAPSHOT_ALL) == 0 && strcmp(ev->name, "input") == 0)
                                continue;
                        if (n == alloc) {
                                alloc = alloc ? alloc * 2 : 16;
                                char **nv = realloc(v, alloc * sizeof(*nv));
                                if (nv == NULL)
                                        goto full;
                                v = nv;
                        }
                        if ((v[n] = ws_path_join(dir, ev->name)) == NULL)
                                goto full;
                        n++;
                }
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), cmp_cstr_tree);
        size_t u = 0;
        for (size_t i = 0; i < n; i++) {
                if (u > 0 && strcmp(v[u - 1], v[i]) == 0)
                        free(v[i]);
                else
                        v[u++] = v[i];
        }
        *ret_n = u;
        return v ? v : calloc(1, sizeof(*v));
full:
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        *full = true;
        return NULL;
}

/* Open the parent directory of path beneath root (no symlinks); name is
 * set to the last component.  -1 when the parent is gone or not a plain
 * directory. */
static int open_parent(int root_fd, const char *path, const char **name)
{
        const char *slash = strrchr(path, '/');
        *name = slash ? slash + 1 : path;
        if (slash == NULL)
                return openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cleanup_free char *parent = strndup(path, (size_t)(slash - path));
        if (parent == NULL)
                return -1;
        return ws_open_beneath(root_fd, parent, O_RDONLY | O_DIRECTORY, 0, true);
}

static unsigned path_depth(const char *p)
{
        unsigned d = 1;
        for (; *p; p++)
                d += *p == '/';
        return d;
}

/* Build next from prev: prev's entries but the dropped ones, merged with
 * add's (sorted, disjoint from the kept ones).  Kept paths keep their
 * offsets: prev's arena is copied whole. */
static int merge(struct ws_snapshot *next, const struct ws_snapshot *prev, const bool *drop, size_t dropped_bytes,
                 const struct ws_snapshot *add)
{
        size_t kept = 0;
        for (size_t i = 0; i < prev->n; i++)
                kept += !drop[i];
        next->alloc = kept + add->n ? kept + add->n : 1;
        next->v = malloc(next->alloc * sizeof(*next->v));
        next->arena_alloc = prev->arena_len + add->arena_len + 1;
        next->arena = malloc(next->arena_alloc);
        if (next->v == NULL || next->arena == NULL)
                return -1;
        if (prev->arena_len)
                memcpy(next->arena, prev->arena, prev->arena_len);
        if (add->arena_len)
                memcpy(next->arena + prev->arena_len, add->arena, add->arena_len);
        next->arena_len = prev->arena_len + add->arena_len;
        next->garbage = prev->garbage + dropped_bytes;
        next->base_len = prev->arena_len;
        next->parent_id = prev->id;
        size_t i = 0, k = 0;
        while (i < prev->n || k < add->n) {
                if (i < prev->n && drop[i]) {
                        i++;
                        continue;
                }
                bool take_prev = k >= add->n ||
                                 (i < prev->n && cmp_tree(epath(prev, &prev->v[i]), prev->v[i].len,
                                                          epath(add, &add->v[k]), add->v[k].len) < 0);
                if (take_prev) {
                        next->v[next->n++] = prev->v[i++];
                } else {
                        struct ws_entry e = add->v[k++];
                        e.off += prev->arena_len;
                        next->v[next->n++] = e;
                }
        }
        return 0;
}

/* Rewrite an arena that is mostly garbage (paths of entries long gone). */
static int compact(struct ws_snapshot *s)
{
        size_t live = s->arena_len - s->garbage;
        char *a = malloc(live + 1);
        if (a == NULL)
                return -1;
        size_t o = 0;
        for (size_t i = 0; i < s->n; i++) {
                memcpy(a + o, s->arena + s->v[i].off, s->v[i].len + 1);
                s->v[i].off = o;
                o += s->v[i].len + 1;
        }
        free(s->arena);
        s->arena = a;
        s->arena_len = s->arena_alloc = o;
        s->garbage = 0;
        s->base_len = 0; /* offsets no longer name the parent's bytes */
        return 0;
}

/* 0 done, 1 a full walk is needed, -1 out of memory. */
static int update(int dirfd, struct ws_snapshot *prev, struct ws_snapshot *next)
{
        bool full;
        size_t n_dirty = 0;
        char **dirty = read_events(prev, &n_dirty, &full);
        if (dirty == NULL)
                return full ? 1 : -1;
        int r = 0;
        cleanup_free bool *drop = calloc(prev->n ? prev->n : 1, sizeof(bool));
        struct ws_snapshot *add = snapshot_new(prev->flags);
        size_t dropped_bytes = 0;
        struct walk w = { .s = add, .max_entries = WORKSPACE_MAX_ENTRIES, .skip_input = false };
        const char *covered = NULL; /* the last subtree walked whole */
        size_t covered_len = 0;
        if (drop == NULL || add == NULL) {
                r = -1;
                goto out;
        }
        /* add's new watches go to the lineage's inotify instance. */
        add->watch = prev->watch;
        for (size_t d = 0; d < n_dirty && r == 0; d++) {
                const char *p = dirty[d];
                size_t plen = strlen(p);
                if (covered && path_under(p, plen, covered, covered_len))
                        continue;
                size_t at = lower_bound(prev, p, plen);
                const struct ws_entry *old = NULL;
                if (at < prev->n && prev->v[at].len == plen && memcmp(epath(prev, &prev->v[at]), p, plen) == 0)
                        old = &prev->v[at];
                const char *name;
                struct stat st;
                int pfd = open_parent(dirfd, p, &name);
                bool exists = pfd >= 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
                bool same_dir = old && old->type == S_IFDIR && exists && S_ISDIR(st.st_mode) && st.st_ino == old->ino;
                /* A write through one name of a file with several links
                 * changes the others, which no event names: walk it all. */
                if ((exists && S_ISREG(st.st_mode) && st.st_nlink > 1) ||
                    (old && old->type == S_IFREG && old->nlink > 1))
                        r = 1;
                if (old && !drop[at]) {
                        drop[at] = true;
                        dropped_bytes += old->len + 1;
                        if (old->type == S_IFDIR && !same_dir) {
                                /* Its subtree goes; a directory there now is walked anew. */
                                for (size_t j = at + 1; j < prev->n && path_under(epath(prev, &prev->v[j]),
                                                                                    prev->v[j].len, p, plen);
                                     j++) {
                                        drop[j] = true;
                                        dropped_bytes += prev->v[j].len + 1;
                                }
                                watch_remove_under(prev->watch, p, plen);
                        }
                }
                if (exists) {
                        const char *slash = strrchr(p, '/');
                        size_t parent_len = slash ? (size_t)(slash - p) : 0;
                        size_t off;
                        w.entries = prev->n + add->n;
                        if (w.entries >= WORKSPACE_MAX_ENTRIES) {
                                r = 1;
                        } else if (arena_add(add, p, parent_len, name, strlen(name), &off) < 0 ||
                                   entry_add(add, off, plen, &st) < 0) {
                                r = -1;
                        } else if (S_ISDIR(st.st_mode) && !same_dir) {
                                int sub = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (sub >= 0) {
                                        w.entries = prev->n + add->n;
                                        if (path_depth(p) >= WORKSPACE_MAX_DEPTH)
                                                add->truncated = true;
                                        else if (walk_dir(&w, sub, p, plen, path_depth(p) + 1) < 0)
                                                r = -1;
                                        close(sub);
                                        covered = p;
                                        covered_len = plen;
                                }
                        }
                }
                if (pfd >= 0)
                        close(pfd);
                if (add->watch == NULL || add->truncated)
                        r = r ? r : 1; /* a watch failed or a limit was hit: walk it all */
        }
        if (r == 0)
                r = merge(next, prev, drop, dropped_bytes, add);
out:
        if (add) {
                /* The watch stays with prev until it is handed over. */
                if (add->watch == NULL && r >= 0)
                        r = 1;
                add->watch = NULL;
                ws_snapshot_free(add);
        }
        free(w.buf);
        for (size_t d = 0; d < n_dirty; d++)
                free(dirty[d]);
        free(dirty);
        return r;
}

int ws_snapshot_dir_next(int dirfd, unsigned flags, struct ws_snapshot *prev, struct ws_snapshot **ret,
                         corral_error **ret_err)
{
        if (prev == NULL || prev->watch == NULL || prev->truncated || prev->flags != flags)
                return ws_snapshot_dir(dirfd, flags, ret, ret_err);
        struct ws_snapshot *next = snapshot_new(flags);
        if (next == NULL)
                return corral_fail(ret_err, ENOMEM, "out of memory");
        int r = update(dirfd, prev, next);
        if (r == 0 && next->garbage > 65536 && next->garbage > next->arena_len / 2)
                r = compact(next);
        if (r != 0) {
                ws_snapshot_free(next);
                /* Events may be lost now: the lineage's watch is no good. */
                watch_free(prev->watch);
                prev->watch = NULL;
                if (r < 0)
                        return corral_fail(ret_err, ENOMEM, "out of memory");
                return ws_snapshot_dir(dirfd, flags, ret, ret_err);
        }
        next->watch = prev->watch; /* tracking moves to the newest snapshot */
        prev->watch = NULL;
        *ret = next;
        return 0;
}

int workspace_snapshot_next(struct workspace *ws, struct ws_snapshot *prev, struct ws_snapshot **ret,
                            corral_error **ret_err)
{
        if (ws_snapshot_dir_next(ws->root_fd, 0, prev, ret, ret_err) < 0)
                return corral_error_prefix(ret_err, "cannot snapshot the workspace '%s'", ws->root);
        return 0;
}

/* ---- the diff ---- */

static int add_change(json_t *out, const struct ws_snapshot *s, const struct ws_entry *e, const char *change)
{
        json_t *o = json_pack("{s:o, s:s, s:s, s:I}", "path", ws_json_path(epath(s, e)), "change", change, "type",
                              ws_type_name(e->type), "size", (json_int_t)e->size);
        return o ? json_array_append_new(out, o) : -1;
}

json_t *workspace_diff(const struct ws_snapshot *before, const struct ws_snapshot *after)
{
        static const struct ws_snapshot empty;
        if (before == NULL)
                before = &empty;
        if (after == NULL)
                after = &empty;
        json_t *out = json_array();
        if (out == NULL)
                return NULL;
        /* after made from before: an offset below base_len names the same
         * path in both, so equal offsets need no comparison. */
        bool lineage = after->parent_id != 0 && after->parent_id == before->id;
        size_t i = 0, j = 0;
        int r = 0;
        while (r == 0 && (i < before->n || j < after->n)) {
                const struct ws_entry *a = i < before->n ? &before->v[i] : NULL;
                const struct ws_entry *b = j < after->n ? &after->v[j] : NULL;
                int c;
                if (a == NULL)
                        c = 1;
                else if (b == NULL)
                        c = -1;
                else if (lineage && a->off == b->off && b->off < after->base_len)
                        c = 0;
                else
                        c = cmp_tree(epath(before, a), a->len, epath(after, b), b->len);
                if (c < 0) {
                        if (a->type != S_IFDIR)
                                r = add_change(out, before, a, "deleted");
                        i++;
                } else if (c > 0) {
                        if (b->type != S_IFDIR)
                                r = add_change(out, after, b, "created");
                        j++;
                } else {
                        /* A directory turned file (or back) is one entry
                         * created (or deleted): the diff lists no dirs. */
                        if (a->type == S_IFDIR && b->type != S_IFDIR)
                                r = add_change(out, after, b, "created");
                        else if (a->type != S_IFDIR && b->type == S_IFDIR)
                                r = add_change(out, before, a, "deleted");
                        else if (a->type != S_IFDIR && (a->type != b->type || a->size != b->size ||
                                                        a->mtime_ns != b->mtime_ns || a->ino != b->ino))
                                r = add_change(out, after, b, "modified");
                        i++;
                        j++;
                }
        }
        if (r < 0) {
                json_decref(out);
                return NULL;
        }
        return out;
}
