"""A TCP proxy on 127.0.0.1 that cuts streams: the first `cuts` requests that
name `/events` (on a connection of their own or a kept-alive one) have their
connection closed after `after` bytes of the answer (headers included),
mid-event as like as not.  For the clients' resume tests."""
import socket
import threading


class CutProxy:
    def __init__(self, port, cuts=2, after=900):
        self.upstream = port
        self.cuts = cuts
        self.after = after
        self.cut = 0
        self._lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        u = socket.create_connection(("127.0.0.1", self.upstream))
        state = {"limit": None}  # bytes of the answer left before the cut, once an /events request passed

        def requests():
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    if b"/events" in data:
                        with self._lock:
                            if self.cut < self.cuts and state["limit"] is None:
                                self.cut += 1
                                state["limit"] = self.after
                    u.sendall(data)
            except OSError:
                pass
            try:
                u.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        threading.Thread(target=requests, daemon=True).start()
        try:
            while True:
                limit = state["limit"]
                data = u.recv(65536 if limit is None else max(1, min(65536, limit)))
                if not data:
                    break
                c.sendall(data)
                if state["limit"] is not None:
                    state["limit"] -= len(data)
                    if state["limit"] <= 0:
                        break
        except OSError:
            pass
        finally:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


class DroppingServer:
    """A stand-in for corral serve's GET /v1/runs/r1/events that drops its
    first follower as a slow one (`event: dropped` after event 2) and checks
    that the follower comes back with Last-Event-ID: 2.  seen: the
    Last-Event-ID of each request (None when there was none)."""

    def __init__(self):
        import http.server
        outer = self
        self.seen = []
        ev = lambda n, t: f"id: {n}\nevent: {t}\ndata: {{\"type\": \"{t}\", \"n\": {n}}}\n\n"  # noqa: E731

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                last = self.headers.get("Last-Event-ID")
                if self.path.startswith("/v1/runs/r1/events"):
                    outer.seen.append(last)
                    if last is None:
                        body = ev(1, "run_start") + ev(2, "model_request") + \
                            "event: dropped\ndata: {\"type\": \"dropped\", \"last_event_id\": 2, \"message\": \"slow\"}\n\n"
                    else:
                        body = "".join(ev(n, t) for n, t in ((1, "run_start"), (2, "model_request"),
                                                             (3, "model_reply"), (4, "run_end")) if n > int(last))
                    data, ctype = body.encode(), "text/event-stream"
                elif self.path == "/v1/runs/r1":
                    data, ctype = b'{"id": "r1", "status": "answered"}', "application/json"
                else:
                    data, ctype = b'{"error": {"kind": "not_found", "message": "no"}}', "application/json"
                    self.send_response(404)
                if ctype == "text/event-stream" or self.path == "/v1/runs/r1":
                    self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
