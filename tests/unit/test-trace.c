/* test-trace.c: the trace writer (file safety, stamping, redaction,
 * subscribers, write errors, threads) and the reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/lib/redact.h"
#include "../../src/trace/trace.h"
#include "../../src/workspace/dest.h"
#include "harness.h"

static char tmpdir[256];

static char *path_in(const char *name)
{
        char *p = NULL;
        if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
                abort();
        return p;
}

static char *slurp(const char *path)
{
        return read_file_at(AT_FDCWD, path, 1 << 20);
}

static void spit(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                abort();
        if (write_all(fd, text, strlen(text)) < 0)
                abort();
        fchmod(fd, mode);
        close(fd);
}

static unsigned mode_of(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return 07777;
        return st.st_mode & 07777;
}

/* As `corral run` opens it: its directory a destination (dest.h), made
 * 0700 when missing, the file beneath it. */
TEST(new_file_is_0600_and_parents_0700)
{
        cleanup_free char *p = path_in("a/b/run.jsonl");
        cleanup_free char *dir = path_in("a/b");
        trace *t = NULL;
        corral_error *err = NULL;
        struct ws_dest d;
        mode_t old = umask(0);
        CHECK(ws_dest_open(p, WS_DEST_FILE, "the trace", NULL, &d, &err) == 0);
        int dfd = ws_dest_dir(&d, 0700, &err);
        CHECK(dfd >= 0);
        CHECK(trace_open_at(dfd, d.name, p, NULL, &t, &err) == 0);
        close(dfd);
        ws_dest_release(&d);
        umask(old);
        CHECK_INT(mode_of(p), 0600);
        CHECK_INT(mode_of(dir), 0700);
        trace_close(t);
        corral_error_free(err);
}

TEST(existing_0644_file_truncated_and_0600)
{
        cleanup_free char *p = path_in("old.jsonl");
        spit(p, "old content that must go\n", 0644);
        CHECK_INT(mode_of(p), 0644);
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        CHECK_INT(mode_of(p), 0600);
        cleanup_free char *text = slurp(p);
        CHECK_STR(text, "");
        trace_emit(t, "notice", json_pack("{s:s}", "message", "hi"));
        trace_close(t);
        free(text);
        text = slurp(p);
        CHECK(text && strstr(text, "\"message\":\"hi\"") != NULL);
        CHECK(text && strstr(text, "old content") == NULL);
}

TEST(symlink_refused_target_untouched)
{
        cleanup_free char *target = path_in("target.txt");
        cleanup_free char *link = path_in("link.jsonl");
        spit(target, "precious\n", 0644);
        CHECK(symlink(target, link) == 0);
        trace *t = NULL;
        corral_error *err = NULL;
        CHECK(trace_open(link, NULL, &t, &err) < 0);
        CHECK(t == NULL);
        CHECK(err && strstr(err->msg, "symbolic link") != NULL);
        CHECK(err && strstr(err->msg, link) != NULL);
        cleanup_free char *text = slurp(target);
        CHECK_STR(text, "precious\n");
        CHECK_INT(mode_of(target), 0644);
        corral_error_free(err);

        /* A dangling symlink must not be followed to create its target either. */
        cleanup_free char *nowhere = path_in("nowhere.txt");
        cleanup_free char *dangling = path_in("dangling.jsonl");
        CHECK(symlink(nowhere, dangling) == 0);
        err = NULL;
        CHECK(trace_open(dangling, NULL, &t, &err) < 0);
        CHECK(access(nowhere, F_OK) < 0);
        corral_error_free(err);
}

TEST(fifo_directory_and_hard_link_refused)
{
        cleanup_free char *fifo = path_in("fifo.jsonl");
        CHECK(mkfifo(fifo, 0600) == 0);
        trace *t = NULL;
        corral_error *err = NULL;
        CHECK(trace_open(fifo, NULL, &t, &err) < 0); /* and does not block */
        CHECK(err && strstr(err->msg, "FIFO") != NULL);
        corral_error_free(err);

        err = NULL;
        CHECK(trace_open(tmpdir, NULL, &t, &err) < 0);
        CHECK(err && strstr(err->msg, "directory") != NULL);
        corral_error_free(err);

        cleanup_free char *orig = path_in("orig.txt");
        cleanup_free char *hard = path_in("hard.jsonl");
        spit(orig, "keep\n", 0644);
        CHECK(link(orig, hard) == 0);
        err = NULL;
        CHECK(trace_open(hard, NULL, &t, &err) < 0);
        CHECK(err && strstr(err->msg, "hard link") != NULL);
        cleanup_free char *text = slurp(orig);
        CHECK_STR(text, "keep\n");
        CHECK_INT(mode_of(orig), 0644);
        corral_error_free(err);
}

TEST(redact_values_keys_nested)
{
        const char *secrets[] = { "sk-SECRET123", "hunter2!", NULL };
        json_t *v = json_pack("{s:s, s:[s, {s:s}], s:i, s:s}", "key", "Bearer sk-SECRET123 here", "list",
                              "a hunter2! b", "sk-SECRET123", "nested sk-SECRET123sk-SECRET123", "n", 5, "plain",
                              "nothing to see");
        redact_json(v, secrets);
        CHECK_STR(json_string_value(json_object_get(v, "key")), "Bearer [REDACTED] here");
        json_t *list = json_object_get(v, "list");
        CHECK_STR(json_string_value(json_array_get(list, 0)), "a [REDACTED] b");
        json_t *inner = json_array_get(list, 1);
        CHECK(json_object_get(inner, "sk-SECRET123") == NULL);
        CHECK_STR(json_string_value(json_object_get(inner, "[REDACTED]")), "nested [REDACTED]");
        CHECK_INT(json_integer_value(json_object_get(v, "n")), 5);
        CHECK_STR(json_string_value(json_object_get(v, "plain")), "nothing to see");
        char *dump = json_dumps(v, JSON_COMPACT);
        CHECK(dump && strstr(dump, "SECRET") == NULL && strstr(dump, "hunter2") == NULL);
        free(dump);
        json_decref(v);
}

TEST(redact_key_order_and_collisions)
{
        const char *secrets[] = { "tokenAAAA", "tokenBBBB", NULL };
        json_t *v = json_pack("{s:i, s:i, s:i, s:i}", "first", 1, "tokenAAAA", 2, "tokenBBBB", 3, "last", 4);
        redact_json(v, secrets);
        CHECK_INT(json_object_size(v), 4); /* nothing lost */
        const char *order[4];
        size_t i = 0;
        const char *key;
        json_t *val;
        json_object_foreach (v, key, val)
                if (i < 4)
                        order[i++] = key;
        CHECK_STR(order[0], "first");
        CHECK_STR(order[1], "[REDACTED]");
        CHECK_STR(order[2], "[REDACTED] (2)");
        CHECK_STR(order[3], "last");
        CHECK_INT(json_integer_value(json_object_get(v, "[REDACTED] (2)")), 3);
        json_decref(v);
}

TEST(redact_overlapping_and_contained_secrets)
{
        /* One secret inside another: the longer is replaced whole. */
        const char *a[] = { "abcd", "xxabcdyy", NULL };
        cleanup_free char *r1 = redact_text("key=xxabcdyy; and abcd", a);
        CHECK_STR(r1, "key=[REDACTED]; and [REDACTED]");
        /* Overlapping occurrences: nothing of either is left. */
        const char *b[] = { "xxabc", "abcdef", NULL };
        cleanup_free char *r2 = redact_text("<xxabcdef>", b);
        CHECK_STR(r2, "<[REDACTED]>");
        /* A secret overlapping itself. */
        const char *c[] = { "aaaa", NULL };
        cleanup_free char *r3 = redact_text("aaaaaa.", c);
        CHECK_STR(r3, "[REDACTED].");
}

TEST(short_and_empty_secrets_ignored)
{
        const char *s[] = { "", "a", "abc", NULL };
        cleanup_free char *r = redact_text("a abc abcd", s);
        CHECK_STR(r, "a abc abcd");
        cleanup_free char *r2 = redact_text("same", NULL);
        CHECK_STR(r2, "same");
        json_t *v = json_pack("{s:s}", "abc", "abc");
        redact_json(v, s);
        CHECK_STR(json_string_value(json_object_get(v, "abc")), "abc");
        json_decref(v);
}

struct seen {
        int n;
        char *last;
        json_t *events;
};

static void subscriber(void *userdata, const json_t *ev)
{
        struct seen *s = userdata;
        s->n++;
        free(s->last);
        s->last = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s->events)
                json_array_append(s->events, (json_t *)ev);
}

TEST(event_fields_order_and_subscribers_redacted)
{
        cleanup_free char *p = path_in("order.jsonl");
        const char *secrets[] = { "topsecretvalue", NULL };
        trace *t = NULL;
        CHECK(trace_open(p, secrets, &t, NULL) == 0);
        struct seen s = { .events = json_array() };
        CHECK(trace_subscribe_sync(t, subscriber, &s) > 0);
        trace_emit(t, "tool_result",
                   json_pack("{s:i, s:s, s:s}", "iteration", 2, "content", "leak topsecretvalue?", "type", "spoof"));
        trace_emit(t, "notice", NULL);
        CHECK_INT(s.n, 2);
        CHECK(s.last && strncmp(s.last, "{\"v\":1,\"type\":\"notice\",\"t_ms\":", 30) == 0);
        trace_close(t);

        cleanup_free char *text = slurp(p);
        CHECK(text != NULL);
        CHECK(text && strncmp(text, "{\"v\":1,\"type\":\"tool_result\",\"t_ms\":", 35) == 0);
        CHECK(text && strstr(text, "topsecretvalue") == NULL);
        CHECK(text && strstr(text, "leak [REDACTED]?") != NULL);
        CHECK(text && strstr(text, "spoof") == NULL); /* fields cannot override the stamp */
        /* t_ms has one decimal: "t_ms":12.3, never 12.300000000000001. */
        const char *tm = text ? strstr(text, "\"t_ms\":") : NULL;
        size_t tlen = tm ? strcspn(tm + 7, ",") : 0;
        const char *dot = tm ? memchr(tm + 7, '.', tlen) : NULL;
        CHECK(tm && dot && (size_t)(tm + 7 + tlen - dot) == 2);
        /* Keys in order: v, type, t_ms, ts, then the fields as given. */
        json_t *ev = json_loadb(text, strcspn(text, "\n"), 0, NULL);
        const char *want[] = { "v", "type", "t_ms", "ts", "iteration", "content" };
        size_t i = 0;
        bool in_order = true;
        const char *key;
        json_t *val;
        json_object_foreach (ev, key, val) {
                if (i < ARRAY_SIZE(want) && strcmp(key, want[i]) != 0)
                        in_order = false;
                i++;
        }
        CHECK(in_order);
        CHECK_INT(i, 6);
        CHECK(json_is_real(json_object_get(ev, "t_ms")));
        const char *ts = json_string_value(json_object_get(ev, "ts"));
        CHECK(ts && strlen(ts) == 24 && ts[4] == '-' && ts[10] == 'T' && ts[19] == '.' && ts[23] == 'Z');
        json_decref(ev);
        /* One line per event, each ending in a newline. */
        size_t lines = 0;
        for (const char *c = text; c && *c; c++)
                lines += *c == '\n';
        CHECK_INT(lines, 2);
        CHECK(text && text[strlen(text) - 1] == '\n');
        /* The subscriber saw the redacted event too. */
        CHECK_STR(json_string_value(json_object_get(json_array_get(s.events, 0), "content")), "leak [REDACTED]?");
        json_decref(s.events);
        free(s.last);
}

TEST(caller_values_not_redacted_in_place)
{
        const char *secrets[] = { "sekrit-value", NULL };
        trace *t = NULL;
        CHECK(trace_open(NULL, secrets, &t, NULL) == 0);
        struct seen s = { .events = json_array() };
        trace_subscribe_sync(t, subscriber, &s);
        json_t *exec = json_pack("{s:s}", "stdout", "x sekrit-value y");
        trace_emit(t, "tool_result", json_pack("{s:O}", "exec", exec));
        CHECK_STR(json_string_value(json_object_get(exec, "stdout")), "x sekrit-value y");
        json_t *seen_exec = json_object_get(json_array_get(s.events, 0), "exec");
        CHECK_STR(json_string_value(json_object_get(seen_exec, "stdout")), "x [REDACTED] y");
        json_decref(exec);
        json_decref(s.events);
        free(s.last);
        trace_close(t);
}

TEST(no_file_subscribers_only)
{
        trace *t = NULL;
        CHECK(trace_open(NULL, NULL, &t, NULL) == 0);
        struct seen s = { 0 };
        trace_subscribe_sync(t, subscriber, &s);
        trace_emit(t, "notice", json_pack("{s:s}", "message", "x"));
        CHECK_INT(s.n, 1);
        CHECK(trace_write_error(t) == NULL);
        trace_close(t);
        free(s.last);
        trace_emit(NULL, "notice", json_object()); /* no trace: fields freed, nothing happens */
        trace_close(NULL);
}

TEST(read_back_round_trip)
{
        cleanup_free char *p = path_in("round.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        trace_emit(t, "run_start", json_pack("{s:s, s:s}", "task", "ünïcode ✓ task\nwith lines", "model", "m"));
        trace_emit(t, "tool_result", json_pack("{s:{s:s, s:f}}", "exec", "stdout", "a\001b\"c", "wall_ms", 12.5));
        trace_emit(t, "run_end", json_pack("{s:s}", "status", "answered"));
        trace_close(t);
        struct seen s = { .events = json_array() };
        corral_error *err = NULL;
        CHECK(trace_read_file(p, subscriber, &s, &err) == 0);
        CHECK_INT(json_array_size(s.events), 3);
        CHECK_STR(json_string_value(json_object_get(json_array_get(s.events, 0), "task")),
                  "ünïcode ✓ task\nwith lines");
        json_t *exec = json_object_get(json_array_get(s.events, 1), "exec");
        CHECK_STR(json_string_value(json_object_get(exec, "stdout")), "a\001b\"c");
        CHECK(json_real_value(json_object_get(exec, "wall_ms")) == 12.5);
        CHECK_STR(json_string_value(json_object_get(json_array_get(s.events, 2), "type")), "run_end");
        json_decref(s.events);
        free(s.last);
        corral_error_free(err);
}

TEST(read_errors_name_the_line)
{
        cleanup_free char *p = path_in("bad.jsonl");
        spit(p, "{\"v\":1,\"type\":\"notice\",\"message\":\"ok\"}\n\n   \n{\"v\":1,\"type\":\"notice\",\n", 0600);
        struct seen s = { 0 };
        corral_error *err = NULL;
        CHECK(trace_read_file(p, subscriber, &s, &err) < 0);
        CHECK_INT(s.n, 1);
        CHECK(err && strstr(err->msg, "line 4") != NULL);
        CHECK(err && strstr(err->msg, p) != NULL);
        corral_error_free(err);

        spit(p, "{\"type\":\"a\"}\n[1,2]\n", 0600);
        err = NULL;
        CHECK(trace_read_file(p, NULL, NULL, &err) < 0);
        CHECK(err && strstr(err->msg, "line 2: not a JSON object") != NULL);
        corral_error_free(err);

        spit(p, "{\"type\":\"a\",\"type\":\"b\"}\n", 0600);
        err = NULL;
        CHECK(trace_read_file(p, NULL, NULL, &err) < 0);
        CHECK(err && strstr(err->msg, "line 1") != NULL && strstr(err->msg, "duplicate") != NULL);
        corral_error_free(err);

        /* A last line without its newline still counts; CRLF is accepted. */
        spit(p, "{\"type\":\"a\"}\r\n{\"type\":\"b\"}", 0600);
        s.n = 0;
        err = NULL;
        CHECK(trace_read_file(p, subscriber, &s, &err) == 0);
        CHECK_INT(s.n, 2);
        corral_error_free(err);

        cleanup_free char *missing = path_in("missing.jsonl");
        err = NULL;
        CHECK(trace_read_file(missing, NULL, NULL, &err) < 0);
        CHECK(err && strstr(err->msg, "cannot open the trace") != NULL && strstr(err->msg, "No such file") != NULL);
        corral_error_free(err);
        free(s.last);
}

TEST(long_lines_across_reads)
{
        /* Lines longer than the reader's first buffer are reassembled. */
        cleanup_free char *p = path_in("long.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        char *big = malloc(300000);
        memset(big, 'x', 299999);
        big[299999] = '\0';
        for (int i = 0; i < 3; i++)
                trace_emit(t, "tool_result", json_pack("{s:s}", "content", big));
        trace_close(t);
        struct seen s = { .events = json_array() };
        CHECK(trace_read_file(p, subscriber, &s, NULL) == 0);
        CHECK_INT(json_array_size(s.events), 3);
        CHECK_INT(json_string_length(json_object_get(json_array_get(s.events, 2), "content")), 299999);
        json_decref(s.events);
        free(s.last);
        free(big);
}

TEST(write_error_remembered)
{
        cleanup_free char *p = path_in("full.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        struct seen s = { 0 };
        trace_subscribe_sync(t, subscriber, &s);
        struct rlimit old, small = { 64, 64 };
        getrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, SIG_IGN);
        small.rlim_max = old.rlim_max;
        setrlimit(RLIMIT_FSIZE, &small);
        trace_emit(t, "notice", json_pack("{s:s}", "message", "this line is longer than sixty-four bytes, surely"));
        trace_emit(t, "notice", json_pack("{s:s}", "message", "second"));
        setrlimit(RLIMIT_FSIZE, &old);
        const char *e = trace_write_error(t);
        CHECK(e && strstr(e, "cannot write the trace") != NULL && strstr(e, p) != NULL);
        CHECK_INT(s.n, 2); /* subscribers still see everything */
        trace_close(t);
        free(s.last);
}

struct emitter {
        trace *t;
        int id;
};

static void *emit_many(void *arg)
{
        struct emitter *e = arg;
        for (int i = 0; i < 200; i++)
                trace_emit(e->t, "notice", json_pack("{s:i, s:i}", "thread", e->id, "i", i));
        return NULL;
}

static void check_order(void *userdata, const json_t *ev)
{
        double *last = userdata;
        double t = json_real_value(json_object_get(ev, "t_ms"));
        if (t < last[0])
                last[1] = 1;
        last[0] = t;
        last[2]++;
}

TEST(threads_emit_whole_lines)
{
        cleanup_free char *p = path_in("threads.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        pthread_t th[4];
        struct emitter em[4];
        for (int i = 0; i < 4; i++) {
                em[i] = (struct emitter){ t, i };
                pthread_create(&th[i], NULL, emit_many, &em[i]);
        }
        for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
        trace_close(t);
        double state[3] = { 0, 0, 0 };
        CHECK(trace_read_file(p, check_order, state, NULL) == 0);
        CHECK_INT(state[2], 800);
        CHECK(state[1] == 0); /* t_ms never goes back along the file */
}

/* ---- queued subscribers ---- */

/* A queued subscriber the test controls: it records every event and, while
 * `hold` is set, blocks in its first call until the test lets it go. */
struct gated {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool hold;
        bool inside;  /* blocked in a call now */
        json_t *events;
};

static void gated_init(struct gated *g, bool hold)
{
        pthread_mutex_init(&g->lock, NULL);
        pthread_cond_init(&g->cond, NULL);
        g->hold = hold;
        g->inside = false;
        g->events = json_array();
}

static void gated_release(struct gated *g)
{
        json_decref(g->events);
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
}

static void gated_sub(void *userdata, const json_t *ev)
{
        struct gated *g = userdata;
        pthread_mutex_lock(&g->lock);
        json_array_append(g->events, (json_t *)ev);
        g->inside = true;
        pthread_cond_broadcast(&g->cond);
        while (g->hold)
                pthread_cond_wait(&g->cond, &g->lock);
        g->inside = false;
        pthread_mutex_unlock(&g->lock);
}

static void gated_open(struct gated *g)
{
        pthread_mutex_lock(&g->lock);
        g->hold = false;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
}

/* Wait (10 s at most: a bound nothing correct comes near) until pred(g). */
static bool gated_wait(struct gated *g, bool (*pred)(struct gated *))
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 10;
        pthread_mutex_lock(&g->lock);
        int r = 0;
        while (!pred(g) && r == 0)
                r = pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        bool ok = pred(g);
        pthread_mutex_unlock(&g->lock);
        return ok;
}

static bool is_inside(struct gated *g)
{
        return g->inside;
}

/* Events 0 to 4 delivered: the ring is empty again. */
static bool has_five(struct gated *g)
{
        return json_array_size(g->events) >= 5;
}

struct burst {
        trace *t;
        int from, to;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool done;
};

static void *emit_burst(void *arg)
{
        struct burst *b = arg;
        for (int i = b->from; i < b->to; i++)
                trace_emit(b->t, "notice", json_pack("{s:i}", "i", i));
        pthread_mutex_lock(&b->lock);
        b->done = true;
        pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->lock);
        return NULL;
}

static json_int_t ev_i(json_t *events, size_t k)
{
        return json_integer_value(json_object_get(json_array_get(events, k), "i"));
}

static const char *ev_type(json_t *events, size_t k)
{
        return json_string_value(json_object_get(json_array_get(events, k), "type"));
}

TEST(blocked_subscriber_does_not_block_emit)
{
        cleanup_free char *p = path_in("blocked.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        struct gated g;
        gated_init(&g, true);
        int id = trace_subscribe(t, gated_sub, &g, 4);
        CHECK(id > 0);
        /* Event 0 reaches the subscriber, which then blocks in it. */
        trace_emit(t, "notice", json_pack("{s:i}", "i", 0));
        CHECK(gated_wait(&g, is_inside));

        /* 99 more from another thread: it must finish while the subscriber
         * is still blocked (a synchronous fan-out would wait for ever). */
        struct burst b = { .t = t, .from = 1, .to = 100 };
        pthread_mutex_init(&b.lock, NULL);
        pthread_cond_init(&b.cond, NULL);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, emit_burst, &b) == 0);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 10;
        pthread_mutex_lock(&b.lock);
        int r = 0;
        while (!b.done && r == 0)
                r = pthread_cond_timedwait(&b.cond, &b.lock, &ts);
        bool done = b.done;
        pthread_mutex_unlock(&b.lock);
        CHECK(done);
        pthread_mutex_lock(&g.lock);
        CHECK(g.inside && g.hold);             /* still blocked */
        CHECK_INT(json_array_size(g.events), 1); /* in event 0 */
        pthread_mutex_unlock(&g.lock);

        gated_open(&g);
        pthread_join(th, NULL);
        /* Once the ring has drained, 100 finds room (else it is dropped
         * too: the count would say 96). */
        CHECK(gated_wait(&g, has_five));
        trace_emit(t, "notice", json_pack("{s:i}", "i", 100));
        trace_close(t);

        /* 0, then the ring's 1..4, then the gap (5..99: 95 events) said
         * just before 100. */
        CHECK_INT(json_array_size(g.events), 7);
        for (int k = 0; k < 5; k++)
                CHECK_INT(ev_i(g.events, (size_t)k), k);
        CHECK_STR(ev_type(g.events, 5), "subscriber_dropped");
        CHECK_INT(json_integer_value(json_object_get(json_array_get(g.events, 5), "count")), 95);
        CHECK_INT(json_integer_value(json_object_get(json_array_get(g.events, 5), "v")), 1);
        CHECK(json_is_real(json_object_get(json_array_get(g.events, 5), "t_ms")));
        CHECK_INT(ev_i(g.events, 6), 100);
        /* The file has every event and no notice. */
        json_t *all = json_array();
        struct seen s = { .events = all };
        CHECK(trace_read_file(p, subscriber, &s, NULL) == 0);
        CHECK_INT(json_array_size(all), 101);
        for (size_t k = 0; k < json_array_size(all); k++)
                if (ev_i(all, k) != (json_int_t)k)
                        CHECK(ev_i(all, k) == (json_int_t)k);
        free(s.last);
        json_decref(all);
        pthread_cond_destroy(&b.cond);
        pthread_mutex_destroy(&b.lock);
        gated_release(&g);
}

TEST(dropped_notice_at_close)
{
        /* Events dropped at the very end still get their notice, on close. */
        trace *t = NULL;
        CHECK(trace_open(NULL, NULL, &t, NULL) == 0);
        struct gated g;
        gated_init(&g, true);
        CHECK(trace_subscribe(t, gated_sub, &g, 1) > 0);
        trace_emit(t, "notice", json_pack("{s:i}", "i", 0));
        CHECK(gated_wait(&g, is_inside));
        for (int i = 1; i <= 4; i++)
                trace_emit(t, "notice", json_pack("{s:i}", "i", i));
        gated_open(&g);
        trace_close(t);
        CHECK_INT(json_array_size(g.events), 3);
        CHECK_INT(ev_i(g.events, 0), 0);
        CHECK_INT(ev_i(g.events, 1), 1);
        CHECK_STR(ev_type(g.events, 2), "subscriber_dropped");
        CHECK_INT(json_integer_value(json_object_get(json_array_get(g.events, 2), "count")), 3);
        gated_release(&g);
}

static bool has_three(struct gated *g)
{
        return json_array_size(g->events) == 3;
}

TEST(unsubscribe_stops_delivery)
{
        trace *t = NULL;
        CHECK(trace_open(NULL, NULL, &t, NULL) == 0);
        struct gated g;
        gated_init(&g, false);
        struct seen s = { 0 };
        int id = trace_subscribe(t, gated_sub, &g, 0);
        int sid = trace_subscribe_sync(t, subscriber, &s);
        CHECK(id > 0 && sid > 0 && id != sid);
        for (int i = 0; i < 3; i++)
                trace_emit(t, "notice", json_pack("{s:i}", "i", i));
        CHECK(gated_wait(&g, has_three));
        CHECK_INT(trace_unsubscribe(t, id), 0);
        CHECK_INT(trace_unsubscribe(t, sid), 0);
        CHECK_INT(trace_unsubscribe(t, id), -1); /* gone */
        CHECK_INT(trace_unsubscribe(t, 12345), -1);
        for (int i = 3; i < 6; i++)
                trace_emit(t, "notice", json_pack("{s:i}", "i", i));
        trace_close(t);
        CHECK_INT(json_array_size(g.events), 3);
        CHECK_INT(s.n, 3);
        free(s.last);
        gated_release(&g);
}

static void slow_sub(void *userdata, const json_t *ev)
{
        json_t *events = userdata;
        struct timespec ts = { 0, 200000 }; /* 0.2 ms: the queue is still full when close comes */
        nanosleep(&ts, NULL);
        json_array_append(events, (json_t *)ev);
}

TEST(close_flushes_and_joins_in_file_order)
{
        /* Four threads emit; trace_close() returns only once the queued
         * subscriber has had all 800, in the order of the file. */
        cleanup_free char *p = path_in("queued.jsonl");
        trace *t = NULL;
        CHECK(trace_open(p, NULL, &t, NULL) == 0);
        json_t *got = json_array();
        CHECK(trace_subscribe(t, slow_sub, got, 1000) > 0);
        pthread_t th[4];
        struct emitter em[4];
        for (int i = 0; i < 4; i++) {
                em[i] = (struct emitter){ t, i };
                pthread_create(&th[i], NULL, emit_many, &em[i]);
        }
        for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
        trace_close(t);
        struct seen s = { .events = json_array() };
        CHECK(trace_read_file(p, subscriber, &s, NULL) == 0);
        CHECK_INT(json_array_size(got), 800);
        CHECK_INT(json_array_size(s.events), 800);
        bool same = json_array_size(got) == json_array_size(s.events);
        for (size_t k = 0; same && k < json_array_size(got); k++)
                same = json_equal(json_array_get(got, k), json_array_get(s.events, k));
        CHECK(same);
        json_decref(got);
        json_decref(s.events);
        free(s.last);
}

static int rm_rf(const char *path)
{
        char *cmd = NULL;
        if (asprintf(&cmd, "rm -rf '%s'", path) < 0)
                return -1;
        int r = system(cmd);
        free(cmd);
        return r;
}

int main(void)
{
        snprintf(tmpdir, sizeof(tmpdir), "%s/corral-test-trace-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(tmpdir) == NULL)
                return 1;
        RUN(new_file_is_0600_and_parents_0700);
        RUN(existing_0644_file_truncated_and_0600);
        RUN(symlink_refused_target_untouched);
        RUN(fifo_directory_and_hard_link_refused);
        RUN(redact_values_keys_nested);
        RUN(redact_key_order_and_collisions);
        RUN(redact_overlapping_and_contained_secrets);
        RUN(short_and_empty_secrets_ignored);
        RUN(event_fields_order_and_subscribers_redacted);
        RUN(caller_values_not_redacted_in_place);
        RUN(no_file_subscribers_only);
        RUN(read_back_round_trip);
        RUN(read_errors_name_the_line);
        RUN(long_lines_across_reads);
        RUN(write_error_remembered);
        RUN(threads_emit_whole_lines);
        RUN(blocked_subscriber_does_not_block_emit);
        RUN(dropped_notice_at_close);
        RUN(unsubscribe_stops_delivery);
        RUN(close_flushes_and_joins_in_file_order);
        rm_rf(tmpdir);
        return DONE();
}
