// Sandboxes of corral serve (docs/api.md): create, list, get; on a sandbox,
// Python and bash steps (whole, streamed to callbacks, or over a WebSocket),
// interrupts, background commands, files one by one and as a tar, pause,
// resume, kill.
import {CorralError, ConnectionFailed} from './errors.js'

/** A step's result (docs/sessions.md, What a step returns). */
export class Execution {
  constructor(raw) {
    this.raw = raw
    this.status = raw.status
    this.stdout = raw.stdout ?? ''
    this.stderr = raw.stderr ?? ''
    this.value = raw.value ?? null
    this.text = raw.value?.text ?? null
    this.html = raw.value?.html ?? null // a DataFrame's table, an object's _repr_html_()
    this.markdown = raw.value?.markdown ?? null
    this.error = raw.error ? {name: raw.error.name ?? '', value: raw.error.value ?? '', traceback: raw.error.traceback ?? ''} : null
    this.figures = raw.figures ?? []
    this.exitCode = raw.exit_code
    this.stateLost = Boolean(raw.state_lost)
  }
  get ok() { return this.status === 'ok' }
}

function stepBody(code, o) {
  const body = {code, language: o.language ?? 'python'}
  if (o.timeout !== undefined) body.timeout = o.timeout
  if (o.context !== undefined) body.context = o.context
  if (o.env !== undefined) body.env = o.env
  if (o.figurePng !== undefined) body.figure_png = o.figurePng
  return body
}

/** Hand one event to the callbacks; the Execution when it is the result. */
function dispatch(ev, o) {
  o.onEvent?.(ev)
  switch (ev.type) {
    case 'stdout': o.onStdout?.(ev.data ?? ''); break
    case 'stderr': o.onStderr?.(ev.data ?? ''); break
    case 'figure': o.onFigure?.(ev.figure ?? {}); break
    case 'result': { const r = new Execution(ev.result ?? {}); o.onResult?.(r); return r }
    case 'error': {
      const err = new CorralError(ev.error?.message ?? 'the step could not run', {kind: ev.error?.kind})
      o.onError?.(err)
      throw err
    }
  }
  return undefined
}

const quote = (p) => p.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/')

export class Command {
  constructor(sandbox, pid, log) {
    this.sandbox = sandbox
    this.pid = pid
    this.log = log ?? `.corral/commands/${pid}.log`
  }
  /** {pid, running, exit_code, log, log_bytes} */
  status() { return this.sandbox._t.json('GET', `${this.sandbox._path}/commands/${this.pid}`) }
  async output() {
    return this.sandbox.files.readText(this.log.replace(/^\/workspace\//, ''))
  }
  kill(signal = 'TERM') {
    return this.sandbox._t.json('POST', `${this.sandbox._path}/commands/${this.pid}/signal`, {body: {signal}})
  }
  /** Poll until it ends; its exit code. */
  async wait({timeoutMs = 60000, intervalMs = 100} = {}) {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const s = await this.status()
      if (!s.running) return s.exit_code
      if (Date.now() > deadline) throw new CorralError(`command ${this.pid} still runs after ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, intervalMs))
    }
  }
}

export class Commands {
  constructor(sandbox) { this.sandbox = sandbox }
  /** Start a bash command in the background; its Command. */
  async run(cmd, {env} = {}) {
    const body = {code: cmd, language: 'bash', background: true}
    if (env) body.env = env
    const r = new Execution(await this.sandbox._t.json('POST', `${this.sandbox._path}/exec`, {body}))
    const j = r.value?.json
    if (!r.ok || !j) throw new CorralError(`the command did not start: ${r.error?.value ?? r.status}`)
    return new Command(this.sandbox, j.pid, j.log)
  }
  get(pid) { return new Command(this.sandbox, pid) }
}

export class Files {
  constructor(sandbox) { this.sandbox = sandbox }
  /** The file's bytes. */
  read(path, {signal} = {}) {
    return this.sandbox._t.bytes('GET', `${this.sandbox._path}/files/${quote(path)}`,
      {headers: {Accept: 'application/octet-stream'}, signal})
  }
  async readText(path, opts) { return new TextDecoder().decode(await this.read(path, opts)) }
  /** Write a string (UTF-8), bytes or a Blob; parents are made.  {path, size} */
  write(path, data, {signal} = {}) {
    if (typeof data === 'string') data = new TextEncoder().encode(data)
    return this.sandbox._t.json('PUT', `${this.sandbox._path}/files/${quote(path)}`,
      {body: data, headers: {'Content-Type': 'application/octet-stream'}, signal})
  }
  /** [{path, type, size, mode, mtime, target}] beneath path (default everything). */
  async list(path = '', {depth} = {}) {
    return (await this.sandbox._t.json('GET', `${this.sandbox._path}/files`, {query: {path: path || undefined, depth}})).files
  }
  async exists(path) {
    try { await this.list(path, {depth: 0}); return true } catch (e) { if (e.status === 404) return false; throw e }
  }
  /** Remove a file, a symlink or a directory tree. */
  remove(path) { return this.sandbox._t.json('DELETE', `${this.sandbox._path}/files/${quote(path)}`) }
  /** Extract a tar (bytes or a Blob; plain, gzip or zstd) as new top-level entries.  {entries, files, bytes} */
  uploadTar(tar, {signal} = {}) {
    return this.sandbox._t.json('PUT', `${this.sandbox._path}/files`,
      {body: tar, headers: {'Content-Type': 'application/x-tar'}, signal, timeoutMs: Math.max(this.sandbox._t.timeoutMs, 120000)})
  }
  /** The whole workspace as a tar (bytes). */
  downloadTar({signal} = {}) {
    return this.sandbox._t.bytes('GET', `${this.sandbox._path}/files`,
      {query: {format: 'tar'}, headers: {Accept: 'application/x-tar'}, signal, timeoutMs: Math.max(this.sandbox._t.timeoutMs, 120000)})
  }
}

/**
 * Steps over one WebSocket (GET .../ws): runCode() resolves with the step's
 * Execution, callbacks as for Sandbox.runCode; steps sent while one runs wait
 * their turn on the server.
 */
export class SandboxSocket {
  constructor(ws) {
    this.ws = ws
    this.pending = new Map()
    this.next = 1
    this.closed = null
    ws.onmessage = (m) => this.#message(m)
    ws.onclose = (ev) => this.#fail(new ConnectionFailed(`the WebSocket closed (${ev?.code ?? '?'})`))
    ws.onerror = () => this.#fail(new ConnectionFailed('the WebSocket failed'))
  }
  #fail(err) {
    this.closed ??= err
    for (const p of this.pending.values()) p.reject(err)
    this.pending.clear()
  }
  #message(m) {
    let ev
    try { ev = JSON.parse(typeof m.data === 'string' ? m.data : new TextDecoder().decode(m.data)) } catch { return }
    const p = this.pending.get(ev.id)
    if (!p) return
    try {
      const r = dispatch(ev, p.opts)
      if (r) { this.pending.delete(ev.id); p.resolve(r) }
    } catch (e) { this.pending.delete(ev.id); p.reject(e) }
  }
  runCode(code, opts = {}) {
    if (this.closed) return Promise.reject(this.closed)
    const id = `s${this.next++}`
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject, opts})
      this.ws.send(JSON.stringify({type: 'exec', id, ...stepBody(code, opts)}))
    })
  }
  runShell(cmd, opts = {}) { return this.runCode(cmd, {...opts, language: 'bash'}) }
  interrupt() { this.ws.send(JSON.stringify({type: 'interrupt'})) }
  close() { this.ws.close(1000) }
}

export class Sandbox {
  constructor(transport, info, client) {
    this._t = transport
    this._client = client
    this.info = info
    this.id = info.id
    this._path = `/v1/sandboxes/${info.id}`
    this.files = new Files(this)
    this.commands = new Commands(this)
  }

  /**
   * Run a step; its Execution.  With any callback (onStdout, onStderr,
   * onFigure, onResult, onError, onEvent) the step is streamed as NDJSON and
   * each event handed over as it comes.  signal: an AbortSignal (aborting a
   * stream hangs up, which interrupts the step); timeout: the step's seconds.
   */
  async runCode(code, opts = {}) {
    const body = stepBody(code, opts)
    const timeoutMs = Math.max(this._t.timeoutMs, ((opts.timeout ?? 0) + 30) * 1000)
    const streamed = ['onStdout', 'onStderr', 'onFigure', 'onResult', 'onError', 'onEvent'].some((k) => opts[k])
    if (!streamed) return new Execution(await this._t.json('POST', `${this._path}/exec`, {body, signal: opts.signal, timeoutMs}))
    let result
    let running = false
    try {
      for await (const ev of this._t.ndjson('POST', `${this._path}/exec`, {body, signal: opts.signal, timeoutMs})) {
        running = true
        const r = dispatch(ev, opts)
        if (r) result = r
      }
    } catch (e) {
      // The server notices a hangup only when it next writes: a step that
      // is silent would run on.  One that has sent an event is the running
      // step, so it is interrupted outright.
      if (opts.signal?.aborted && running && !result) await this.interrupt().catch(() => {})
      throw e
    }
    if (!result) throw new CorralError('the stream ended without a result')
    return result
  }
  runShell(cmd, opts = {}) { return this.runCode(cmd, {...opts, language: 'bash'}) }
  /** KeyboardInterrupt in the running step; Conflict when none runs. */
  interrupt() { return this._t.json('POST', `${this._path}/interrupt`) }
  async refresh() { this.info = await this._t.json('GET', this._path); return this.info }
  async pause() { this.info = await this._t.json('POST', `${this._path}/pause`, {timeoutMs: Math.max(this._t.timeoutMs, 120000)}); return this.info }
  async resume() { this.info = await this._t.json('POST', `${this._path}/resume`, {timeoutMs: Math.max(this._t.timeoutMs, 120000)}); return this.info }
  /** End it now; everything of it is removed. */
  kill() { return this._t.json('DELETE', this._path) }

  /**
   * A WebSocket for many steps.  WebSocket: a constructor (default the global
   * one: browsers, Node >= 22; pass the `ws` package's on Node 20).  The token
   * goes in the Authorization header where the implementation takes headers
   * (Node's, `ws`); a browser sends the login cookie instead (GET /?token=T).
   */
  connect({WebSocket: WS = this._client?.WebSocket ?? globalThis.WebSocket} = {}) {
    if (!WS) throw new CorralError('no WebSocket implementation: pass {WebSocket} (e.g. the ws package on Node 20)')
    const url = this._t.baseUrl.replace(/^http/, 'ws') + `${this._path}/ws`
    const inBrowser = typeof window !== 'undefined' && typeof document !== 'undefined'
    const ws = inBrowser ? new WS(url) : new WS(url, {headers: this._t.authHeaders()})
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new SandboxSocket(ws))
      ws.onerror = () => reject(new ConnectionFailed(`cannot open a WebSocket to ${this._t.baseUrl}${this._path}/ws`))
    })
  }

  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    try { await this.kill() } catch {}
  }
}

export class Sandboxes {
  constructor(transport, client) { this._t = transport; this._client = client }
  /** A new sandbox: {limits, warm, idleTimeout, lifetime, metadata, from}. */
  async create(o = {}) {
    const body = {}
    for (const [k, v] of [['limits', o.limits], ['warm', o.warm], ['idle_timeout', o.idleTimeout],
      ['lifetime', o.lifetime], ['metadata', o.metadata], ['from', o.from]]) if (v !== undefined) body[k] = v
    const info = await this._t.json('POST', '/v1/sandboxes', {body, signal: o.signal, timeoutMs: Math.max(this._t.timeoutMs, 120000)})
    return new Sandbox(this._t, info, this._client)
  }
  async get(id) { return new Sandbox(this._t, await this._t.json('GET', `/v1/sandboxes/${id}`), this._client) }
  async list() { return (await this._t.json('GET', '/v1/sandboxes')).sandboxes.map((s) => new Sandbox(this._t, s, this._client)) }
  kill(id) { return this._t.json('DELETE', `/v1/sandboxes/${id}`) }
  /** Create a sandbox, give it to fn, kill it after (whatever fn did); fn's value. */
  async with(o, fn) {
    const sb = await this.create(o)
    try { return await fn(sb) } finally { try { await sb.kill() } catch {} }
  }
}
