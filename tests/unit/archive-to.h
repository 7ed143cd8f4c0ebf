/* archive-to.h: workspace_archive() to a path resolved as `corral run`
 * resolves --archive (no directory a jail can write in these tests), for
 * the unit tests that archive. */
#ifndef CORRAL_TEST_ARCHIVE_TO_H
#define CORRAL_TEST_ARCHIVE_TO_H

#include "../../src/workspace/archive.h"
#include "../../src/workspace/dest.h"

static inline int archive_to(struct workspace *ws, const char *path, const struct ws_archive_opts *opts,
                             json_t **report, corral_error **err)
{
        struct ws_dest d;
        if (ws_dest_open(path, WS_DEST_FILE, "the archive", NULL, &d, err) < 0)
                return -1;
        int r = workspace_archive(ws, &d, opts, report, err);
        ws_dest_release(&d);
        return r;
}

#endif
