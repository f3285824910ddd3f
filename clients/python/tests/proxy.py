"""An HTTP proxy in front of the registry that loses answers on purpose:
it forwards every call, and for the calls drop() picks it reads the
registry's answer and closes the client's connection without it, as a
network that loses an answer does. The registry did act on the call.
For the calls hold() picks it forwards nothing and answers nothing until
it closes, as a partition does."""

import http.client
import http.server
import json
import threading
import urllib.parse


class LosingProxy:
    """Listens on 127.0.0.1 (url); log lists (method, path, requestId, dropped: True, False or "held")."""

    def __init__(self, upstream, drop, hold=None):
        u = urllib.parse.urlsplit(upstream)
        self.upstream, self.drop, self.hold, self.log = (u.hostname, u.port), drop, hold, []
        self._mu, self._closed = threading.Lock(), threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.hold is not None and proxy.hold(self.command, self.path):
                    with proxy._mu:
                        proxy.log.append((self.command, self.path.split("?")[0], "", "held"))
                    proxy._closed.wait()
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                try:
                    rid = json.loads(body).get("requestId", "") if body else ""
                except ValueError:
                    rid = ""
                with proxy._mu:
                    dropped = proxy.drop(self.command, self.path, len(proxy.log))
                    proxy.log.append((self.command, self.path.split("?")[0], rid, dropped))
                if dropped:
                    self.close_connection = True
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def calls(self):
        """A copy of the log."""
        with self._mu:
            return list(self.log)

    def close(self):
        self._closed.set()
        self.server.shutdown()
        self.server.server_close()
