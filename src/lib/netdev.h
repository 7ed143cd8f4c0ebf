/* netdev.h: the loopback device of a new network namespace.
 * Threads: called in a jail's setup child or a zygote's session, each one
 * thread. */
#ifndef CORRAL_NETDEV_H
#define CORRAL_NETDEV_H

/* Set "lo" up (it starts down in a new network namespace).  0, or -1 with
 * errno. */
__attribute__((visibility("hidden"))) int netdev_loopback_up(void);
/* Make a socket listening on 127.0.0.1:3128 (CORRAL_NET_PROXY_PORT) in this
 * network namespace and send it over the unix socket to (SCM_RIGHTS, one
 * byte 'L'), for the host-side proxy (proxy.c) to serve; then close both.
 * 0, or -1 with errno. */
__attribute__((visibility("hidden"))) int netdev_proxy_listener_send(int to);

#endif
