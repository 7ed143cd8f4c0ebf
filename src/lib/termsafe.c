/* termsafe.c: text made safe for a terminal (termsafe.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "termsafe.h"

#define SGR_MAX 32 /* ESC [ ... m, longer is not a colour */

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Bytes a UTF-8 lead byte announces (2-4), or 0 when c cannot lead one. */
static size_t utf8_want(unsigned char c)
{
        return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* The valid sequence at p (2-4 bytes, all present) or 0. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
        size_t n = utf8_want(p[0]);
        if (n == 0 || left < n)
                return 0;
        uint32_t cp = p[0] & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

/* p[0..left) starts a sequence that more bytes could complete. */
static bool utf8_incomplete(const unsigned char *p, size_t left)
{
        size_t n = utf8_want(p[0]);
        if (n == 0 || left >= n)
                return false;
        for (size_t i = 1; i < left; i++)
                if ((p[i] & 0xc0) != 0x80)
                        return false;
        return true;
}

/* Length of the SGR sequence at p (ESC [ params m), 0 when it is none, or
 * SIZE_MAX when the bytes so far could still become one. */
static size_t sgr_len(const unsigned char *p, size_t left)
{
        if (left < 2)
                return SIZE_MAX;
        if (p[1] != '[')
                return 0;
        for (size_t k = 2; k < left && k < SGR_MAX; k++) {
                if (p[k] == 'm')
                        return k + 1;
                if (!((p[k] >= '0' && p[k] <= '9') || p[k] == ';' || p[k] == ':'))
                        return 0;
        }
        return left < SGR_MAX ? SIZE_MAX : 0;
}

/* Clean p[0..n) into out (room for 3 * n bytes).  stream: keep CR, BS and
 * SGR sequences, and stop before a sequence the next chunk may complete
 * (unless final).  Returns the bytes written; *ret_used the input bytes
 * taken. */
static size_t clean(const unsigned char *p, size_t n, bool stream, bool final, char *out, size_t *ret_used)
{
        size_t i = 0, o = 0;
        while (i < n) {
                unsigned char c = p[i];
                if (c == '\n' || c == '\t' || (stream && (c == '\r' || c == '\b'))) {
                        out[o++] = (char)c;
                        i++;
                } else if (c == '\r' && i + 1 < n && p[i + 1] == '\n') {
                        i++; /* "\r\n" is "\n" */
                } else if (c == 0x1b && stream) {
                        size_t k = sgr_len(p + i, n - i);
                        if (k == SIZE_MAX && !final)
                                break;
                        if (k != SIZE_MAX && k > 0) {
                                memcpy(out + o, p + i, k);
                                o += k;
                                i += k;
                        } else {
                                out[o++] = '^';
                                out[o++] = '[';
                                i++;
                        }
                } else if (c != 0 && (c < 0x20 || c == 0x7f)) {
                        out[o++] = '^';
                        out[o++] = c == 0x7f ? '?' : (char)(c + 0x40);
                        i++;
                } else if (c < 0x80 && c != 0) {
                        out[o++] = (char)c;
                        i++;
                } else {
                        size_t k = c ? utf8_len(p + i, n - i) : 0;
                        if (k == 0 && !final && utf8_incomplete(p + i, n - i))
                                break;
                        /* C1 controls, and the bidirectional overrides and
                         * isolates, are replaced like invalid bytes. */
                        bool c1 = k == 2 && c == 0xc2 && p[i + 1] <= 0x9f;
                        bool bidi = k == 3 && c == 0xe2 &&
                                    ((p[i + 1] == 0x80 && p[i + 2] >= 0xaa && p[i + 2] <= 0xae) ||
                                     (p[i + 1] == 0x81 && p[i + 2] >= 0xa6 && p[i + 2] <= 0xa9));
                        if (k == 0 || c1 || bidi) {
                                memcpy(out + o, replacement, 3);
                                o += 3;
                                i += k ? k : 1;
                        } else {
                                memcpy(out + o, p + i, k);
                                o += k;
                                i += k;
                        }
                }
        }
        *ret_used = i;
        return o;
}

char *term_sanitize(const char *text, size_t len, size_t *ret_len)
{
        if (text == NULL)
                len = 0;
        if (len > (SIZE_MAX - 1) / 3)
                return NULL;
        char *out = malloc(len * 3 + 1);
        if (out == NULL)
                return NULL;
        size_t used;
        size_t o = clean((const unsigned char *)(text ? text : ""), len, false, true, out, &used);
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

static int filter(struct term_filter *f, int fd, const char *data, size_t len, bool final)
{
        size_t n = f->n_held + len;
        if (n > (SIZE_MAX - 1) / 4) {
                errno = ENOMEM;
                return -1;
        }
        /* The held bytes and the new ones, then room for the output. */
        cleanup_free unsigned char *buf = malloc(n + 3 * n + 1);
        if (buf == NULL)
                return -1;
        memcpy(buf, f->held, f->n_held);
        if (len)
                memcpy(buf + f->n_held, data, len);
        char *out = (char *)buf + n;
        size_t used;
        size_t o = clean(buf, n, true, final, out, &used);
        /* Only an unfinished UTF-8 character or SGR sequence stays. */
        f->n_held = n - used;
        memcpy(f->held, buf + used, f->n_held);
        return o ? write_all(fd, out, o) : 0;
}

int term_filter_write(struct term_filter *f, int fd, const char *data, size_t len)
{
        return filter(f, fd, data, len, false);
}

int term_filter_flush(struct term_filter *f, int fd)
{
        return f->n_held ? filter(f, fd, NULL, 0, true) : 0;
}
