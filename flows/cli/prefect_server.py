"""The local Prefect server's process: Prefect's API, services and UI under uvicorn, as
``prefect server start`` runs them in the foreground, without that command's own start-up (its
command-line framework and the checks meant for a terminal: 0.5-1 s of every start here).

Run by path, with ``-P`` (see prefect_env.start_server): it imports Prefect and uvicorn only, so it
needs nothing of skillab on the path, and no module in this folder shadows one of theirs. At module
level it imports the standard library only: prefect_env imports the template's helpers from here
without paying for Prefect, so that a command starts its server before it imports Prefect itself.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gc
import json
import os
import sqlite3
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--template", type=Path, help="a migrated database to start a new one from")
    parser.add_argument(
        "--unpersisted-label", help="events whose resource has this label are not kept in the event history"
    )
    args = parser.parse_args()
    # Importing Prefect's server builds ~300,000 long-lived objects: at CPython's threshold (700) the
    # collector runs hundreds of times meanwhile, 0.5-0.7 s of a 3 s start here. Collected less often
    # (as a command's own process is, flows/engine/gc.py), and what start-up built is frozen below.
    gc.set_threshold(20_000, *gc.get_threshold()[1:])
    if args.template is not None and seed_database(args.template):
        os.environ.update(SEEDED_START)
    import uvicorn
    from prefect.context import refresh_global_settings_context
    from prefect.server.api import server as api_server
    from prefect.settings import get_current_settings

    refresh_global_settings_context()  # Prefect read its settings at import, before SEEDED_START
    if args.unpersisted_label:
        keep_out_of_history(args.unpersisted_label)
    settings = get_current_settings().server
    # `final` deletes the routes FastAPI before 0.137 copies (~50 MB), then runs a full collection:
    # with a newer FastAPI only the collection is left, 0.2 s of the start for nothing.
    app = api_server.create_app(final=getattr(api_server, "_FASTAPI_COPIES_ROUTES_ON_INCLUDE", True))
    gc.freeze()  # the modules, models and routes live as long as the server: full passes skip them
    server = uvicorn.Server(
        uvicorn.Config(
            app=app,
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


def keep_out_of_history(label: str) -> None:
    """The event persister (the history the UI's event feed reads) skips events whose resource has
    ``label``: the per-unit task-run events of a sample run (tasks/unit_runs.py). Every service but
    the persister still gets them (the task run recorder makes the task runs the UI shows), and the
    UI's flow-run graph leaves task-run events out anyway. Persisting them was half of what the
    server did in a run (3.3 of 6.5 s of CPU at 1,000 units here) while the run's calls wait for a
    core. Prefect's persister builds its handler with ``create_handler``; under a Prefect without it
    everything is persisted, as before."""
    from prefect.server.events.services import event_persister

    make = getattr(event_persister, "create_handler", None)
    if make is None:
        return
    mark = json.dumps(label).encode() + b":"  # a key in the event's JSON, as the bus carries it

    @contextlib.asynccontextmanager
    async def create_handler(*args: Any, **kwargs: Any) -> AsyncIterator[Callable[[Any], Awaitable[None]]]:
        async with make(*args, **kwargs) as handler:

            async def persist(message: Any) -> None:
                if mark not in (message.data or b""):
                    await handler(message)

            yield persist

    event_persister.create_handler = create_handler


def warm_up(server: Any, url: str) -> None:  # a uvicorn.Server
    """FastAPI builds its routing tables at the first request (0.3-0.4 s here): one request as soon as
    the server listens, so that a run started later does not wait for it."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url)
    if auth := os.environ.get("PREFECT_SERVER_API_AUTH_STRING"):  # else it stops at the credential check
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with contextlib.suppress(OSError):
        opener.open(request, timeout=60).close()


# ------------------------------------------------------------------ the template database


def database_file() -> Path | None:
    """The SQLite file the server will use, or None when Prefect is set to another database."""
    from prefect.settings import Settings

    secret = Settings().server.database.connection_url
    url = secret.get_secret_value() if secret is not None else ""
    prefix = "sqlite+aiosqlite:///"
    return Path(url[len(prefix) :]) if url.startswith(prefix) and ":memory:" not in url else None


def seed_database(template: Path) -> bool:
    """A server's first start spends 15-20 s migrating a new database through Prefect's ~110 schema
    revisions: when there is no database yet, start from the template instead (that first start
    skips the checks the template has passed, see SEEDED_START). True when seeded."""
    if not template.is_file():
        return False
    target = database_file()
    if target is None or target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    copy_database(template, target)
    return True


def copy_database(source: Path, target: Path) -> None:
    """SQLite's own backup (consistent even with a write-ahead log), into a file renamed into place."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    with (
        contextlib.closing(sqlite3.connect(source)) as src,
        contextlib.closing(sqlite3.connect(partial)) as dst,
    ):
        src.backup(dst)
    partial.replace(target)


#: A server's first start on a copy of the template: it is migrated and its block types registered
#: already (1-2 s of start-up otherwise). Later starts check both, as Prefect always does.
SEEDED_START = {
    "PREFECT_API_DATABASE_MIGRATE_ON_START": "false",
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
}


if __name__ == "__main__":
    main()
