/* test-approve.c: the approval gate (src/agent/approve.h): a question
 * answered from another thread, the timeout and its default, a cancel,
 * the answers that are refused (not asked, answered, bad), the modes and
 * the unattended gate of a replay. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../../src/agent/approve.h"
#include "harness.h"

static struct approval_gate *gate_new(enum approve_mode mode, double timeout_s, bool dflt, bool unattended,
                                      int cancel_fd)
{
        struct approve_settings s;
        approve_settings_init(&s);
        s.mode = mode;
        s.timeout_s = timeout_s;
        s.default_approve = dflt;
        s.unattended = unattended;
        struct approval_gate *g = NULL;
        corral_error *err = NULL;
        if (approval_gate_new(&s, NULL, cancel_fd, &g, &err) < 0)
                corral_error_free(err);
        return g;
}

struct answerer {
        struct approval_gate *g;
        const char *decision, *reason, *code;
        int rc;
        json_t *seen;
};

/* Waits for the question, then answers it. */
static void *answer_thread(void *arg)
{
        struct answerer *a = arg;
        for (int i = 0; i < 2000 && a->seen == NULL; i++) {
                a->seen = approval_gate_pending(a->g);
                if (a->seen == NULL)
                        usleep(1000);
        }
        corral_error *err = NULL;
        a->rc = approval_gate_answer(a->g, 1, a->decision, a->reason, a->code, "test", &err);
        corral_error_free(err);
        return NULL;
}

TEST(modes)
{
        enum approve_mode m;
        CHECK(approve_mode_from_string("risky", &m) == 0 && m == APPROVE_RISKY);
        CHECK(approve_mode_from_string("sometimes", &m) < 0);
        struct approval_gate *risky = gate_new(APPROVE_RISKY, 1, false, false, -1);
        struct approval_gate *always = gate_new(APPROVE_ALWAYS, 1, false, false, -1);
        CHECK(!approval_gate_wants(risky, "allow") && approval_gate_wants(risky, "warn"));
        CHECK(approval_gate_wants(risky, NULL)); /* no review: asked */
        CHECK(approval_gate_wants(always, "allow"));
        CHECK(!approval_gate_wants(NULL, "warn"));
        approval_gate_free(risky);
        approval_gate_free(always);
        CHECK(gate_new(APPROVE_ALWAYS, 0, false, false, -1) == NULL); /* a timeout of 0 is refused */
}

TEST(answered_from_another_thread)
{
        struct approval_gate *g = gate_new(APPROVE_ALWAYS, 20, false, false, -1);
        struct answerer a = { .g = g, .decision = "edit", .code = "print(2)" };
        pthread_t t;
        pthread_create(&t, NULL, answer_thread, &a);
        json_t *review = json_pack("{s:s, s:[]}", "verdict", "allow", "findings");
        struct approval_answer ans;
        CHECK(approval_gate_ask(g, 3, "python", "print(1)", review, &ans) == 0);
        pthread_join(t, NULL);
        CHECK_INT(a.rc, 0);
        CHECK_INT(ans.decision, APPROVAL_EDIT);
        CHECK_STR(ans.code, "print(2)");
        CHECK_STR(ans.who, "test");
        CHECK_STR(json_string_value(json_object_get(a.seen, "code")), "print(1)");
        CHECK_INT(json_integer_value(json_object_get(a.seen, "iteration")), 3);
        CHECK_STR(json_string_value(json_object_get(json_object_get(a.seen, "review"), "verdict")), "allow");
        CHECK(approval_gate_pending(g) == NULL);
        /* Answered: a second answer is busy, a question never asked not found. */
        corral_error *err = NULL;
        CHECK(approval_gate_answer(g, 1, "approve", NULL, NULL, "test", &err) < 0 && err->kind == CORRAL_ERR_BUSY);
        corral_error_clear(&err);
        CHECK(approval_gate_answer(g, 2, "approve", NULL, NULL, "test", &err) < 0 &&
              err->kind == CORRAL_ERR_NOT_FOUND);
        corral_error_clear(&err);
        CHECK(approval_gate_answer(g, 1, "maybe", NULL, NULL, "test", &err) < 0 && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        CHECK(approval_gate_answer(g, 1, "edit", NULL, "  \n", "test", &err) < 0 && err->kind == CORRAL_ERR_USAGE);
        corral_error_clear(&err);
        json_t *sum = approval_gate_summary(g);
        CHECK_INT(json_integer_value(json_object_get(sum, "edited")), 1);
        json_decref(sum);
        json_decref(a.seen);
        json_decref(review);
        approval_answer_release(&ans);
        approval_gate_free(g);
}

TEST(step_deny_carries_the_reason)
{
        struct approval_gate *g = gate_new(APPROVE_ALWAYS, 20, false, false, -1);
        struct answerer a = { .g = g, .decision = "deny", .reason = "not on my data" };
        pthread_t t;
        pthread_create(&t, NULL, answer_thread, &a);
        char *code = NULL, *note = NULL;
        CHECK_INT(approval_gate_step(g, 1, "bash", "rm -rf output", NULL, &code, &note), 1);
        pthread_join(t, NULL);
        CHECK(code == NULL && note && strstr(note, "did not approve this command") && strstr(note, "not on my data"));
        free(note);
        json_decref(a.seen);
        approval_gate_free(g);
}

TEST(timeout_takes_the_default)
{
        struct approval_gate *g = gate_new(APPROVE_ALWAYS, 0.05, false, false, -1);
        struct approval_answer ans;
        approval_gate_ask(g, 1, "python", "1", NULL, &ans);
        CHECK_INT(ans.decision, APPROVAL_DENY);
        CHECK_STR(ans.who, "timeout");
        CHECK(ans.reason && strstr(ans.reason, "timeout"));
        approval_answer_release(&ans);
        corral_error *err = NULL;
        CHECK(approval_gate_answer(g, 1, "approve", NULL, NULL, "late", &err) < 0 && err->kind == CORRAL_ERR_BUSY);
        corral_error_free(err);
        approval_gate_free(g);
        g = gate_new(APPROVE_ALWAYS, 0.05, true, false, -1);
        approval_gate_ask(g, 1, "python", "1", NULL, &ans);
        CHECK_INT(ans.decision, APPROVAL_APPROVE);
        approval_answer_release(&ans);
        json_t *sum = approval_gate_summary(g);
        CHECK_INT(json_integer_value(json_object_get(sum, "timed_out")), 1);
        json_decref(sum);
        approval_gate_free(g);
}

TEST(cancel_and_unattended)
{
        int cfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        uint64_t one = 1;
        CHECK(write(cfd, &one, sizeof(one)) == sizeof(one));
        struct approval_gate *g = gate_new(APPROVE_ALWAYS, 20, true, false, cfd);
        char *code = NULL, *note = NULL;
        CHECK_INT(approval_gate_step(g, 1, "python", "1", NULL, &code, &note), 2);
        CHECK(note && strstr(note, "cancelled"));
        free(note);
        approval_gate_free(g);
        close(cfd);
        g = gate_new(APPROVE_ALWAYS, 20, false, true, -1);
        struct approval_answer ans;
        approval_gate_ask(g, 1, "python", "1", NULL, &ans);
        CHECK_INT(ans.decision, APPROVAL_APPROVE);
        CHECK_STR(ans.who, "replay");
        approval_answer_release(&ans);
        approval_gate_free(g);
}

int main(void)
{
        RUN(modes);
        RUN(answered_from_another_thread);
        RUN(step_deny_carries_the_reason);
        RUN(timeout_takes_the_default);
        RUN(cancel_and_unattended);
        return DONE();
}
