/* termsafe.h: bytes from a model, a jail or an archive made safe for a
 * terminal.
 *
 * A terminal acts on what it prints: OSC 52 writes the clipboard, OSC 0 the
 * title, CSI 2J clears the screen, DSR and DECRQSS make it type replies into
 * the shell's input, C1 controls act as ESC sequences on many terminals and
 * bidirectional overrides make text read as something else.  Everything
 * corral shows on a terminal that it did not write itself goes through one
 * of the two functions here; --json output and files keep the exact bytes.
 * Both are pure functions of their input and thread-safe.
 */
#ifndef CORRAL_TERMSAFE_H
#define CORRAL_TERMSAFE_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* Text made inert: valid UTF-8 with no control characters but '\n' and
 * '\t'.  C0 controls and DEL become caret notation ("^[" for ESC, "^G" for
 * BEL, "^M" for a lone CR; "\r\n" becomes "\n"); invalid UTF-8, NUL, C1
 * controls (U+0080-U+009F) and the bidirectional overrides and isolates
 * (U+202A-U+202E, U+2066-U+2069) become U+FFFD.  malloc'd; *ret_len
 * (optional) is its length; NULL on allocation failure. */
CORRAL_HIDDEN char *term_sanitize(const char *text, size_t len, size_t *ret_len);

/* A program's output on its way to a terminal, chunk by chunk.  Kept as
 * they are: printable UTF-8, '\n', '\t', '\r' and '\b' (progress bars) and
 * SGR colour sequences (ESC [ digits ; : m, at most 32 bytes); everything
 * else is made inert as term_sanitize() does.  A UTF-8 character or an SGR
 * sequence split across chunks is held back until the next one completes
 * it (at most a few bytes). */
struct term_filter {
        unsigned char held[40];
        size_t n_held;
};
/* Filter data and write it to fd (write_all); -1 with errno when writing
 * failed. */
CORRAL_HIDDEN int term_filter_write(struct term_filter *f, int fd, const char *data, size_t len);
/* At the end of the stream: write what is held back, made inert. */
CORRAL_HIDDEN int term_filter_flush(struct term_filter *f, int fd);

#endif
