/* stream.c: an answer whose body a thread of its own writes as it goes
 * (a streamed step in NDJSON or server-sent events, E2B's /execute, a
 * Connect stream).  The thread appends to a buffer; libmicrohttpd's
 * connection thread takes the bytes out as the response's body.  What is
 * buffered is bounded by what the producer writes (a step's own output
 * limits).  A client that hangs up first gets its hangup hook called, so
 * that the producer can stop; the thread is joined before release. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "server-internal.h"

struct body_stream {
        struct server *s;
        struct body_stream_hooks hooks;
        void *ud;
        pthread_mutex_t lock;
        pthread_cond_t more;
        char *buf;
        size_t len, off;
        bool done, gone;
        pthread_t thread;
};

void body_stream_write(struct body_stream *bs, const void *data, size_t len)
{
        pthread_mutex_lock(&bs->lock);
        char *b = bs->gone ? NULL : realloc(bs->buf, bs->len + len);
        if (b) {
                memcpy(b + bs->len, data, len);
                bs->buf = b;
                bs->len += len;
                pthread_cond_signal(&bs->more);
        }
        pthread_mutex_unlock(&bs->lock);
}

bool body_stream_gone(struct body_stream *bs)
{
        pthread_mutex_lock(&bs->lock);
        bool gone = bs->gone;
        pthread_mutex_unlock(&bs->lock);
        return gone;
}

size_t body_stream_pending(struct body_stream *bs)
{
        pthread_mutex_lock(&bs->lock);
        size_t n = bs->len - bs->off;
        pthread_mutex_unlock(&bs->lock);
        return n;
}

static void *body_stream_thread(void *arg)
{
        struct body_stream *bs = arg;
        bs->hooks.run(bs, bs->ud);
        pthread_mutex_lock(&bs->lock);
        bs->done = true;
        pthread_cond_signal(&bs->more);
        pthread_mutex_unlock(&bs->lock);
        return NULL;
}

static ssize_t body_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        (void)pos;
        struct body_stream *bs = cls;
        pthread_mutex_lock(&bs->lock);
        while (bs->off == bs->len && !bs->done)
                pthread_cond_wait(&bs->more, &bs->lock);
        ssize_t n;
        if (bs->off == bs->len) {
                n = MHD_CONTENT_READER_END_OF_STREAM;
        } else {
                size_t take = bs->len - bs->off < max ? bs->len - bs->off : max;
                memcpy(out, bs->buf + bs->off, take);
                bs->off += take;
                if (bs->off == bs->len)
                        bs->off = bs->len = 0;
                n = (ssize_t)take;
        }
        pthread_mutex_unlock(&bs->lock);
        return n;
}

static void body_stream_free(void *cls)
{
        struct body_stream *bs = cls;
        pthread_mutex_lock(&bs->lock);
        bool early = !bs->done;
        bs->gone = true;
        pthread_mutex_unlock(&bs->lock);
        if (early && bs->hooks.hangup)
                bs->hooks.hangup(bs->ud);
        pthread_join(bs->thread, NULL);
        pthread_mutex_lock(&bs->s->lock);
        bs->s->streams--;
        pthread_cond_broadcast(&bs->s->changed);
        pthread_mutex_unlock(&bs->s->lock);
        if (bs->hooks.release)
                bs->hooks.release(bs->ud);
        free(bs->buf);
        pthread_mutex_destroy(&bs->lock);
        pthread_cond_destroy(&bs->more);
        free(bs);
}

enum MHD_Result body_stream_reply(struct request *rq, unsigned status, const char *content_type,
                                  const struct body_stream_hooks *hooks, void *ud)
{
        struct body_stream *bs = calloc(1, sizeof(*bs));
        if (bs == NULL) {
                if (hooks->release)
                        hooks->release(ud);
                return MHD_NO;
        }
        bs->s = rq->s;
        bs->hooks = *hooks;
        bs->ud = ud;
        pthread_mutex_init(&bs->lock, NULL);
        pthread_cond_init(&bs->more, NULL);
        if (pthread_create(&bs->thread, NULL, body_stream_thread, bs) != 0) {
                pthread_mutex_destroy(&bs->lock);
                pthread_cond_destroy(&bs->more);
                free(bs);
                if (hooks->release)
                        hooks->release(ud);
                return MHD_NO;
        }
        pthread_mutex_lock(&rq->s->lock);
        rq->s->streams++;
        pthread_mutex_unlock(&rq->s->lock);
        struct MHD_Response *r = http_lib.MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 << 10,
                                                                            body_stream_read, bs, body_stream_free);
        if (r == NULL) {
                body_stream_free(bs);
                return MHD_NO;
        }
        http_lib.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        return reply(rq, status, r);
}
