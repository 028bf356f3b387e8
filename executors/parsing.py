"""YAML and JSON from files nobody here wrote, bounded: an alias bomb, a document that expands past a
size, or nesting too deep for the parser is refused with one line instead of taking minutes, gigabytes
or a traceback. Every reader of a user's YAML or JSON, in every layer, parses through here."""

from __future__ import annotations

import json
from typing import Any

import yaml

MAX_ALIASES = 100  # a "billion laughs" file expands exponentially through its aliases
#: What a document may expand to, counting every node an alias repeats (a long scalar counts once
#: per 256 characters): far above any real suite, far below what hangs a machine.
MAX_EXPANDED = 1_000_000


#: A JSON object of a format skillab does not own, as the edge that reads or writes it holds it: a
#: CLI's event, a provider's request or response, another tool's suite file, a JSON Schema. Past its
#: edge it becomes one of skillab's models; ``tests/test_house.py`` lists the modules it may appear in.
JsonObject = dict[str, Any]


def json_lines(text: str) -> list[JsonObject]:
    """The JSON objects of a JSONL text; a line that is not one (a banner, a warning, a cut line) is
    skipped."""
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


class TooLarge(yaml.YAMLError):
    """A document refused for its expanded size or depth."""


class StrictLoader(yaml.SafeLoader):
    """YAML that refuses duplicate keys (the later one silently won), alias bombs and documents
    whose aliases expand past :data:`MAX_EXPANDED` nodes."""

    aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise TooLarge(f"more than {MAX_ALIASES} aliases (*name): refused")
        return super().compose_node(parent, index)

    def construct_document(self, node: Any) -> Any:
        expanded = _expanded(node, {}, set())
        if expanded > MAX_EXPANDED:
            raise TooLarge(f"expands to more than {MAX_EXPANDED:,} values through its aliases: refused")
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the constructor reports it
            if key in seen:
                raise yaml.YAMLError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expanded(node: Any, memo: dict[int, int], open_: set[int]) -> int:
    """Nodes in the document once every alias is written out; a node that contains itself counts
    as unbounded."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in open_:
        return MAX_EXPANDED + 1
    open_.add(key)
    if isinstance(node, yaml.ScalarNode):
        size = 1 + len(node.value) // 256
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded(n, memo, open_) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded(k, memo, open_) + _expanded(v, memo, open_) for k, v in node.value)
    else:
        size = 1
    open_.discard(key)
    memo[key] = min(size, MAX_EXPANDED + 1)
    return memo[key]


def load_yaml(text: str) -> Any:
    """One YAML document under :class:`StrictLoader`; ``yaml.YAMLError`` (one line) when refused."""
    try:
        return yaml.load(text, Loader=StrictLoader)
    except RecursionError:
        raise TooLarge("nested too deeply to read") from None


def load_json(text: str, **kwargs: Any) -> Any:
    """JSON; ``ValueError`` (one line) when invalid or nested too deeply for the parser."""
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
