"""The local Prefect server's process: Prefect's API, services and UI under uvicorn, as
``prefect server start`` runs them in the foreground, without that command's own start-up (its
command-line framework and the checks meant for a terminal: 0.5-1 s of every start here).

Run by path, with ``-P`` (see prefect_env.start_server): it imports Prefect and uvicorn only, so it
needs nothing of skillab on the path, and no module in this folder shadows one of theirs.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
import urllib.request

import uvicorn
from prefect.server.api.server import create_app
from prefect.settings import get_current_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    settings = get_current_settings().server
    server = uvicorn.Server(
        uvicorn.Config(
            app=create_app(final=True),
            host=args.host,
            port=args.port,
            timeout_keep_alive=settings.api.keepalive_timeout,
            ws_ping_interval=settings.api.websocket_ping_interval,
            ws_ping_timeout=settings.api.websocket_ping_timeout,
            log_level=settings.logging_level.lower(),
        )
    )
    url = f"http://{args.host}:{args.port}/api/admin/version"
    threading.Thread(target=warm_up, args=(server, url), name="warm-up", daemon=True).start()
    server.run()


def warm_up(server: uvicorn.Server, url: str) -> None:
    """FastAPI builds its routing tables at the first request (0.3-0.4 s here): one request as soon as
    the server listens, so that a run started later does not wait for it."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with contextlib.suppress(OSError):
        opener.open(url, timeout=60).close()


if __name__ == "__main__":
    main()
