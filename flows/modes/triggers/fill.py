"""--context-fill: a window already part full when the query arrives.

Claude Code lists skills in the same request as everything before the query, so a skill that fires
in an empty window may not fire after a long exchange. The filled variant resumes a recorded session
(``claude --resume``, the way a plugin eval case continues one) made of one earlier turn: the user
pastes a long log file "for later" and the assistant acknowledges it. The log is neutral (a service's
routine lines, no request a skill could answer) and fixed by the seed, so the filled and the empty
window differ in their length only.
"""

from __future__ import annotations

import functools
import json
import random
import uuid
from pathlib import Path

from executors.listing import CHARS_PER_TOKEN

PREAMBLE = "Here is last night's log of the ingest service, for reference later. No action needed now.\n\n"
ACK = "Noted. I have the log and will refer to it if you ask."
LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
EVENTS = (
    "heartbeat ok",
    "batch committed",
    "queue drained",
    "checkpoint written",
    "connection pool resized",
    "retry scheduled",
)


@functools.lru_cache(maxsize=4)
def neutral_log(chars: int, seed: int = 0) -> str:
    """About ``chars`` characters of routine service log lines, the same for the same seed (made
    once per run: every filled session of a run resumes the same earlier turn)."""
    rng = random.Random(seed)
    lines, size, second = [], 0, 0
    while size < chars:
        second += rng.randint(1, 9)
        line = (
            f"2026-01-01T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z "
            f"{rng.choice(LEVELS)} worker-{rng.randint(1, 8)} {rng.choice(EVENTS)} "
            f"queue={rng.randint(0, 400)} latency_ms={rng.randint(3, 900)}"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def fill_history(path: Path, fill: float, window_tokens: int, seed: int, session: str) -> Path:
    """A recorded session of one earlier turn taking ``fill`` of a ``window_tokens`` window (at the
    CLI's 4 characters a token), written to ``path`` for ``claude --resume``. A resumed session keeps
    the recorded session id, so each session gets its own (``session``, a UUID): the model forwarder
    tells sessions apart by it."""
    ask, answer = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    common = {
        "isSidechain": False,
        "sessionId": session,
        "userType": "external",
        "cwd": "/",
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    text = PREAMBLE + neutral_log(int(fill * window_tokens * CHARS_PER_TOKEN) - len(PREAMBLE), seed)
    records = [
        {
            **common,
            "parentUuid": None,
            "type": "user",
            "uuid": ask,
            "message": {"role": "user", "content": text},
        },
        {
            **common,
            "parentUuid": ask,
            "type": "assistant",
            "uuid": answer,
            "message": {
                "id": "msg_skillab_fill",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": ACK}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
