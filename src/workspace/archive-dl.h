/* archive-dl.h: libarchive, loaded when an archive is first read or written.
 *
 * Linking libarchive into the corral binary makes every process load it and
 * its dependencies (libxml2, nettle, lzma, zstd, lz4, bz2, acl): 1.8 ms
 * more per start measured with hyperfine on a test program, more than
 * `corral exec` costs in all.  Only archives need it, so it is loaded with
 * dlopen() on first use, as libcurl is (src/model/curl-dl.h), and called
 * through this table; the types and constants come from <archive.h>, so
 * every call is type-checked.
 */
#ifndef CORRAL_WORKSPACE_ARCHIVE_DL_H
#define CORRAL_WORKSPACE_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "../lib/util.h"

/* Every function used: X(name). */
#define ARCHIVE_FUNCTIONS(X)                                                                                           \
        X(archive_read_new)                                                                                            \
        X(archive_read_support_format_tar)                                                                             \
        X(archive_read_support_filter_gzip)                                                                            \
        X(archive_read_support_filter_zstd)                                                                            \
        X(archive_read_open_fd)                                                                                        \
        X(archive_read_open_memory)                                                                                    \
        X(archive_read_next_header)                                                                                    \
        X(archive_read_data_block)                                                                                     \
        X(archive_read_data_skip)                                                                                      \
        X(archive_read_free)                                                                                           \
        X(archive_write_new)                                                                                           \
        X(archive_write_set_format_pax_restricted)                                                                     \
        X(archive_write_add_filter_none)                                                                               \
        X(archive_write_open_fd)                                                                                       \
        X(archive_write_header)                                                                                        \
        X(archive_write_data)                                                                                          \
        X(archive_write_finish_entry)                                                                                  \
        X(archive_write_close)                                                                                         \
        X(archive_write_free)                                                                                          \
        X(archive_error_string)                                                                                        \
        X(archive_format)                                                                                              \
        X(archive_format_name)                                                                                         \
        X(archive_filter_count)                                                                                        \
        X(archive_filter_code)                                                                                         \
        X(archive_filter_name)                                                                                         \
        X(archive_filter_bytes)                                                                                        \
        X(archive_entry_new)                                                                                           \
        X(archive_entry_free)                                                                                          \
        X(archive_entry_clear)                                                                                         \
        X(archive_entry_pathname)                                                                                      \
        X(archive_entry_filetype)                                                                                      \
        X(archive_entry_perm)                                                                                          \
        X(archive_entry_size)                                                                                          \
        X(archive_entry_size_is_set)                                                                                   \
        X(archive_entry_mtime)                                                                                         \
        X(archive_entry_mtime_is_set)                                                                                  \
        X(archive_entry_symlink)                                                                                       \
        X(archive_entry_hardlink)                                                                                      \
        X(archive_entry_set_pathname)                                                                                  \
        X(archive_entry_set_filetype)                                                                                  \
        X(archive_entry_set_perm)                                                                                      \
        X(archive_entry_set_size)                                                                                      \
        X(archive_entry_set_mtime)                                                                                     \
        X(archive_entry_set_symlink)                                                                                   \
        X(archive_entry_set_hardlink)                                                                                  \
        X(archive_entry_set_uid)                                                                                       \
        X(archive_entry_set_gid)                                                                                       \
        X(archive_entry_sparse_add_entry)

struct archive_api {
#define ARCHIVE_FIELD(name) __typeof__(name) *name;
        ARCHIVE_FUNCTIONS(ARCHIVE_FIELD)
#undef ARCHIVE_FIELD
};

/* The loaded API (loaded once, thread-safe), or NULL with ret_err
 * (CORRAL_ERR_UNSUPPORTED) saying what is missing and which package
 * provides it. */
CORRAL_HIDDEN const struct archive_api *archive_api_get(corral_error **ret_err);

/* The check "libarchive" for a host report (lib/probe.h): loaded or not,
 * and which package provides it.  Thread-safe. */
CORRAL_HIDDEN void archive_probe(json_t *checks);

#endif
