// The errors of corral-client: one class per kind of failure, each carrying
// the server's own message (its JSON error.message), never the token.

export class CorralError extends Error {
  /** @param {string} message @param {{status?: number, kind?: string, field?: string, retryAfter?: number}} [o] */
  constructor(message, o = {}) {
    super(message)
    this.name = new.target.name
    this.status = o.status
    this.kind = o.kind
    this.field = o.field
    this.retryAfter = o.retryAfter
  }
}
export class BadRequest extends CorralError {}
export class Unauthorized extends CorralError {}
export class Forbidden extends CorralError {}
export class NotFound extends CorralError {}
export class Conflict extends CorralError {}
export class PayloadTooLarge extends CorralError {}
export class RateLimited extends CorralError {}
export class ServerError extends CorralError {}
export class Unavailable extends ServerError {}
export class ConnectionFailed extends CorralError {}
export class TimeoutError extends CorralError {}

const BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
  413: PayloadTooLarge, 429: RateLimited, 503: Unavailable}

/** The CorralError of an answer of `status` whose body is the text `text`. */
export function errorFor(status, text, retryAfter) {
  let kind, field, message
  try {
    const err = JSON.parse(text).error || {}
    ;({kind, field, message} = err)
  } catch {}
  if (!message) message = `HTTP ${status}` + (text.trim() ? `: ${text.trim().slice(0, 200)}` : '')
  const Cls = BY_STATUS[status] || (status >= 500 ? ServerError : CorralError)
  return new Cls(message, {status, kind, field, retryAfter})
}
