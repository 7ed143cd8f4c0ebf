/* fuzz-textproto.c: the text protocol's fenced-block finder
 * (src/agent/textproto.c) on model replies.
 *
 * Invariants: no crash or leak; when a block is found its language is
 * python or bash and its code is a substring of the reply starting at the
 * beginning of a line (the line after the opening fence). */
#define _GNU_SOURCE
#include <stdbool.h>
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
                /* Some occurrence of the code starts a line of the reply. */
                bool found = false;
                for (const char *at = reply; !found && (at = strstr(at, b.code)) != NULL; at++)
                        found = at == reply || at[-1] == '\n';
                FUZZ_ASSERT(found, "the code is not a run of whole lines of the reply");
                text_block_release(&b);
        }
        free(reply);
        return 0;
}
