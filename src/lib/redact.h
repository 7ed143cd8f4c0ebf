/* redact.h: keeping secrets out of what corral writes and sends.
 *
 * The API key and the values given with -e must not reach the trace, a
 * recorded transcript, an observation sent to the model, the JSON result or
 * an error message.  Every writer passes its text through here: each
 * occurrence of any secret becomes "[REDACTED]" (overlapping and nested
 * occurrences included, see redact.c).  Secrets shorter than
 * REDACT_MIN_SECRET bytes are ignored: they would redact ordinary text.
 * Shared by trace/, model/, agent/ and the CLI; knows nothing of them.
 *
 * Threads: thread-safe (no shared state); a secret_set is read-only once made.
 */
#ifndef CORRAL_REDACT_H
#define CORRAL_REDACT_H

#include <jansson.h>

#include "util.h"

#define REDACT_MIN_SECRET 4

/* Secrets prepared once (filtered, deduplicated, longest first), for a
 * caller that redacts many values.  The strings are borrowed. */
struct secret_set {
        const char **s;
        size_t *len;
        size_t n;
};
/* From a NULL-terminated list (NULL: none); -1 on allocation failure. */
CORRAL_HIDDEN int secret_set_init(struct secret_set *set, const char *const *secrets);
CORRAL_HIDDEN void secret_set_release(struct secret_set *set);

/* Every string of value, keys included, recursively, in place.  Out of
 * memory, values are dropped rather than a secret kept. */
CORRAL_HIDDEN void redact_json_set(json_t *value, const struct secret_set *set);
CORRAL_HIDDEN void redact_json(json_t *value, const char *const *secrets);
/* A malloc'd copy of text with the secrets replaced; NULL for NULL or on
 * allocation failure. */
CORRAL_HIDDEN char *redact_text(const char *text, const char *const *secrets);

#endif
