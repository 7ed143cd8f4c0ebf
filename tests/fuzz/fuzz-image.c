/* fuzz-image.c: a figure's rendering for the model, as the jail sends it.
 *
 * The session driver sends each preview as base64 in a result frame; corral
 * decodes it (chat_base64_decode, capped), checks it is a PNG of a known size
 * (chat_png_dimensions) and only then builds the user message with the image
 * (chat_image_message_new), which the context trimming may later replace by
 * text (chat_messages_drop_images).  The input is the base64 text.
 * Invariants: no crash or leak; a decode never returns more than the cap and
 * round-trips to the same bytes through the message's data URL; a PNG's
 * dimensions are non-zero; a message holds exactly one image part until it is
 * dropped, and none after. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/chat.h"
#include "fuzz.h"

#define CAP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        unsigned char *png = NULL;
        size_t len = 0;
        if (chat_base64_decode((const char *)data, size, CAP, &png, &len) < 0)
                return 0;
        FUZZ_ASSERT(len <= CAP, "decoded %zu bytes past the cap", len);
        uint32_t w = 0, h = 0;
        if (chat_png_dimensions(png, len, &w, &h) < 0) {
                free(png);
                return 0;
        }
        FUZZ_ASSERT(w > 0 && h > 0, "a PNG of %ux%u", w, h);

        struct chat_image img = { .png = png, .len = len, .detail = "low" };
        json_t *msg = chat_image_message_new("figures from the step above", &img, 1);
        FUZZ_ASSERT(msg != NULL);
        json_t *conv = json_array();
        FUZZ_ASSERT(conv != NULL && json_array_append(conv, msg) == 0);
        size_t url_bytes = 0;
        FUZZ_ASSERT(chat_messages_count_images(conv, 1, &url_bytes) == 1);

        /* The data URL carries the same bytes. */
        json_t *part = json_array_get(json_object_get(msg, "content"), 1);
        const char *url = json_string_value(json_object_get(json_object_get(part, "image_url"), "url"));
        const char *prefix = "data:image/png;base64,";
        FUZZ_ASSERT(url && strncmp(url, prefix, strlen(prefix)) == 0, "url %s", url ? url : "(none)");
        unsigned char *back = NULL;
        size_t back_len = 0;
        FUZZ_ASSERT(chat_base64_decode(url + strlen(prefix), strlen(url + strlen(prefix)), CAP, &back, &back_len) == 0);
        FUZZ_ASSERT(back_len == len && memcmp(back, png, len) == 0, "the data URL does not round-trip");
        free(back);

        FUZZ_ASSERT(chat_messages_drop_images(conv, 1, "fuzz") == 1);
        FUZZ_ASSERT(chat_messages_count_images(conv, 1, NULL) == 0);
        json_decref(msg);
        json_decref(conv);
        free(png);
        return 0;
}
