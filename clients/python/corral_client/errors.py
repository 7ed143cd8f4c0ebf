"""The errors of corral_client: one class per kind of failure, each carrying
the server's own message (its JSON `error.message`), never the token."""


class CorralError(Exception):
    """Any failure of a request to corral serve.

    status: the HTTP status (None when no answer came); kind: the server's
    error kind (`usage`, `not_found`, `busy`, ...); field: the request field at
    fault, when the server named one; message: what went wrong."""

    def __init__(self, message, status=None, kind=None, field=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.field = field


class BadRequest(CorralError):
    """400: not JSON, an unknown field, a value out of range, a path refused."""


class Unauthorized(CorralError):
    """401: no token or a wrong one."""


class Forbidden(CorralError):
    """403: another token's sandbox, or a Host/Origin the server does not answer."""


class NotFound(CorralError):
    """404: no such sandbox, file, command or route."""


class Conflict(CorralError):
    """409: an interrupt with no step running, or a paused sandbox asked to run."""


class PayloadTooLarge(CorralError):
    """413: a body over the server's cap."""


class RateLimited(CorralError):
    """429: a per-token cap or rate; retry_after is the server's Retry-After in seconds."""

    def __init__(self, message, status=None, kind=None, field=None, retry_after=None):
        super().__init__(message, status, kind, field)
        self.retry_after = retry_after


class ServerError(CorralError):
    """5xx: corral failed (500) or is full or stopping (503, see Unavailable)."""

    def __init__(self, message, status=None, kind=None, field=None, retry_after=None):
        super().__init__(message, status, kind, field)
        self.retry_after = retry_after


class Unavailable(ServerError):
    """503: the server's sandbox cap, or a stop in progress (Retry-After)."""


class ConnectionFailed(CorralError):
    """No answer at all: the server is down, the address is wrong, the connection broke."""


class Timeout(CorralError):
    """The client's own time limit passed before the server answered."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
              413: PayloadTooLarge, 429: RateLimited, 503: Unavailable}


def error_for(status, body, retry_after=None):
    """The CorralError for an HTTP answer of `status` whose body is `body` (bytes)."""
    import json
    kind = field = None
    message = None
    try:
        err = json.loads(body.decode("utf-8", "replace")).get("error") or {}
        kind, field, message = err.get("kind"), err.get("field"), err.get("message")
    except (ValueError, AttributeError):
        pass
    if not message:
        text = body.decode("utf-8", "replace").strip()[:200]
        message = f"HTTP {status}" + (f": {text}" if text else "")
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else CorralError)
    if cls in (RateLimited, Unavailable, ServerError):
        return cls(message, status, kind, field, retry_after=retry_after)
    return cls(message, status, kind, field)
