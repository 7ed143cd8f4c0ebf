/* runs.c: where `corral run` keeps its records.
 *
 * A run's trace and (without -o or -w) its output live in
 * $XDG_STATE_HOME/corral/runs/ID/ (~/.local/state/corral/runs/ID/ when the
 * variable is unset), never in the directory the run was started from: that
 * directory may be a workspace a jail wrote (`-w .`), where code could have
 * planted `.corral` as a link to anywhere.  The run's trace records the
 * directory it was started from and its workspace.
 */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

char *cli_runs_dir(void)
{
        const char *state = getenv("XDG_STATE_HOME");
        char *dir = NULL;
        /* The XDG rule: a relative value is invalid and ignored. */
        if (state && state[0] == '/')
                return asprintf(&dir, "%s/corral/runs", state) < 0 ? NULL : dir;
        const char *home = getenv("HOME");
        if (home == NULL || home[0] != '/') {
                struct passwd *pw = getpwuid(geteuid());
                home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
        }
        if (home == NULL)
                return NULL;
        return asprintf(&dir, "%s/.local/state/corral/runs", home) < 0 ? NULL : dir;
}
