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
