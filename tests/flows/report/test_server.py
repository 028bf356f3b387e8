"""The report server: HTTP-level safety rules, and a person's path through it in real headless Chromium."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from flows.cli.main import main
from flows.report.server import create_app
from tests.browser import chromium, serving
from tests.fakes.provider import FakeProvider
from tests.flows.helpers import answer, make_project, use_provider

XSS = "<script>window.__pwned = 1; alert('xss')</script><img src=x onerror=\"alert('img')\">"
TOKEN = "test-token"


def xss_answer(system: str, prompt: str) -> str:
    return f"Paris {XSS}" if "France" in prompt else answer(system, prompt)


@pytest.fixture(scope="module")
def reports(prefect_harness: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two real runs (one blind) made by the flow against a local server; one output carries XSS."""
    root = tmp_path_factory.mktemp("reports-project")
    project = make_project(root / "p", n=4)
    out = root / "reports"
    mp = pytest.MonkeyPatch()
    with FakeProvider(xss_answer) as server:
        use_provider(mp, server.url)
        mp.chdir(project)
        common = [
            "run",
            "--executor",
            "openai",
            "--output-dir",
            str(out),
            "--cache-dir",
            str(root / "c"),
            "--quiet",
        ]
        assert main(common) == 0
        first = {p.name for p in out.glob("*.json")}
        time.sleep(1.1)  # distinct timestamps
        assert main([*common, "--blind"]) == 0
    mp.undo()
    ids = sorted(p.stem for p in out.glob("*.json"))
    plain = next(i for i in ids if f"{i}.json" in first)
    blind = next(i for i in ids if i != plain)
    return {"dir": out, "plain": plain, "blind": blind}


@pytest.fixture(scope="module")
def server(reports: dict[str, object]) -> Iterator[str]:
    with serving(lambda port: create_app(Path(str(reports["dir"])), port=port, token=TOKEN)) as url:
        yield url


def post(base: str, run_id: str, data: dict, **headers: str) -> httpx.Response:
    h = {"origin": base} | headers
    return httpx.post(f"{base}/api/run/{run_id}/feedback", json=data, headers=h)


# ---------------------------------------------------------------- HTTP-level safety


def test_foreign_host_header_is_refused(server: str) -> None:
    assert httpx.get(server + "/").status_code == 200
    assert httpx.get(server + "/", headers={"host": "evil.example:80"}).status_code == 421


def test_security_headers_forbid_scripts(server: str) -> None:
    r = httpx.get(server + "/")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert "script-src" not in r.headers["content-security-policy"]  # falls back to 'none'
    assert r.headers["x-content-type-options"] == "nosniff"


def test_feedback_needs_token_and_same_origin(server: str, reports: dict) -> None:
    good = {"sample_id": "cap-france", "variant": "v1", "rating": 3, "comment": "ok", "token": TOKEN}
    assert post(server, reports["plain"], {**good, "token": "wrong"}).status_code == 403
    assert post(server, reports["plain"], {k: v for k, v in good.items() if k != "token"}).status_code == 403
    assert post(server, reports["plain"], good, origin="http://evil.example").status_code == 403
    r = httpx.post(f"{server}/api/run/{reports['plain']}/feedback", json=good)  # no Origin, no Referer
    assert r.status_code == 403
    assert post(server, reports["plain"], good).status_code == 200
    assert post(server, reports["plain"], {**good, "rating": 9}).status_code == 400
    assert post(server, reports["plain"], {**good, "variant": "v9"}).status_code == 400


def test_body_size_is_limited(server: str, reports: dict) -> None:
    big = {"sample_id": "cap-france", "variant": "v1", "rating": 3, "comment": "x" * 20_000, "token": TOKEN}
    assert post(server, reports["plain"], big).status_code == 413


def test_run_ids_are_validated(server: str) -> None:
    for bad in ("..%2F..%2Fetc%2Fpasswd", "%2E%2E", ".hidden", "a%00b"):
        assert httpx.get(f"{server}/run/{bad}").status_code == 404
    assert httpx.get(f"{server}/api/run/../../etc/passwd").status_code == 404


def test_nothing_deletes_or_shuts_down(server: str, reports: dict) -> None:
    for method in ("DELETE", "PUT", "PATCH"):
        assert httpx.request(method, f"{server}/api/run/{reports['plain']}").status_code == 405
    assert httpx.post(f"{server}/shutdown", headers={"origin": server}).status_code in {404, 405}


def test_concurrent_feedback_loses_nothing(server: str, reports: dict) -> None:
    run_id = reports["plain"]

    def one(i: int) -> int:
        data = {
            "sample_id": "cap-japan",
            "variant": "v2",
            "rating": 1 + i % 5,
            "comment": f"c{i}",
            "token": TOKEN,
        }
        return post(server, run_id, data).status_code

    with ThreadPoolExecutor(16) as pool:
        assert set(pool.map(one, range(40))) == {200}
    report = json.loads((Path(reports["dir"]) / f"{run_id}.json").read_text())
    entry = next(r for r in report["results"] if r["sample_id"] == "cap-japan")["variants"]["v2"]
    assert sorted(f["comment"] for f in entry["feedback"]) == sorted(f"c{i}" for i in range(40))


def test_export_is_self_contained(reports: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.html"
    assert (
        main(
            ["report", "--reports-dir", str(reports["dir"]), "--export", str(out), "--run", reports["plain"]]
        )
        == 0
    )
    html = out.read_text()
    assert "<link" not in html and "<script" not in html.replace("&lt;script", "") and "<style>" in html
    assert "&lt;script&gt;window.__pwned" in html


# ---------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as b:
        yield b


def test_list_open_rate_reload(browser: object, server: str, reports: dict) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    dialogs: list[str] = []

    def on_dialog(dialog: object) -> None:
        dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    page.on("dialog", on_dialog)
    page.goto(server + "/")
    assert page.locator("#runs tbody tr").count() == 2
    page.click(f"a.run-link:text('{reports['plain']}')")
    assert page.url.endswith(f"/run/{reports['plain']}")
    assert "BETTER" in page.inner_text("body") or "UNDERPOWERED" in page.inner_text("body")
    case = page.locator("#case-cap-spain .output[data-variant='v1']")
    case.locator("input[name=rating][value='4']").check()
    case.locator("input[name=comment]").fill("chatty but right")
    case.locator("button[type=submit]").click()
    page.wait_for_load_state()
    page.reload()
    kept = page.locator("#case-cap-spain .output[data-variant='v1'] .rating").inner_text()
    assert kept.startswith("★★★★☆") and "chatty but right" in kept
    # the XSS payload shows as text, and nothing ran
    output = page.locator("#case-cap-france .output[data-variant='v1'] pre.model-output").inner_text()
    assert XSS in output
    assert page.evaluate("() => window.__pwned === undefined") and not dialogs
    page.close()


def test_blind_run_reveal(browser: object, server: str, reports: dict) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto(f"{server}/run/{reports['blind']}")
    body = page.inner_text("main")
    assert "Variant A" in body and "v1" not in body.split("Reveal")[0]
    mapping = page.locator("#reveal ul")
    assert not mapping.is_visible()
    page.click("#reveal summary")
    assert mapping.is_visible() and "v1" in mapping.inner_text() and "v2" in mapping.inner_text()
    page.close()


def test_compare_two_runs(browser: object, server: str, reports: dict) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.goto(server + "/")
    page.check(f"input[name=a][value='{reports['plain']}']")
    page.check(f"input[name=b][value='{reports['plain']}']")
    page.click("text=Compare A with B")
    page.locator("#compare tbody tr").first.wait_for()  # the click navigates: wait for the new page
    assert page.locator("#compare tbody tr").count() == 8  # 4 cases x 2 variants
    page.close()


#: WCAG 2 contrast of every element's own text against the first opaque background behind it.
CONTRAST_JS = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const behind = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] === 1)) return c;
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(el);
    if (!own || style.visibility === "hidden" || el.closest("svg") || !el.getClientRects().length) continue;
    const [a, b] = [lum(rgb(style.color)), lum(behind(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && +style.fontWeight >= 700);
    if (ratio < (large ? 3 : 4.5)) low.push(`${el.tagName}.${el.className}: ${ratio.toFixed(2)} "${el.textContent.trim().slice(0, 40)}"`);
  }
  return low;
}"""


def test_text_meets_wcag_aa_contrast(reports: dict, server: str, browser: object) -> None:
    """Every piece of text on the runs list, a run's page and the compare page reads at 4.5:1 (3:1
    when large) against what is behind it."""
    page = browser.new_page()  # type: ignore[attr-defined]
    pages = ["/", f"/run/{reports['plain']}", f"/compare?a={reports['plain']}&b={reports['blind']}"]
    low = []
    for path in pages:
        page.goto(server + path)
        low += [f"{path}: {line}" for line in page.evaluate(CONTRAST_JS)]
    page.close()
    assert not low, "\n".join(low[:20])
