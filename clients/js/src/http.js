// The transport of corral-client: fetch with the token in the Authorization
// header only, bounded retries on 429 and 503 honouring Retry-After, a time
// limit and the caller's AbortSignal, answers turned into CorralErrors,
// NDJSON streams read from the body's reader.  No Node-only imports.
import {ConnectionFailed, CorralError, TimeoutError, errorFor} from './errors.js'

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms)
  signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason) }, {once: true})
})

export class Transport {
  #token
  constructor({baseUrl, token, timeoutMs = 60000, maxRetries = 3, maxRetryWaitMs = 10000, fetch: f}) {
    const u = new URL(baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new TypeError('baseUrl must be http(s)://HOST:PORT')
    this.baseUrl = `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`
    this.#token = token
    this.timeoutMs = timeoutMs
    this.maxRetries = maxRetries
    this.maxRetryWaitMs = maxRetryWaitMs
    this.fetch = f || globalThis.fetch.bind(globalThis)
  }

  get hasToken() { return Boolean(this.#token) }
  authHeaders() { return this.#token ? {Authorization: `Bearer ${this.#token}`} : {} }
  toJSON() { return {baseUrl: this.baseUrl} } // never the token

  /**
   * One request; the Response when its status is 2xx, else the CorralError thrown.
   * body: an object (JSON), a string, bytes or a Blob.  timeoutMs bounds the wait for
   * the answer's headers (streamed bodies are bounded by the caller).
   */
  async open(method, path, {body, headers = {}, query, signal, timeoutMs, streamed = false} = {}) {
    const h = {Accept: 'application/json', ...this.authHeaders(), ...headers}
    if (body !== undefined && body !== null && !(typeof body === 'string' || body instanceof Uint8Array ||
        body instanceof ArrayBuffer || (typeof Blob !== 'undefined' && body instanceof Blob))) {
      body = JSON.stringify(body)
      h['Content-Type'] = 'application/json'
    }
    let url = this.baseUrl + path
    if (query) {
      const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null))
      if ([...q].length) url += '?' + q
    }
    timeoutMs ??= this.timeoutMs
    for (let attempt = 0; ; attempt++) {
      const ctl = new AbortController()
      const timer = setTimeout(() => ctl.abort(new TimeoutError(`${method} ${path}: no answer from ${this.baseUrl} within ${timeoutMs} ms`)), timeoutMs)
      const onAbort = () => ctl.abort(signal.reason)
      if (signal?.aborted) { clearTimeout(timer); throw signal.reason }
      signal?.addEventListener('abort', onAbort, {once: true})
      let r
      try {
        r = await this.fetch(url, {method, headers: h, body, signal: ctl.signal})
      } catch (e) {
        if (ctl.signal.aborted) throw ctl.signal.reason
        const cause = e?.cause?.code || e?.cause?.message || e?.message || 'failed'
        throw new ConnectionFailed(`cannot reach corral at ${this.baseUrl}: ${cause}`)
      } finally {
        clearTimeout(timer)
        if (!streamed) signal?.removeEventListener('abort', onAbort)
      }
      if (r.ok) {
        // A streamed body stays tied to the caller's signal: aborting it
        // aborts the fetch, which closes the connection (the server then
        // interrupts the step).
        r.detach = () => signal?.removeEventListener('abort', onAbort)
        return r
      }
      signal?.removeEventListener('abort', onAbort)
      const text = await r.text()
      const ra = Number.parseFloat(r.headers.get('Retry-After') ?? '')
      const err = errorFor(r.status, text, Number.isFinite(ra) ? ra : undefined)
      if ((r.status === 429 || r.status === 503) && attempt < this.maxRetries) {
        const wait = Number.isFinite(ra) ? ra * 1000 : 500 * 2 ** attempt
        await sleep(Math.min(wait, this.maxRetryWaitMs), signal)
        continue
      }
      throw err
    }
  }

  /** The answer's JSON (or null for an empty body). */
  async json(method, path, opts) {
    const r = await this.open(method, path, opts)
    const text = await r.text()
    if (!text) return null
    try { return JSON.parse(text) } catch { throw new CorralError(`${method} ${path}: the answer is not JSON`, {status: r.status}) }
  }

  /** The answer's bytes. */
  async bytes(method, path, opts) {
    const r = await this.open(method, path, opts)
    return new Uint8Array(await r.arrayBuffer())
  }

  /** Yield the events (objects) of an NDJSON stream, one a line. */
  async * ndjson(method, path, opts) {
    const r = await this.open(method, path, {...opts, headers: {Accept: 'application/x-ndjson'}, streamed: true})
    const reader = r.body.getReader()
    const dec = new TextDecoder()
    let buf = ''
    const signal = opts?.signal
    try {
      for (;;) {
        let chunk
        try {
          chunk = await reader.read()
        } catch (e) {
          if (opts?.signal?.aborted) throw opts.signal.reason
          throw new ConnectionFailed(`${method} ${path}: the stream broke: ${e?.message || e}`)
        }
        if (signal?.aborted) throw signal.reason
        if (chunk.done) break
        buf += dec.decode(chunk.value, {stream: true})
        let nl
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim()
          buf = buf.slice(nl + 1)
          if (line) yield JSON.parse(line)
        }
      }
      if (buf.trim()) yield JSON.parse(buf)
    } finally {
      r.detach()
      reader.cancel().catch(() => {}) // hanging up interrupts a step still running
    }
  }
}
