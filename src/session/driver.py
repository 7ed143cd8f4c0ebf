# driver.py: the process of a corral session, run inside the jail as
# `python3 -u driver.py`.
#
# It executes steps of Python code in one persistent namespace and answers
# over a framed control channel (docs/sessions.md).  The jail carries that
# channel over the process's stdin and stdout; the driver moves them to
# fd 3 (requests in) and fd 4 (frames out) before any user code runs, and
# gives user code fresh stdio: /dev/null on 0, pipes on 1 and 2 that the
# driver reads and streams as "out" frames.  The original stderr stays at
# fd 5 for the driver's own last words (faulthandler on a crash).
#
# A frame is a 4-byte big-endian length, then that many bytes of one UTF-8
# JSON object.  Nothing here is a security boundary: user code runs in this
# very process and can write any frame it likes; the supervisor outside the
# jail treats every frame as untrusted input.
#
# Kept import-light: pandas and matplotlib are only touched when the user's
# code imported them (sys.modules).

import ast
import base64
import codecs
import fcntl
import importlib
import json
import linecache
import os
import resource
import select
import signal
import struct
import sys
import threading
import time
import traceback

CTRL_IN, CTRL_OUT, DIAG = 3, 4, 5
MAX_FRAME = 64 << 20
FIGURE_DIR = "/workspace/output/figures"
VALUE_CHARS = 10000
TABLE_ROWS, TABLE_COLS = 30, 20
RICH_MAX = 1 << 20               # a value's HTML, markdown or JSON: whole, or not sent
FIGURE_PNG_MAX = 8 << 20         # one figure's PNG bytes sent on request (figure_png)
FIGURE_PNG_STEP = 32 << 20       # all of a step's
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_write_lock = threading.Lock()   # one frame at a time on fd 4
_out_lock = threading.Lock()     # output pipes: reader thread vs end-of-step drain
_state_lock = threading.Lock()
_running = None                  # id of the step running now
_in_user = False                 # the main thread is inside user code
_main_ident = threading.get_ident()


def send(obj):
    data = json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8", "replace")
    with _write_lock:
        buf = struct.pack(">I", len(data)) + data
        while buf:
            n = os.write(CTRL_OUT, buf)
            buf = buf[n:]


def read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(CTRL_IN, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame():
    head = read_exact(4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > MAX_FRAME:
        return None
    body = read_exact(n)
    if body is None:
        return None
    return json.loads(body.decode("utf-8", "replace"))


# ---- stdio of user code ----

class Stream:
    def __init__(self, name, fd):
        self.name = name
        r, w = os.pipe2(os.O_CLOEXEC)
        try:
            fcntl.fcntl(r, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer wake-ups
        except OSError:
            pass
        os.set_blocking(r, False)
        os.dup2(w, fd)  # user code and its children write here
        os.close(w)
        self.r = r
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.reset(None, 1 << 20)

    def reset(self, step, cap):
        self.step = step
        self.cap = cap
        self.total = 0
        self.kept = 0
        self.truncated = False

    def pump(self):
        """Read what is there and send it; called under _out_lock."""
        while True:
            try:
                b = os.read(self.r, 65536)
            except BlockingIOError:
                return
            except InterruptedError:
                continue
            if not b:
                return
            if self.step is None:
                continue  # between steps (a thread of user code): dropped
            self.total += len(b)
            room = self.cap - self.kept
            if room <= 0:
                self.truncated = True
                continue
            if len(b) > room:
                b = b[:room]
                self.truncated = True
            self.kept += len(b)
            text = self.decoder.decode(b)
            if text:
                send({"t": "out", "id": self.step, "stream": self.name, "data": text})


def output_thread(streams):
    fds = [s.r for s in streams]
    while True:
        try:
            ready, _, _ = select.select(fds, [], [])
        except InterruptedError:
            continue
        with _out_lock:
            for s in streams:
                if s.r in ready:
                    s.pump()


# ---- control: requests that act while a step runs ----

_queue = []
_queue_cv = threading.Condition()


def control_thread():
    while True:
        try:
            req = read_frame()
        except (OSError, ValueError):
            req = None
        if req is None:
            # The supervisor is gone: nothing left to do.
            os._exit(0)
        if not isinstance(req, dict):
            continue
        if req.get("op") == "interrupt":
            if interrupt_context(req):
                continue
            with _state_lock:
                if _running is not None and _running == req.get("id") and _in_user:
                    signal.pthread_kill(_main_ident, signal.SIGINT)
            continue
        with _queue_cv:
            _queue.append(req)
            _queue_cv.notify()


def on_sigint(signum, frame):
    # Only user code is interrupted; a late signal after the step ended is
    # dropped rather than raised inside the driver.
    if _in_user:
        raise KeyboardInterrupt


# ---- one step ----

def user_traceback(exc):
    """The traceback without the driver's own frames (exec, the SIGINT
    handler): what the user sees starts and ends in their code."""
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != __file__])
    return "".join(te.format())


def describe(value):
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(value, pd.DataFrame):
            text = value.to_string(max_rows=TABLE_ROWS, max_cols=TABLE_COLS, show_dimensions=True)
            return "dataframe", text
        if isinstance(value, pd.Series):
            return "series", value.to_string(max_rows=TABLE_ROWS, length=True, dtype=True)
    text = repr(value)
    if len(text) > VALUE_CHARS:
        text = text[:VALUE_CHARS] + "... [%d characters in all]" % len(text)
    return type(value).__name__, text


def rich_reprs(value):
    """What a notebook would show besides the text: the value's own
    _repr_html_, _repr_markdown_ and _repr_json_ (pandas' DataFrame and
    Styler have the first), as {"value_html": str, ...}.  Looked up as
    IPython does (not on a class, only when callable); a repr that raises,
    returns something else or is over RICH_MAX is left out."""
    out = {}
    if isinstance(value, type):
        return out
    for key, name in (("value_html", "_repr_html_"), ("value_markdown", "_repr_markdown_"),
                      ("value_json", "_repr_json_")):
        try:
            method = getattr(value, name, None)
            if not callable(method):
                continue
            data = method()
            if isinstance(data, tuple) and len(data) == 2:
                data = data[0]  # (data, metadata), as IPython allows
            if key == "value_json":
                if not isinstance(data, (dict, list)):
                    continue
                size = len(json.dumps(data, allow_nan=False, ensure_ascii=False))
            elif isinstance(data, str):
                size = len(data.encode("utf-8", "replace"))
            else:
                continue
        except Exception:
            continue
        if size <= RICH_MAX:
            out[key] = data
    return out


def render_preview(fig, side, cap):
    """A smaller PNG of fig for a model (docs/sessions.md, "Figures for
    the model"): long side at most `side` pixels, never enlarged, at most
    `cap` bytes (tried at 2/3 and 1/2 of the side before giving up).  Kept
    in memory: nothing of it lands in output/.  Returns (png, None) or
    (None, why)."""
    import io
    w_in, h_in = fig.get_size_inches()
    long_in = max(w_in, h_in)
    if not long_in > 0:
        return None, "the figure has no size"
    size = 0
    for s in (side, side * 2 // 3, side // 2):
        if s < 16:
            break
        dpi = min(fig.dpi, s / long_in)
        for _ in range(3):  # pixel sizes are rounded: step down until it fits
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=dpi)
            png = buf.getvalue()
            w, h = struct.unpack(">II", png[16:24])
            if max(w, h) <= s:
                break
            dpi *= (s - 0.5) / max(w, h)
        else:
            return None, "cannot render within %d pixels" % s
        size = len(png)
        if size <= cap:
            return png, None
    return None, "larger than %d bytes even at %d pixels (%d bytes)" % (cap, max(16, side // 2), size)


def _note_savefig(Figure):
    """Wrap Figure.savefig to remember, on the figure, the file the step's
    own code saved it to: save_figures() then names that file instead of
    writing a second copy under output/figures/."""
    if getattr(Figure.savefig, "_corral", False):
        return
    original = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        result = original(self, fname, *args, **kwargs)
        try:
            path = os.fspath(fname)
        except TypeError:
            path = None  # a file object: nothing to name
        if isinstance(path, str):
            self._corral_saved_to = os.path.abspath(path)
        return result
    savefig._corral = True
    savefig.__wrapped__ = original
    Figure.savefig = savefig


class _FigureImportHook:
    """Patches matplotlib.figure when the user's code first imports it (the
    zygote imports it before the driver: then it is patched at once)."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.figure":
            return None
        import importlib.util
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _note_savefig(module.Figure)
        spec.loader.exec_module = exec_module
        return spec


def watch_savefig():
    if "matplotlib.figure" in sys.modules:
        _note_savefig(sys.modules["matplotlib.figure"].Figure)
    else:
        sys.meta_path.insert(0, _FigureImportHook())


def attach_png(entry, budget):
    """Add the saved figure's PNG bytes to entry as base64 "png" (asked for
    with figure_png: a client of a server cannot read the workspace), or
    "png_error".  budget: a one-element list, the bytes the step may still
    send.  The file is read as it is on disk, after the save."""
    try:
        with open(entry["path"], "rb") as f:
            data = f.read(FIGURE_PNG_MAX + 1)
    except OSError as e:
        entry["png_error"] = "cannot read it: %s" % e.strerror
        return
    if data[:8] != PNG_SIGNATURE:
        entry["png_error"] = "not a PNG file"
    elif len(data) > FIGURE_PNG_MAX:
        entry["png_error"] = "larger than %d bytes" % FIGURE_PNG_MAX
    elif len(data) > budget[0]:
        entry["png_error"] = "over the step's %d bytes of figures" % FIGURE_PNG_STEP
    else:
        budget[0] -= len(data)
        entry["png"] = base64.b64encode(data).decode("ascii")


def save_figures(step, preview=None, png=False):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    saved = []
    nums = plt.get_fignums()
    if not nums:
        return saved
    budget = [FIGURE_PNG_STEP]
    for k, num in enumerate(nums, 1):
        fig = plt.figure(num)
        path = "%s/step%d-%d.png" % (FIGURE_DIR, step, k)
        try:
            shown = repr(fig)  # "<Figure size 640x480 with 1 Axes>", a notebook's text of it
        except Exception:
            shown = None
        own = getattr(fig, "_corral_saved_to", None)
        try:
            if own and os.path.isfile(own):
                # The code saved it itself: one copy, named, not two.
                path = own
                with open(path, "rb") as f:
                    head = f.read(24)
                entry = {"path": path, "bytes": os.path.getsize(path), "saved_by_code": True}
                if head[:8] == b"\x89PNG\r\n\x1a\n":
                    entry["width"], entry["height"] = struct.unpack(">II", head[16:24])
                saved.append(entry)
            else:
                os.makedirs(FIGURE_DIR, exist_ok=True)
                fig.savefig(path, format="png")
                with open(path, "rb") as f:
                    head = f.read(24)  # the signature, then IHDR: width and height
                w, h = struct.unpack(">II", head[16:24])
                saved.append({"path": path, "width": w, "height": h, "bytes": os.path.getsize(path)})
        except Exception as e:  # a broken figure must not lose the step
            saved.append({"path": path, "error": "%s: %s" % (type(e).__name__, e)})
            continue
        if isinstance(shown, str):
            saved[-1]["repr"] = shown[:200]
        if png:
            attach_png(saved[-1], budget)
        if preview and k <= preview["count"]:
            try:
                png, why = render_preview(fig, preview["side"], preview["bytes"])
            except Exception as e:
                png, why = None, "%s: %s" % (type(e).__name__, e)
            if png is None:
                saved[-1]["preview_error"] = why
            else:
                pw, ph = struct.unpack(">II", png[16:24])
                saved[-1].update(preview=base64.b64encode(png).decode("ascii"), preview_width=pw,
                                 preview_height=ph, preview_bytes=len(png))
    plt.close("all")
    return saved


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ---- shell steps ----

_background = {}  # pid -> Popen of a background command


class _ShellDone(Exception):
    """A shell step ended: its result is set (not an error of user code)."""


def step_env(req):
    """The step's own variables, as a dict of strings (anything else is dropped)."""
    env = req.get("env")
    if not isinstance(env, dict):
        return {}
    return {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str) and k and "=" not in k}


def run_shell(code, background, step, env):
    """bash on code, in the session's jail as a child of the interpreter.
    Foreground: its output is the step's (it writes to our capture pipes),
    its status the step's; an interrupt (or the time limit) sends SIGINT to
    its process group, then SIGKILL if it lingers.  Background: its output
    goes to a log in the workspace, its status to a file beside it once it
    ends, and it runs on after the step."""
    import subprocess
    if not background:
        p = subprocess.Popen(["bash", "-c", code], stdin=subprocess.DEVNULL, start_new_session=True,
                             env=dict(os.environ, **env))
        try:
            return p.wait(), None
        except KeyboardInterrupt:
            # SIGINT first (bash and its foreground child may clean up),
            # then SIGKILL for what is left of the group: its background
            # children ignore SIGINT.
            for sig, wait in ((signal.SIGINT, 0.5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(wait)
                except subprocess.TimeoutExpired:
                    pass
            raise
    logdir = "/workspace/.corral/commands"
    os.makedirs(logdir, exist_ok=True)
    tmp = "%s/step-%d.log" % (logdir, step)
    with open(tmp, "wb") as log:
        p = subprocess.Popen(["bash", "-c", code], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, env=dict(os.environ, **env))
    os.rename(tmp, "%s/%d.log" % (logdir, p.pid))
    _background[p.pid] = p

    def reap():
        rc = p.wait()
        _background.pop(p.pid, None)
        with open("%s/%d.exit" % (logdir, p.pid), "w") as f:
            f.write("%d\n" % (rc if rc >= 0 else 128 - rc))
    threading.Thread(target=reap, daemon=True).start()
    return 0, {"pid": p.pid, "log": "/workspace/.corral/commands/%d.log" % p.pid,
               "exit": "/workspace/.corral/commands/%d.exit" % p.pid}


# ---- contexts: Python processes of their own ----
#
# A named context is a process of its own in the session's jail (its own
# variables and signals; the same files, processes and loopback): a fork of
# the interpreter made on first use, so it starts with the modules the
# session has imported, as they are then, and an empty namespace.  The
# driver relays a context's frames (it stays the only writer of fd 4) and
# watches it through a pidfd.  A context that dies (os._exit, a crash, the
# OOM killer) or does not stop after an interrupt loses its own variables
# only: the step's result says so ("context_lost") and the next step in it
# starts a new one.  Forked on use rather than from a process made at
# start: that one cost every session ~8 ms before its first step
# (bench/session_start.c), contexts or not.

MAX_CONTEXTS = 32
KILL_AFTER_MS = 1000   # after an interrupt, when the frame does not say

_contexts = {}            # name -> Context
_contexts_lost = set()    # names whose process ended: the next one says restarted
_context_running = None   # (step id, Context) while a context runs a step
_wake_r, _wake_w = -1, -1  # the control thread wakes the relay (an interrupt)
_streams = []             # the driver's own capture pipes


class Context:
    def __init__(self, name):
        self.name = name
        self.kill_at = None      # monotonic time of the SIGKILL after an interrupt
        self.killed = False
        req_r, self.req_w = os.pipe2(os.O_CLOEXEC)
        self.frames, frame_w = os.pipe2(os.O_CLOEXEC)
        try:
            for f in (sys.stdout, sys.stderr):
                f.flush()
            self.pid = os.fork()
        except OSError:
            for fd in (req_r, frame_w, self.req_w, self.frames):
                os.close(fd)
            raise
        if self.pid == 0:
            context_main(req_r, frame_w)
        os.close(req_r)
        os.close(frame_w)
        self.pidfd = os.pidfd_open(self.pid)
        os.set_blocking(self.frames, False)

    def fds(self):
        return [self.req_w, self.frames, self.pidfd]

    def close(self):
        for fd in self.fds():
            os.close(fd)


def context_main(req_fd, frame_fd):
    """A context, just forked: the driver's step loop on its own channel
    and stdio, with nothing else of the driver's (its channel, capture
    pipes, other contexts' pipes, background commands)."""
    global _write_lock, _out_lock, _state_lock, _main_ident, _running, _in_user
    for fd in [_wake_r, _wake_w] + [s.r for s in _streams] + [fd for c in _contexts.values() for fd in c.fds()]:
        os.close(fd)
    _contexts.clear()
    _background.clear()
    os.dup2(req_fd, CTRL_IN)
    os.dup2(frame_fd, CTRL_OUT)
    os.close(req_fd)
    os.close(frame_fd)
    for fd in (CTRL_IN, CTRL_OUT):
        os.set_inheritable(fd, False)
    # Locks another thread of the driver may have held at the fork.
    _write_lock, _out_lock, _state_lock = threading.Lock(), threading.Lock(), threading.Lock()
    _main_ident = threading.get_ident()
    _running, _in_user = None, False
    # What the fork shares stays shared: the collector never writes to it.
    import gc
    gc.freeze()
    after_fork()
    streams = [Stream("stdout", 1), Stream("stderr", 2)]
    threading.Thread(target=output_thread, args=(streams,), daemon=True).start()
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        try:
            req = read_frame()
        except (OSError, ValueError):
            req = None
        if req is None:
            os._exit(0)
        if isinstance(req, dict) and req.get("op") == "exec":
            run_step(req, ns, streams, 0)


def describe_status(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        hint = " (perhaps out of memory)" if sig == signal.SIGKILL else ""
        return "it was killed by %s%s" % (name, hint), 128 + sig
    code = os.waitstatus_to_exitcode(status)
    return "it exited with status %d" % code, code if 0 < code < 256 else 1


def relay_frames(buf):
    """Send on a context's whole frames in buf; returns (rest, its result
    frame or None), or raises ValueError on a malformed one."""
    while len(buf) >= 4:
        (n,) = struct.unpack(">I", buf[:4])
        if n > MAX_FRAME:
            raise ValueError("a frame of %d bytes" % n)
        if len(buf) < 4 + n:
            break
        frame, buf = buf[:4 + n], buf[4 + n:]
        obj = json.loads(frame[4:].decode("utf-8", "replace"))
        if isinstance(obj, dict) and obj.get("t") == "result":
            return buf, obj
        with _write_lock:
            while frame:
                frame = frame[os.write(CTRL_OUT, frame):]
    return buf, None


def context_error(step, kind, message):
    send({"t": "result", "id": step, "status": "error", "figures": [],
          "error": {"type": kind, "message": message, "traceback": ""}})


def run_in_context(req, name):
    global _context_running
    step = req.get("id")
    c = _contexts.get(name)
    if c is None:
        if len(_contexts) >= MAX_CONTEXTS:
            context_error(step, "ContextLimit", "a session holds at most %d contexts" % MAX_CONTEXTS)
            return
        try:
            c = _contexts[name] = Context(name)
        except OSError as e:
            context_error(step, "ContextError", "cannot start context %r: %s (the sandbox's process limit?)"
                          % (name, e.strerror))
            return
    data = json.dumps(req, ensure_ascii=False).encode("utf-8", "replace")
    with _state_lock:
        _context_running = (step, c)
    buf, result, why = b"", None, None
    try:
        try:
            os.write(c.req_w, struct.pack(">I", len(data)) + data)  # it reads as we write
        except OSError:
            pass  # it has ended: the pidfd says so below
        while result is None:
            timeout = None if c.kill_at is None else max(0.0, c.kill_at - time.monotonic())
            ready, _, _ = select.select([c.frames, c.pidfd, _wake_r], [], [], timeout)
            if _wake_r in ready:
                try:
                    os.read(_wake_r, 64)
                except BlockingIOError:
                    pass
            if c.kill_at is not None and time.monotonic() >= c.kill_at:
                os.kill(c.pid, signal.SIGKILL)
                c.killed = True
                c.kill_at = None
            ended = c.pidfd in ready
            while True:  # what it wrote, before it ended too
                try:
                    chunk = os.read(c.frames, 1 << 20)
                except BlockingIOError:
                    break
                if not chunk:
                    ended = True
                    break
                buf, result = relay_frames(buf + chunk)
                if result is not None:
                    break
            if result is None and ended:
                break
    except ValueError as e:
        os.kill(c.pid, signal.SIGKILL)
        why = "it sent a malformed frame (%s) and was killed" % e
    finally:
        with _state_lock:
            _context_running = None
            c.kill_at = None  # an interrupt that came too late for this step
    if result is not None:
        if name in _contexts_lost:
            _contexts_lost.discard(name)
            result["context_restarted"] = True
        send(result)
        return
    del _contexts[name]
    _contexts_lost.add(name)
    how, code = describe_status(os.waitpid(c.pid, 0)[1])
    c.close()
    if c.killed:
        how, code = "it did not stop after the interrupt and was killed", 130
    text = "context %r ended during the step: %s; its variables are gone (the session's other contexts " \
        "are kept) and its next step starts a new one" % (name, why or how)
    send({"t": "result", "id": step, "status": "interrupted" if c.killed else "error", "exit_code": code,
          "context_lost": text, "error": {"type": "ContextLost", "message": text, "traceback": ""},
          "figures": []})


def interrupt_context(req):
    """In the control thread: SIGINT to the context running the step, and
    SIGKILL kill_after_ms later (the relay does it) if it goes on."""
    with _state_lock:
        if _context_running is None or _context_running[0] != req.get("id"):
            return False
        c = _context_running[1]
        ms = req.get("kill_after_ms")
        if not isinstance(ms, int) or ms < 0:
            ms = KILL_AFTER_MS
        try:
            os.kill(c.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        if c.kill_at is None:
            c.kill_at = time.monotonic() + ms / 1000
    try:
        os.write(_wake_w, b"!")
    except BlockingIOError:
        pass
    return True


# ---- IPython's syntax (docs/e2b.md) ----
#
# Code written for a notebook (E2B's runCode) may use IPython's shell lines
# and a few magics.  They are rewritten to Python before the step runs:
# "!cmd" and "%pip"/"%%bash" run in the sandbox's shell, "%cd" changes the
# directory, "%matplotlib" does nothing (figures are always captured); any
# other magic is an error that says what is understood.

class UsageError(Exception):
    pass


def _shell(cmd):
    import subprocess
    subprocess.run(["bash", "-c", cmd], stdin=subprocess.DEVNULL)


def ipython_to_python(code):
    lines = code.split("\n")
    first = lines[0].strip()
    if first.startswith("%%"):
        magic = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if magic in ("bash", "sh", "script"):
            return "__corral_shell__(%r)" % "\n".join(lines[1:])
        raise UsageError("Cell magic `%%%%%s` not found (corral understands %%%%bash, and the line forms "
                         "!cmd, %%pip, %%cd and %%matplotlib)" % magic)
    out = []
    for line in lines:
        body = line.lstrip()
        indent = line[:len(line) - len(body)]
        if body.startswith("!"):
            out.append("%s__corral_shell__(%r)" % (indent, body[1:]))
        elif body.startswith("%") and not body.startswith("%%") and body[1:2].isalpha():
            name, _, arg = body[1:].partition(" ")
            if name == "pip":
                out.append("%s__corral_shell__(%r)" % (indent, "python3 -m pip " + arg))
            elif name == "cd":
                out.append("%s__import__('os').chdir(%r)" % (indent, os.path.expanduser(arg.strip() or "~")))
            elif name == "matplotlib":
                out.append(indent + "pass")
            else:
                raise UsageError("Line magic function `%%%s` not found (corral understands !cmd, %%pip, %%cd, "
                                 "%%matplotlib and %%%%bash)" % name)
        else:
            out.append(line)
    return "\n".join(out)


def end_context(name):
    """End a context's process (E2B's remove and restart): its next step
    starts a new one.  True if there was one."""
    c = _contexts.pop(name, None)
    _contexts_lost.discard(name)
    if c is None:
        return False
    try:
        os.kill(c.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(c.pid, 0)
    c.close()
    return True


def run_step(req, ns, streams, counter):
    global _running, _in_user
    step = req.get("id")
    if not isinstance(step, int):
        step = counter
    cap = req.get("output_limit")
    if not isinstance(cap, int) or cap <= 0:
        cap = 1 << 20
    code = req.get("code")
    if not isinstance(code, str):
        code = ""
    with _out_lock:
        for s in streams:
            s.pump()  # stray output of earlier steps' threads
            s.reset(step, cap)
    peak_reset = reset_peak()
    importlib.invalidate_caches()  # a package an earlier step installed (pip) is found
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    result = {"t": "result", "id": step, "status": "ok"}
    filename = "<step %d>" % step
    try:
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        with _state_lock:
            _running = step
        try:
            if req.get("language") == "bash":
                _in_user = True
                try:
                    rc, started = run_shell(code, req.get("background") is True, step, step_env(req))
                finally:
                    _in_user = False
                if started is not None:
                    result["value"] = json.dumps(started)
                    result["value_type"] = "dict"
                    result["value_json"] = started
                elif rc != 0:
                    # bash's own status: 128+N for a signal N.
                    status = rc if rc > 0 else 128 - rc
                    result["status"] = "error"
                    result["exit_code"] = status
                    result["error"] = {"type": "ExitStatus", "message": "exit status %d" % status,
                                       "traceback": ""}
                raise _ShellDone
            if req.get("ipython") is True:
                code = ipython_to_python(code)
                ns.setdefault("__corral_shell__", _shell)
            tree = ast.parse(code, filename, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec")
            tail = compile(last, filename, "eval") if last is not None else None
            env = step_env(req)
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            _in_user = True
            try:
                exec(body, ns)
                value = eval(tail, ns) if tail is not None else None
            finally:
                _in_user = False
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            if value is not None:
                ns["_"] = value
                kind, text = describe(value)
                result["value"] = text
                result["value_type"] = kind
                result.update(rich_reprs(value))
        except _ShellDone:
            pass
        except KeyboardInterrupt as e:
            result["status"] = "interrupted"
            result["error"] = {"type": "KeyboardInterrupt", "message": "",
                     "traceback": user_traceback(e)}
        except SystemExit as e:
            result["status"] = "error"
            result["error"] = {"type": "SystemExit", "message": str(e.code),
                     "traceback": user_traceback(e)}
        except BaseException as e:
            result["status"] = "error"
            result["error"] = {"type": type(e).__name__, "message": str(e),
                     "traceback": user_traceback(e)}
    except KeyboardInterrupt:
        # Delivered between the user's last bytecode and the flag.
        result["status"] = "interrupted"
    finally:
        _in_user = False
        with _state_lock:
            _running = None
    wall = (time.perf_counter() - t0) * 1000
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    preview = req.get("preview")
    try:
        # At most 8 renderings of at most 2 MiB each: the frame stays bounded.
        preview = {"count": min(int(preview["count"]), 8), "side": min(int(preview["side"]), 4096),
                   "bytes": min(int(preview["bytes"]), 2 << 20)}
    except (TypeError, KeyError, ValueError):
        preview = None
    try:
        result["figures"] = save_figures(step, preview, req.get("figure_png") is True)
    except Exception as e:
        result["figures"] = [{"error": "%s: %s" % (type(e).__name__, e)}]
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    result["wall_ms"] = round(wall, 3)
    result["cpu_ms"] = round((ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime) * 1000, 3)
    result["peak_memory_bytes"] = ru1.ru_maxrss * 1024
    result["peak_memory_scope"] = "step" if peak_reset else "session"
    with _out_lock:
        for s in streams:
            s.pump()
            result[s.name + "_bytes"] = s.total
            result[s.name + "_truncated"] = s.truncated
            s.reset(None, cap)
        send(result)


def after_fork():
    """A warm session is a fork of the zygote, and would draw the same
    numbers as every other session from any generator the zygote seeded.
    random reseeds itself after a fork (os.register_at_fork); numpy's global
    generator (np.random.rand, pandas' sample, scipy's distributions) does
    not: reseed it from the kernel.  What a fork cannot change (the address
    layout, the str hash secret) is said in docs/sessions.md."""
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


def user_site():
    """The session's own user site (PYTHONUSERBASE, set by corral), made now and put on sys.path, so
    that what `pip install` puts there in a step imports in the next: site.py only adds a user site
    that existed when the interpreter started, and a warm one started in the zygote, before the
    session had an environment."""
    base = os.environ.get("PYTHONUSERBASE")
    if not base:
        return
    import site
    path = os.path.join(base, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return
    site.USER_BASE, site.USER_SITE = base, path
    if path not in sys.path:
        site.addsitedir(path)


def main():
    # The control channel leaves 0 and 1 for good; user code gets fresh stdio.
    os.dup2(0, CTRL_IN)
    os.dup2(1, CTRL_OUT)
    os.dup2(2, DIAG)
    for fd in (CTRL_IN, CTRL_OUT, DIAG):
        os.set_inheritable(fd, False)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    streams = [Stream("stdout", 1), Stream("stderr", 2)]
    try:
        import faulthandler
        faulthandler.enable(file=os.fdopen(DIAG, "w", closefd=False), all_threads=False)
    except Exception:
        pass
    signal.signal(signal.SIGINT, on_sigint)
    watch_savefig()
    sys.argv = [""]
    sys.path[0] = ""  # like `python3 -c`: the working directory, not the driver's
    user_site()
    global _wake_r, _wake_w
    _streams[:] = streams
    _wake_r, _wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    for t in (threading.Thread(target=output_thread, args=(streams,), daemon=True),
         threading.Thread(target=control_thread, daemon=True)):
        t.start()
    send({"t": "ready", "python": sys.version.split()[0], "pid": os.getpid()})
    counter = 0
    while True:
        with _queue_cv:
            while not _queue:
                _queue_cv.wait()
            req = _queue.pop(0)
        op = req.get("op")
        if op == "exec":
            counter += 1
            name = req.get("context")
            if req.get("end_context") is True:
                ended = isinstance(name, str) and end_context(name)
                send({"t": "result", "id": req.get("id"), "status": "ok", "figures": [],
                      "value": repr(ended), "value_type": "bool"})
            elif isinstance(name, str) and name and req.get("language") != "bash":
                run_in_context(req, name)
            else:
                run_step(req, ns, streams, counter)
        elif op == "ping":
            send({"t": "pong", "id": req.get("id")})
        else:
            send({"t": "result", "id": req.get("id"), "status": "error",
               "error": {"type": "ProtocolError", "message": "unknown op %r" % (op,),
                    "traceback": ""}})


if __name__ == "__main__":
    main()
