/* http-dl.h: libmicrohttpd and wslay, loaded when a server starts.
 *
 * Linking libmicrohttpd into the corral binary makes every process load it
 * and GnuTLS under it (p11-kit, nettle, gmp, idn2, unistring, tasn1, ...),
 * whose constructors run at every start: 3.7 ms more for an empty program
 * here (hyperfine), a fifth of a pre-made `corral exec` (docs/exec-pool.md).
 * Only `corral serve` needs HTTP serving, so server_start() loads both
 * libraries with dlopen(), as libcurl (src/model/curl-dl.h) and libarchive
 * are loaded, and the server calls them through this table; the types and
 * constants come from their headers, so every call is type-checked.
 * Internal to src/server/.
 */
#ifndef CORRAL_SERVER_HTTP_DL_H
#define CORRAL_SERVER_HTTP_DL_H

#include <microhttpd.h>
#include <wslay/wslay.h>

#include "../lib/util.h"

/* Every function used: X(name). */
#define MHD_FUNCTIONS(X)                                                                                               \
        X(MHD_add_response_header)                                                                                     \
        X(MHD_create_post_processor)                                                                                   \
        X(MHD_create_response_for_upgrade)                                                                             \
        X(MHD_create_response_from_buffer)                                                                             \
        X(MHD_create_response_from_callback)                                                                           \
        X(MHD_create_response_from_fd64)                                                                               \
        X(MHD_destroy_post_processor)                                                                                  \
        X(MHD_destroy_response)                                                                                        \
        X(MHD_lookup_connection_value)                                                                                 \
        X(MHD_post_process)                                                                                            \
        X(MHD_queue_response)                                                                                          \
        X(MHD_quiesce_daemon)                                                                                          \
        X(MHD_start_daemon)                                                                                            \
        X(MHD_stop_daemon)                                                                                             \
        X(MHD_upgrade_action)

#define WSLAY_FUNCTIONS(X)                                                                                             \
        X(wslay_event_config_set_max_recv_msg_length)                                                                  \
        X(wslay_event_context_free)                                                                                    \
        X(wslay_event_context_server_init)                                                                             \
        X(wslay_event_get_queued_msg_count)                                                                            \
        X(wslay_event_get_queued_msg_length)                                                                           \
        X(wslay_event_queue_close)                                                                                     \
        X(wslay_event_queue_msg)                                                                                       \
        X(wslay_event_recv)                                                                                            \
        X(wslay_event_send)                                                                                            \
        X(wslay_event_set_error)                                                                                       \
        X(wslay_event_want_read)                                                                                       \
        X(wslay_event_want_write)

struct http_api {
#define HTTP_FIELD(name) __typeof__(name) *name;
        MHD_FUNCTIONS(HTTP_FIELD)
        WSLAY_FUNCTIONS(HTTP_FIELD)
#undef HTTP_FIELD
};

/* The table the server calls: filled by http_api_load(), which
 * server_start() calls before anything else, so that no server code runs
 * before it. */
CORRAL_HIDDEN extern struct http_api http_lib;

/* Load both libraries once (thread-safe): 0, or -1 with ret_err
 * (CORRAL_ERR_UNSUPPORTED) saying what is missing and which package
 * provides it. */
CORRAL_HIDDEN int http_api_load(corral_error **ret_err);

#endif
