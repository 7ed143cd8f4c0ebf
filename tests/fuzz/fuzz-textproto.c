/* fuzz-textproto.c: the text protocol's fenced-block finder
 * (src/agent/textproto.c) on model replies.
 *
 * Invariants: no crash or leak; when a block is found its language is
 * python or bash and its code is a substring of the reply that starts right
 * after the opening fence's line. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/agent-internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *reply = strndup((const char *)data, size);
        if (reply == NULL)
                return 0;
        struct text_block b;
        int r = textproto_find_block(reply, &b);
        FUZZ_ASSERT(r == 0 || r == 1, "returned %d", r);
        if (r == 1) {
                FUZZ_ASSERT(strcmp(b.lang, "python") == 0 || strcmp(b.lang, "bash") == 0, "lang %s", b.lang);
                const char *at = *b.code ? strstr(reply, b.code) : reply;
                FUZZ_ASSERT(at != NULL, "code is not part of the reply");
                FUZZ_ASSERT(at == reply || at[-1] == '\n' || *b.code == '\0', "code does not start a line");
                text_block_release(&b);
        }
        free(reply);
        return 0;
}
