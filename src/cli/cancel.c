/* cancel.c: signals become a cancel fd (see cli.h), so that a jail or a
 * model request in flight is torn down before corral exits with 128+N. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cli.h"

static int cancel_fd = -1;
static volatile sig_atomic_t cancel_signal;
/* What a second signal leaves behind, said by the handler (set once, before
 * any signal can name it). */
static char leaves[4096];

/* The first signal cancels and lets corral clean up; a second one (the
 * user pressing Ctrl-C again) exits at once.  Jails still die with corral
 * (parent-death signal, pid namespace); what is left is at most a temporary
 * workspace and stale cgroup directories, which the next run sweeps. */
static void on_signal(int sig)
{
        if (cancel_signal) {
                static const char msg[] = "\ncorral: interrupted again: exiting without cleaning up";
                static const char left[] = "; left behind: ";
                static const char next[] = " (the next corral run or session start removes it)";
                ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
                if (leaves[0]) {
                        w = write(STDERR_FILENO, left, sizeof(left) - 1);
                        w = write(STDERR_FILENO, leaves, strlen(leaves));
                        w = write(STDERR_FILENO, next, sizeof(next) - 1);
                }
                w = write(STDERR_FILENO, "\n", 1);
                (void)w;
                _exit(128 + sig);
        }
        uint64_t one = 1;
        cancel_signal = sig;
        ssize_t r = write(cancel_fd, &one, sizeof(one));
        (void)r;
}

int cli_catch_signals(void)
{
        if (cancel_fd >= 0)
                return cancel_fd;
        cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (cancel_fd < 0)
                return -1;
        struct sigaction sa = { .sa_handler = on_signal };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        /* A closed stdout (| head) must end the run, not corral. */
        signal(SIGPIPE, SIG_IGN);
        return cancel_fd;
}

int cli_cancel_signal(void)
{
        return cancel_signal;
}

const char *cli_signal_name(int sig)
{
        switch (sig) {
        case SIGINT:
                return "SIGINT (Ctrl-C)";
        case SIGTERM:
                return "SIGTERM";
        case SIGHUP:
                return "SIGHUP (the terminal closed)";
        case 0:
                return "a signal";
        default:
                return "a signal";
        }
}

void cli_cancel_leaves(const char *what)
{
        snprintf(leaves, sizeof(leaves), "%s", what ? what : "");
}
