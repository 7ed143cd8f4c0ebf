/* fuzz-session-frames.c: what a session's supervisor does with the bytes a
 * jail sends on the control stream (src/session/session.c): frames taken
 * off a buffer with session_frame_take(), "result" frames turned into a
 * session_result (session_result_from_frame()) and that printed as the
 * result object (session_result_to_json()).  User code shares the driver's
 * process, so every byte here is the jail's to choose.
 *
 * Input: the stream itself, delivered in two pieces split where the first
 * byte says, as a pipe may cut it.
 *
 * Invariants: taking never grows the buffer and stops at the first
 * malformed frame; a taken frame is a JSON object; a result's value is null
 * or {"text", "type"} strings with at most "html" and "markdown" strings and
 * "json" an object or array, each within 1 MiB; its error null or five
 * strings (name and value equal to type and message); its figures at most
 * 256 objects with only the documented keys, "png" the base64 of something
 * that starts as a PNG; the printed result parses back (no duplicate keys)
 * and is valid UTF-8. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/session/session.h"
#include "fuzz.h"

static void check_result(json_t *frame)
{
        struct session_result r;
        memset(&r, 0, sizeof(r));
        session_result_from_frame(&r, frame);
        session_result_from_frame(&r, frame); /* twice: nothing may leak or double */
        FUZZ_ASSERT(r.figures != NULL && json_array_size(r.figures) <= 256);
        size_t i;
        json_t *fig;
        json_array_foreach(r.figures, i, fig) {
                const char *key;
                json_t *v;
                json_object_foreach(fig, key, v) {
                        bool num = strcmp(key, "width") == 0 || strcmp(key, "height") == 0 ||
                                   strcmp(key, "bytes") == 0 || strcmp(key, "preview_width") == 0 ||
                                   strcmp(key, "preview_height") == 0 || strcmp(key, "preview_bytes") == 0;
                        bool str = strcmp(key, "path") == 0 || strcmp(key, "error") == 0 ||
                                   strcmp(key, "preview") == 0 || strcmp(key, "preview_error") == 0 ||
                                   strcmp(key, "png") == 0 || strcmp(key, "png_error") == 0;
                        bool flag = strcmp(key, "saved_by_code") == 0;
                        FUZZ_ASSERT((num && json_is_integer(v) && json_integer_value(v) >= 0) ||
                                            (str && json_is_string(v)) || (flag && json_is_true(v)),
                                    "figure key '%s' kept", key);
                }
                const char *png = json_string_value(json_object_get(fig, "png"));
                if (png)
                        FUZZ_ASSERT(strncmp(png, "iVBORw0KGgo", 11) == 0 && strlen(png) % 4 == 0 &&
                                            strspn(png, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                        "0123456789+/=") == strlen(png) &&
                                            json_object_get(fig, "png_error") == NULL,
                                    "a png kept that is not base64 of a PNG");
        }
        if (r.value) {
                FUZZ_ASSERT(json_is_string(json_object_get(r.value, "text")) &&
                            json_is_string(json_object_get(r.value, "type")));
                const char *key;
                json_t *v;
                json_object_foreach(r.value, key, v) {
                        bool str = strcmp(key, "text") == 0 || strcmp(key, "type") == 0 ||
                                   strcmp(key, "html") == 0 || strcmp(key, "markdown") == 0;
                        bool doc = strcmp(key, "json") == 0;
                        FUZZ_ASSERT((str && json_is_string(v) && json_string_length(v) <= (1u << 20) + 2) ||
                                            (doc && (json_is_object(v) || json_is_array(v))),
                                    "value key '%s' kept", key);
                }
        }
        if (r.error) {
                FUZZ_ASSERT(json_object_size(r.error) == 5 && json_is_string(json_object_get(r.error, "traceback")));
                FUZZ_ASSERT(json_equal(json_object_get(r.error, "name"), json_object_get(r.error, "type")) &&
                            json_equal(json_object_get(r.error, "value"), json_object_get(r.error, "message")));
        }

        json_t *j = session_result_to_json(&r);
        FUZZ_ASSERT(j != NULL, "session_result_to_json returned NULL");
        char *s = json_dumps(j, JSON_COMPACT);
        FUZZ_ASSERT(s != NULL);
        FUZZ_ASSERT(utf8_valid(s, strlen(s)), "the result is not valid UTF-8");
        json_error_t jerr;
        json_t *back = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
        FUZZ_ASSERT(back != NULL, "json_loads: %s", jerr.text);
        FUZZ_ASSERT(json_equal(back, j));
        json_decref(back);
        free(s);
        json_decref(j);
        session_result_release(&r);
}

/* Take every whole frame of buf; returns -1 once the stream is broken. */
static int drain(char *buf, size_t *len)
{
        for (;;) {
                size_t before = *len;
                json_t *f = NULL;
                int rc = session_frame_take(buf, len, &f);
                FUZZ_ASSERT(*len <= before);
                if (rc <= 0) {
                        FUZZ_ASSERT(f == NULL);
                        FUZZ_ASSERT(rc < 0 || *len == before);
                        return rc;
                }
                FUZZ_ASSERT(json_is_object(f) && *len < before);
                const char *t = json_string_value(json_object_get(f, "t"));
                if (t && strcmp(t, "result") == 0)
                        check_result(f);
                json_decref(f);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        size_t split = (size_t)data[0] * (size - 1) / 255;
        const uint8_t *stream = data + 1;
        size_t n = size - 1;
        char *buf = malloc(n + 1);
        FUZZ_ASSERT(buf != NULL);
        size_t len = 0;
        memcpy(buf, stream, split);
        len = split;
        if (drain(buf, &len) == 0) {
                memcpy(buf + len, stream + split, n - split);
                len += n - split;
                drain(buf, &len);
        }
        free(buf);
        return 0;
}
