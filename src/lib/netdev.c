/* netdev.c: bring up the loopback device of a fresh network namespace, and
 * make the --net allow proxy's listening socket in it.
 *
 * Shared by the jail's set-up (enter.c) and corral-zygote's sessions
 * (src/session/zygote.c), which is a program of its own: this file needs
 * nothing but libc. */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netdev.h"

#define NETDEV_PROXY_PORT 3128 /* CORRAL_NET_PROXY_PORT: this file includes no corral header */

int netdev_loopback_up(void)
{
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -1;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        int r = ioctl(s, SIOCGIFFLAGS, &ifr);
        if (r == 0) {
                ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
                r = ioctl(s, SIOCSIFFLAGS, &ifr);
        }
        close(s);
        return r;
}

/* A socket listening on 127.0.0.1:CORRAL_NET_PROXY_PORT, sent to the
 * supervisor over to (SCM_RIGHTS). */
int netdev_proxy_listener_send(int to)
{
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -1;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(NETDEV_PROXY_PORT),
                                 .sin_addr = { htonl(INADDR_LOOPBACK) } };
        int one = 1;
        (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0) {
                close(s);
                return -1;
        }
        char byte = 'L';
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } u;
        memset(&u, 0, sizeof(u));
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &s, sizeof(int));
        ssize_t n = sendmsg(to, &m, MSG_NOSIGNAL);
        int e = errno;
        close(s);
        close(to);
        errno = e;
        return n == 1 ? 0 : -1;
}
