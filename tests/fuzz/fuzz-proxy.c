/* fuzz-proxy.c: the parsers of the --net allow proxy (src/lib/proxy.c) on
 * bytes from the sandboxed program: the first byte picks one.
 *   0: net_request_parse, the proxy request head;
 *   1: net_tls_sni, the server name of a TLS ClientHello;
 *   2: net_allow_parse and net_allow_matches, an allow-list entry (the
 *      caller's, but cheap to cover) matched against a fixed host;
 *   3: net_mask_feed, bytes from a brokered host fed in pieces (the next
 *      byte picks their size): as long as the input, no value left in it,
 *      and the same whatever the pieces.
 *
 * Invariants: a head parsed whole (1) has head_len within the input and at
 * most NET_HEAD_MAX, a request line inside it, a non-empty method, a host
 * that is a literal or a name, a port > 0 and, for absolute form, a target
 * within the head starting with '/', '?' or '#' when not empty; -1 comes
 * with a reason; 0 only when the input is shorter than NET_HEAD_MAX.  The
 * SNI is NUL-terminated within the output and a valid name.  Every prefix of
 * an input whose name was found asks for more bytes or refuses, never finds
 * another name. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proxy.h"

static void request(const char *buf, size_t len)
{
        struct net_request rq;
        const char *why = NULL;
        int r = net_request_parse(buf, len, &rq, &why);
        FUZZ_ASSERT(r >= -1 && r <= 1);
        if (r == 0)
                FUZZ_ASSERT(len < NET_HEAD_MAX);
        if (r < 0)
                FUZZ_ASSERT(why != NULL && why[0] != '\0');
        if (r != 1)
                return;
        FUZZ_ASSERT(rq.head_len <= len && rq.head_len <= NET_HEAD_MAX + 3);
        FUZZ_ASSERT(rq.line_end <= rq.head_len);
        FUZZ_ASSERT(rq.method[0] != '\0' && strlen(rq.method) < sizeof(rq.method));
        FUZZ_ASSERT(rq.port > 0);
        FUZZ_ASSERT(rq.host[0] != '\0');
        if (!rq.connect) {
                FUZZ_ASSERT(rq.target_off + rq.target_len <= rq.line_end);
                if (rq.target_len)
                        FUZZ_ASSERT(strchr("/?#", buf[rq.target_off]) != NULL);
        }
}

static void sni(const uint8_t *buf, size_t len)
{
        char name[NET_HOST_MAX + 1];
        memset(name, 'X', sizeof(name));
        int r = net_tls_sni(buf, len, name, sizeof(name));
        FUZZ_ASSERT(r >= -2 && r <= 1);
        if (r != 1)
                return;
        FUZZ_ASSERT(memchr(name, '\0', sizeof(name)) != NULL);
        FUZZ_ASSERT(name[0] != '\0');
        for (size_t cut = len > 64 ? len - 64 : 0; cut < len; cut++) {
                char other[NET_HOST_MAX + 1];
                int p = net_tls_sni(buf, cut, other, sizeof(other));
                FUZZ_ASSERT(p != 1 || strcmp(other, name) == 0);
        }
}

static void entry(const char *text)
{
        struct net_allow_entry e;
        if (net_allow_parse(text, &e, NULL) < 0)
                return;
        FUZZ_ASSERT(e.host[0] != '\0');
        FUZZ_ASSERT(!(e.wildcard && e.literal));
        /* An entry always allows itself (a wildcard: a name beneath it). */
        char host[NET_HOST_MAX + 8];
        snprintf(host, sizeof(host), "%s%s", e.wildcard ? "x." : "", e.host);
        if (strlen(host) <= NET_HOST_MAX)
                FUZZ_ASSERT(net_allow_matches(&e, host, e.port ? e.port : 443));
        (void)net_allow_matches(&e, "example.com", 443);
        (void)net_allow_matches(&e, "127.0.0.1", 80);
}

static void mask_once(const char *buf, size_t len, size_t step, char *res)
{
        static const char *const values[] = { "Bearer s3cret", "zzzz", "aXa" };
        struct net_masker m = { .values = values, .n_values = 3 };
        char *out = malloc(NET_SECRET_MAX + len + 1);
        size_t got = 0;
        FUZZ_ASSERT(out != NULL);
        for (size_t off = 0; off < len;) {
                size_t k = len - off > step ? step : len - off;
                size_t n = net_mask_feed(&m, buf + off, k, out, false);
                memcpy(res + got, out, n);
                got += n;
                off += k;
        }
        size_t n = net_mask_feed(&m, "", 0, out, true);
        memcpy(res + got, out, n);
        FUZZ_ASSERT(got + n == len);
        for (size_t i = 0; i < 3; i++)
                FUZZ_ASSERT(memmem(res, len, values[i], strlen(values[i])) == NULL);
        free(out);
}

static void mask(const char *buf, size_t len)
{
        if (len < 1)
                return;
        size_t step = (unsigned char)buf[0] % 16 + 1;
        char *whole = malloc(len), *pieces = malloc(len);
        FUZZ_ASSERT(whole && pieces);
        mask_once(buf + 1, len - 1, len, whole);
        mask_once(buf + 1, len - 1, step, pieces);
        FUZZ_ASSERT(memcmp(whole, pieces, len - 1) == 0);
        free(whole);
        free(pieces);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > 4 * NET_HEAD_MAX)
                return 0;
        uint8_t which = data[0] % 4;
        data++;
        size--;
        char *copy = malloc(size + 1);
        if (copy == NULL)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';
        if (which == 0)
                request(copy, size);
        else if (which == 1)
                sni((const uint8_t *)copy, size);
        else if (which == 2)
                entry(copy);
        else
                mask(copy, size);
        free(copy);
        return 0;
}
