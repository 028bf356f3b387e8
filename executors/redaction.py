"""Secrets never reach a results file: every value skillab knows to be a credential, and anything
shaped like a provider's key, is replaced before a transcript, stream, log or report is written.

The keys themselves never enter a sandbox (see ``executors.egress``); this is the second line, for a
key a suite or a model put in plain text. Known values are the credential-named variables of this
process's environment (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ...), read once per call so a key
exported later is covered too.
"""

from __future__ import annotations

import functools
import os
import re

MASK = "<redacted>"  # no brackets: a rich console would read [..] as markup
#: Parts of a variable name that make its value a credential (not an endpoint or a path).
CREDENTIAL_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE", re.I)
MIN_SECRET = 8  # shorter values (a "1", "true") would mask ordinary words
#: Each shape starts at a word boundary, written as "its first letter, then no word character before
#: that letter" (``(?<!\w.)``): with a leading ``\b`` the regex engine tries every position of the
#: text; with a literal first it skips to the candidate letters (a 14 MB report: 0.45 s -> 0.12 s).
_AFTER_NON_WORD = r"(?<!\w.)"
#: The shapes of the common providers' keys and tokens.
KEY_SHAPES = re.compile(
    rf"s{_AFTER_NON_WORD}k-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_\-]{{20,}}"
    rf"|A{_AFTER_NON_WORD}Iza[0-9A-Za-z_\-]{{30,}}"
    rf"|g{_AFTER_NON_WORD}h[pousr]_[A-Za-z0-9]{{30,}}"
    rf"|g{_AFTER_NON_WORD}ithub_pat_[A-Za-z0-9_]{{30,}}"
    rf"|x{_AFTER_NON_WORD}ox[abprs]-[A-Za-z0-9-]{{10,}}"
    rf"|A{_AFTER_NON_WORD}KIA[0-9A-Z]{{16}}\b"
    rf"|h{_AFTER_NON_WORD}f_[A-Za-z0-9]{{30,}}"
)


def known_secrets() -> tuple[str, ...]:
    """Credential values set in this process's environment, longest first (read anew whenever the
    environment changed: a key exported later is covered too)."""
    # CPython keeps the environment as bytes in os.environ._data: a snapshot of that costs microseconds
    # where decoding every variable (os.environ.items()) cost a cached answer a tenth of a millisecond
    raw = getattr(os.environ, "_data", None)
    return _secrets_of(tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items()))


@functools.lru_cache(maxsize=4)
def _secrets_of(environ: tuple[tuple[str | bytes, str | bytes], ...]) -> tuple[str, ...]:
    # every result a run caches is masked: the regex over the names once per environment, not per entry
    values = set()
    for key, value in environ:
        k = os.fsdecode(key)
        v = os.fsdecode(value)
        if CREDENTIAL_NAME.search(k) and len(v) >= MIN_SECRET and not v.startswith("/"):
            values.add(v)
    return tuple(sorted(values, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """``text`` with every known secret and key-shaped string masked."""
    for value in known_secrets() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, MASK)
    # a search first: most texts hold no key, and a substitution copies the whole text (a report of
    # 10,000 results is 14 MB) even when it replaces nothing
    return text if KEY_SHAPES.search(text) is None else KEY_SHAPES.sub(MASK, text)


def redact_file(path: str | os.PathLike[str]) -> None:
    """Mask secrets in a file written by another process (an agent's stream), in place."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return
    text = data.decode("utf-8", "surrogateescape")
    clean = redact(text)
    if clean != text:
        with open(path, "wb") as handle:
            handle.write(clean.encode("utf-8", "surrogateescape"))
