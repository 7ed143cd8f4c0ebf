/* uidpool.c: one unprivileged host uid per jail when the caller is root.
 *
 * A lease is an open file description lock (F_OFD_SETLK) on one byte of
 * /run/corral/uid-pool.lock, at the offset of the uid, held for as long as
 * the jail lives.  The kernel releases it when the fd closes, also when the
 * supervisor is killed, so there is no state to repair.  The file is root's
 * (0600 in a 0700 directory): no other user can take a lock on it and so
 * starve the pool, as anyone could bind the abstract socket names that
 * earlier versions used.  Only root leases uids (an ordinary user's jails
 * run as that user).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "jail-internal.h"

/* Where the lock lives: /run/corral for the host's root.  Root of a user
 * namespace of its own (a rootless container, `unshare -r`) may not own the
 * host's /run: its pool is its namespace's, in a directory of its own under
 * /tmp named after the namespace (what uids it can lease are its
 * namespace's anyway). */
static void pool_dir(char *buf, size_t size)
{
        cleanup_free char *map = read_file_at(AT_FDCWD, "/proc/self/uid_map", 4096);
        unsigned long inside = 1, outside = 1, count = 0;
        bool initial = map && sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 &&
                       outside == 0 && count == 4294967295ul;
        struct stat ns;
        if (initial || stat("/proc/self/ns/user", &ns) < 0)
                snprintf(buf, size, "/run/corral");
        else
                snprintf(buf, size, "/tmp/corral-uid-pool-%lu", (unsigned long)ns.st_ino);
}

/* The lock file, made if missing; refused unless root owns it and its
 * directory and nobody else can write either. */
static int open_pool(corral_error **ret_err)
{
        char dir[128], file[160];
        pool_dir(dir, sizeof(dir));
        snprintf(file, sizeof(file), "%s/uid-pool.lock", dir);
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
