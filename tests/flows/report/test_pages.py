"""The run page's charts and the suite page in real headless Chromium: every chart has a title and
labelled axes (or says in words why there is nothing to draw), text stays inside its chart and is
readable on a laptop screen, the pages work with scripts off, and a 10,000-case run page stays light.

Timings of the 10,000-case page are measured and printed (``-s``), never asserted."""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flows.report.regression import regression_against_previous
from flows.report.server import create_app
from tasks.store.files import atomic_write_json
from tests.browser import serving
from tests.flows.report.synthetic import STARTED, make_report
from tests.flows.report.test_server import browser

__all__ = ["browser"]  # the fixture, shared with test_server.py

XSS_SUITE = "<script>window.__pwned=1</script> nightly/team a"
LAPTOP = {"width": 1366, "height": 768}

#: Per chart on a page: its title, axis labels, note, and whether every text lies inside the chart
#: and how tall the smallest text is on screen. Run by Playwright, not by the page (CSP forbids it).
CHART_FACTS = """() => [...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')];
  const text = sel => [...svg.querySelectorAll(sel)].map(t => t.textContent.trim());
  return {
    title: text('.chart-title'), x: text('.x-label'), y: text('.y-label'), note: text('.chart-note'),
    outside: texts.filter(t => { const r = t.getBoundingClientRect();
      return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1;
    }).map(t => t.textContent),
    smallest: Math.min(...texts.map(t => t.getBoundingClientRect().height)),
  };
})"""


def serve(folder: Path) -> Iterator[str]:
    with serving(lambda port: create_app(folder, port=port)) as url:
        yield url


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A suite of four nights (v2 regresses on the third), a suite with a hostile name, and a run
    of 10,000 cases."""
    tmp = tmp_path_factory.mktemp("pages")
    out = tmp / "reports"
    out.mkdir()
    nights = [
        [5, 5, 4, 4, 4, 5, 4, 5],
        [5, 5, 4, 5, 4, 5, 4, 5],
        [3, 3, 2, 3, 2, 3, 2, 3],
        [5, 5, 5, 4, 4, 5, 4, 5],
    ]
    ids = []
    for i, v2 in enumerate(nights):
        report = make_report(
            tmp,
            {"v1": [3.0, 3, 3, 2, 4, 3, 3, 3], "v2": [float(x) for x in v2]},
            suite="caps",
            started=STARTED + dt.timedelta(days=i),
        )
        report.regression = regression_against_previous(out, report)
        atomic_write_json(out / f"{report.id}.json", report.dump())
        ids.append(report.id)
    odd = make_report(
        tmp, {"v1": [1, 2, 3], "v2": [2, 3, 4]}, suite=XSS_SUITE, started=STARTED - dt.timedelta(days=9)
    )
    atomic_write_json(out / f"{odd.id}.json", odd.dump())
    rng = random.Random(7)
    n = 10_000
    big = make_report(
        tmp,
        {
            "v1": [rng.choice([1, 2, 3, 4, 5]) for _ in range(n)],
            "v2": [rng.choice([2, 3, 4, 5, 5]) for _ in range(n)],
        },
        started=STARTED - dt.timedelta(days=30),
    )
    for i, case in enumerate(big.results):  # priced calls with latencies, so both scatters draw
        for name, entry in case.variants.items():
            priced = {"cost_usd": 0.0001 * (1 + i % 7), "duration_ms": 300.0 + i % 900}
            case.variants[name] = entry.model_copy(update=priced)
    atomic_write_json(out / f"{big.id}.json", big.dump())
    return {"dir": out, "nights": ids, "big": big.id}


@pytest.fixture(scope="module")
def site(folder: dict[str, Any]) -> Iterator[str]:
    yield from serve(folder["dir"])


def check_charts(facts: list[dict[str, Any]], expected: int) -> None:
    assert len(facts) == expected
    for f in facts:
        assert len(f["title"]) == 1 and f["title"][0].endswith("?"), f  # the question it answers
        if f["note"]:
            assert not f["x"] and not f["y"], f  # nothing to draw: words, no degenerate axis
        else:
            assert f["x"] and f["x"][0] and f["y"] and f["y"][0], f
        assert not f["outside"], f
        assert f["smallest"] >= 10, f  # readable at 1366 px wide


def test_run_page_charts_explain_themselves(browser: Any, site: str, folder: dict[str, Any]) -> None:
    page = browser.new_page(viewport=LAPTOP)
    page.goto(f"{site}/run/{folder['nights'][2]}")
    facts = page.evaluate(CHART_FACTS)
    check_charts(facts, 4)
    titles = [f["title"][0] for f in facts]
    assert titles[1] == "Where does v2 beat v1, case by case?"
    diff = page.locator("svg.differences")
    assert diff.locator(".zero-line").count() == 1 and diff.locator(".margin-band").count() == 1
    assert "cost $0" in page.locator("svg.chart").nth(2).inner_html()  # free calls: said in words
    assert page.locator("a.suite-link", has_text="caps").count() == 1
    page.close()


def test_large_run_page(browser: Any, site: str, folder: dict[str, Any]) -> None:
    url = f"{site}/run/{folder['big']}"
    started = time.perf_counter()
    html = httpx.get(url, timeout=120).text
    server_s = time.perf_counter() - started
    charts_kb = sum(len(part.split("</svg>")[0]) for part in html.split('<svg class="chart')[1:]) / 1024
    page = browser.new_page(viewport=LAPTOP)
    started = time.perf_counter()
    page.goto(url, timeout=120_000)
    browser_s = time.perf_counter() - started
    timing = page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " return [n.responseStart, n.domContentLoadedEventEnd, n.loadEventEnd]; }"
    )
    facts = page.evaluate(CHART_FACTS)
    check_charts(facts, 4)
    assert all(not f["note"] for f in facts)  # priced, timed: all four draw
    assert page.locator("article.case").count() == 50  # the case list stays paged
    # Drawn as histograms and thinned: a small fraction of the 6.5 MB the per-case charts weighed.
    assert charts_kb < 400, charts_kb
    print(
        f"\n10,000-case run page: HTML {len(html) / 1e6:.2f} MB in {server_s:.2f} s from the server; "
        f"charts {charts_kb:.0f} KB; in Chromium: goto {browser_s:.2f} s, first byte {timing[0]:.0f} ms, "
        f"DOMContentLoaded {timing[1]:.0f} ms, load {timing[2]:.0f} ms"
    )
    page.close()


def test_suite_page(browser: Any, site: str, folder: dict[str, Any]) -> None:
    page = browser.new_page(viewport=LAPTOP)
    page.goto(site + "/")
    with page.expect_navigation():  # to the new page's load event (its stylesheet applied)
        page.click("p.suites a.suite-link:text('caps')")
    assert page.url.endswith("/suite/caps")
    check_charts(page.evaluate(CHART_FACTS), 3)
    assert page.locator("svg.trend .regression-ring").count() == 1  # the regression stands out
    rows = page.locator("#suite-runs tbody tr")
    assert rows.count() == 4 and page.locator("#suite-runs tr.regressed").count() == 1
    assert "WORSE" in page.locator("#suite-runs tr.regressed").inner_text()
    assert "The latest run regressed" not in page.inner_text("main")  # the fourth night recovered
    page.locator("#suite-runs tr.regressed a").click()
    assert page.url.endswith(f"/run/{folder['nights'][2]}")
    page.close()


def test_hostile_suite_name_is_text(browser: Any, site: str) -> None:
    page = browser.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(site + "/")
    with page.expect_navigation():  # to the new page's load event (its stylesheet applied)
        page.click("p.suites a.suite-link:text('nightly/team')")
    assert XSS_SUITE in page.inner_text("main")
    assert page.locator("#suite-runs tbody tr").count() == 1
    assert page.evaluate("() => window.__pwned === undefined") and not dialogs
    assert httpx.get(site + "/suite/no-such-suite").status_code == 404
    page.close()


def test_pages_work_with_scripts_off(browser: Any, site: str, folder: dict[str, Any]) -> None:
    context = browser.new_context(java_script_enabled=False, viewport=LAPTOP)
    page = context.new_page()
    for path in ("/", "/suite/caps", f"/run/{folder['nights'][0]}"):
        page.goto(site + path)
        assert page.locator("svg.chart").count() >= (0 if path == "/" else 3)
    with page.expect_navigation():  # to the new page's load event (its stylesheet applied)
        page.click("a.suite-link")
    assert "/suite/caps" in page.url
    context.close()


def test_a_sample_runs_cards_have_no_trigger_line(tmp_path: Path) -> None:
    """--repeat: each run's card shows its own lines, none of trigger mode's ("fired: nothing")."""
    from flows.report.server import export_html

    page = export_html(make_report(tmp_path, {"v1": [5, 3, 4], "v2": [4, 4, 5]}, repeat=2))
    assert "run 2" in page and "fired:" not in page
