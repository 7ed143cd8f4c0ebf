/* fontcache.c: a pre-built matplotlib font cache for Python jails.
 *
 * matplotlib scans every font on first import and caches the result in
 * MPLCONFIGDIR; in a fresh jail that costs ~0.5 s on every run.  corral
 * builds the cache once per host runtime, in a jail of its own running
 * fixed code (never user code, so no program can poison what later jails
 * read), keeps it under the cache directory, and binds it read-only into
 * each Python jail at /tmp/matplotlib/.  The directory name carries a
 * fingerprint of matplotlib and the font directories, so an upgrade makes
 * a new one.
 *
 * Cache directory: $CORRAL_CACHE_DIR, else /var/cache/corral for root,
 * else $XDG_CACHE_HOME/corral or ~/.cache/corral.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "jail-internal.h"

static __thread bool building; /* the build jail must not recurse */

static const char *const fingerprint_paths[] = {
        "/usr/lib/python3/dist-packages/matplotlib/font_manager.py",
        "/usr/lib/python3/dist-packages/matplotlib/_version.py",
        "/usr/share/matplotlib/mpl-data/fonts/ttf",
        "/usr/share/fonts",
        "/usr/share/fonts/truetype",
        "/usr/share/fonts/opentype",
        "/usr/local/share/fonts",
};

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 1099511628211ull;
        }
        return h;
}

static char *cache_root(void)
{
        const char *env = getenv("CORRAL_CACHE_DIR");
        char *s = NULL;
        if (env && env[0] == '/')
                return strdup(env);
        if (geteuid() == 0)
                return strdup("/var/cache/corral");
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/')
                return asprintf(&s, "%s/corral", xdg) < 0 ? NULL : s;
        if (home && home[0] == '/')
                return asprintf(&s, "%s/.cache/corral", home) < 0 ? NULL : s;
        return NULL;
}

static bool is_python(const corral_jail_config *cfg)
{
        const char *a = cfg->argv ? cfg->argv[0] : NULL;
        const char *base = a ? (strrchr(a, '/') ? strrchr(a, '/') + 1 : a) : "";
        return strncmp(base, "python", 6) == 0;
}

static bool has_fontlist(const char *dir)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return false;
        struct dirent *e;
        bool found = false;
        while (!found && (e = readdir(d)) != NULL)
                found = strncmp(e->d_name, "fontlist-", 9) == 0 && strstr(e->d_name, ".json") != NULL;
        closedir(d);
        return found;
}

static void remove_flat_dir(const char *dir)
{
        DIR *d = opendir(dir);
        if (d != NULL) {
                struct dirent *e;
                while ((e = readdir(d)) != NULL)
                        if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0))
                                unlinkat(dirfd(d), e->d_name, 0);
                closedir(d);
        }
        rmdir(dir);
}

/* Run the fixed build code in a jail writing into tmp. */
static bool build_into(const char *tmp)
{
        corral_jail_config c;
        corral_jail_config_init(&c);
        corral_error *err = NULL;
        char *argv[] = { (char *)"python3", (char *)"-c", (char *)"import matplotlib.font_manager", NULL };
        cleanup_free char *bind = NULL;
        bool ok = false;
        if (asprintf(&bind, "%s:/var/cache/corral-fonts", tmp) < 0)
                goto out;
        c.timeout_s = 120;
        if (corral_jail_config_set_argv(&c, argv, &err) < 0 || corral_jail_config_add_bind(&c, bind, true, &err) < 0 ||
            corral_jail_config_add_env(&c, "MPLCONFIGDIR=/var/cache/corral-fonts", &err) < 0)
                goto out;
        corral_jail_result res;
        building = true;
        int r = corral_jail_run(&c, NULL, &res, &err);
        building = false;
        if (r == 0) {
                ok = res.status == CORRAL_STATUS_OK && has_fontlist(tmp);
                corral_jail_result_release(&res);
        }
out:
        corral_error_free(err);
        corral_jail_config_release(&c);
        return ok;
}

/* Where the cache for this host's Python and matplotlib is (malloc'd), or
 * NULL when the jail needs none. */
static char *cache_path(const corral_jail_config *cfg)
{
        if (building || cfg->rootfs != NULL || !is_python(cfg))
                return NULL;
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < ARRAY_SIZE(fingerprint_paths); i++) {
                struct stat st;
                if (stat(fingerprint_paths[i], &st) < 0)
                        continue;
                h = fnv(h, fingerprint_paths[i], strlen(fingerprint_paths[i]));
                h = fnv(h, &st.st_ino, sizeof(st.st_ino));
                h = fnv(h, &st.st_size, sizeof(st.st_size));
                h = fnv(h, &st.st_mtim, sizeof(st.st_mtim));
        }
        cleanup_free char *root = cache_root();
        char *dir = NULL;
        if (root == NULL || asprintf(&dir, "%s/matplotlib-%016llx", root, (unsigned long long)h) < 0)
                return NULL;
        return dir;
}

/* Jails run as other uids (root's as a uid of the pool), and the bind of the
 * cache is made with their credentials: every directory from the cache root
 * down must be searchable by others (an ordinary user's jails run as that
 * user, so the owner's bits are enough there).  A caller's umask (the session host runs
 * with 077) must not change that, so the modes are set, not requested; a root
 * left 0700 by an earlier corral is ours to repair.  When it cannot be made
 * searchable, jails go without the cache (matplotlib builds its own, slower). */
static bool searchable_by_others(const char *path)
{
        struct stat st;
        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                return false;
        if ((st.st_mode & S_IXOTH) != 0 || geteuid() != 0)
                return true;
        return st.st_uid == geteuid() && chmod(path, (st.st_mode & 07777) | 0555) == 0;
}

char *fontcache_dir(const corral_jail_config *cfg, void (*on_notice)(void *, const char *), void *userdata)
{
        char *dir = cache_path(cfg);
        if (dir == NULL)
                return NULL;
        cleanup_free char *root = cache_root();
        if (has_fontlist(dir)) {
                if (root != NULL && searchable_by_others(root) && searchable_by_others(dir))
                        return dir;
                free(dir);
                return NULL;
        }
        if (on_notice)
                on_notice(userdata, "building matplotlib's font cache for Python jails (once per host, about a "
                                    "second)");
        if (root == NULL) {
                free(dir);
                return NULL;
        }

        /* Build it once: in a temp dir beside it, renamed into place. */
        cleanup_free char *tmp = NULL;
        for (char *slash = strchr(root + 1, '/');; slash = strchr(slash + 1, '/')) { /* mkdir -p */
                if (slash)
                        *slash = '\0';
                int r = mkdir(root, 0755);
                if (r == 0 && chmod(root, 0755) < 0) /* whatever the umask */
                        r = -1;
                if (slash)
                        *slash = '/';
                if (r < 0 && errno != EEXIST)
                        goto fail;
                if (slash == NULL)
                        break;
        }
        if (asprintf(&tmp, "%s/.build-XXXXXX", root) < 0 || mkdtemp(tmp) == NULL || chmod(tmp, 0755) < 0)
                goto fail;
        if (!build_into(tmp)) {
                remove_flat_dir(tmp);
                goto fail;
        }
        if (rename(tmp, dir) < 0) /* another corral won the race: use its copy */
                remove_flat_dir(tmp);
        if (has_fontlist(dir) && searchable_by_others(root) && searchable_by_others(dir))
                return dir;
fail:
        free(dir);
        return NULL;
}
