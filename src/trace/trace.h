/* trace.h: the event stream of a run.
 *
 * Every step of an agent run is one JSON object ("event"); the trace writes
 * each as one line of a JSONL file (created 0600, never through a symlink)
 * and hands it to subscribers (the terminal renderer, later the server).
 * Before an event leaves, every string in it has the run's secrets (the
 * API key, the values given with -e) replaced by "[REDACTED]" (lib/redact.h).
 *
 * Every event carries: "v":1, "type", "t_ms" (milliseconds since the trace
 * was opened, one decimal), "ts" (UTC, ISO 8601 with milliseconds).  The
 * types and their fields are listed in docs/trace.md:
 *   run_start     run_id, task, model, base_url, provider, protocol
 *                 ("tools"|"text"), inputs[], limits{}, workspace, version
 *   model_request iteration, messages, est_prompt_tokens, trimmed
 *   model_retry   iteration, attempt, delay_s, reason
 *   model_reply   iteration, content, reasoning, tool_calls[{id,name,
 *                 arguments}], finish_reason, usage{prompt_tokens,
 *                 completion_tokens,estimated}, wait_ms
 *   tool_call     iteration, id, name, arguments (parsed object or the raw
 *                 text), code (run_python) / command (run_shell)
 *   tool_result   iteration, id, name, ok, content (what the model is sent),
 *                 ms, exec{status,exit_code,stdout,stderr,stdout_truncated,
 *                 stderr_truncated,wall_ms,cpu_ms,memory_peak_bytes,limit,
 *                 reason} (run_* only), artifacts[] (workspace diff)
 *   review        verdict ("allow"|"warn"|"reject"), findings[{line,column,
 *                 rule,severity,subject,message}], ms, iteration, lang,
 *                 policy{level,...} (docs/review.md)
 *   approval_request  n, iteration, lang, code, review{verdict,findings},
 *                 timeout_s, default, unattended? (agent/approve.h)
 *   approval      n, iteration, decision, who, reason, code, cancelled,
 *                 wait_ms
 *   notice        message
 *   subscriber_dropped  count (never in the file: a queued subscriber's
 *                 ring was full, and this many events before the next one
 *                 it gets were dropped for it alone)
 *   run_end       status ("answered"|"gave_up"|"model_error"|"jail_error"|
 *                 "cancelled"), answer, reason, iterations, usage{
 *                 prompt_tokens,completion_tokens,requests,retries,wait_ms,
 *                 estimated}, artifacts[], output_dir, not_copied[], wall_ms
 */
#ifndef CORRAL_TRACE_H
#define CORRAL_TRACE_H

#include <stdbool.h>

#include <jansson.h>

#include "../lib/util.h"

#define TRACE_SCHEMA_VERSION 1
/* Events a queued subscriber may fall behind by (trace_subscribe()). */
#define TRACE_QUEUE_DEFAULT 1024

/* Threads: trace_emit(), trace_subscribe*() and trace_unsubscribe() are
 * thread-safe; trace_open*() and trace_close() are one caller per trace
 * (trace_close() once no thread emits any more); trace_write_error() once
 * the emitters are done.  trace_read_file() shares nothing. */

/* Called for every event after redaction, one event at a time in file
 * order; the event is borrowed and read-only (other subscribers read it at
 * the same time).  A subscriber must not emit, nor unsubscribe itself. */
typedef void (*trace_subscriber_fn)(void *userdata, const json_t *event);

typedef struct trace trace;

/* path NULL: no file, subscribers only.  The file is created with mode 0600
 * in its directory, which must exist (an existing regular file is truncated
 * and set to 0600; a symlink, FIFO, socket, device, directory or a file
 * with several hard links is refused, CORRAL_ERR_USAGE).  secrets:
 * NULL-terminated, copied; empty strings and strings shorter than 4 bytes
 * are ignored (they would redact ordinary text). */
CORRAL_HIDDEN int trace_open(const char *path, const char *const *secrets, trace **ret, corral_error **ret_err);
/* The same for the file name in the directory dirfd (opened beneath it,
 * never through a symlink: see workspace/dest.h); path names it in messages
 * and in the trace. */
CORRAL_HIDDEN int trace_open_at(int dirfd, const char *name, const char *path, const char *const *secrets,
                                trace **ret, corral_error **ret_err);
/* Deliver what queued subscribers have not had yet, end their threads
 * (joined), close the file; NULL ok. */
CORRAL_HIDDEN void trace_close(trace *t);
/* A queued subscriber: a ring of queue_max events (0: TRACE_QUEUE_DEFAULT)
 * drained by a thread of its own, so that a slow subscriber never stalls
 * trace_emit().  When its ring is full, events are dropped for it (never
 * for the file or the others) and the next event it gets is preceded by
 * {"type":"subscriber_dropped","count":N} (docs/trace.md).  fn runs on
 * that thread.  Returns an id (> 0) for trace_unsubscribe(), or -1. */
CORRAL_HIDDEN int trace_subscribe(trace *t, trace_subscriber_fn fn, void *userdata, size_t queue_max);
/* A synchronous subscriber, for one that must never miss an event (the
 * terminal renderer): fn runs in trace_emit(), under the trace's lock, so
 * a slow one slows every emitter.  Returns an id (> 0), or -1. */
CORRAL_HIDDEN int trace_subscribe_sync(trace *t, trace_subscriber_fn fn, void *userdata);
/* Stop delivery to subscriber id: when it returns, fn is not running and
 * will not be called again (events still queued for it are discarded).
 * -1 when no such subscriber. */
CORRAL_HIDDEN int trace_unsubscribe(trace *t, int id);

/* Emit an event of `type` with `fields` (an object, stolen; NULL for none;
 * keys v/type/t_ms/ts in it are ignored).  Thread-safe.  t NULL: fields are
 * freed, nothing else.  Write errors are remembered (trace_write_error)
 * rather than returned: a full disk must not end the run; after the first
 * one the file is no longer written, subscribers still are. */
CORRAL_HIDDEN void trace_emit(trace *t, const char *type, json_t *fields);
/* The first write error, or NULL. */
CORRAL_HIDDEN const char *trace_write_error(const trace *t);

/* Read a JSONL trace file: calls fn (may be NULL) for each event in order.
 * Blank lines are skipped; a line that is not a JSON object with a string
 * "type" (duplicate keys rejected, 64 MiB at most) is an error naming the
 * file and line: "trace 'FILE' line N: ...". */
CORRAL_HIDDEN int trace_read_file(const char *path, trace_subscriber_fn fn, void *userdata, corral_error **ret_err);

#endif
