/* fuzz-review.c: the safety review (src/review/) on arbitrary bytes, as
 * Python and as bash, under the strict and standard levels.
 *
 * Invariants: no crash, leak or hang; every finding has a rule of its
 * language, a position and a message naming its rule; strict rejects
 * whenever standard does. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/review/review.h"
#include "fuzz.h"

static struct review_policy *standard, *strict;

static bool review_one(enum review_lang lang, const struct review_policy *p, const uint8_t *data, size_t size)
{
        struct review_result r;
        corral_error *err = NULL;
        int rc = review_code(lang, (const char *)data, size, p, &r, &err);
        FUZZ_ASSERT(rc == 0, "review failed: %s", err ? err->msg : "?");
        for (size_t i = 0; i < r.n_findings; i++) {
                const struct review_finding *f = &r.findings[i];
                FUZZ_ASSERT(f->line >= 1 && f->column >= 1, "finding at %u:%u", f->line, f->column);
                /* Python holds only Python; bash may hold Python (python3 -c). */
                FUZZ_ASSERT(strncmp(f->rule, "PY-", 3) == 0 || (lang == REVIEW_BASH && strncmp(f->rule, "SH-", 3) == 0),
                            "rule %s", f->rule);
                FUZZ_ASSERT(strstr(f->message, f->rule) != NULL, "message without its rule: %s", f->message);
                FUZZ_ASSERT(f->severity == REVIEW_SEV_WARN || f->severity == REVIEW_SEV_REJECT, "severity %d",
                            f->severity);
        }
        json_t *j = review_result_to_json(&r);
        FUZZ_ASSERT(j != NULL, "no JSON");
        json_decref(j);
        free(review_result_text(&r));
        bool rej = r.rejected;
        review_result_release(&r);
        return rej;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (standard == NULL) {
                standard = review_policy_new(REVIEW_LEVEL_STANDARD);
                strict = review_policy_new(REVIEW_LEVEL_STRICT);
        }
        for (int lang = REVIEW_PYTHON; lang <= REVIEW_BASH; lang++) {
                bool std_rej = review_one((enum review_lang)lang, standard, data, size);
                bool strict_rej = review_one((enum review_lang)lang, strict, data, size);
                FUZZ_ASSERT(!std_rej || strict_rej, "standard rejects what strict lets through");
        }
        return 0;
}
