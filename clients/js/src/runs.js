// Agent runs of corral serve (docs/api.md, Runs): create, get, list; on a
// run, its events followed over server-sent events or a WebSocket (an async
// iterator, resumed after the last event seen when the stream breaks or the
// server drops a slow follower), wait, cancel, artifacts, the archive.  The model API key
// goes in the X-Model-Api-Key header of the create request only: it is not kept.
import {ConnectionFailed, CorralError, TimeoutError} from './errors.js'

const quote = (p) => p.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/')
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms)
  signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason) }, {once: true})
})

function b64(data) {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data)
  let s = ''
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(s)
}

function inputsOf(inputs) {
  return Object.entries(inputs).map(([path, v]) => {
    if (v && typeof v === 'object' && !(v instanceof Uint8Array) && !(v instanceof ArrayBuffer) && 'sandbox' in v) {
      return {sandbox: v.sandbox?.id ?? v.sandbox, path: v.path ?? path}
    }
    return {path, content_base64: b64(v)}
  })
}

/** The output of the run's code an event carries (a tool_result's exec.stdout), or undefined. */
const stdoutOf = (ev) => (ev.type === 'tool_result' && ev.exec?.stdout) || undefined

const inBrowser = () => typeof window !== 'undefined' && typeof document !== 'undefined'

export class Run {
  #t
  #client
  constructor(transport, info, client) {
    this.#t = transport
    this.#client = client
    this.info = info
    this.id = info.id
  }
  get status() { return this.info.status }
  get done() { return this.info.status !== undefined && this.info.status !== 'running' }
  get answer() { return this.info.answer }
  get usage() { return this.info.usage }
  toJSON() { return this.info }

  /** GET /v1/runs/{id}: the run as it is now. */
  async refresh({signal} = {}) {
    this.info = await this.#t.json('GET', `/v1/runs/${this.id}`, {signal})
    return this
  }

  /** GET .../approvals: the question the run waits on ({n, code, lang, review, ...}), or null. */
  async pendingApproval() {
    return ((await this.#t.json('GET', `/v1/runs/${this.id}/approvals`)) ?? {}).pending ?? null
  }

  /**
   * POST .../approvals/{n}: decision 'approve', 'deny' (reason: told to the model) or 'edit'
   * (code: runs instead, reviewed again).  Conflict when answered already, timed out or ended.
   */
  async answerApproval(n, decision, {reason, code} = {}) {
    const body = {decision}
    if (reason !== undefined) body.reason = reason
    if (code !== undefined) body.code = code
    return this.#t.json('POST', `/v1/runs/${this.id}/approvals/${Number(n)}`, {body})
  }

  /** POST .../cancel: the run ends with status cancelled (Conflict when it has ended). */
  async cancel() {
    this.info = (await this.#t.json('POST', `/v1/runs/${this.id}/cancel`)) ?? this.info
    return this
  }

  /**
   * The run's events (objects, each with its number as `id`), from the first (or after
   * event `after`) to run_end, as the run goes.  A broken stream or an `event: dropped`
   * is resumed with Last-Event-ID, at most maxReconnects times in a row without progress.
   * websocket: true (the client's WebSocket constructor, else the global one: browsers,
   * Node >= 22, Node 20 with --experimental-websocket) or a constructor (the `ws`
   * package's): the same events over a WebSocket instead of server-sent events.
   */
  async * events({after, signal, maxReconnects = 5, websocket} = {}) {
    if (websocket) {
      const WS = typeof websocket === 'function' ? websocket : this.#client?.WebSocket ?? globalThis.WebSocket
      if (!WS) throw new CorralError('no WebSocket implementation: pass {websocket: WebSocket} (e.g. the ws package on Node 20)')
      yield * this.#socketEvents({after, signal, maxReconnects, WS})
      return
    }
    let last = after ?? null
    let failures = 0
    let quiet = 0
    for (;;) {
      const headers = {Accept: 'text/event-stream'}
      if (last !== null) headers['Last-Event-ID'] = String(last)
      let r
      try {
        r = await this.#t.open('GET', `/v1/runs/${this.id}/events`, {headers, signal, streamed: true})
      } catch (e) {
        if (!(e instanceof ConnectionFailed) || ++failures > maxReconnects) throw e
        await sleep(Math.min(200 * 2 ** failures, 5000), signal)
        continue
      }
      const reader = r.body.getReader()
      const dec = new TextDecoder()
      let buf = ''
      let cur = {}
      let dropped = false
      let progress = false
      try {
        for (;;) {
          let chunk
          try {
            chunk = await reader.read()
          } catch (e) {
            if (signal?.aborted) throw signal.reason
            break // the stream broke: resume
          }
          if (signal?.aborted) throw signal.reason
          if (chunk.done) break
          buf += dec.decode(chunk.value, {stream: true})
          let nl
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).replace(/\r$/, '')
            buf = buf.slice(nl + 1)
            if (line) {
              if (!line.startsWith(':')) {
                const i = line.indexOf(':')
                const k = i < 0 ? line : line.slice(0, i)
                let v = i < 0 ? '' : line.slice(i + 1)
                if (v.startsWith(' ')) v = v.slice(1)
                cur[k] = k === 'data' && k in cur ? cur[k] + '\n' + v : v
              }
              continue
            }
            if (!('data' in cur)) { cur = {}; continue }
            const {event: kind, data, id} = cur
            cur = {}
            const ev = JSON.parse(data)
            if (kind === 'dropped' || ev.type === 'dropped') {
              if (ev.last_event_id !== undefined && ev.last_event_id !== null) last = ev.last_event_id
              dropped = true
              break
            }
            if (id !== undefined) {
              const n = Number.parseInt(id, 10)
              if (last !== null && n <= last) continue // seen already
              ev.id = n
              last = n
            }
            failures = 0
            progress = true
            yield ev
            if (ev.type === 'run_end') return
          }
          if (dropped) break
        }
      } finally {
        r.detach()
        reader.cancel().catch(() => {})
      }
      if (!dropped) {
        // The stream ended before run_end: cut (resume), or an interrupted run's
        // last event (a finished run whose stream, read again, brings nothing new
        // twice running).
        quiet = progress ? 0 : quiet + 1
        if (quiet >= 2 && (await this.refresh({signal})).done) return
        if (!progress && ++failures > maxReconnects) throw new ConnectionFailed(`run ${this.id}: the event stream kept breaking`)
        await sleep(failures ? Math.min(100 * 2 ** failures, 5000) : 50, signal)
      }
    }
  }

  /** events() over a WebSocket: {id, type, data} messages; closed 1000 at the end. */
  async * #socketEvents({after, signal, maxReconnects, WS}) {
    let last = after ?? null
    let failures = 0
    for (;;) {
      if (signal?.aborted) throw signal.reason
      const url = this.#t.baseUrl.replace(/^http/, 'ws') + `/v1/runs/${this.id}/events` +
        (last !== null ? `?after=${last}` : '')
      // A browser sends the login cookie (it cannot set headers); Node's and ws take them.
      const ws = inBrowser() ? new WS(url) : new WS(url, {headers: this.#t.authHeaders()})
      const queue = []
      let code = null
      let wake = null
      const poke = () => { const w = wake; wake = null; w?.() }
      ws.onmessage = (m) => { queue.push(typeof m.data === 'string' ? m.data : String(m.data)); poke() }
      ws.onclose = (ev) => { code = ev?.code ?? 1006; poke() }
      ws.onerror = () => { poke() }
      const onAbort = () => poke()
      signal?.addEventListener('abort', onAbort, {once: true})
      let dropped = false
      let progress = false
      try {
        for (;;) {
          if (signal?.aborted) throw signal.reason
          if (queue.length === 0) {
            if (code !== null) break
            await new Promise((resolve) => { wake = resolve })
            continue
          }
          const m = JSON.parse(queue.shift())
          if (m.type === 'dropped') {
            if (m.data?.last_event_id !== undefined && m.data?.last_event_id !== null) last = m.data.last_event_id
            dropped = true
            continue // the close follows
          }
          if (m.id === undefined || m.id === null || (last !== null && m.id <= last)) continue
          const ev = m.data
          ev.id = m.id
          last = m.id
          failures = 0
          progress = true
          yield ev
          if (ev.type === 'run_end') return
        }
      } finally {
        signal?.removeEventListener('abort', onAbort)
        try { ws.close(1000) } catch {}
      }
      // 1000: the server sent all there is (an interrupted run has no run_end).
      if (code === 1000 && !dropped) return
      if (!dropped && !progress && ++failures > maxReconnects) {
        throw new ConnectionFailed(`run ${this.id}: the WebSocket kept closing (${code})`)
      }
      if (!dropped) await sleep(Math.min(100 * 2 ** failures, 5000), signal)
    }
  }

  /**
   * Follow the events to the end (each to onEvent, the output of the run's code to
   * onStdout) and resolve with this run as it ended.
   */
  async wait({onEvent, onStdout, timeoutMs, signal, websocket} = {}) {
    const ctl = new AbortController()
    const onAbort = () => ctl.abort(signal.reason)
    if (signal?.aborted) throw signal.reason
    signal?.addEventListener('abort', onAbort, {once: true})
    const timer = timeoutMs !== undefined
      ? setTimeout(() => ctl.abort(new TimeoutError(`run ${this.id}: still going after ${timeoutMs} ms`)), timeoutMs)
      : undefined
    try {
      for await (const ev of this.events({signal: ctl.signal, websocket})) {
        onEvent?.(ev)
        const out = stdoutOf(ev)
        if (out) onStdout?.(out)
      }
      await this.refresh({signal: ctl.signal})
      while (!this.done) { // the result is written just after run_end
        await sleep(50, ctl.signal)
        await this.refresh({signal: ctl.signal})
      }
      return this
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** [{path, type, size, ...}]: the run's output/ (Conflict while it goes). */
  async artifacts() { return (await this.#t.json('GET', `/v1/runs/${this.id}/artifacts`)).artifacts }
  /** One file of output/: a Uint8Array. */
  artifact(path) {
    return this.#t.bytes('GET', `/v1/runs/${this.id}/artifacts/${quote(path)}`, {headers: {Accept: 'application/octet-stream'}})
  }
  /** The run's workspace as a tar: a Uint8Array. */
  archive() {
    return this.#t.bytes('GET', `/v1/runs/${this.id}/archive`, {headers: {Accept: 'application/x-tar'},
      timeoutMs: Math.max(this.#t.timeoutMs, 120000)})
  }
}

export class Runs {
  #t
  #client
  constructor(transport, client) {
    this.#t = transport
    this.#client = client
  }

  /**
   * POST /v1/runs: a Run, going.  apiKey is sent as X-Model-Api-Key and not kept;
   * inputs: {path: string | Uint8Array | {sandbox, path}}.
   */
  async create(task, {model, baseUrl, provider, apiKey, inputs, limits, review, maxIterations, tokenBudget,
    wallBudget, approve, approveTimeout, approveDefault, signal} = {}) {
    const body = {task}
    const m = Object.fromEntries(Object.entries({model, base_url: baseUrl, provider}).filter(([, v]) => v !== undefined))
    if (Object.keys(m).length) body.model = m
    if (inputs) body.inputs = inputsOf(inputs)
    for (const [k, v] of Object.entries({limits, review, max_iterations: maxIterations, token_budget: tokenBudget,
      wall_budget: wallBudget, approve, approve_timeout: approveTimeout, approve_default: approveDefault})) {
      if (v !== undefined) body[k] = v
    }
    const headers = apiKey ? {'X-Model-Api-Key': apiKey} : {}
    try {
      return new Run(this.#t, await this.#t.json('POST', '/v1/runs', {body, headers, signal}), this.#client)
    } catch (e) {
      if (apiKey && e instanceof CorralError && String(e.message).includes(apiKey)) {
        e.message = e.message.replaceAll(apiKey, '[REDACTED]') // never echo the key
      }
      throw e
    }
  }

  async get(id) { return new Run(this.#t, await this.#t.json('GET', `/v1/runs/${id}`), this.#client) }
  /**
   * This token's runs, newest first: every one (page by page), or at most limit of
   * them after the run `after` (an id).
   */
  async list({limit, after} = {}) {
    const out = []
    for (;;) {
      const q = new URLSearchParams()
      if (limit !== undefined) q.set('limit', String(Math.min(limit - out.length, 1000)))
      if (after) q.set('after', after)
      const page = await this.#t.json('GET', `/v1/runs${String(q) ? '?' + q : ''}`)
      out.push(...page.runs.map((r) => new Run(this.#t, r, this.#client)))
      if (!page.next || (limit !== undefined && out.length >= limit)) return out
      after = page.next
    }
  }
}
