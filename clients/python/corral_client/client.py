"""Corral: the entry point.  client.sandboxes and client.runs (agent runs
over HTTP) on one transport."""
import os
import urllib.parse

from ._http import Transport
from .runs import Runs
from .sandboxes import Sandboxes


class Corral:
    """A client of one corral serve.

    base_url: http://HOST:PORT (default $CORRAL_URL, else http://127.0.0.1:8745);
    the URL corral serve prints (`.../?token=T`) is taken too: its token is
    used and dropped from the URL.  token: default $CORRAL_TOKEN.
    timeout: seconds to connect and for each read; max_retries,
    max_retry_wait: the retries of a 429 or 503 (Retry-After honoured)."""

    def __init__(self, base_url=None, token=None, timeout=60.0, max_retries=3, max_retry_wait=10.0):
        base_url = base_url or os.environ.get("CORRAL_URL") or "http://127.0.0.1:8745"
        u = urllib.parse.urlsplit(base_url)
        q = urllib.parse.parse_qs(u.query)
        if "token" in q:
            token = token or q["token"][0]
            base_url = urllib.parse.urlunsplit((u.scheme, u.netloc, u.path, "", ""))
        token = token or os.environ.get("CORRAL_TOKEN")
        self._t = Transport(base_url, token, timeout, max_retries, max_retry_wait)
        self.base_url = self._t.base_url
        self.sandboxes = Sandboxes(self._t)
        self.runs = Runs(self._t)

    def __repr__(self):
        return f"Corral(base_url={self.base_url!r})"

    def health(self):
        """GET /healthz: {"status": "ok"} (no token needed)."""
        return self._t.request("GET", "/healthz")

    def info(self):
        """GET /: {name, version, api}."""
        return self._t.request("GET", "/")
