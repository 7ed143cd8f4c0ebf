// corral-client: a client for `corral serve` (docs/clients.md).  No
// dependencies; Node 20+ and browsers.  client.sandboxes and client.runs
// (agent runs over HTTP) on one transport.
import {Transport} from './http.js'
import {Sandboxes} from './sandboxes.js'
import {Runs} from './runs.js'

export * from './errors.js'
export {Run, Runs} from './runs.js'
export {Execution, Sandbox, SandboxSocket, Command, Files, Commands, Sandboxes} from './sandboxes.js'

const env = (k) => (typeof process !== 'undefined' ? process.env?.[k] : undefined)

export class Corral {
  /**
   * @param {{baseUrl?: string, token?: string, timeoutMs?: number, maxRetries?: number,
   *          maxRetryWaitMs?: number, fetch?: typeof fetch, WebSocket?: any}} [o]
   * baseUrl defaults to $CORRAL_URL, else http://127.0.0.1:8745 (in a browser: the page's origin);
   * the URL corral serve prints (.../?token=T) is taken: its token used and dropped from the URL.
   * token defaults to $CORRAL_TOKEN (a browser logged in by the cookie needs none).
   */
  constructor(o = {}) {
    let baseUrl = o.baseUrl ?? env('CORRAL_URL') ?? (typeof location !== 'undefined' ? location.origin : 'http://127.0.0.1:8745')
    let token = o.token
    const u = new URL(baseUrl)
    if (u.searchParams.has('token')) {
      token ??= u.searchParams.get('token')
      u.search = ''
      baseUrl = u.toString()
    }
    token ??= env('CORRAL_TOKEN')
    this._t = new Transport({...o, baseUrl, token})
    this.baseUrl = this._t.baseUrl
    this.WebSocket = o.WebSocket
    this.sandboxes = new Sandboxes(this._t, this)
    this.runs = new Runs(this._t, this)
  }
  toJSON() { return {baseUrl: this.baseUrl} }
  /** GET /healthz (no token needed). */
  health() { return this._t.json('GET', '/healthz') }
}

export default Corral
