# rule: PY-NET-001
# attempts: listening on 0\.0\.0\.0:\d+
import socketserver


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(self.request.recv(1024))


with socketserver.TCPServer(("0.0.0.0", 0), Echo) as srv:
    print("listening on %s:%d" % srv.server_address)
