"""Sandboxes of corral serve (docs/api.md): create, list, get; on a sandbox,
Python and bash steps (whole or streamed to callbacks), interrupts,
background commands, files one by one and as a tar, pause, resume, kill."""
import io
import os
import urllib.parse

from .errors import CorralError


class ExecutionError:
    """A step's error: name (`ZeroDivisionError`), value (its message), traceback (text)."""

    def __init__(self, d):
        self.name = d.get("name", "")
        self.value = d.get("value", "")
        self.traceback = d.get("traceback", "")
        self.raw = d

    def __repr__(self):
        return f"ExecutionError({self.name}: {self.value})"


class Execution:
    """The result of a step (docs/sessions.md, What a step returns).

    status: ok, error, timeout, interrupted, oom, ...; stdout, stderr: text;
    text: the last expression's value as text (None when there was none);
    html, markdown: its rich forms where it has them (a DataFrame's html);
    value: the value as the server gave it ({text, type, html, markdown, json});
    error: an ExecutionError or None; figures: list of dicts; exit_code;
    state_lost; raw: the whole result object."""

    def __init__(self, d):
        self.raw = d
        self.status = d.get("status")
        self.stdout = d.get("stdout", "")
        self.stderr = d.get("stderr", "")
        self.value = d.get("value")
        v = self.value if isinstance(self.value, dict) else {}
        self.text = v.get("text")
        self.html = v.get("html")  # a DataFrame's table, an object's _repr_html_()
        self.markdown = v.get("markdown")
        self.error = ExecutionError(d["error"]) if d.get("error") else None
        self.figures = d.get("figures") or []
        self.exit_code = d.get("exit_code")
        self.state_lost = bool(d.get("state_lost"))

    @property
    def ok(self):
        return self.status == "ok"

    def __repr__(self):
        return f"Execution(status={self.status!r}, text={self.text!r}, error={self.error!r})"


class Command:
    """A background command: pid, log (its path in the workspace)."""

    def __init__(self, sandbox, pid, log=None):
        self.sandbox = sandbox
        self.pid = pid
        self.log = log or f".corral/commands/{pid}.log"

    def status(self):
        """{pid, running, exit_code, log, log_bytes}."""
        return self.sandbox._t.request("GET", f"{self.sandbox._path}/commands/{self.pid}")

    @property
    def running(self):
        return bool(self.status().get("running"))

    def output(self):
        """The command's output so far (both streams), as text."""
        path = self.log[len("/workspace/"):] if self.log.startswith("/workspace/") else self.log
        return self.sandbox.files.read(path).decode("utf-8", "replace")

    def kill(self, signal="TERM"):
        """Send a signal (TERM, KILL, INT, HUP, ...) to its process group."""
        return self.sandbox._t.request("POST", f"{self.sandbox._path}/commands/{self.pid}/signal",
                                       {"signal": signal})

    def wait(self, timeout=60.0, interval=0.1):
        """Poll until it ends; return its exit code (TimeoutError after timeout seconds)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            s = self.status()
            if not s.get("running"):
                return s.get("exit_code")
            if time.monotonic() > deadline:
                raise TimeoutError(f"command {self.pid} still runs after {timeout} s")
            time.sleep(interval)

    def __repr__(self):
        return f"Command(pid={self.pid})"


class Commands:
    """sandbox.commands: background commands (bash started and not waited for)."""

    def __init__(self, sandbox):
        self.sandbox = sandbox

    def run(self, cmd, background=True, env=None):
        """Start `cmd` (bash) in the background; return its Command.
        With background=False, run it as a step: the Execution."""
        if not background:
            return self.sandbox.run_shell(cmd, env=env)
        body = {"code": cmd, "language": "bash", "background": True}
        if env:
            body["env"] = env
        r = Execution(self.sandbox._t.request("POST", f"{self.sandbox._path}/exec", body))
        if r.status != "ok" or not isinstance(r.value, dict) or "json" not in r.value:
            raise CorralError(f"the command did not start: {r.error or r.status}")
        j = r.value["json"]
        return Command(self.sandbox, j["pid"], j.get("log"))

    def get(self, pid):
        return Command(self.sandbox, pid)


def _quote(path):
    return urllib.parse.quote(path.lstrip("/"), safe="/")


class Files:
    """sandbox.files: paths are relative to the workspace (/workspace inside)."""

    def __init__(self, sandbox):
        self.sandbox = sandbox

    def read(self, path, text=False):
        """The file's bytes (str with text=True)."""
        data = self.sandbox._t.request("GET", f"{self.sandbox._path}/files/{_quote(path)}", raw=True,
                                       headers={"Accept": "application/octet-stream"})
        return data.decode("utf-8") if text else data

    def write(self, path, data):
        """Write bytes, str (UTF-8) or a binary file object; parents are made.  {path, size}."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self.sandbox._t.request("PUT", f"{self.sandbox._path}/files/{_quote(path)}", data,
                                       headers={"Content-Type": "application/octet-stream"})

    def list(self, path="", depth=None):
        """[{path, type, size, mode, mtime, target}] beneath `path` (default: everything)."""
        q = {"path": path or None, "depth": depth}
        return self.sandbox._t.request("GET", f"{self.sandbox._path}/files", query=q)["files"]

    def exists(self, path):
        from .errors import NotFound
        try:
            self.list(path, depth=0)
            return True
        except NotFound:
            return False

    def remove(self, path):
        """Remove a file, a symlink or a directory tree.  {removed}."""
        return self.sandbox._t.request("DELETE", f"{self.sandbox._path}/files/{_quote(path)}")

    def upload_tar(self, tar):
        """Extract a tar (bytes, a path to a .tar/.tar.gz/.tar.zst, or a binary
        file object) as new top-level entries: all or nothing.  {entries, files, bytes}."""
        if isinstance(tar, (str, os.PathLike)):
            with open(tar, "rb") as f:
                tar = f.read()
        return self.sandbox._t.request("PUT", f"{self.sandbox._path}/files", tar,
                                       headers={"Content-Type": "application/x-tar"})

    def upload_dir(self, local_dir, name=None):
        """Pack a local directory as one top-level entry `name` (default its
        base name) and upload it."""
        import tarfile
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            t.add(local_dir, arcname=name or os.path.basename(os.path.abspath(local_dir)))
        return self.upload_tar(buf.getvalue())

    def download_tar(self, dest=None):
        """The whole workspace as a tar: bytes, or written to the path `dest`."""
        data = self.sandbox._t.request("GET", f"{self.sandbox._path}/files", query={"format": "tar"},
                                       headers={"Accept": "application/x-tar"}, raw=True)
        if dest is None:
            return data
        with open(dest, "wb") as f:
            f.write(data)
        return dest


class Sandbox:
    """One sandbox.  A context manager: leaving the `with` kills it."""

    def __init__(self, transport, info):
        self._t = transport
        self.info = info
        self.id = info["id"]
        self._path = f"/v1/sandboxes/{self.id}"
        self.files = Files(self)
        self.commands = Commands(self)

    def __repr__(self):
        return f"Sandbox(id={self.id!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.kill()
        except CorralError:
            pass

    def run_code(self, code, language="python", on_stdout=None, on_stderr=None, on_result=None,
                 on_figure=None, on_error=None, on_event=None, timeout=None, context=None, env=None,
                 figure_png=None, request_timeout=None):
        """Run a step and return its Execution.  With any callback the step is
        streamed (NDJSON) and each event is handed over as it comes:
        on_stdout(text), on_stderr(text), on_figure(dict), on_result(Execution),
        on_error(CorralError) for a step that could not run, on_event(dict) for
        every event.  timeout: the step's wall time (the server's limit);
        request_timeout: the client's wait for each read (default timeout + 30 s)."""
        body = {"code": code, "language": language}
        for k, v in (("timeout", timeout), ("context", context), ("env", env), ("figure_png", figure_png)):
            if v is not None:
                body[k] = v
        if request_timeout is None:
            request_timeout = max(self._t.timeout, (timeout or 0) + 30)
        streamed = any((on_stdout, on_stderr, on_result, on_figure, on_error, on_event))
        if not streamed:
            return Execution(self._t.request("POST", f"{self._path}/exec", body, timeout=request_timeout))
        result = None
        running = False
        try:
            for ev in self._t.stream("POST", f"{self._path}/exec", body, timeout=request_timeout):
                running = True
                result = self._dispatch(ev, on_stdout, on_stderr, on_result, on_figure, on_error, on_event) or result
        except BaseException:
            # A callback that raised, Ctrl-C, a client timeout: the server
            # notices the hangup only when it next writes, so a silent step
            # would run on.  One that has sent an event is the running step:
            # interrupt it outright.
            if running and result is None:
                try:
                    self.interrupt()
                except CorralError:
                    pass
            raise
        if result is None:
            raise CorralError("the stream ended without a result")
        return result

    @staticmethod
    def _dispatch(ev, on_stdout, on_stderr, on_result, on_figure, on_error, on_event):
        """Hand one event to the callbacks; the Execution when it is the result."""
        if on_event:
            on_event(ev)
        kind = ev.get("type")
        if kind == "stdout" and on_stdout:
            on_stdout(ev.get("data", ""))
        elif kind == "stderr" and on_stderr:
            on_stderr(ev.get("data", ""))
        elif kind == "figure" and on_figure:
            on_figure(ev.get("figure") or {})
        elif kind == "result":
            result = Execution(ev.get("result") or {})
            if on_result:
                on_result(result)
            return result
        elif kind == "error":
            e = ev.get("error") or {}
            err = CorralError(e.get("message", "the step could not run"), kind=e.get("kind"))
            if on_error:
                on_error(err)
            raise err
        return None

    def run_shell(self, cmd, **kw):
        """Run a bash step (same jail, files and processes); an Execution
        whose exit_code is the script's.  Takes run_code's keywords."""
        return self.run_code(cmd, language="bash", **kw)

    def interrupt(self):
        """KeyboardInterrupt in the running step (the state is kept).  Conflict when none runs."""
        return self._t.request("POST", f"{self._path}/interrupt")

    def refresh(self):
        """The sandbox as the server sees it now (also kept in .info)."""
        self.info = self._t.request("GET", self._path)
        return self.info

    @property
    def state(self):
        return self.refresh().get("state")

    def pause(self):
        """Archive the workspace and stop the session (files kept, variables not)."""
        self.info = self._t.request("POST", f"{self._path}/pause", timeout=max(self._t.timeout, 120))
        return self.info

    def resume(self):
        """A session again from the paused workspace."""
        self.info = self._t.request("POST", f"{self._path}/resume", timeout=max(self._t.timeout, 120))
        return self.info

    def kill(self):
        """End the sandbox now (a running step is cancelled); everything of it is removed."""
        return self._t.request("DELETE", self._path)


class Sandboxes:
    """client.sandboxes: create, get, list."""

    def __init__(self, transport):
        self._t = transport

    def create(self, limits=None, warm=None, idle_timeout=None, lifetime=None, metadata=None, from_=None,
               timeout=None):
        """A new sandbox (docs/api.md, Sandboxes).  limits: {"memory": "512M",
        "timeout": 30, ...} each at most the server's; from_: a paused
        sandbox's id whose files the new one starts with."""
        body = {}
        for k, v in (("limits", limits), ("warm", warm), ("idle_timeout", idle_timeout),
                     ("lifetime", lifetime), ("metadata", metadata), ("from", from_)):
            if v is not None:
                body[k] = v
        info = self._t.request("POST", "/v1/sandboxes", body, timeout=max(timeout or 0, self._t.timeout, 120))
        return Sandbox(self._t, info)

    def get(self, sandbox_id):
        return Sandbox(self._t, self._t.request("GET", f"/v1/sandboxes/{sandbox_id}"))

    def list(self):
        return [Sandbox(self._t, s) for s in self._t.request("GET", "/v1/sandboxes")["sandboxes"]]

    def kill(self, sandbox_id):
        return self._t.request("DELETE", f"/v1/sandboxes/{sandbox_id}")
