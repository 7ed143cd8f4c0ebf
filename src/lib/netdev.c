/* netdev.c: bring up the loopback device of a fresh network namespace.
 *
 * Shared by the jail's set-up (enter.c) and corral-zygote's sessions
 * (src/session/zygote.c), which is a program of its own: this file needs
 * nothing but libc. */
#define _GNU_SOURCE
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netdev.h"

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
