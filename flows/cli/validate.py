"""The ``validate`` commands' output (sample mode's and ``skill validate``): every grader tried on the
known answers, one line each, then the counts; exit 1 when one is broken."""

from __future__ import annotations

from collections.abc import Sequence

from flows.cli.codes import EXIT_FAIL, EXIT_OK
from graders.validation import GraderFinding


def print_findings(
    findings: Sequence[GraderFinding], tried: int, what: str, bare: Sequence[str], note: str = ""
) -> int:
    """Each finding, the counts over ``tried`` known answers (``what``: their name), the cases that
    have none (``bare``), and ``note``; the exit code."""
    for f in findings:
        print(f"{f.status:<9}{f.grader}: {f.reason}")
    counts = {
        status: sum(1 for f in findings if f.status == status) for status in ("ok", "untested", "broken")
    }
    print(
        f"validate: {len(findings)} graders tried on {tried} {what}(s): "
        + ", ".join(f"{n} {status}" for status, n in counts.items())
        + (f"; {note}" if note else "")
    )
    if bare:
        shown = ", ".join(bare[:5]) + (f" and {len(bare) - 5} more" if len(bare) > 5 else "")
        print(f"validate: {len(bare)} case(s) have no {what}, their graders were not tried: {shown}")
    return EXIT_FAIL if counts["broken"] else EXIT_OK
