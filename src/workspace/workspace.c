/* workspace.c: making a workspace directory and removing it.
 *
 * The directory is held by an fd for the whole run; everything else in this
 * module works relative to that fd.  Removal walks the tree by fds too (see
 * walk.c), never following a symlink a jail planted, and restores the
 * owner's access to directories a jail made unreadable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "workspace-internal.h"

/* Make dir (input/ or output/) in root_fd unless it is there, and make sure
 * what is there is a directory, not a symlink or a file. */
static int ensure_dir(struct workspace *ws, const char *name, corral_error **ret_err)
{
        if (mkdirat(ws->root_fd, name, 0755) < 0 && errno != EEXIST)
                return corral_fail(ret_err, errno, "cannot create '%s/%s'", ws->root, name);
        struct stat st;
        if (fstatat(ws->root_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return corral_fail(ret_err, errno, "cannot stat '%s/%s'", ws->root, name);
        if (!S_ISDIR(st.st_mode))
                return corral_usage(ret_err, "'%s/%s' is %s, not a directory: the workspace needs %s/ there", ws->root,
                                    name, ws_type_phrase(st.st_mode), name);
        return 0;
}

/* The directory temporary workspaces are made in: tmpdir, else $TMPDIR,
 * else /tmp. */
static const char *temp_parent(const char *tmpdir)
{
        if (tmpdir == NULL || tmpdir[0] != '/')
                tmpdir = getenv("TMPDIR");
        return tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp";
}

int workspace_make_temporary(const char *tmpdir, char **ret_path, int *ret_lock, corral_error **ret_err)
{
        const char *parent = temp_parent(tmpdir);
        cleanup_free char *templ = NULL;
        if (asprintf(&templ, "%s/" WS_TEMP_PREFIX "XXXXXX", parent) < 0)
                return corral_fail(ret_err, ENOMEM, "cannot allocate a workspace");
        if (mkdtemp(templ) == NULL) /* mode 0700 */
                return corral_fail(ret_err, errno, "cannot create a workspace directory in '%s'", parent);
        /* Held for the workspace's life: workspace_sweep() removes only
         * what nobody holds (a SIGKILLed corral's). */
        int fd = open(templ, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                (void)rmdir(templ);
                return corral_fail(ret_err, e, "cannot hold the workspace directory '%s'", templ);
        }
        char *real = realpath(templ, NULL);
        *ret_path = real ? real : TAKE_PTR(templ);
        *ret_lock = fd;
        return 0;
}

void workspace_sweep(const char *tmpdir)
{
        const char *parent = temp_parent(tmpdir);
        cleanup_close int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return;
        DIR *d = fdopendir(fcntl(pfd, F_DUPFD_CLOEXEC, 3));
        if (d == NULL)
                return;
        uid_t me = geteuid();
        struct dirent *e;
        unsigned seen = 0;
        while ((e = readdir(d)) != NULL && seen++ < 100000) {
                if (strncmp(e->d_name, WS_TEMP_PREFIX, strlen(WS_TEMP_PREFIX)) != 0)
                        continue;
                cleanup_close int fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                /* Ours, and held by nobody: its corral is gone. */
                if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != me || flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                (void)ws_remove_contents(fd);
                (void)unlinkat(pfd, e->d_name, AT_REMOVEDIR);
        }
        closedir(d);
}

int workspace_open(const char *dir, struct workspace **ret, corral_error **ret_err)
{
        struct workspace *ws = calloc(1, sizeof(*ws));
        if (ws == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot allocate a workspace");
        ws->root_fd = -1;
        if (dir == NULL) {
                int lock = -1;
                if (workspace_make_temporary(NULL, &ws->root, &lock, ret_err) < 0) {
                        free(ws);
                        return -1;
                }
                ws->created = true;
                ws->root_fd = lock; /* the held fd is the workspace's own */
        } else {
                struct stat st;
                if (stat(dir, &st) < 0) {
                        int e = errno;
                        free(ws);
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, e, "cannot use '%s' as the workspace", dir);
                }
                if (!S_ISDIR(st.st_mode)) {
                        free(ws);
                        return corral_usage(ret_err, "cannot use '%s' as the workspace: it is %s, not a directory", dir,
                                            ws_type_phrase(st.st_mode));
                }
                ws->root = realpath(dir, NULL);
                if (ws->root == NULL) {
                        int e = errno;
                        free(ws);
                        return corral_fail(ret_err, e, "cannot resolve '%s'", dir);
                }
        }
        if (ws->root_fd < 0)
                ws->root_fd = open(ws->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws->root_fd < 0) {
                int e = errno;
                workspace_close(ws, false);
                return corral_fail(ret_err, e, "cannot open the workspace '%s'", dir ? dir : "(new)");
        }
        if (ensure_dir(ws, "input", ret_err) < 0 || ensure_dir(ws, "output", ret_err) < 0) {
                workspace_close(ws, ws->created);
                return -1;
        }
        *ret = ws;
        return 0;
}

int workspace_attach(const char *dir, struct workspace **ret, corral_error **ret_err)
{
        struct workspace *ws = calloc(1, sizeof(*ws));
        if (ws == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot allocate a workspace");
        ws->open_inputs = true;
        ws->root = strdup(dir);
        ws->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ws->root == NULL || ws->root_fd < 0) {
                int e = ws->root ? errno : ENOMEM;
                workspace_close(ws, false);
                return corral_fail(ret_err, e, "cannot open the workspace '%s'", dir);
        }
        *ret = ws;
        return 0;
}

int workspace_attach_beneath(const char *parent, const char *name, struct workspace **ret, corral_error **ret_err)
{
        cleanup_close int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return corral_fail(ret_err, errno, "cannot open the workspace '%s'", parent);
        struct workspace *ws = calloc(1, sizeof(*ws));
        if (ws == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot allocate a workspace");
        ws->open_inputs = true;
        ws->root = ws_path_join(parent, name);
        ws->root_fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ws->root == NULL || ws->root_fd < 0) {
                int e = ws->root ? errno : ENOMEM;
                workspace_close(ws, false);
                return corral_fail(ret_err, e, "cannot open '%s' in the workspace '%s' (not a directory, or a link)",
                                   name, parent);
        }
        *ret = ws;
        return 0;
}

void workspace_close(struct workspace *ws, bool remove)
{
        if (ws == NULL)
                return;
        if (remove && ws->root_fd >= 0) {
                /* Code in a jail may have made /workspace itself 0000. */
                (void)ws_remove_contents(ws->root_fd);
                (void)rmdir(ws->root);
        }
        ws_staged_release(ws, !remove);
        if (ws->root_fd >= 0)
                close(ws->root_fd);
        free(ws->root);
        free(ws->frozen);
        free(ws);
}
