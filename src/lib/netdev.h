/* netdev.h: the loopback device of a new network namespace.
 * Threads: called in a jail's setup child or a zygote's session, each one
 * thread. */
#ifndef CORRAL_NETDEV_H
#define CORRAL_NETDEV_H

/* Set "lo" up (it starts down in a new network namespace).  0, or -1 with
 * errno. */
__attribute__((visibility("hidden"))) int netdev_loopback_up(void);

#endif
