/* snapshot.c: what a step changed in the workspace.
 *
 * A snapshot is the lstat of every entry outside input/ (a bounded walk that
 * never follows a symlink); two of them, compared by path, give the files
 * created, modified and deleted.  Nothing is read but metadata.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "workspace-internal.h"

struct ws_entry {
        char *path;
        mode_t type; /* st_mode & S_IFMT */
        uint64_t size;
        int64_t mtime_ns;
        ino_t ino;
};

struct ws_snapshot {
        struct ws_entry *v;
        size_t n, alloc;
        bool truncated;
};

void ws_snapshot_free(struct ws_snapshot *s)
{
        if (s == NULL)
                return;
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].path);
        free(s->v);
        free(s);
}

bool ws_snapshot_truncated(const struct ws_snapshot *s)
{
        return s && s->truncated;
}

static int snapshot_visit(struct ws_walk *w, int dirfd, const char *name, const char *path, const struct stat *st,
                          unsigned depth)
{
        struct ws_snapshot *s = w->data;
        if (depth == 1 && strcmp(name, "input") == 0)
                return 0; /* staged inputs: read-only in every jail */
        if (s->n == s->alloc) {
                size_t want = s->alloc ? s->alloc * 2 : 256;
                struct ws_entry *v = realloc(s->v, want * sizeof(*v));
                if (v == NULL)
                        return -1;
                s->v = v;
                s->alloc = want;
        }
        char *p = strdup(path);
        if (p == NULL)
                return -1;
        s->v[s->n++] = (struct ws_entry){
                .path = p,
                .type = st->st_mode & S_IFMT,
                .size = (uint64_t)st->st_size,
                .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                .ino = st->st_ino,
        };
        return 1;
}

static int cmp_entries(const void *a, const void *b)
{
        return strcmp(((const struct ws_entry *)a)->path, ((const struct ws_entry *)b)->path);
}

int workspace_snapshot(struct workspace *ws, struct ws_snapshot **ret, corral_error **ret_err)
{
        struct ws_snapshot *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot snapshot the workspace");
        struct ws_walk w = {
                .max_depth = WORKSPACE_MAX_DEPTH,
                .max_entries = WORKSPACE_MAX_ENTRIES,
                .visit = snapshot_visit,
                .data = s,
        };
        if (ws_walk_run(&w, ws->root_fd, "") < 0) {
                ws_snapshot_free(s);
                return corral_fail(ret_err, ENOMEM, "cannot snapshot the workspace");
        }
        if (w.unreadable && s->n == 0 && w.entries == 0) {
                /* Not even the top could be read. */
                ws_snapshot_free(s);
                return corral_fail(ret_err, EACCES, "cannot read the workspace '%s'", ws->root);
        }
        s->truncated = w.truncated || w.depth_limited;
        qsort(s->v, s->n, sizeof(*s->v), cmp_entries);
        *ret = s;
        return 0;
}

static int add_change(json_t *out, const struct ws_entry *e, const char *change)
{
        json_t *o = json_pack("{s:o, s:s, s:s, s:I}", "path", ws_json_path(e->path), "change", change, "type",
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
        size_t i = 0, j = 0;
        int r = 0;
        while (r == 0 && (i < before->n || j < after->n)) {
                const struct ws_entry *a = i < before->n ? &before->v[i] : NULL;
                const struct ws_entry *b = j < after->n ? &after->v[j] : NULL;
                int c = a == NULL ? 1 : b == NULL ? -1 : strcmp(a->path, b->path);
                if (c < 0) {
                        if (a->type != S_IFDIR)
                                r = add_change(out, a, "deleted");
                        i++;
                } else if (c > 0) {
                        if (b->type != S_IFDIR)
                                r = add_change(out, b, "created");
                        j++;
                } else {
                        /* A directory turned file (or back) is one entry
                         * created (or deleted): the diff lists no dirs. */
                        if (a->type == S_IFDIR && b->type != S_IFDIR)
                                r = add_change(out, b, "created");
                        else if (a->type != S_IFDIR && b->type == S_IFDIR)
                                r = add_change(out, a, "deleted");
                        else if (a->type != S_IFDIR && (a->type != b->type || a->size != b->size ||
                                                        a->mtime_ns != b->mtime_ns || a->ino != b->ino))
                                r = add_change(out, b, "modified");
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
