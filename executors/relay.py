"""The relay inside a sandbox: ``python -I -S relay.py PORT SOCKET COMMAND...``.

The sandbox has its own network namespace with only loopback, so an agent CLI configured for
``http://127.0.0.1:PORT`` reaches nothing until this relay listens there: each connection is handed,
byte for byte, to the Unix socket of skillab's forwarder (bound in from the host), which adds the
key and talks to the model endpoint. The relay listens first, then starts COMMAND with its own
standard streams and exits with its exit code (128 + N for a signal, as a shell reports it).

Standard library only, and no import of skillab: it runs under ``-I -S`` with only the interpreter's
installation visible.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def _serve_one(client: socket.socket, path: str, preamble: bytes = b"") -> None:
    """One connection handed to the socket at ``path``, after ``preamble`` (the destination, for a
    socket that serves several)."""
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
        upstream.sendall(preamble)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def accept(server: socket.socket, path: str, preamble: bytes = b"") -> None:
    """Every connection to ``server`` handed to the socket at ``path``, each in a thread."""
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_serve_one, args=(client, path, preamble), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: relay.py PORT SOCKET COMMAND...", file=sys.stderr)
        return 2
    port, path, command = int(argv[0]), argv[1], argv[2:]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    threading.Thread(target=accept, args=(server, path), daemon=True).start()
    try:
        code = subprocess.call(command)
    except OSError as exc:
        print(f"relay: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
