"""Running trigger sessions: each in a fresh neutral sandbox with the variant's skills installed and
nothing forced, one Prefect task per session, finished sessions cached (a re-run after kill -9
repeats none), budgets honoured; each session reduced to what fired, when, and how it ended."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from executors.schema import AgentRequest, AgentSession, InstalledSkill
from executors.workspace import session_root, sweep
from flows.engine.runner import Refused, UnitRunner
from flows.modes.triggers.fill import fill_history
from flows.modes.triggers.plan import TriggerOutcome, TriggerPlan, TriggerSession
from graders.triggers import SessionTriggers, TriggerStatus, detect
from tasks.schema import TranscriptStep

TRANSCRIPT_CHARS = 400


def outcome_of(session: AgentSession, triggers: SessionTriggers) -> TriggerOutcome:
    """What the report keeps of a session (and the cache stores)."""
    return TriggerOutcome(
        status=triggers.status,
        triggers=triggers,
        fired=list(triggers.fired),
        first_turns=triggers.first_turns(),
        session_status=str(session.status),
        ok=session.ok,
        error=session.error,
        output=session.final_text,
        duration_ms=session.duration_ms,
        cost_usd=session.cost_usd,
        listed=list(session.skills_listed) if session.skills_listed is not None else None,
        cli_version=session.meta.cli_version,
        model=session.meta.model,
        tools=session.meta.tools or [],
        transcript=[
            TranscriptStep(
                kind=e.kind,
                tool=e.tool,
                text=(e.text or str(e.input or ""))[:TRANSCRIPT_CHARS],
                is_error=e.is_error,
            )
            for e in session.events
        ],
    )


@dataclass
class TriggerRunner:
    """The plan's sessions on the unit runner, whose cache (its config's ``cache_dir``) keeps each
    finished session's outcome."""

    plan: TriggerPlan
    runner: UnitRunner
    base_urls: dict[str, str | None] = field(init=False)  # each agent CLI's endpoint

    def __post_init__(self) -> None:
        self.base_urls = {v.runner: v.base_url for v in self.plan.variants}

    def request(self, s: TriggerSession, root: Path) -> AgentRequest:
        o = self.plan.options
        sandbox = root / s.key[:16]
        v = s.variant
        history = (
            fill_history(sandbox / "fill.jsonl", v.fill, o.context_window, o.seed, str(uuid.uuid4()))
            if v.fill
            else None
        )
        return AgentRequest(
            cli=s.variant.runner,
            model=s.variant.model,
            prompt=s.query.query,
            sandbox=str(sandbox / "work"),
            home=str(sandbox / "home"),
            skills=tuple(
                InstalledSkill(name=k.name, path=str(k.path)) for k in s.variant.skills if k.plugin is None
            ),
            plugin_dir=next((str(k.path) for k in s.variant.skills if k.plugin is not None), None),
            plugin_mcp=o.plugin_mcp,
            force_skill=False,
            max_turns=o.max_turns,
            timeout_s=o.timeout,
            raw_stream=str(sandbox / "raw_stream.jsonl"),
            isolation=self.plan.isolation,
            allow_network=self.plan.options.allow_network,
            environment=str(v.environment.path) if v.environment else None,
            environment_skip=v.hidden,
            resume=str(history) if history else None,
        )

    def cached(self, s: TriggerSession) -> TriggerOutcome | None:
        """The session's outcome from the cache; an entry of another shape (an older version's) is a
        miss: the session runs again and its entry is rewritten."""
        cache = self.runner.cache
        hit = cache.get(s.key) if cache else None
        try:
            out = None if hit is None else TriggerOutcome.model_validate(hit)
        except ValidationError:
            return None
        if out is not None:
            out.cached = True
        return out

    async def one(self, s: TriggerSession, root: Path) -> TriggerOutcome | None:
        cached = self.cached(s)
        if cached is not None:
            self.runner.hit(ok=cached.status == TriggerStatus.OK)
            self.runner.saw_offered(s.variant.label, cached.model, cached.tools, cached.listed)
            return cached
        request = self.request(s, root)
        unit = (s.query.id, s.variant.label, s.run)
        session = await self.runner.session(unit, s.label, request, self.base_urls.get(request.cli))
        if isinstance(session, Refused):
            return None
        out = outcome_of(session, detect(session, s.variant.candidates, required=s.variant.own))
        cache = self.runner.cache
        if cache is not None and out.status != TriggerStatus.ERROR:
            try:
                cache.put(s.key, out.cache_value())
            except OSError as exc:  # the session is kept all the same
                out.cache_error = str(exc)
        self.runner.progress.advance(ok=out.status == TriggerStatus.OK, cost=out.cost_usd)
        return out

    async def run(self) -> dict[str, TriggerOutcome]:
        """key -> outcome of every session that ran or was cached."""
        sweep()  # what a run killed with -9 left behind
        with session_root() as root:
            outcomes = await asyncio.gather(*(self.one(s, root) for s in self.plan.sessions))
        return {s.key: o for s, o in zip(self.plan.sessions, outcomes, strict=True) if o is not None}
