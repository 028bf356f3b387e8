"""The API watch tells a server that is gone (refused) from one that is silent (suspended, wedged)
and from one that answers, whatever it answers."""

from __future__ import annotations

import http.server
import socket
import threading

from flows.cli.prefect_env import probe


class NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


def test_refused_silent_and_answered() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert probe(f"http://127.0.0.1:{port}/api", timeout=0.5) == "refused"  # nothing listens
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()  # the kernel accepts; nobody reads or answers
        assert probe(f"http://127.0.0.1:{s.getsockname()[1]}/api", timeout=0.5) == "silent"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert probe(f"http://127.0.0.1:{server.server_address[1]}/api", timeout=5) == "answered"
    finally:
        server.shutdown()
        server.server_close()
