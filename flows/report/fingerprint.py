"""A run's fingerprint (what actually ran, as the answers reported it) and what changed between the
fingerprints of two runs of a suite, one line per part: the regression check and ``history`` name
these beside the verdict, so a changed CLI, model or judge is not read as the skill's doing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from flows.report.schema import Fingerprint, Meta
from tasks.schema import RunStats, UnitKind

DIGEST_CHARS = 12


def digest(values: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(values)).encode()).hexdigest()[:DIGEST_CHARS]


def fingerprint(meta: Meta, stats: RunStats) -> Fingerprint:
    """The fingerprint of a run from its meta and what its runner saw."""
    seen = stats.seen
    return Fingerprint(
        skillab=meta.cli_version,
        executor=meta.executor,
        agent_cli=meta.agent_cli_version,
        models=sorted({*seen.models.get(UnitKind.EXECUTE, ()), *seen.models.get(UnitKind.SESSION, ())}),
        judge_models=list(seen.models.get(UnitKind.JUDGE, ())),
        tools={variant: digest(tools) for variant, tools in seen.tools.items()},
        listing={variant: digest(skills) for variant, skills in seen.listed.items()},
        environment=(env[:DIGEST_CHARS] if (env := meta.environment_digest()) else None),
        sandbox=meta.sandbox_line(),
        image=", ".join(sorted({i for images in seen.images.values() for i in images})) or None,
    )


def _words(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "none reported"


#: Per part of the fingerprint: what it is called in a line, and how its value reads.
PARTS: dict[str, tuple[str, Callable[[Fingerprint], str | None]]] = {
    "skillab": ("skillab", lambda f: f.skillab),
    "executor": ("executor", lambda f: f.executor),
    "agent_cli": ("agent CLI", lambda f: f.agent_cli),
    "models": ("model under test (as the answers reported it)", lambda f: _words(f.models)),
    "judge_models": ("judge model (as its answers reported it)", lambda f: _words(f.judge_models)),
    "environment": ("environment snapshot", lambda f: f.environment),
    "sandbox": ("OS sandbox", lambda f: f.sandbox),
    "image": ("fleet image", lambda f: f.image),
}


def changes(before: Fingerprint | None, after: Fingerprint | None) -> list[str]:
    """What differs between two runs' fingerprints, one line each ('agent CLI: claude 2.1.293 ->
    claude 2.1.295'); nothing when either run has none (a report written before fingerprints)."""
    if before is None or after is None:
        return []
    lines = [
        f"{label}: {was or 'none'} -> {now or 'none'}"
        for label, value in PARTS.values()
        if (was := value(before)) != (now := value(after))
    ]
    for part, label in (("tools", "tools offered"), ("listing", "skill listing")):
        was_by, now_by = getattr(before, part), getattr(after, part)
        lines += [
            f"{label} ({variant}): {was_by.get(variant) or 'none'} -> {now_by.get(variant) or 'none'}"
            for variant in sorted({*was_by, *now_by})
            if was_by.get(variant) != now_by.get(variant)
        ]
    return lines
