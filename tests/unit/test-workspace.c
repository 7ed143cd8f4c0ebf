/* test-workspace.c: the host side of /workspace (src/workspace/) against
 * hostile trees.
 *
 * Each case builds a temporary workspace and plants what code in a jail
 * could leave there, with plain libc calls: symlinks to /etc/shadow, to a
 * directory outside and climbing out with ../../, a hard link to a file
 * outside the workspace, a FIFO, a socket, directories with mode 0000, a
 * destination directory with a symlink where a file would go.  Then it checks
 * that the file tools, copy-out, staging and removal refuse or skip them and
 * leave the outside untouched.  The path-resolution cases run twice: with
 * openat2 and with the component walk used where openat2 is missing.
 * Everything lives under $TMPDIR (or /tmp): the "outside" files share the
 * workspace's filesystem, so hard links to them can be made. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/workspace/workspace.h"
#include "../../src/workspace/workspace-internal.h"
#include "../../src/workspace/dest.h"
#include "harness.h"

/* workspace_copy_out() to a path resolved as `corral run` resolves --out
 * (no directory a jail can write in these tests). */
static int copy_out_to(struct workspace *ws, const char *path, json_t **report, corral_error **err)
{
        struct ws_dest d;
        if (ws_dest_open(path, WS_DEST_DIR, "the output directory", NULL, &d, err) < 0)
                return -1;
        int r = workspace_copy_out(ws, &d, report, err);
        ws_dest_release(&d);
        return r;
}

/* Under UBSan the first report ends the test, so it fails it. */
__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* ---- helpers ---- */

/* A formatted path in one of a ring of static buffers (no frees needed). */
static const char *P(const char *fmt, ...) CORRAL_PRINTF(1, 2);
static const char *P(const char *fmt, ...)
{
        static char ring[32][4096];
        static unsigned next;
        char *b = ring[next++ % ARRAY_SIZE(ring)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b, sizeof(ring[0]), fmt, ap);
        va_end(ap);
        return b;
}

static void put(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
                printf("# cannot write %s: %s\n", path, strerror(errno));
                abort();
        }
        close(fd);
}

/* Contents of path (at most 64 KiB) in a static buffer, or NULL. */
static const char *get(const char *path)
{
        static char ring[4][65536];
        static unsigned next;
        char *b = ring[next++ % ARRAY_SIZE(ring)];
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        ssize_t n = read(fd, b, sizeof(ring[0]) - 1);
        close(fd);
        if (n < 0)
                return NULL;
        b[n] = '\0';
        return b;
}

static bool exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

static mode_t type_of(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0;
}

/* How many entries the directory has (-1 if it cannot be read). */
static int count_entries(const char *dir)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        struct ws_names names;
        int r = ws_names_read(fd, 1000, &names);
        close(fd);
        if (r < 0)
                return -1;
        int n = (int)names.n;
        ws_names_release(&names);
        return n;
}

/* Any name containing ".corral-" (a temporary file left behind) in dir? */
static bool has_temp(const char *dir)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct ws_names names;
        if (fd < 0 || ws_names_read(fd, 1000, &names) < 0) {
                if (fd >= 0)
                        close(fd);
                return false;
        }
        close(fd);
        bool found = false;
        for (size_t i = 0; i < names.n; i++)
                found |= strstr(names.v[i], ".corral-") != NULL;
        ws_names_release(&names);
        return found;
}

static void make_socket(const char *path)
{
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                printf("# cannot bind %s: %s\n", path, strerror(errno));
                abort();
        }
        close(s);
}

/* A directory outside any workspace, on the same filesystem. */
static char outside[4096];

static void outside_make(void)
{
        const char *tmp = getenv("TMPDIR");
        snprintf(outside, sizeof(outside), "%s/corral-test-outside-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
        if (mkdtemp(outside) == NULL)
                abort();
        chmod(outside, 0755);
        put(P("%s/secret", outside), "host secret\n");
        mkdir(P("%s/dir", outside), 0755);
        put(P("%s/dir/passwd", outside), "root:x:0:0\n");
}

static void outside_remove(void)
{
        ws_remove_at(AT_FDCWD, outside);
}

static struct workspace *ws_new(void)
{
        struct workspace *ws = NULL;
        corral_error *err = NULL;
        if (workspace_open(NULL, &ws, &err) < 0) {
                printf("# workspace_open: %s\n", err->msg);
                abort();
        }
        return ws;
}

/* In ws->root. */
#define W(fmt, ...) P("%s/" fmt, ws->root, ##__VA_ARGS__)

static bool msg_has(const corral_error *err, const char *sub)
{
        bool ok = err != NULL && strstr(err->msg, sub) != NULL;
        if (!ok)
                printf("#   error '%s' lacks '%s'\n", err ? err->msg : "(none)", sub);
        return ok;
}

/* call must fail (return -1) with an error containing sub; the error
 * goes to the caller's `corral_error *err`, cleared before and after. */
#define CHECK_FAILS(call, sub)                                                                                         \
        do {                                                                                                           \
                corral_error_clear(&err);                                                                              \
                int _r = (call);                                                                                       \
                CHECK(_r == -1 && msg_has(err, sub));                                                                  \
                corral_error_clear(&err);                                                                              \
        } while (0)

/* The file tools' read, for the common case. */
static int ws_read(struct workspace *ws, const char *path, size_t max, char **data, bool *trunc, corral_error **err)
{
        size_t len = 0;
        int r = workspace_read_file(ws, path, max, data, &len, trunc, err);
        if (r == 0 && len != strlen(*data))
                printf("#   length %zu differs from strlen\n", len);
        return r;
}

static char *dump(json_t *j)
{
        return json_dumps(j, JSON_COMPACT);
}

#define CHECK_JSON(j, want)                                                                                            \
        do {                                                                                                           \
                char *_s = dump(j);                                                                                    \
                CHECK_STR(_s, want);                                                                                   \
                free(_s);                                                                                              \
        } while (0)

/* ---- open and close ---- */

TEST(open_fresh)
{
        struct workspace *ws = ws_new();
        struct stat st;
        CHECK(ws->created);
        CHECK(ws->root[0] == '/');
        CHECK(strstr(ws->root, "/corral-ws-") != NULL);
        CHECK(stat(ws->root, &st) == 0 && (st.st_mode & 07777) == 0700);
        CHECK(type_of(W("input")) == S_IFDIR);
        CHECK(type_of(W("output")) == S_IFDIR);
        char *root = strdup(ws->root);
        workspace_close(ws, true);
        CHECK(!exists(root));
        free(root);
        workspace_close(NULL, true);
}

TEST(open_existing)
{
        struct workspace *ws = ws_new();
        char *root = strdup(ws->root);
        workspace_close(ws, false);
        CHECK(exists(root));
        rmdir(P("%s/output", root));
        put(P("%s/keep.txt", root), "kept\n");

        struct workspace *again = NULL;
        corral_error *err = NULL;
        CHECK_INT(workspace_open(root, &again, &err), 0);
        CHECK(again != NULL && !again->created && strcmp(again->root, root) == 0);
        CHECK(type_of(P("%s/output", root)) == S_IFDIR);
        CHECK_STR(get(P("%s/keep.txt", root)), "kept\n");
        workspace_close(again, false);

        /* output/ replaced by a symlink: refused, not followed. */
        rmdir(P("%s/output", root));
        symlink(outside, P("%s/output", root));
        again = NULL;
        CHECK_FAILS(workspace_open(root, &again, &err), "is a symbolic link, not a directory");
        CHECK(again == NULL);
        CHECK_FAILS(workspace_open(P("%s/keep.txt", root), &again, &err), "it is a regular file, not a directory");
        CHECK_FAILS(workspace_open(P("%s/missing", root), &again, &err), "No such file or directory");
        ws_remove_at(AT_FDCWD, root);
        CHECK(!exists(root));
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        free(root);
}

/* Plant what a jail could leave, with removal's obstacles, in a fresh
 * workspace, close it with remove, and say whether it is all gone.  No
 * CHECKs: a child running as another user calls it too. */
static bool plant_and_close(bool hard_link)
{
        struct workspace *ws = ws_new();
        char *root = strdup(ws->root);
        /* A locked directory with content, a locked directory inside a
         * locked one, an unwritable directory, an unreadable file. */
        mkdir_p(W("output/locked/inner"), 0755);
        put(W("output/locked/inner/f"), "x");
        put(W("output/locked/g"), "y");
        chmod(W("output/locked/inner"), 0);
        chmod(W("output/locked"), 0);
        mkdir(W("output/ro"), 0755);
        put(W("output/ro/f"), "z");
        chmod(W("output/ro"), 0555);
        put(W("output/nope"), "n");
        chmod(W("output/nope"), 0);
        /* Symlinks to outside, and a hard link to an outside file: removing
         * them must not touch what they point at. */
        symlink(outside, W("output/escape"));
        symlink(P("%s/secret", outside), W("output/secret-link"));
        if (hard_link && link(P("%s/secret", outside), W("output/hard")) < 0)
                abort();
        mkfifo(W("output/fifo"), 0644);
        /* Three times deeper than the removal recursion goes: it must move
         * subtrees up rather than hold an fd per level (the fd limit below
         * would stop it). */
        char deep[8192] = "";
        size_t n = (size_t)snprintf(deep, sizeof(deep), "%s/output/deep", ws->root);
        for (int i = 0; i < 3 * WORKSPACE_MAX_DEPTH && n + 3 < sizeof(deep); i++)
                n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/d");
        mkdir_p(deep, 0755);
        put(P("%s/bottom", deep), "b");
        chmod(P("%s/..", deep), 0);
        /* And /workspace itself made 0000. */
        chmod(ws->root, 0);
        struct rlimit old, low;
        getrlimit(RLIMIT_NOFILE, &old);
        low = old;
        if (low.rlim_cur > 256)
                low.rlim_cur = 256;
        setrlimit(RLIMIT_NOFILE, &low);
        workspace_close(ws, true);
        setrlimit(RLIMIT_NOFILE, &old);
        bool gone = !exists(root);
        free(root);
        return gone;
}

TEST(close_removes_hostile_tree)
{
        CHECK(plant_and_close(true));
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        CHECK_STR(get(P("%s/dir/passwd", outside)), "root:x:0:0\n");
        struct stat st;
        CHECK(stat(P("%s/secret", outside), &st) == 0 && st.st_nlink == 1);
        /* Root removes through mode 0000 without trying: the chmod path is
         * taken by an ordinary user, so run it again as one. */
        if (geteuid() == 0) {
                fflush(stdout);
                pid_t pid = fork();
                if (pid == 0) {
                        setenv("TMPDIR", "/tmp", 1);
                        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                            setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        _exit(plant_and_close(false) ? 0 : 1);
                }
                int status = 0;
                CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        printf("#   as uid 65534: status %#x\n", status);
        } else {
                printf("ok %d # SKIP already an ordinary user\nok %d # SKIP\n", harness_n + 1, harness_n + 2);
                harness_n += 2;
        }
}

/* ---- paths ---- */

static void check_norm(const char *in, bool allow_root, const char *want)
{
        char *out = NULL;
        corral_error *err = NULL;
        int r = ws_path_normalize(in, allow_root, &out, &err);
        if (want == NULL) {
                CHECK(r == -1 && err != NULL && err->kind == CORRAL_ERR_USAGE);
        } else {
                CHECK(r == 0);
                CHECK_STR(out, want);
        }
        free(out);
        corral_error_free(err);
}

TEST(normalize)
{
        check_norm("output/a.txt", false, "output/a.txt");
        check_norm("./a", false, "a");
        check_norm("/workspace/output/a.txt", false, "output/a.txt");
        check_norm("/workspace//output//./a.txt/", false, "output/a.txt");
        check_norm("/workspace", true, "");
        check_norm(".", true, "");
        check_norm("", true, "");
        check_norm("", false, NULL);
        check_norm(NULL, false, NULL);
        check_norm(".", false, NULL);
        check_norm("/workspace", false, NULL);
        check_norm("/etc/passwd", false, NULL);
        check_norm("/workspacex/a", false, NULL);
        check_norm("..", false, NULL);
        check_norm("output/../../etc/passwd", false, NULL);
        check_norm("/workspace/../etc/passwd", false, NULL);
        check_norm("a/..", true, NULL);
        check_norm("..a/b..", false, "..a/b..");
        char *err_out = NULL;
        corral_error *err = NULL;
        CHECK_FAILS(ws_path_normalize("/etc/passwd", false, &err_out, &err),
                    "'/etc/passwd' is outside the workspace: use a path relative to /workspace");
        CHECK_FAILS(ws_path_normalize("output/../x", false, &err_out, &err),
                    "'output/../x' contains '..': paths must stay inside the workspace");
        CHECK_FAILS(ws_path_normalize("", false, &err_out, &err), "the path is empty");
        CHECK(err_out == NULL);
}

/* Plant the hostile set in a fresh workspace. */
static struct workspace *ws_hostile(void)
{
        struct workspace *ws = ws_new();
        put(W("output/a.txt"), "hello\n");
        mkdir(W("output/sub"), 0755);
        put(W("output/sub/b.txt"), "bee\n");
        symlink("/etc/shadow", W("output/shadow"));
        symlink(outside, W("output/escape"));
        symlink("../../etc/passwd", W("output/up"));
        symlink(P("%s/secret", outside), W("output/secret"));
        symlink("sub/b.txt", W("output/inside"));     /* stays in the tree */
        symlink("../output/sub", W("output/subdir")); /* output/subdir -> output/sub */
        symlink("loop2", W("output/loop1"));
        symlink("loop1", W("output/loop2"));
        if (link(P("%s/secret", outside), W("output/hard")) < 0)
                printf("# link: %s\n", strerror(errno));
        mkfifo(W("output/fifo"), 0644);
        make_socket(W("output/sock"));
        return ws;
}

/* ws_walk_open directly: the fallback's own rules. */
TEST(walk_open)
{
        struct workspace *ws = ws_hostile();
        int fd = ws_walk_open(ws->root_fd, "output/a.txt", O_RDONLY, 0, false);
        CHECK(fd >= 0);
        char buf[16] = "";
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 6);
        CHECK_STR(buf, "hello\n");
        if (fd >= 0)
                close(fd);
        fd = ws_walk_open(ws->root_fd, "output/inside", O_RDONLY, 0, false);
        memset(buf, 0, sizeof(buf));
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 4);
        CHECK_STR(buf, "bee\n");
        if (fd >= 0)
                close(fd);
        fd = ws_walk_open(ws->root_fd, "output/subdir/../a.txt", O_RDONLY, 0, false);
        CHECK(fd >= 0); /* ".." after a symlink pops to output/ (the link's parent), like the kernel */
        if (fd >= 0)
                close(fd);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/shadow", O_RDONLY, 0, false) == -1 && errno == EXDEV);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/escape/secret", O_RDONLY, 0, false) == -1 && errno == EXDEV);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/up", O_RDONLY, 0, false) == -1 && errno == EXDEV);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/../..", O_RDONLY, 0, false) == -1 && errno == EXDEV);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/loop1", O_RDONLY, 0, false) == -1 && errno == ELOOP);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/inside", O_RDONLY, 0, true) == -1 && errno == ELOOP);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/inside", O_RDONLY | O_NOFOLLOW, 0, false) == -1 && errno == ELOOP);
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/nothere", O_RDONLY, 0, false) == -1 && errno == ENOENT);
        fd = ws_walk_open(ws->root_fd, "output/sub/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600, false);
        CHECK(fd >= 0);
        if (fd >= 0)
                close(fd);
        CHECK(type_of(W("output/sub/new.txt")) == S_IFREG);
        /* O_CREAT through a dangling symlink that would leave the tree. */
        symlink(P("%s/created-by-walk", outside), W("output/dangling"));
        errno = 0;
        CHECK(ws_walk_open(ws->root_fd, "output/dangling", O_WRONLY | O_CREAT, 0600, false) == -1 && errno == EXDEV);
        CHECK(!exists(P("%s/created-by-walk", outside)));
        fd = ws_walk_open(ws->root_fd, "", O_RDONLY | O_DIRECTORY, 0, false);
        struct stat a, b;
        CHECK(fd >= 0 && fstat(fd, &a) == 0 && fstat(ws->root_fd, &b) == 0 && a.st_ino == b.st_ino);
        if (fd >= 0)
                close(fd);
        workspace_close(ws, true);
}

/* read_file over the hostile set (run with openat2 and with the walk). */
static void read_cases(void)
{
        struct workspace *ws = ws_hostile();
        char *data = NULL;
        bool trunc = true;
        corral_error *err = NULL;
        CHECK_INT(ws_read(ws, "output/a.txt", 100, &data, &trunc, &err), 0);
        CHECK_STR(data, "hello\n");
        CHECK(!trunc);
        free(data);
        CHECK_INT(ws_read(ws, "/workspace/output/a.txt", 6, &data, &trunc, &err), 0);
        CHECK_STR(data, "hello\n");
        CHECK(!trunc);
        free(data);
        CHECK_INT(ws_read(ws, "./output//a.txt", 3, &data, &trunc, &err), 0);
        CHECK_STR(data, "hel");
        CHECK(trunc);
        free(data);
        CHECK_INT(ws_read(ws, "output/a.txt", 0, &data, &trunc, &err), 0);
        CHECK_STR(data, "");
        CHECK(trunc);
        free(data);
        /* Symlinks that stay inside are followed. */
        CHECK_INT(ws_read(ws, "output/inside", 100, &data, &trunc, &err), 0);
        CHECK_STR(data, "bee\n");
        free(data);
        CHECK_INT(ws_read(ws, "output/subdir/b.txt", 100, &data, &trunc, &err), 0);
        CHECK_STR(data, "bee\n");
        free(data);
        data = NULL;

        CHECK_FAILS(ws_read(ws, "output/shadow", 100, &data, &trunc, &err),
                    "cannot read 'output/shadow': it leads outside the workspace ('output/shadow' is a symbolic "
                    "link to '/etc/shadow')");
        CHECK_FAILS(ws_read(ws, "output/secret", 100, &data, &trunc, &err), "it leads outside the workspace");
        CHECK_FAILS(ws_read(ws, "output/escape/secret", 100, &data, &trunc, &err),
                    "('output/escape' is a symbolic link to '");
        CHECK_FAILS(ws_read(ws, "/workspace/output/escape/dir/passwd", 100, &data, &trunc, &err),
                    "leads outside the workspace");
        CHECK_FAILS(ws_read(ws, "output/up", 100, &data, &trunc, &err),
                    "('output/up' is a symbolic link to '../../etc/passwd')");
        CHECK_FAILS(ws_read(ws, "output/loop1", 100, &data, &trunc, &err), "too many levels of symbolic links");
        CHECK_FAILS(ws_read(ws, "output/hard", 100, &data, &trunc, &err),
                    "cannot read 'output/hard': it has 2 hard links");
        CHECK_FAILS(ws_read(ws, "output/sock", 100, &data, &trunc, &err),
                    "cannot read 'output/sock': it is a socket, not a regular file");
        CHECK_FAILS(ws_read(ws, "output/sub", 100, &data, &trunc, &err), "it is a directory, not a regular file");
        CHECK_FAILS(ws_read(ws, "/workspace", 100, &data, &trunc, &err), "names the workspace directory itself");
        CHECK_FAILS(ws_read(ws, "output/missing.txt", 100, &data, &trunc, &err),
                    "cannot read 'output/missing.txt': No such file or directory");
        CHECK_FAILS(ws_read(ws, "output/a.txt/x", 100, &data, &trunc, &err), "is not a directory");
        CHECK_FAILS(ws_read(ws, "../etc/passwd", 100, &data, &trunc, &err), "contains '..'");
        CHECK_FAILS(ws_read(ws, "/etc/passwd", 100, &data, &trunc, &err), "is outside the workspace");
        CHECK_FAILS(ws_read(ws, "", 100, &data, &trunc, &err), "the path is empty");
        /* A FIFO must fail at once: a regression hangs here, and the alarm
         * then kills (fails) the test instead. */
        alarm(5);
        CHECK_FAILS(ws_read(ws, "output/fifo", 100, &data, &trunc, &err),
                    "cannot read 'output/fifo': it is a FIFO, not a regular file");
        alarm(0);
        CHECK(data == NULL);
        workspace_close(ws, true);
}

TEST(read_openat2)
{
        ws_force_walk(false);
        read_cases();
}

TEST(read_walk)
{
        ws_force_walk(true);
        read_cases();
        ws_force_walk(false);
}

static void write_cases(void)
{
        struct workspace *ws = ws_hostile();
        corral_error *err = NULL;
        CHECK_INT(workspace_write_file(ws, "output/new/deep/x.txt", "one\n", 4, &err), 0);
        CHECK_STR(get(W("output/new/deep/x.txt")), "one\n");
        struct stat st;
        CHECK(stat(W("output/new/deep/x.txt"), &st) == 0 && (st.st_mode & 0777) == 0644);
        CHECK(stat(W("output/new/deep"), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK_INT(workspace_write_file(ws, "/workspace/top.txt", "top", 3, &err), 0);
        CHECK_STR(get(W("top.txt")), "top");
        /* Replacing is atomic: a reader holding the old file keeps reading
         * the old content, and the new file is a new inode. */
        struct stat before;
        CHECK(stat(W("output/a.txt"), &before) == 0);
        chmod(W("output/a.txt"), 0755);
        int old = open(W("output/a.txt"), O_RDONLY | O_CLOEXEC);
        CHECK_INT(workspace_write_file(ws, "output/a.txt", "replaced\n", 9, &err), 0);
        char buf[32] = "";
        CHECK(old >= 0 && pread(old, buf, sizeof(buf) - 1, 0) == 6);
        CHECK_STR(buf, "hello\n");
        if (old >= 0)
                close(old);
        CHECK_STR(get(W("output/a.txt")), "replaced\n");
        CHECK(stat(W("output/a.txt"), &st) == 0 && st.st_ino != before.st_ino && (st.st_mode & 0777) == 0755);
        CHECK_INT(workspace_write_file(ws, "output/empty", "", 0, &err), 0);
        CHECK_STR(get(W("output/empty")), "");
        /* Through an in-tree symlinked directory. */
        CHECK_INT(workspace_write_file(ws, "output/subdir/c.txt", "sea", 3, &err), 0);
        CHECK_STR(get(W("output/sub/c.txt")), "sea");
        CHECK(!has_temp(W("output")) && !has_temp(W("output/sub")) && !has_temp(W("output/new/deep")));

        CHECK_FAILS(workspace_write_file(ws, "input/x.csv", "x", 1, &err),
                    "cannot write 'input/x.csv': input/ is read-only");
        CHECK_FAILS(workspace_write_file(ws, "/workspace/input/x.csv", "x", 1, &err), "input/ is read-only");
        CHECK_FAILS(workspace_write_file(ws, "./input", "x", 1, &err), "input/ is read-only");
        symlink("../input", W("output/in"));
        CHECK_FAILS(workspace_write_file(ws, "output/in/x.csv", "x", 1, &err),
                    "it leads into input/, which is read-only");
        CHECK(!exists(W("input/x.csv")));
        /* Never through a symlink at the last component. */
        CHECK_FAILS(workspace_write_file(ws, "output/secret", "pwned", 5, &err),
                    "cannot write 'output/secret': it is a symbolic link, not a regular file");
        CHECK_FAILS(workspace_write_file(ws, "output/inside", "pwned", 5, &err), "it is a symbolic link");
        CHECK_STR(get(W("output/sub/b.txt")), "bee\n");
        CHECK_FAILS(workspace_write_file(ws, "output/escape/new", "pwned", 5, &err), "leads outside the workspace");
        CHECK_FAILS(workspace_write_file(ws, "output/escape/x/y/z", "pwned", 5, &err), "leads outside the workspace");
        CHECK_FAILS(workspace_write_file(ws, "output/up/x", "pwned", 5, &err), "leads outside the workspace");
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        CHECK_INT(count_entries(outside), 2);
        CHECK_FAILS(workspace_write_file(ws, "output/fifo", "x", 1, &err), "it is a FIFO, not a regular file");
        CHECK_FAILS(workspace_write_file(ws, "output/sock", "x", 1, &err), "it is a socket, not a regular file");
        CHECK_FAILS(workspace_write_file(ws, "output/sub", "x", 1, &err), "it is a directory, not a regular file");
        CHECK_FAILS(workspace_write_file(ws, "output/a.txt/x", "x", 1, &err), "is not a directory");
        CHECK_FAILS(workspace_write_file(ws, "../x", "x", 1, &err), "contains '..'");
        CHECK_FAILS(workspace_write_file(ws, "/tmp/x", "x", 1, &err), "is outside the workspace");
        CHECK_FAILS(workspace_write_file(ws, "/workspace/", "x", 1, &err), "names the workspace directory itself");
        /* A hard link is replaced, not written through. */
        CHECK_INT(workspace_write_file(ws, "output/hard", "mine", 4, &err), 0);
        CHECK_STR(get(W("output/hard")), "mine");
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        CHECK(!has_temp(W("output")));
        /* A frozen directory (the test-driven mode's tests/): read-only by
         * name and through a symlink, to every writing call; open again
         * when thawed. */
        CHECK_INT(workspace_make_dir(ws, "tests", &err), 0);
        CHECK_INT(workspace_write_file(ws, "tests/test_a.py", "a", 1, &err), 0);
        CHECK_INT(workspace_freeze_dir(ws, "tests", &err), 0);
        CHECK_FAILS(workspace_write_file(ws, "tests/test_a.py", "b", 1, &err),
                    "cannot write 'tests/test_a.py': tests/ is read-only now (frozen)");
        CHECK_FAILS(workspace_write_file(ws, "/workspace/./tests/new.py", "b", 1, &err), "tests/ is read-only");
        CHECK_FAILS(workspace_remove_file(ws, "tests/test_a.py", &err), "cannot remove 'tests/test_a.py'");
        CHECK_FAILS(workspace_rename(ws, "tests", "gone", &err), "cannot move 'tests'");
        CHECK_FAILS(workspace_make_dir(ws, "tests/sub", &err), "tests/ is read-only");
        symlink("../tests", W("output/t"));
        CHECK_FAILS(workspace_write_file(ws, "output/t/test_a.py", "b", 1, &err),
                    "it leads into tests/, which is read-only");
        CHECK_STR(get(W("tests/test_a.py")), "a");
        CHECK_INT(workspace_freeze_dir(ws, NULL, &err), 0);
        CHECK_INT(workspace_write_file(ws, "output/t/test_a.py", "c", 1, &err), 0);
        CHECK_STR(get(W("tests/test_a.py")), "c");
        workspace_close(ws, true);
}

TEST(write_openat2)
{
        ws_force_walk(false);
        write_cases();
}

TEST(write_walk)
{
        ws_force_walk(true);
        write_cases();
        ws_force_walk(false);
}

/* A listing without each entry's mode and mtime (checked on their own
 * below): what the comparisons with fixed text look at. */
static json_t *without_stat(json_t *list)
{
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                json_object_del(e, "mode");
                json_object_del(e, "mtime");
        }
        return list;
}

static void list_cases(void)
{
        struct workspace *ws = ws_new();
        put(W("input/in.csv"), "a,b\n");
        mkdir_p(W("output/b/c"), 0755);
        put(W("output/a.txt"), "12345");
        put(W("output/b/c/deep.txt"), "x");
        put(W("output/b/z.txt"), "zz");
        symlink(outside, W("output/escape"));
        mkfifo(W("output/fifo"), 0644);
        json_t *j = NULL;
        corral_error *err = NULL;
        CHECK_INT(workspace_list_files(ws, "output", 0, 0, &j, &err), 0);
        without_stat(j);
        char *link = NULL;
        if (asprintf(&link, "{\"path\":\"output/escape\",\"type\":\"symlink\",\"size\":%zu,\"target\":\"%s\"}",
                     strlen(outside), outside) < 0)
                abort();
        char *want = NULL;
        if (asprintf(&want,
                     "[{\"path\":\"output/a.txt\",\"type\":\"file\",\"size\":5},"
                     "{\"path\":\"output/b\",\"type\":\"dir\"},"
                     "{\"path\":\"output/b/c\",\"type\":\"dir\"},"
                     "{\"path\":\"output/b/c/deep.txt\",\"type\":\"file\",\"size\":1},"
                     "{\"path\":\"output/b/z.txt\",\"type\":\"file\",\"size\":2},"
                     "%s,"
                     "{\"path\":\"output/fifo\",\"type\":\"fifo\",\"size\":0}]",
                     link) < 0)
                abort();
        CHECK_JSON(j, want);
        free(want);
        json_decref(j);
        /* "/workspace/..." and "." forms; depth 1; the whole tree. */
        CHECK_INT(workspace_list_files(ws, "/workspace/output/b", 1, 0, &j, &err), 0);
        without_stat(j);
        CHECK_JSON(j, "[{\"path\":\"output/b/c\",\"type\":\"dir\"},"
                      "{\"path\":\"output/b/z.txt\",\"type\":\"file\",\"size\":2}]");
        json_decref(j);
        CHECK_INT(workspace_list_files(ws, ".", 1, 0, &j, &err), 0);
        without_stat(j);
        CHECK_JSON(j, "[{\"path\":\"input\",\"type\":\"dir\"},{\"path\":\"output\",\"type\":\"dir\"}]");
        json_decref(j);
        CHECK_INT(workspace_list_files(ws, "", 0, 0, &j, &err), 0);
        without_stat(j);
        CHECK_INT(json_array_size(j), 10);
        CHECK_STR(json_string_value(json_object_get(json_array_get(j, 1), "path")), "input/in.csv");
        json_decref(j);
        /* Truncation: max_entries, then {"truncated":true}. */
        CHECK_INT(workspace_list_files(ws, "output", 0, 3, &j, &err), 0);
        without_stat(j);
        CHECK_JSON(j, "[{\"path\":\"output/a.txt\",\"type\":\"file\",\"size\":5},"
                      "{\"path\":\"output/b\",\"type\":\"dir\"},"
                      "{\"path\":\"output/b/c\",\"type\":\"dir\"},"
                      "{\"truncated\":true}]");
        json_decref(j);
        /* Exactly as many entries as allowed: no marker. */
        CHECK_INT(workspace_list_files(ws, "output/b", 0, 3, &j, &err), 0);
        without_stat(j);
        CHECK_INT(json_array_size(j), 3);
        CHECK(json_object_get(json_array_get(j, 2), "truncated") == NULL);
        json_decref(j);
        CHECK_INT(workspace_list_files(ws, "output/a.txt", 0, 0, &j, &err), 0);
        /* Each entry's permission bits and modification time. */
        struct stat st;
        CHECK_INT(stat(W("output/a.txt"), &st), 0);
        CHECK_INT(json_integer_value(json_object_get(json_array_get(j, 0), "mode")), (json_int_t)(st.st_mode & 07777));
        CHECK(fabs(json_number_value(json_object_get(json_array_get(j, 0), "mtime")) -
                   ((double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9)) < 1e-3);
        without_stat(j);
        CHECK_JSON(j, "[{\"path\":\"output/a.txt\",\"type\":\"file\",\"size\":5}]");
        json_decref(j);
        j = NULL;
        CHECK_FAILS(workspace_list_files(ws, "output/escape", 0, 0, &j, &err),
                    "cannot list 'output/escape': it leads outside the workspace");
        CHECK_FAILS(workspace_list_files(ws, "..", 0, 0, &j, &err), "contains '..'");
        CHECK_FAILS(workspace_list_files(ws, "/etc", 0, 0, &j, &err), "is outside the workspace");
        CHECK_FAILS(workspace_list_files(ws, "output/none", 0, 0, &j, &err), "No such file or directory");
        CHECK(j == NULL);
        free(link);
        workspace_close(ws, true);
}

TEST(list_openat2)
{
        ws_force_walk(false);
        list_cases();
}

TEST(list_walk)
{
        ws_force_walk(true);
        list_cases();
        ws_force_walk(false);
}

/* ---- snapshot and diff ---- */

static void set_mtime(const char *path, time_t sec)
{
        struct timespec ts[2] = { { .tv_sec = sec }, { .tv_sec = sec } };
        utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

TEST(snapshot_diff)
{
        struct workspace *ws = ws_new();
        put(W("input/data.csv"), "a\n");
        put(W("output/same.txt"), "same");
        put(W("output/grow.txt"), "1");
        put(W("output/touch.txt"), "t");
        set_mtime(W("output/touch.txt"), 1000000);
        put(W("output/gone.txt"), "bye");
        put(W("output/tolink"), "l");
        put(W("output/todir"), "d");
        mkdir(W("output/dir"), 0755);
        mkdir(W("output/wasdir"), 0755);
        struct ws_snapshot *a = NULL, *b = NULL;
        corral_error *err = NULL;
        CHECK_INT(workspace_snapshot(ws, &a, &err), 0);
        CHECK(!ws_snapshot_truncated(a));

        put(W("output/grow.txt"), "12");           /* modified: size */
        set_mtime(W("output/touch.txt"), 2000000); /* modified: mtime only */
        unlink(W("output/gone.txt"));              /* deleted */
        put(W("output/dir/new.txt"), "new!");      /* created */
        unlink(W("output/tolink"));
        symlink("same.txt", W("output/tolink")); /* type change */
        unlink(W("output/todir"));
        mkdir(W("output/todir"), 0755); /* file -> dir: deleted */
        rmdir(W("output/wasdir"));
        put(W("output/wasdir"), "f");          /* dir -> file: created */
        mkdir(W("output/emptydir"), 0755);     /* directories are not listed */
        put(W("input/data.csv"), "changed\n"); /* input/ is not watched */
        put(W("input/new.csv"), "n\n");
        CHECK_INT(workspace_snapshot(ws, &b, &err), 0);
        json_t *d = workspace_diff(a, b);
        CHECK_JSON(d, "[{\"path\":\"output/dir/new.txt\",\"change\":\"created\",\"type\":\"file\",\"size\":4},"
                      "{\"path\":\"output/gone.txt\",\"change\":\"deleted\",\"type\":\"file\",\"size\":3},"
                      "{\"path\":\"output/grow.txt\",\"change\":\"modified\",\"type\":\"file\",\"size\":2},"
                      "{\"path\":\"output/todir\",\"change\":\"deleted\",\"type\":\"file\",\"size\":1},"
                      "{\"path\":\"output/tolink\",\"change\":\"modified\",\"type\":\"symlink\",\"size\":8},"
                      "{\"path\":\"output/touch.txt\",\"change\":\"modified\",\"type\":\"file\",\"size\":1},"
                      "{\"path\":\"output/wasdir\",\"change\":\"created\",\"type\":\"file\",\"size\":1}]");
        json_decref(d);
        /* Same snapshot: nothing; from nothing: everything non-dir. */
        d = workspace_diff(b, b);
        CHECK_JSON(d, "[]");
        json_decref(d);
        d = workspace_diff(NULL, a);
        CHECK_INT(json_array_size(d), 6);
        json_decref(d);
        /* Replaced by a new inode with the same size and mtime. */
        struct ws_snapshot *c = NULL;
        struct stat st;
        stat(W("output/same.txt"), &st);
        put(W("output/same.new"), "SAME");
        struct timespec ts[2] = { st.st_mtim, st.st_mtim };
        utimensat(AT_FDCWD, W("output/same.new"), ts, 0);
        rename(W("output/same.new"), W("output/same.txt"));
        CHECK_INT(workspace_snapshot(ws, &c, &err), 0);
        d = workspace_diff(b, c);
        CHECK_JSON(d, "[{\"path\":\"output/same.txt\",\"change\":\"modified\",\"type\":\"file\",\"size\":4}]");
        json_decref(d);
        ws_snapshot_free(a);
        ws_snapshot_free(b);
        ws_snapshot_free(c);
        ws_snapshot_free(NULL);
        workspace_close(ws, true);
}

TEST(snapshot_truncated)
{
        struct workspace *ws = ws_new();
        char deep[8192] = "";
        size_t n = (size_t)snprintf(deep, sizeof(deep), "%s/output", ws->root);
        for (int i = 0; i < WORKSPACE_MAX_DEPTH + 2; i++)
                n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/d");
        mkdir_p(deep, 0755);
        struct ws_snapshot *s = NULL;
        corral_error *err = NULL;
        CHECK_INT(workspace_snapshot(ws, &s, &err), 0);
        CHECK(ws_snapshot_truncated(s));
        ws_snapshot_free(s);
        workspace_close(ws, true);
}

/* ---- copy-out ---- */

static bool report_has(json_t *report, const char *list, const char *path, const char *reason_part)
{
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(report, list), i, e)
        {
                if (strcmp(json_string_value(json_object_get(e, "path")), path) != 0)
                        continue;
                if (reason_part == NULL)
                        return true;
                const char *reason = json_string_value(json_object_get(e, "reason"));
                if (reason && strstr(reason, reason_part))
                        return true;
                printf("#   %s: reason '%s' lacks '%s'\n", path, reason ? reason : "(none)", reason_part);
                return false;
        }
        printf("#   %s not in %s\n", path, list);
        return false;
}

/* Destinations (dest.h): links are followed outside the directories a jail
 * can write and refused inside them; a destination inside one is refused;
 * what is missing is made only by ws_dest_dir(), beneath the fd, even when
 * a link is planted in between. */
TEST(dest)
{
        corral_error *err = NULL;
        cleanup_free char *top = strdup(P("%s/dest", outside)); /* P() is a ring: keep our own */
        mkdir(top, 0755);
        mkdir(P("%s/ws", top), 0755);
        mkdir(P("%s/real", top), 0755);
        mkdir(P("%s/canary", top), 0755);
        symlink(P("%s/real", top), P("%s/mine", top));        /* the user's link: followed */
        symlink(P("%s/canary", top), P("%s/ws/planted", top)); /* a jail's: refused */
        put(P("%s/afile", top), "f");
        struct ws_roots roots = { 0 };
        CHECK_INT(ws_roots_add(&roots, P("%s/ws", top), "the workspace", &err), 0);
        CHECK_INT(ws_roots_add(&roots, P("%s/no-such", top), "a bind", &err), 0);
        CHECK_INT(roots.n, 1);
        struct ws_dest d;

        CHECK_INT(ws_dest_open(P("%s/mine/a/b", top), WS_DEST_DIR, "the output directory", &roots, &d, &err), 0);
        CHECK_STR(d.missing, "a/b");
        CHECK(d.name == NULL);
        int fd = ws_dest_dir(&d, 0750, &err);
        CHECK(fd >= 0);
        close(fd);
        CHECK(type_of(P("%s/real/a/b", top)) == S_IFDIR);
        ws_dest_release(&d);
        /* complete, then a file in it */
        CHECK_INT(ws_dest_open(P("%s/mine/a/b/", top), WS_DEST_DIR, "x", &roots, &d, &err), 0);
        CHECK(d.missing == NULL);
        ws_dest_release(&d);
        CHECK_INT(ws_dest_open(P("%s/real/a/f.tar", top), WS_DEST_FILE, "the archive", &roots, &d, &err), 0);
        CHECK_STR(d.name, "f.tar");
        CHECK_INT(ws_dest_write(&d, "tar", 3, 0600, &err), 0);
        CHECK_STR(get(P("%s/real/a/f.tar", top)), "tar");
        ws_dest_release(&d);

        CHECK_FAILS(ws_dest_open(P("%s/ws/planted/x", top), WS_DEST_DIR, "the output directory", &roots, &d, &err),
                    "leads through the symbolic link 'planted' in the workspace");
        CHECK_FAILS(ws_dest_open(P("%s/ws/new", top), WS_DEST_DIR, "the output directory", &roots, &d, &err),
                    "lies inside the workspace");
        CHECK_FAILS(ws_dest_open(P("%s/ws", top), WS_DEST_DIR, "the output directory", &roots, &d, &err),
                    "lies inside the workspace");
        CHECK_FAILS(ws_dest_open(P("%s/ws/x.tar", top), WS_DEST_FILE, "the archive", &roots, &d, &err),
                    "lies inside the workspace");
        /* reached through a link outside, or through "..": the same directory */
        symlink(P("%s/ws", top), P("%s/to-ws", top));
        CHECK_FAILS(ws_dest_open(P("%s/to-ws/o", top), WS_DEST_DIR, "x", &roots, &d, &err), "lies inside");
        CHECK_FAILS(ws_dest_open(P("%s/real/../ws/o", top), WS_DEST_DIR, "x", &roots, &d, &err), "lies inside");
        /* out of it through "..": fine */
        CHECK_INT(ws_dest_open(P("%s/ws/../real/z", top), WS_DEST_DIR, "x", &roots, &d, &err), 0);
        ws_dest_release(&d);
        CHECK_FAILS(ws_dest_open(P("%s/afile/x", top), WS_DEST_DIR, "the output directory", NULL, &d, &err),
                    "'afile' is a regular file, not a directory");
        CHECK_FAILS(ws_dest_open(P("%s/afile", top), WS_DEST_DIR, "the output directory", NULL, &d, &err),
                    "is a regular file, not a directory");
        CHECK_FAILS(ws_dest_open(P("%s/real", top), WS_DEST_FILE, "the archive", NULL, &d, &err), "is a directory");
        CHECK_FAILS(ws_dest_open(P("%s/real/", top), WS_DEST_FILE, "the archive", NULL, &d, &err),
                    "names a directory");
        CHECK_FAILS(ws_dest_open(P("%s/real/nope/../x", top), WS_DEST_DIR, "x", NULL, &d, &err), "does not exist");
        CHECK_FAILS(ws_dest_open("", WS_DEST_DIR, "the output directory", NULL, &d, &err), "is an empty path");
        symlink("loop", P("%s/loop", top));
        CHECK_FAILS(ws_dest_open(P("%s/loop/x", top), WS_DEST_DIR, "x", NULL, &d, &err), "too many levels");

        /* Resolved, then a link planted where a missing directory goes: the
         * directory is made beneath the fd, never through the link. */
        CHECK_INT(ws_dest_open(P("%s/real/late/deeper", top), WS_DEST_DIR, "x", &roots, &d, &err), 0);
        symlink(P("%s/canary", top), P("%s/real/late", top));
        CHECK_FAILS(ws_dest_dir(&d, 0755, &err), "cannot open the directory 'late'");
        ws_dest_release(&d);
        CHECK_INT(count_entries(P("%s/canary", top)), 0);
        /* ws_dest_write over a link replaces the link */
        put(P("%s/canary/keys", top), "canary");
        symlink(P("%s/canary/keys", top), P("%s/real/over", top));
        CHECK_INT(ws_dest_open(P("%s/real/over", top), WS_DEST_FILE, "x", NULL, &d, &err), 0);
        CHECK_INT(ws_dest_write(&d, "new", 3, 0644, &err), 0);
        ws_dest_release(&d);
        CHECK(type_of(P("%s/real/over", top)) == S_IFREG);
        CHECK_STR(get(P("%s/canary/keys", top)), "canary");
        ws_roots_release(&roots);
        corral_error_free(err);
}

TEST(copy_out)
{
        struct workspace *ws = ws_hostile();
        put(W("output/run.sh"), "#!/bin/sh\n");
        chmod(W("output/run.sh"), 04777);
        put(W("output/private"), "p");
        chmod(W("output/private"), 0600);
        mkdir(W("output/sub/locked"), 0755);
        put(W("output/sub/locked/x"), "x");
        chmod(W("output/sub/locked"), 0);
        const char *dest = P("%s/results/nested", outside);
        /* The destination already has files: a regular one (replaced), a
         * symlink where a.txt goes (to a victim outside: not written
         * through), a symlink where the directory sub/ goes. */
        mkdir_p(dest, 0755);
        put(P("%s/victim", outside), "victim\n");
        put(P("%s/inside.old", dest), "old");
        symlink(P("%s/victim", outside), P("%s/a.txt", dest));
        mkdir(P("%s/victimdir", outside), 0755);
        symlink(P("%s/victimdir", outside), P("%s/sub", dest));
        put(P("%s/run.sh", dest), "old run.sh");

        json_t *report = NULL;
        corral_error *err = NULL;
        CHECK_INT(copy_out_to(ws, dest, &report, &err), 0);
        CHECK_STR(json_string_value(json_object_get(report, "dest")), dest);
        CHECK_JSON(json_object_get(report, "copied"), "[{\"path\":\"output/private\",\"bytes\":1},"
                                                      "{\"path\":\"output/run.sh\",\"bytes\":10}]");
        CHECK(report_has(report, "skipped", "output/a.txt", "is a symbolic link: not replaced, not written"));
        CHECK(report_has(report, "skipped", "output/sub", "is a symbolic link: not written through"));
        CHECK(report_has(report, "skipped", "output/shadow", "a symbolic link (only regular files"));
        CHECK(report_has(report, "skipped", "output/escape", "a symbolic link"));
        CHECK(report_has(report, "skipped", "output/up", "a symbolic link"));
        CHECK(report_has(report, "skipped", "output/secret", "a symbolic link"));
        CHECK(report_has(report, "skipped", "output/hard", "it has 2 hard links"));
        CHECK(report_has(report, "skipped", "output/fifo", "a FIFO"));
        CHECK(report_has(report, "skipped", "output/sock", "a socket"));
        CHECK_INT(json_array_size(json_object_get(report, "skipped")), 13);
        json_decref(report);

        CHECK_STR(get(P("%s/victim", outside)), "victim\n");
        CHECK(type_of(P("%s/a.txt", dest)) == S_IFLNK);
        CHECK_INT(count_entries(P("%s/victimdir", outside)), 0);
        CHECK_STR(get(P("%s/run.sh", dest)), "#!/bin/sh\n");
        struct stat st;
        CHECK(stat(P("%s/run.sh", dest), &st) == 0 && (st.st_mode & 07777) == 0755);
        CHECK(stat(P("%s/private", dest), &st) == 0 && (st.st_mode & 07777) == 0644);
        CHECK_STR(get(P("%s/inside.old", dest)), "old");
        CHECK(!exists(P("%s/shadow", dest)) && !exists(P("%s/hard", dest)) && !exists(P("%s/escape", dest)) &&
              !exists(P("%s/fifo", dest)) && !exists(P("%s/sock", dest)) && !exists(P("%s/secret", dest)));
        CHECK(!has_temp(dest));
        /* 5 entries: a.txt (link), sub (link), inside.old, run.sh, private. */
        CHECK_INT(count_entries(dest), 5);

        /* Into a fresh destination: the tree, in full. */
        const char *fresh = P("%s/fresh", outside);
        CHECK_INT(copy_out_to(ws, fresh, &report, &err), 0);
        /* Root opens the 0000 directory; anyone else skips it. */
        if (geteuid() == 0) {
                CHECK_JSON(json_object_get(report, "copied"), "[{\"path\":\"output/a.txt\",\"bytes\":6},"
                                                              "{\"path\":\"output/private\",\"bytes\":1},"
                                                              "{\"path\":\"output/run.sh\",\"bytes\":10},"
                                                              "{\"path\":\"output/sub/b.txt\",\"bytes\":4},"
                                                              "{\"path\":\"output/sub/locked/x\",\"bytes\":1}]");
        } else {
                CHECK_JSON(json_object_get(report, "copied"), "[{\"path\":\"output/a.txt\",\"bytes\":6},"
                                                              "{\"path\":\"output/private\",\"bytes\":1},"
                                                              "{\"path\":\"output/run.sh\",\"bytes\":10},"
                                                              "{\"path\":\"output/sub/b.txt\",\"bytes\":4}]");
                CHECK(report_has(report, "skipped", "output/sub/locked", "cannot open the directory"));
        }
        json_decref(report);
        CHECK_STR(get(P("%s/a.txt", fresh)), "hello\n");
        CHECK_STR(get(P("%s/sub/b.txt", fresh)), "bee\n");
        CHECK(stat(P("%s/sub", fresh), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755);
        CHECK(!has_temp(fresh) && !has_temp(P("%s/sub", fresh)));
        /* Copy-out again over the same files: replaced, same result. */
        put(W("output/a.txt"), "again\n");
        CHECK_INT(copy_out_to(ws, fresh, NULL, &err), 0);
        CHECK_STR(get(P("%s/a.txt", fresh)), "again\n");

        /* output/ itself replaced by a symlink: nothing copied. */
        chmod(W("output/sub/locked"), 0755);
        ws_remove_at(ws->root_fd, "output");
        symlink(outside, W("output"));
        const char *third = P("%s/third", outside);
        CHECK_INT(copy_out_to(ws, third, &report, &err), 0);
        CHECK_JSON(json_object_get(report, "copied"), "[]");
        CHECK(report_has(report, "skipped", "output", "a symbolic link, not a directory"));
        json_decref(report);
        CHECK_INT(count_entries(third), 0);
        CHECK_FAILS(copy_out_to(ws, P("%s/secret/x", outside), &report, &err), "is a regular file, not a directory");
        CHECK_FAILS(copy_out_to(ws, "", &report, &err), "is an empty path");
        workspace_close(ws, true);
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        ws_remove_at(AT_FDCWD, P("%s/results", outside));
        ws_remove_at(AT_FDCWD, fresh);
        ws_remove_at(AT_FDCWD, third);
        ws_remove_at(AT_FDCWD, P("%s/victim", outside));
        ws_remove_at(AT_FDCWD, P("%s/victimdir", outside));
}

/* ---- staging ---- */

TEST(stage_file)
{
        struct workspace *ws = ws_new();
        const char *src = P("%s/sales.csv", outside);
        put(src, "Date,Revenue\n2024-01-01,120.5\n");
        uint64_t budget = 1000;
        json_t *entry = NULL;
        corral_error *err = NULL;
        CHECK_INT(workspace_stage_input(ws, src, &budget, &entry, &err), 0);
        CHECK_STR(get(W("input/sales.csv")), "Date,Revenue\n2024-01-01,120.5\n");
        CHECK_INT(budget, 1000 - 30);
        char *want = NULL;
        if (asprintf(&want,
                     "{\"source\":\"%s\",\"dest\":\"input/sales.csv\",\"type\":\"file\",\"bytes\":30,\"files\":1,"
                     "\"skipped\":[]}",
                     src) < 0)
                abort();
        CHECK_JSON(entry, want);
        free(want);
        json_decref(entry);
        /* PATH:DEST, nested; a top-level symlink is followed. */
        symlink(src, P("%s/link.csv", outside));
        CHECK_INT(workspace_stage_input(ws, P("%s/link.csv:data/2024/s.csv", outside), &budget, NULL, &err), 0);
        CHECK_STR(get(W("input/data/2024/s.csv")), "Date,Revenue\n2024-01-01,120.5\n");
        CHECK(type_of(W("input/data/2024/s.csv")) == S_IFREG);
        CHECK_INT(budget, 1000 - 60);
        /* A name with ':' is a PATH when it exists. */
        put(P("%s/a:b", outside), "colon");
        CHECK_INT(workspace_stage_input(ws, P("%s/a:b", outside), &budget, NULL, &err), 0);
        CHECK_STR(get(W("input/a:b")), "colon");

        CHECK_FAILS(workspace_stage_input(ws, src, &budget, NULL, &err),
                    "'input/sales.csv' already exists (name it with");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:data", src), &budget, NULL, &err), "'input/data' already exists");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:/etc/x", src), &budget, NULL, &err), "must be relative");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:a/../../x", src), &budget, NULL, &err),
                    "may not contain '.' or '..'");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:..", src), &budget, NULL, &err), "may not contain '.' or '..'");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:./x", src), &budget, NULL, &err), "may not contain '.' or '..'");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:a//b", src), &budget, NULL, &err), "has an empty path component");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:a/", src), &budget, NULL, &err), "has an empty path component");
        CHECK_FAILS(workspace_stage_input(ws, P("%s:", src), &budget, NULL, &err), "the name after ':' is empty");
        CHECK_FAILS(workspace_stage_input(ws, ":x", &budget, NULL, &err), "the path before ':' is empty");
        CHECK_FAILS(workspace_stage_input(ws, "", &budget, NULL, &err), "is empty");
        CHECK_FAILS(workspace_stage_input(ws, P("%s/missing.csv", outside), &budget, NULL, &err),
                    "No such file or directory");
        CHECK_FAILS(workspace_stage_input(ws, P("%s/data.csv:sales.csv/x", outside), &budget, NULL, &err),
                    "No such file or directory");
        mkfifo(P("%s/fifo", outside), 0644);
        alarm(5);
        CHECK_FAILS(workspace_stage_input(ws, P("%s/fifo", outside), &budget, NULL, &err),
                    "it is a FIFO; inputs are regular files and directories");
        alarm(0);
        /* Into a file used as a directory. */
        CHECK_FAILS(workspace_stage_input(ws, P("%s:sales.csv/x", src), &budget, NULL, &err),
                    "': 'input/sales.csv' exists and is not a directory");
        CHECK_INT(budget, 1000 - 65);
        CHECK_INT(count_entries(W("input")), 3);
        workspace_close(ws, true);
        unlink(P("%s/fifo", outside));
        unlink(P("%s/a:b", outside));
        unlink(P("%s/link.csv", outside));
        unlink(src);
}

TEST(stage_dir)
{
        struct workspace *ws = ws_new();
        const char *src = P("%s/data", outside);
        mkdir_p(P("%s/sub/empty", src), 0755);
        put(P("%s/one.txt", src), "one\n");
        put(P("%s/sub/two.txt", src), "two\n");
        symlink("/etc/shadow", P("%s/shadow", src));
        symlink("one.txt", P("%s/sub/rel", src));
        mkfifo(P("%s/sub/fifo", src), 0644);
        make_socket(P("%s/sock", src));
        uint64_t budget = 100;
        json_t *entry = NULL;
        corral_error *err = NULL;
        alarm(5);
        CHECK_INT(workspace_stage_input(ws, P("%s/", src), &budget, &entry, &err), 0);
        alarm(0);
        CHECK_STR(json_string_value(json_object_get(entry, "dest")), "input/data");
        CHECK_STR(json_string_value(json_object_get(entry, "type")), "dir");
        CHECK_INT(json_integer_value(json_object_get(entry, "bytes")), 8);
        CHECK_INT(json_integer_value(json_object_get(entry, "files")), 2);
        CHECK_INT(json_array_size(json_object_get(entry, "skipped")), 4);
        CHECK(report_has(entry, "skipped", P("%s/shadow", src), "a symbolic link"));
        CHECK(report_has(entry, "skipped", P("%s/sock", src), "a socket"));
        CHECK(report_has(entry, "skipped", P("%s/sub/fifo", src), "a FIFO"));
        CHECK(report_has(entry, "skipped", P("%s/sub/rel", src), "a symbolic link"));
        json_decref(entry);
        CHECK_INT(budget, 92);
        CHECK_STR(get(W("input/data/one.txt")), "one\n");
        CHECK_STR(get(W("input/data/sub/two.txt")), "two\n");
        CHECK(type_of(W("input/data/sub/empty")) == S_IFDIR);
        CHECK(!exists(W("input/data/shadow")) && !exists(W("input/data/sub/rel")) &&
              !exists(W("input/data/sub/fifo")) && !exists(W("input/data/sock")));
        CHECK(!has_temp(W("input/data")));

        /* Budget: 8 bytes needed, 7 left: an error, and nothing of this
         * input stays (not the directories made for DEST either). */
        budget = 7;
        CHECK_FAILS(workspace_stage_input(ws, P("%s:new/parent/data", src), &budget, NULL, &err),
                    "/data/sub/two.txt' goes past the input budget (3 B left)");
        CHECK_INT(budget, 7);
        CHECK(!exists(W("input/new")));
        CHECK_INT(count_entries(W("input")), 1);
        /* A single file over budget. */
        budget = 3;
        CHECK_FAILS(workspace_stage_input(ws, P("%s/one.txt:one.txt", src), &budget, NULL, &err), "cannot stage '");
        CHECK(!exists(W("input/one.txt")));
        CHECK_INT(budget, 3);
        /* An existing parent is kept when staging fails beneath it. */
        budget = 7;
        CHECK_FAILS(workspace_stage_input(ws, P("%s:data/again", src), &budget, NULL, &err), "input budget");
        CHECK(exists(W("input/data/one.txt")) && !exists(W("input/data/again")));
        CHECK(!has_temp(W("input/data")));
        /* Exactly the budget: fine. */
        budget = 8;
        CHECK_INT(workspace_stage_input(ws, P("%s:exact", src), &budget, NULL, &err), 0);
        CHECK_INT(budget, 0);
        /* NULL budget: no limit. */
        CHECK_INT(workspace_stage_input(ws, P("%s:unlimited", src), NULL, NULL, &err), 0);
        CHECK_STR(get(W("input/unlimited/sub/two.txt")), "two\n");
        workspace_close(ws, true);
        ws_remove_at(AT_FDCWD, src);
}

TEST(stage_reused_input_symlink)
{
        struct workspace *ws = ws_new();
        const char *src = P("%s/s.txt", outside);
        put(src, "s");
        corral_error *err = NULL;
        rmdir(W("input"));
        symlink(P("%s/dir", outside), W("input"));
        CHECK_FAILS(workspace_stage_input(ws, src, NULL, NULL, &err), "cannot open input/");
        CHECK(!exists(P("%s/dir/s.txt", outside)));
        workspace_close(ws, true);
        unlink(src);
        CHECK(exists(P("%s/dir/passwd", outside)));
}

TEST(describe_inputs)
{
        struct workspace *ws = ws_new();
        char *s = workspace_describe_inputs(ws, 10, 2);
        CHECK_STR(s, "");
        free(s);
        put(W("input/sales.csv"), "Date,Product,Revenue\r\n2024-01-01,Widget,120.5\r\n2024-01-02,Gadget,99\r\n");
        mkdir(W("input/notes"), 0755);
        put(W("input/notes/readme.txt"), "one line, no newline");
        put(W("input/empty.txt"), "");
        int fd = open(W("input/image.png"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(fd >= 0 && write(fd, "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) == 16);
        close(fd);
        /* 2 KiB of a 3-byte character: the 4 KiB read cuts one in half. */
        char big[6000];
        size_t n = 0;
        memcpy(big, "xy", 2);
        n = 2;
        while (n + 3 < sizeof(big) - 1) {
                memcpy(big + n, "\xe2\x82\xac", 3);
                n += 3;
        }
        big[n] = '\0';
        put(W("input/euro.txt"), big);
        /* A line longer than 200 bytes, and a control character. */
        char longl[400];
        memset(longl, 'a', 300);
        memcpy(longl + 300, "\n\x1b[2Jb\n", 7);
        longl[307] = '\0';
        put(W("input/long.txt"), longl);
        symlink("/etc/shadow", W("input/link"));
        s = workspace_describe_inputs(ws, 10, 2);
        char want[4096];
        snprintf(want, sizeof(want),
                 "input/empty.txt (0 B, empty)\n"
                 "input/euro.txt (5.9 KiB)\n"
                 "    xy%.*s [...]\n"
                 "input/image.png (16 B, binary)\n"
                 "input/link (a symbolic link, not followed)\n"
                 "input/long.txt (307 B)\n"
                 "    %.200s [...]\n"
                 "    ?[2Jb\n"
                 "input/notes/readme.txt (20 B)\n"
                 "    one line, no newline\n"
                 "input/sales.csv (69 B)\n"
                 "    Date,Product,Revenue\n"
                 "    2024-01-01,Widget,120.5\n",
                 198, big + 2, longl);
        CHECK_STR(s, want);
        free(s);
        s = workspace_describe_inputs(ws, 2, 0);
        CHECK_STR(s, "input/empty.txt (0 B, empty)\n"
                     "input/euro.txt (5.9 KiB)\n"
                     "(and 5 more files in input/)\n");
        free(s);
        workspace_close(ws, true);
}

/* Write errors (here RLIMIT_FSIZE: "File too large") fail the call and
 * leave no temporary file, no half copy, no half-staged input. */
TEST(io_errors_leave_nothing)
{
        struct workspace *ws = ws_new();
        corral_error *err = NULL;
        static char big[65536];
        memset(big, 'b', sizeof(big));
        big[sizeof(big) - 1] = '\0';
        put(W("output/big.bin"), big);
        put(W("output/small.txt"), "s");
        const char *src = P("%s/stagebig", outside);
        mkdir(src, 0755);
        put(P("%s/a.txt", src), "a");
        put(P("%s/big.bin", src), big);
        const char *dest = P("%s/fsize", outside);
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 4096;
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &lim);
        CHECK_FAILS(copy_out_to(ws, dest, NULL, &err),
                    P("cannot copy 'output/big.bin' to '%s/big.bin': File too large", dest));
        CHECK_FAILS(workspace_write_file(ws, "output/w.bin", big, sizeof(big), &err),
                    "cannot write 'output/w.bin': File too large");
        uint64_t budget = 1 << 20;
        CHECK_FAILS(workspace_stage_input(ws, P("%s:sub/staged", src), &budget, NULL, &err),
                    "/big.bin' to 'input/sub/staged/big.bin': File too large");
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, SIG_DFL);
        CHECK(!has_temp(dest));
        CHECK(!exists(P("%s/big.bin", dest)));
        CHECK(!has_temp(W("output")));
        CHECK(!exists(W("output/w.bin")));
        CHECK_INT(count_entries(W("input")), 0);
        CHECK_INT(budget, 1 << 20);
        workspace_close(ws, true);
        ws_remove_at(AT_FDCWD, dest);
        ws_remove_at(AT_FDCWD, src);
}

/* File names are bytes; JSON wants UTF-8: invalid bytes become U+FFFD in
 * listings, diffs and reports rather than losing the entry. */
TEST(non_utf8_names)
{
        struct workspace *ws = ws_new();
        corral_error *err = NULL;
        struct ws_snapshot *a = NULL, *b = NULL;
        CHECK_INT(workspace_snapshot(ws, &a, &err), 0);
        put(W("output/x\xff.txt"), "x");
        CHECK_INT(workspace_snapshot(ws, &b, &err), 0);
        json_t *j = workspace_diff(a, b);
        CHECK_JSON(j, "[{\"path\":\"output/x\xef\xbf\xbd.txt\",\"change\":\"created\",\"type\":\"file\",\"size\":1}]");
        json_decref(j);
        CHECK_INT(workspace_list_files(ws, "output", 0, 0, &j, &err), 0);
        without_stat(j);
        CHECK_JSON(j, "[{\"path\":\"output/x\xef\xbf\xbd.txt\",\"type\":\"file\",\"size\":1}]");
        json_decref(j);
        const char *dest = P("%s/utf8", outside);
        CHECK_INT(copy_out_to(ws, dest, &j, &err), 0);
        CHECK_JSON(json_object_get(j, "copied"), "[{\"path\":\"output/x\xef\xbf\xbd.txt\",\"bytes\":1}]");
        json_decref(j);
        CHECK_STR(get(P("%s/x\xff.txt", dest)), "x");
        ws_snapshot_free(a);
        ws_snapshot_free(b);
        workspace_close(ws, true);
        ws_remove_at(AT_FDCWD, dest);
}

int main(void)
{
        outside_make();
        RUN(open_fresh);
        RUN(open_existing);
        RUN(close_removes_hostile_tree);
        RUN(normalize);
        RUN(walk_open);
        RUN(read_openat2);
        RUN(read_walk);
        RUN(write_openat2);
        RUN(write_walk);
        RUN(list_openat2);
        RUN(list_walk);
        RUN(snapshot_diff);
        RUN(snapshot_truncated);
        RUN(copy_out);
        RUN(dest);
        RUN(stage_file);
        RUN(stage_dir);
        RUN(stage_reused_input_symlink);
        RUN(describe_inputs);
        RUN(io_errors_leave_nothing);
        RUN(non_utf8_names);
        CHECK_STR(get(P("%s/secret", outside)), "host secret\n");
        outside_remove();
        return DONE();
}
