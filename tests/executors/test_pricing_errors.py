from __future__ import annotations

from pathlib import Path

import pytest

from executors.errors import PermanentError, TransientError, error_for_status, parse_retry_after
from executors.pricing import PriceTable


def test_longest_prefix_price_and_unknown_model() -> None:
    table = PriceTable()
    assert table.lookup("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert table.lookup("gpt-4o-2024-08-06") == (2.50, 10.00)
    assert table.cost("no-such-model", 1000, 1000) == 0.0


def test_price_overrides_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("my-model: {input: 1.0, output: 2.0}\n")
    assert PriceTable.from_file(path).cost("my-model-v2", 1_000_000, 500_000) == pytest.approx(2.0)
    path.write_text("my-model: {input: 1.0}\n")
    with pytest.raises(ValueError, match="my-model"):
        PriceTable.from_file(path)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, TransientError),
        (408, TransientError),
        (500, TransientError),
        (502, TransientError),
        (400, PermanentError),
        (401, PermanentError),
        (404, PermanentError),
    ],
)
def test_status_classification(status: int, kind: type) -> None:
    assert isinstance(error_for_status(status, "x"), kind)


def test_retry_after_forms() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
