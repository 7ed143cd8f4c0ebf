/* uidpool.c: one unprivileged host uid per jail when the caller is root.
 *
 * A lease is an abstract unix socket named after the uid, bound for as long
 * as the jail lives.  The kernel releases it when the fd closes, also when
 * the supervisor is killed, so there is no lock file to leave behind and no
 * state to repair.  Abstract names are per network namespace: supervisors
 * that share a range must share one (they do when run on one host).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "jail-internal.h"

int uidpool_acquire(uint32_t base, uint32_t count, struct uid_lease *ret, corral_error **ret_err)
{
        if (count == 0)
                return corral_usage(ret_err, "the uid range is empty");
        uint32_t start = 0;
        if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
                start = (uint32_t)getpid();
        for (uint32_t i = 0; i < count; i++) {
                uint32_t uid = base + (start + i) % count;
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return corral_fail(ret_err, errno, "cannot allocate a jail uid");
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "corral-uid-%u", uid);
                socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
                if (bind(fd, (struct sockaddr *)&sa, len) == 0) {
                        ret->uid = uid;
                        ret->fd = fd;
                        return 0;
                }
                int e = errno;
                close(fd);
                if (e != EADDRINUSE)
                        return corral_fail(ret_err, e, "cannot allocate a jail uid");
        }
        return corral_fail(ret_err, 0, "all %u jail uids from %u are in use", count, base);
}

void uidpool_release(struct uid_lease *lease)
{
        if (lease->fd >= 0)
                close(lease->fd);
        lease->fd = -1;
}
