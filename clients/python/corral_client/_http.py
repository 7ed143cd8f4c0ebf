"""The transport of corral_client: one HTTP request on a connection of its
own (http.client), the token in the Authorization header only, bounded
retries on 429 and 503 that honour Retry-After, answers turned into
CorralError subclasses.  It does not log; no message it makes holds the token."""
import http.client
import json
import socket
import time
import urllib.parse

from .errors import ConnectionFailed, CorralError, Timeout, error_for

USER_AGENT = "corral-client-python/0.1"


class Transport:
    """base_url: http(s)://HOST:PORT[/prefix]; token: the bearer token;
    timeout: seconds for connecting and for each read; max_retries: how many
    times a 429 or 503 is retried; max_retry_wait: the longest wait for one."""

    def __init__(self, base_url, token, timeout=60.0, max_retries=3, max_retry_wait=10.0):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url must be http://HOST:PORT or https://HOST:PORT")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port
        self.prefix = u.path.rstrip("/")
        self.base_url = f"{u.scheme}://{u.netloc}{self.prefix}"
        self._token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def __repr__(self):
        return f"Transport({self.base_url!r})"  # never the token

    def _conn(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def open(self, method, path, body=None, headers=None, timeout=None, query=None):
        """Send one request and return the http.client response, its status
        2xx; raise the CorralError of any other answer.  body: dict (JSON),
        bytes, or a file object; the caller reads and closes the response."""
        h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self._token:
            h["Authorization"] = f"Bearer {self._token}"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        url = self.prefix + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        timeout = self.timeout if timeout is None else timeout
        attempt = 0
        while True:
            start = body.tell() if hasattr(body, "seek") else None
            conn = self._conn(timeout)
            try:
                conn.request(method, url, body=body, headers=h)
                r = conn.getresponse()
            except (socket.timeout, TimeoutError):
                conn.close()
                raise Timeout(f"{method} {path}: no answer from {self.base_url} within {timeout} s") from None
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                reason = (e.strerror or str(e)) if isinstance(e, OSError) else type(e).__name__
                raise ConnectionFailed(f"cannot reach corral at {self.base_url}: {reason}") from None
            if 200 <= r.status < 300:
                r._corral_conn = conn  # closed with the response
                return r
            data = r.read()
            conn.close()
            retry_after = _retry_after(r.getheader("Retry-After"))
            err = error_for(r.status, data, retry_after)
            if r.status in (429, 503) and attempt < self.max_retries and (start is not None or not hasattr(body, "read")):
                attempt += 1
                wait = retry_after if retry_after is not None else 0.5 * 2 ** (attempt - 1)
                time.sleep(min(wait, self.max_retry_wait))
                if start is not None:
                    body.seek(start)
                continue
            raise err

    def request(self, method, path, body=None, headers=None, timeout=None, query=None, raw=False):
        """The answer's body: parsed JSON, or bytes with raw=True."""
        r = self.open(method, path, body, headers, timeout, query)
        try:
            data = r.read()
        except (socket.timeout, TimeoutError):
            raise Timeout(f"{method} {path}: the answer stalled for {timeout or self.timeout} s") from None
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed(f"{method} {path}: the connection broke: {type(e).__name__}") from None
        finally:
            r.close()
            r._corral_conn.close()
        if raw:
            return data
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise CorralError(f"{method} {path}: the answer is not JSON", r.status) from None

    def stream(self, method, path, body, timeout=None):
        """Yield the events of an NDJSON stream (dicts), one a line."""
        r = self.open(method, path, body, {"Accept": "application/x-ndjson"}, timeout)
        try:
            while True:
                try:
                    line = r.readline()
                except (socket.timeout, TimeoutError):
                    raise Timeout(f"{method} {path}: no event for {timeout or self.timeout} s") from None
                except (OSError, http.client.HTTPException) as e:
                    raise ConnectionFailed(f"{method} {path}: the stream broke: {type(e).__name__}") from None
                if not line:
                    return
                line = line.strip()
                if line:
                    yield json.loads(line)
        finally:
            r.close()
            r._corral_conn.close()


def _retry_after(value):
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
