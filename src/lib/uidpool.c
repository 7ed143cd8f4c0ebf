/* uidpool.c: one unprivileged host uid per jail when the caller is root.
 *
 * A lease is an open file description lock (F_OFD_SETLK) on one byte of
 * /run/corral/uid-pool.lock, at the offset of the uid, held for as long as
 * the jail lives.  The kernel releases it when the fd closes, also when the
 * supervisor is killed, so there is no state to repair.  The file is root's
 * (0600 in a 0700 directory): no other user can take a lock on it and so
 * starve the pool, as anyone could bind the abstract socket names that
 * earlier versions used.  Only root leases uids (an ordinary user's jails
 * run as that user).  Root of a user namespace leases only when the
 * namespace maps the whole range (a container with a big enough map, whose
 * /run is its own); otherwise its jails run as it (uidpool_use()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "jail-internal.h"

#define POOL_DIR "/run/corral"

/* The uid map line that holds id, as "inside outside count". */
static bool map_find(const char *map, uint64_t id, uint64_t *ret_inside, uint64_t *ret_outside, uint64_t *ret_count)
{
        for (const char *line = map; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                unsigned long long in, out, n;
                if (sscanf(line, "%llu %llu %llu", &in, &out, &n) == 3 && id >= in && id - in < n) {
                        *ret_inside = in;
                        *ret_outside = out;
                        *ret_count = n;
                        return true;
                }
        }
        return false;
}

/* Our user namespace's uid map, read once: it is written once, before any
 * process of the namespace runs, and corral never changes namespace. */
static char *uid_map;
static int uid_map_errno;
static pthread_once_t uid_map_once = PTHREAD_ONCE_INIT;

static void uid_map_read(void)
{
        uid_map = read_file_at(AT_FDCWD, "/proc/self/uid_map", 1 << 16);
        uid_map_errno = uid_map ? 0 : errno;
}

int uidpool_use(uint32_t base, uint32_t count, corral_error **ret_err)
{
        if (geteuid() != 0)
                return 0;
        pthread_once(&uid_map_once, uid_map_read);
        const char *map = uid_map;
        if (map == NULL)
                return corral_fail(ret_err, uid_map_errno, "cannot read /proc/self/uid_map");
        /* Is the whole range there?  Map lines never overlap, so walk it. */
        uint64_t id = base, end = (uint64_t)base + count, in, out, n;
        while (id < end && map_find(map, id, &in, &out, &n))
                id = in + n;
        if (id >= end)
                return 1;
        /* Root of a user namespace that maps fewer ids (`unshare -r`, a
         * rootless container): its jails run as it, as an ordinary user's
         * do, which is unprivileged on the host unless uid 0 is the
         * parent's root. */
        if (!map_find(map, 0, &in, &out, &n) || out == 0) {
                corral_fail(ret_err, 0,
                            "running as root in a user namespace whose uid 0 is its parent's root, and which maps "
                            "no ids for the jail uid pool (%u-%u): jails never run as the host's root; run corral "
                            "as an ordinary user, or give it a uid range the namespace maps",
                            base, base + count - 1);
                return corral_error_set_field(ret_err, "uid_range");
        }
        return 0;
}

/* The lock file, made if missing; refused unless root owns it and its
 * directory and nobody else can write either. */
static int open_pool(corral_error **ret_err)
{
        const char *dir = POOL_DIR, *file = POOL_DIR "/uid-pool.lock";
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return corral_fail(ret_err, errno, "cannot make '%s' for the jail uid pool", dir);
        struct stat st;
        if (lstat(dir, &st) < 0)
                return corral_fail(ret_err, errno, "cannot look at '%s'", dir);
        if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
                return corral_fail(ret_err, 0, "refusing '%s' for the jail uid pool: it must be a directory of "
                                               "root's that only root can write",
                                   dir);
        int fd = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return corral_fail(ret_err, errno, "cannot open '%s'", file);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
                close(fd);
                return corral_fail(ret_err, 0, "refusing '%s': it must be a regular file only root can use", file);
        }
        return fd;
}

int uidpool_acquire(uint32_t base, uint32_t count, struct uid_lease *ret, corral_error **ret_err)
{
        if (count == 0)
                return corral_usage(ret_err, "the uid range is empty");
        /* A file description of its own: locks of two leases of one
         * process must conflict. */
        int fd = open_pool(ret_err);
        if (fd < 0)
                return -1;
        uint32_t start = 0;
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (uint32_t)getpid();
        for (uint32_t i = 0; i < count; i++) {
                uint32_t uid = base + (start + i) % count;
                struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)uid, .l_len = 1 };
                if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
                        ret->uid = uid;
                        ret->fd = fd;
                        return 0;
                }
                if (errno != EAGAIN && errno != EACCES) {
                        int e = errno;
                        close(fd);
                        return corral_fail(ret_err, e, "cannot lease a jail uid");
                }
        }
        close(fd);
        return corral_fail(ret_err, 0, "all %u jail uids from %u are in use", count, base);
}

void uidpool_release(struct uid_lease *lease)
{
        if (lease->fd >= 0)
                close(lease->fd);
        lease->fd = -1;
}
