"""What the model was shown of the skills, read from Claude Code's request by the model forwarder."""

from __future__ import annotations

import json

import httpx

from executors.egress import ANTHROPIC, forwarder
from executors.listing import SESSION_HEADER, claude_budget, observe_claude, skill_listing
from executors.schema import ListingState
from tests.fakes.provider import FakeProvider

LISTING = (
    "The following skills are available for use with the Skill tool:\n\n"
    "- whole: Writes release notes.\n"
    "- long: Reviews code in depth\u2026\n"
    "- bare\n"
    "- team:tidy: Tidies imports.\n"
    "  Keeps the order stable.\n"
    "</system-reminder>\n- after: not part of it\n"
)


def body(listing: str = LISTING) -> dict[str, object]:
    return {
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"<system-reminder>\n{listing}"}]}]
    }


def test_each_entry_and_its_state() -> None:
    assert skill_listing(body()) == {
        "whole": "Writes release notes.",
        "long": "Reviews code in depth\u2026",
        "bare": "",
        "team:tidy": "Tidies imports. Keeps the order stable.",
    }
    seen = observe_claude(json.dumps(body()).encode())
    assert seen is not None
    states = {s.name: s.state for s in seen.skills}
    assert states == {
        "whole": ListingState.FULL,
        "long": ListingState.TRUNCATED,
        "bare": ListingState.DROPPED,
        "team:tidy": ListingState.FULL,
    }
    assert seen.state("nowhere") == ListingState.ABSENT and seen.over_budget
    assert observe_claude(json.dumps({"messages": []}).encode()) is None
    assert observe_claude(b"The following skills are available for use with the Skill tool, not JSON") is None


def test_the_budget_is_claude_codes_rule() -> None:
    assert claude_budget(200_000, None) == 8000 and claude_budget(1_000_000, None) == 40_000
    assert claude_budget(200_000, 0.02) == 16_000 and claude_budget(None, 0.02) is None


def test_the_forwarder_keeps_each_sessions_first_listing_once() -> None:
    with FakeProvider() as server:
        route = forwarder().route(ANTHROPIC, server.url, tcp=True)
        url = route.url(0) + "/v1/messages"
        first = body() | {"model": "m", "max_tokens": 5}
        later = body("The following skills are available for use with the Skill tool:\n- other: Other.\n")
        with httpx.Client() as client:
            for sid, sent in (
                ("s-1", first),
                ("s-1", later | {"model": "m", "max_tokens": 5}),
                ("s-2", later | {"model": "m", "max_tokens": 5}),
            ):
                assert client.post(url, json=sent, headers={SESSION_HEADER: sid}).status_code == 200
            assert client.post(url, json=first | {"model": "m"}).status_code == 200  # no session: not kept
    one = forwarder().listing("s-1")
    assert one is not None and [s.name for s in one.skills] == ["whole", "long", "bare", "team:tidy"]
    assert forwarder().listing("s-1") is None  # taken once
    two = forwarder().listing("s-2")
    assert two is not None and [s.name for s in two.skills] == ["other"]


def test_codexs_listing_and_its_file_notes() -> None:
    from executors.listing import observe_codex

    block = (
        "<skills_instructions>\n## Skills\nA skill is ...\n### Skill roots\n- `r0` = `/h/.codex/skills`\n"
        "### Available skills\n- notes: Takes notes. Use for notes: meetings. (file: r1/notes/SKILL.md)\n"
        "- bare (file: r1/bare/SKILL.md)\n</skills_instructions>"
    )
    body = {"input": [{"role": "developer", "content": [{"type": "input_text", "text": block}]}]}
    seen = observe_codex(json.dumps(body).encode())
    assert seen is not None and [(s.name, s.state) for s in seen.skills] == [
        ("notes", ListingState.FULL),
        ("bare", ListingState.DROPPED),
    ]
    assert seen.skills[0].chars == len("Takes notes. Use for notes: meetings.")
    assert observe_codex(b'{"input": "no skills here"}') is None
