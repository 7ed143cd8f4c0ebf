"""Agent runs of corral serve (docs/api.md, Runs): create, get, list; on a
run, its events followed over server-sent events (resumed with Last-Event-ID
when the stream breaks or the server drops a slow follower), wait, cancel,
artifacts, the archive.  The model API key goes in the X-Model-Api-Key header
of the create request only: it is not kept."""
import base64
import http.client
import json
import socket
import time
import urllib.parse

from .errors import ConnectionFailed, CorralError, Timeout

_ENDED = ("answered", "gave_up", "model_error", "jail_error", "cancelled", "interrupted")


def _quote(p):
    return urllib.parse.quote(p.lstrip("/"))


def _inputs(inputs):
    out = []
    for path, v in (inputs or {}).items():
        if isinstance(v, dict):
            sb = v.get("sandbox")
            out.append({"sandbox": getattr(sb, "id", sb), "path": v.get("path", path)})
        else:
            data = v.encode() if isinstance(v, str) else bytes(v)
            out.append({"path": path, "content_base64": base64.b64encode(data).decode()})
    return out


class Run:
    """One agent run.  id; info: the run as last seen (status, task, model,
    and once ended answer, reason, usage, artifacts, ...)."""

    def __init__(self, transport, info):
        self._t = transport
        self.info = info
        self.id = info["id"]

    def __repr__(self):
        return f"Run(id={self.id!r}, status={self.status!r})"

    def __getattr__(self, name):
        if name in ("answer", "reason", "usage", "iterations", "wall_ms", "ended", "task", "model", "created"):
            return self.__dict__["info"].get(name)
        raise AttributeError(name)

    @property
    def status(self):
        return self.info.get("status")

    @property
    def done(self):
        return self.status not in (None, "running")

    def refresh(self):
        """GET /v1/runs/{id}: the run as it is now."""
        self.info = self._t.request("GET", f"/v1/runs/{self.id}")
        return self

    def cancel(self):
        """POST .../cancel: the run ends with status cancelled (Conflict when it has ended)."""
        self.info = self._t.request("POST", f"/v1/runs/{self.id}/cancel") or self.info
        return self

    def pending_approval(self):
        """GET .../approvals: the question the run waits on (a run started
        with approve="risky"|"always": {"n", "code", "lang", "review", ...}),
        or None (docs/modes.md, "Human approval")."""
        return (self._t.request("GET", f"/v1/runs/{self.id}/approvals") or {}).get("pending")

    def answer_approval(self, n, decision, reason=None, code=None):
        """POST .../approvals/{n}: decision "approve", "deny" (reason: told to
        the model) or "edit" (code: runs instead, reviewed again).  Conflict
        when it was answered already, timed out, or the run has ended."""
        body = {"decision": decision}
        if reason is not None:
            body["reason"] = reason
        if code is not None:
            body["code"] = code
        return self._t.request("POST", f"/v1/runs/{self.id}/approvals/{int(n)}", body)

    def events(self, after=None, max_reconnects=5, timeout=None):
        """Yield the run's events (dicts, each with its number as "id"), from
        the first (or after event `after`) to run_end, following the stream as
        the run goes.  A broken stream or an `event: dropped` is resumed with
        Last-Event-ID, at most max_reconnects times in a row without progress."""
        last = after
        failures = quiet = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                r = self._t.open("GET", f"/v1/runs/{self.id}/events", headers=headers, timeout=timeout)
            except ConnectionFailed:
                failures += 1
                if failures > max_reconnects:
                    raise
                time.sleep(min(0.2 * 2 ** failures, 5))
                continue
            ended = dropped = progress = False
            try:
                cur = {}
                while True:
                    try:
                        line = r.readline()
                    except (socket.timeout, TimeoutError):
                        raise Timeout(f"run {self.id}: no event for {timeout or self._t.timeout} s") from None
                    except (OSError, http.client.HTTPException):
                        break  # the stream broke: resume
                    if not line:
                        break
                    line = line.decode("utf-8", "replace").rstrip("\r\n")
                    if line:
                        if not line.startswith(":"):
                            k, _, v = line.partition(":")
                            v = v[1:] if v.startswith(" ") else v
                            cur[k] = cur[k] + "\n" + v if k == "data" and k in cur else v
                        continue
                    if "data" not in cur:
                        cur = {}
                        continue
                    kind, data, eid = cur.get("event"), cur["data"], cur.get("id")
                    cur = {}
                    ev = json.loads(data)
                    if kind == "dropped" or ev.get("type") == "dropped":
                        if ev.get("last_event_id") is not None:
                            last = ev["last_event_id"]
                        dropped = True
                        break
                    if eid is not None:
                        n = int(eid)
                        if last is not None and n <= last:
                            continue  # seen already
                        ev["id"] = n
                        last = n
                    failures = 0
                    progress = True
                    yield ev
                    if ev.get("type") == "run_end":
                        ended = True
                        return
            finally:
                r.close()
                r._corral_conn.close()
            if ended:
                return
            if not dropped:
                # The stream ended before run_end: cut (resume), or an
                # interrupted run's last event (a finished run whose stream,
                # read again, brings nothing new twice running).
                quiet = 0 if progress else quiet + 1
                if quiet >= 2 and self.refresh().done:
                    return
                failures += 0 if progress else 1
                if failures > max_reconnects:
                    raise ConnectionFailed(f"run {self.id}: the event stream kept breaking")
                time.sleep(min(0.1 * 2 ** failures, 5) if failures else 0.05)

    def wait(self, on_event=None, on_stdout=None, timeout=None):
        """Follow the events to the end (handing each to on_event, and the
        output of the run's code to on_stdout) and return the run as it ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for ev in self.events():
            if on_event:
                on_event(ev)
            if on_stdout:
                out = _stdout_of(ev)
                if out:
                    on_stdout(out)
            if deadline is not None and time.monotonic() > deadline:
                raise Timeout(f"run {self.id}: still going after {timeout} s")
        self.refresh()
        while self.status == "running":  # the result is written just after run_end
            if deadline is not None and time.monotonic() > deadline:
                raise Timeout(f"run {self.id}: still going after {timeout} s")
            time.sleep(0.05)
            self.refresh()
        return self

    def artifacts(self):
        """[{path, type, size, ...}]: the run's output/ (Conflict while it goes)."""
        return self._t.request("GET", f"/v1/runs/{self.id}/artifacts")["artifacts"]

    def artifact(self, path):
        """One file of output/, bytes."""
        return self._t.request("GET", f"/v1/runs/{self.id}/artifacts/{_quote(path)}", raw=True,
                               headers={"Accept": "application/octet-stream"})

    def archive(self, dest=None):
        """The run's workspace as a tar: bytes, or written to the path dest."""
        data = self._t.request("GET", f"/v1/runs/{self.id}/archive", raw=True,
                               headers={"Accept": "application/x-tar"}, timeout=max(self._t.timeout, 120))
        if dest is None:
            return data
        with open(dest, "wb") as f:
            f.write(data)
        return dest


def _stdout_of(ev):
    """The output of the run's code an event carries (a tool_result's exec.stdout), or None."""
    if ev.get("type") != "tool_result":
        return None
    out = (ev.get("exec") or {}).get("stdout")
    return out if isinstance(out, str) and out else None


class Runs:
    def __init__(self, transport):
        self._t = transport

    def create(self, task, *, model=None, base_url=None, provider=None, api_key=None, inputs=None, limits=None,
               review=None, max_iterations=None, token_budget=None, wall_budget=None, approve=None,
               approve_timeout=None, approve_default=None):
        """POST /v1/runs: a Run, going.  api_key is sent as X-Model-Api-Key
        and not kept; inputs: {path: bytes | str | {"sandbox": sb, "path": p}}."""
        body = {"task": task}
        m = {k: v for k, v in (("model", model), ("base_url", base_url), ("provider", provider)) if v is not None}
        if m:
            body["model"] = m
        if inputs:
            body["inputs"] = _inputs(inputs)
        for k, v in (("limits", limits), ("review", review), ("max_iterations", max_iterations),
                     ("token_budget", token_budget), ("wall_budget", wall_budget), ("approve", approve),
                     ("approve_timeout", approve_timeout), ("approve_default", approve_default)):
            if v is not None:
                body[k] = v
        headers = {"X-Model-Api-Key": api_key} if api_key else None
        try:
            return Run(self._t, self._t.request("POST", "/v1/runs", body, headers=headers))
        except CorralError as e:
            if api_key and api_key in str(e):  # never echo the key
                e.message = e.message.replace(api_key, "[REDACTED]")
                e.args = (e.message,)
            raise

    def get(self, id):
        return Run(self._t, self._t.request("GET", f"/v1/runs/{id}"))

    def list(self, limit=None, after=None):
        """This token's runs, newest first: every one (the server's pages
        followed), or at most limit of them after the run `after` (an id)."""
        out = []
        while True:
            q = {}
            if limit is not None:
                q["limit"] = min(limit - len(out), 1000)
            if after:
                q["after"] = after
            path = "/v1/runs" + ("?" + urllib.parse.urlencode(q) if q else "")
            page = self._t.request("GET", path)
            out += [Run(self._t, r) for r in page["runs"]]
            if not page.get("next") or (limit is not None and len(out) >= limit):
                return out
            after = page["next"]
