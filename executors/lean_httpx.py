"""httpx, imported without its command line.

httpx's package imports its own command-line client on import, and with it rich, click and pygments
when they are installed (Prefect installs them): ~90 ms of every command before its first model
call, for a client no command runs. A placeholder stands in for that module while httpx is
imported by skillab first; anything that calls it gets the real one, imported then.
"""

from __future__ import annotations

import sys
import types

CLI = "httpx._main"


def _real_cli() -> None:
    if sys.modules.get(CLI) is _placeholder:
        del sys.modules[CLI]
    from httpx._main import main

    main()


_placeholder = types.ModuleType(CLI)
_placeholder.main = _real_cli  # type: ignore[attr-defined]
if "httpx" not in sys.modules:
    sys.modules.setdefault(CLI, _placeholder)

import httpx  # noqa: E402  (after the placeholder, on purpose)

__all__ = ["httpx"]
