/* approve.c: the approval gate (see approve.h).
 *
 * One question at a time (a run runs one step at a time).  The asking
 * thread waits in poll() on an eventfd that an answer writes, and on the
 * run's cancel fd, with the gate's timeout; the answer itself is kept
 * under the gate's lock, so a front end that answers from inside the
 * approval_request event's subscriber (the CLI's terminal) is seen at
 * once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "approve.h"

struct approval_gate {
        struct approve_settings s;
        trace *tr;
        int cancel_fd;
        int wake_fd;             /* eventfd: an answer came */
        pthread_mutex_t lock;
        /* Under lock: */
        unsigned asked;          /* questions asked so far; the pending one is number asked */
        json_t *pending;         /* the question waiting, or NULL */
        double asked_at;         /* monotonic ms */
        bool answered;
        struct approval_answer answer;
        unsigned approved, denied, edited, timed_out;
};

const char *approve_mode_to_string(enum approve_mode m)
{
        switch (m) {
        case APPROVE_NEVER:
                return "never";
        case APPROVE_RISKY:
                return "risky";
        case APPROVE_ALWAYS:
                return "always";
        default:
                return "unknown";
        }
}

int approve_mode_from_string(const char *s, enum approve_mode *ret)
{
        static const enum approve_mode all[] = { APPROVE_NEVER, APPROVE_RISKY, APPROVE_ALWAYS };
        for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
                if (strcmp(s, approve_mode_to_string(all[i])) == 0) {
                        *ret = all[i];
                        return 0;
                }
        return -1;
}

const char *approval_decision_to_string(enum approval_decision d)
{
        switch (d) {
        case APPROVAL_APPROVE:
                return "approve";
        case APPROVAL_DENY:
                return "deny";
        case APPROVAL_EDIT:
                return "edit";
        default:
                return "unknown";
        }
}

int approval_decision_from_string(const char *s, enum approval_decision *ret)
{
        static const enum approval_decision all[] = { APPROVAL_APPROVE, APPROVAL_DENY, APPROVAL_EDIT };
        for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
                if (strcmp(s, approval_decision_to_string(all[i])) == 0) {
                        *ret = all[i];
                        return 0;
                }
        return -1;
}

void approve_settings_init(struct approve_settings *s)
{
        *s = (struct approve_settings){ .mode = APPROVE_NEVER, .timeout_s = APPROVE_TIMEOUT_DEFAULT_S };
}

void approval_answer_release(struct approval_answer *a)
{
        free(a->reason);
        free(a->code);
        memset(a, 0, sizeof(*a));
}

int approval_gate_new(const struct approve_settings *s, trace *tr, int cancel_fd, struct approval_gate **ret,
                      corral_error **ret_err)
{
        if (!(s->timeout_s > 0))
                return corral_usage_field(ret_err, "approve_timeout", "the approval timeout must be more than 0 "
                                                                      "seconds");
        struct approval_gate *g = calloc(1, sizeof(*g));
        if (g == NULL)
                return corral_fail(ret_err, ENOMEM, "cannot set up the approval");
        g->s = *s;
        g->tr = tr;
        g->cancel_fd = cancel_fd;
        g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (g->wake_fd < 0) {
                free(g);
                return corral_fail(ret_err, errno, "cannot set up the approval");
        }
        pthread_mutex_init(&g->lock, NULL);
        *ret = g;
        return 0;
}

void approval_gate_free(struct approval_gate *g)
{
        if (g == NULL)
                return;
        json_decref(g->pending);
        approval_answer_release(&g->answer);
        close(g->wake_fd);
        pthread_mutex_destroy(&g->lock);
        free(g);
}

enum approve_mode approval_gate_mode(const struct approval_gate *g)
{
        return g ? g->s.mode : APPROVE_NEVER;
}

json_t *approval_gate_describe(const struct approval_gate *g)
{
        return json_pack("{s:s, s:f, s:s, s:b}", "mode", approve_mode_to_string(g->s.mode), "timeout_s",
                         g->s.timeout_s, "default", g->s.default_approve ? "approve" : "deny", "unattended",
                         g->s.unattended);
}

json_t *approval_gate_summary(const struct approval_gate *g)
{
        struct approval_gate *m = (struct approval_gate *)g;
        pthread_mutex_lock(&m->lock);
        json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "mode", approve_mode_to_string(g->s.mode),
                              "requests", (int)g->asked, "approved", (int)g->approved, "denied", (int)g->denied,
                              "edited", (int)g->edited, "timed_out", (int)g->timed_out);
        pthread_mutex_unlock(&m->lock);
        return o;
}

bool approval_gate_wants(const struct approval_gate *g, const char *verdict)
{
        if (g == NULL)
                return false;
        switch (g->s.mode) {
        case APPROVE_ALWAYS:
                return true;
        case APPROVE_RISKY:
                /* A step no review looked at is as risky as a warned one. */
                return verdict == NULL || strcmp(verdict, "allow") != 0;
        case APPROVE_NEVER:
        default:
                return false;
        }
}

static void emit(struct approval_gate *g, const char *type, json_t *ev)
{
        if (g->tr)
                trace_emit(g->tr, type, ev);
        else
                json_decref(ev);
}

/* Wait for an answer, the timeout or a cancel: 1 answered, 0 timed out,
 * -1 cancelled. */
static int wait_answer(struct approval_gate *g, double deadline_ms)
{
        for (;;) {
                pthread_mutex_lock(&g->lock);
                bool answered = g->answered;
                pthread_mutex_unlock(&g->lock);
                if (answered)
                        return 1;
                double left = deadline_ms - monotonic_ms();
                if (left <= 0)
                        return 0;
                struct pollfd p[2] = { { .fd = g->wake_fd, .events = POLLIN }, { .fd = g->cancel_fd, .events = POLLIN } };
                int n = poll(p, g->cancel_fd >= 0 ? 2 : 1, left > 1000 ? 1000 : (int)left + 1);
                if (n > 0 && (p[1].revents & POLLIN) && g->cancel_fd >= 0)
                        return -1;
                if (n > 0 && (p[0].revents & POLLIN)) {
                        uint64_t v;
                        ssize_t r = read(g->wake_fd, &v, sizeof(v));
                        (void)r;
                }
        }
}

int approval_gate_ask(struct approval_gate *g, unsigned iteration, const char *lang, const char *code,
                      const json_t *review, struct approval_answer *ret)
{
        memset(ret, 0, sizeof(*ret));
        json_t *findings = json_object_get(review, "findings");
        const char *verdict = json_string_value(json_object_get(review, "verdict"));
        pthread_mutex_lock(&g->lock);
        unsigned n = ++g->asked;
        json_decref(g->pending);
        g->pending = json_pack("{s:i, s:i, s:s, s:s, s:{s:s?, s:O?}, s:f, s:s}", "n", (int)n, "iteration",
                               (int)iteration, "lang", lang, "code", code, "review", "verdict", verdict, "findings",
                               findings, "timeout_s", g->s.timeout_s, "default",
                               g->s.default_approve ? "approve" : "deny");
        g->answered = false;
        approval_answer_release(&g->answer);
        g->asked_at = monotonic_ms();
        json_t *ev = g->pending ? json_deep_copy(g->pending) : NULL;
        pthread_mutex_unlock(&g->lock);
        if (ev == NULL) {
                ret->decision = APPROVAL_DENY;
                snprintf(ret->who, sizeof(ret->who), "corral");
                return -1;
        }
        if (g->s.unattended)
                json_object_set_new(ev, "unattended", json_true());
        emit(g, "approval_request", ev);

        int got = g->s.unattended ? 0 : wait_answer(g, g->asked_at + g->s.timeout_s * 1000);
        pthread_mutex_lock(&g->lock);
        double waited = monotonic_ms() - g->asked_at;
        if (g->answered) {
                *ret = g->answer;
                memset(&g->answer, 0, sizeof(g->answer));
        } else if (g->s.unattended) {
                ret->decision = APPROVAL_APPROVE;
                snprintf(ret->who, sizeof(ret->who), "replay");
        } else if (got < 0) {
                ret->cancelled = true;
                ret->decision = APPROVAL_DENY;
                snprintf(ret->who, sizeof(ret->who), "cancel");
        } else {
                ret->decision = g->s.default_approve ? APPROVAL_APPROVE : APPROVAL_DENY;
                snprintf(ret->who, sizeof(ret->who), "timeout");
                if (!g->s.default_approve)
                        ret->reason = strdup("no one answered within the approval timeout");
                g->timed_out++;
        }
        /* Answered, timed out or cancelled: no later answer is taken. */
        g->answered = true;
        json_decref(g->pending);
        g->pending = NULL;
        if (!ret->cancelled) {
                if (ret->decision == APPROVAL_APPROVE)
                        g->approved++;
                else if (ret->decision == APPROVAL_DENY)
                        g->denied++;
                else
                        g->edited++;
        }
        pthread_mutex_unlock(&g->lock);
        emit(g, "approval", json_pack("{s:i, s:i, s:s, s:s, s:s?, s:s?, s:b, s:f}", "n", (int)n, "iteration",
                                      (int)iteration, "decision", approval_decision_to_string(ret->decision), "who",
                                      ret->who, "reason", ret->reason, "code", ret->code, "cancelled",
                                      ret->cancelled, "wait_ms", round_ms(waited)));
        return 0;
}

json_t *approval_gate_pending(struct approval_gate *g)
{
        if (g == NULL)
                return NULL;
        pthread_mutex_lock(&g->lock);
        json_t *p = g->pending && !g->answered ? json_deep_copy(g->pending) : NULL;
        if (p)
                json_object_set_new(p, "waited_ms", json_real(round_ms(monotonic_ms() - g->asked_at)));
        pthread_mutex_unlock(&g->lock);
        return p;
}

int approval_gate_answer(struct approval_gate *g, unsigned n, const char *decision, const char *reason,
                         const char *code, const char *who, corral_error **ret_err)
{
        enum approval_decision d;
        if (approval_decision_from_string(decision, &d) < 0)
                return corral_usage(ret_err, "the decision '%s' is not one of approve, deny, edit",
                                          decision ? decision : "");
        if (reason && (strlen(reason) > APPROVE_REASON_MAX || !utf8_valid(reason, strlen(reason))))
                return corral_usage(ret_err, "the reason must be UTF-8 text of at most %d bytes",
                                          APPROVE_REASON_MAX);
        if (d == APPROVAL_EDIT) {
                if (code == NULL || code[strspn(code, " \t\r\n")] == '\0')
                        return corral_usage(ret_err, "an edit needs the code to run instead");
                if (strlen(code) > APPROVE_CODE_MAX || !utf8_valid(code, strlen(code)))
                        return corral_usage(ret_err, "the edited code must be UTF-8 text of at "
                                                                   "most %u KiB", APPROVE_CODE_MAX >> 10);
        }
        if (g == NULL)
                return corral_make_error(ret_err, CORRAL_ERR_NOT_FOUND, 0, "this run does not ask for approval");
        pthread_mutex_lock(&g->lock);
        int rc = 0;
        if (n == 0 || n > g->asked) {
                rc = corral_make_error(ret_err, CORRAL_ERR_NOT_FOUND, 0, "the run has asked no approval %u", n);
        } else if (n < g->asked || g->answered) {
                rc = corral_make_error(ret_err, CORRAL_ERR_BUSY, 0, "approval %u was already answered or timed "
                                                                    "out", n);
        } else {
                struct approval_answer *a = &g->answer;
                approval_answer_release(a);
                a->decision = d;
                a->reason = reason && *reason ? strdup(reason) : NULL;
                a->code = d == APPROVAL_EDIT ? strdup(code) : NULL;
                snprintf(a->who, sizeof(a->who), "%s", who ? who : "api");
                if ((reason && *reason && a->reason == NULL) || (d == APPROVAL_EDIT && a->code == NULL)) {
                        approval_answer_release(a);
                        rc = corral_fail(ret_err, ENOMEM, "cannot take the answer");
                } else {
                        g->answered = true;
                }
        }
        pthread_mutex_unlock(&g->lock);
        if (rc == 0) {
                uint64_t one = 1;
                ssize_t w = write(g->wake_fd, &one, sizeof(one));
                (void)w;
        }
        return rc;
}

int approval_gate_step(struct approval_gate *g, unsigned iteration, const char *lang, const char *code,
                       const json_t *review, char **ret_code, char **ret_note)
{
        struct approval_answer a;
        *ret_code = NULL;
        *ret_note = NULL;
        approval_gate_ask(g, iteration, lang, code, review, &a);
        int rc = 0;
        const char *what = strcmp(lang, "python") == 0 ? "code" : "command";
        if (a.cancelled) {
                rc = 2;
                if (asprintf(ret_note, "error: the run was cancelled while this %s waited for approval; nothing "
                                       "ran", what) < 0)
                        *ret_note = NULL;
        } else if (a.decision == APPROVAL_DENY) {
                rc = 1;
                if (asprintf(ret_note, "error: the user did not approve this %s, so nothing ran.%s%s%s Take the "
                                       "reason into account: change your approach, or give your final answer "
                                       "with what you have.", what,
                             a.reason ? " The reason given: \"" : "", a.reason ? a.reason : "",
                             a.reason ? "\"." : "") < 0)
                        *ret_note = NULL;
        } else if (a.decision == APPROVAL_EDIT) {
                *ret_code = TAKE_PTR(a.code);
        }
        approval_answer_release(&a);
        return rc;
}

void approval_note_edit(const char *lang, const char *edited, char **content)
{
        char *both = NULL;
        if (asprintf(&both, "The user edited your %s before it ran; this ran instead:\n```%s\n%s\n```\n%s",
                     strcmp(lang, "python") == 0 ? "code" : "command", strcmp(lang, "python") == 0 ? "python" : "bash",
                     edited, *content) >= 0) {
                free(*content);
                *content = both;
        }
}
