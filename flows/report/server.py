"""The local report server: read, compare and rate results in the browser, safely.

Server-rendered pages (Starlette + Jinja2, both brought by Prefect), charts as inline SVG, and no
JavaScript at all, so the Content-Security-Policy forbids every script: a ``<script>`` in a model's
output is escaped text, and could not run even if it were not. Bound to 127.0.0.1; requests with a
foreign Host header are refused (DNS rebinding); POSTs need the same origin and the server's token;
run ids are validated; bodies are size-limited; nothing deletes or shuts down.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
from collections import Counter
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, Undefined, select_autoescape
from jinja2.bccache import Bucket
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from flows.inputs.files import skillab_home
from flows.report import charts
from flows.report.entries import RegressionVariant
from flows.report.logtext import artifact_change_text, change_figures, uncertified
from flows.report.regression import compare_variant
from flows.report.schema import Report
from flows.report.store import BadRequest, NotFound, ReportStore
from flows.report.suite import suite_view

HERE = Path(__file__).parent
MAX_BODY = 16 * 1024
PAGE_SIZE = 50
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
Point = tuple[float, float, str]
SORTS = {"date": "timestamp", "model": "model", "cost": "cost", "samples": "samples"}


class TemplateCache(FileSystemBytecodeCache):
    """Compiled templates kept between commands (compiling run.html takes 0.15 s of every run); a
    folder that cannot be written leaves them compiled each time, nothing worse."""

    def __init__(self) -> None:
        folder = skillab_home() / "cache" / "templates"
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
        super().__init__(str(folder))

    def load_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):  # a damaged file is recompiled by jinja itself
            super().load_bytecode(bucket)

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        bytecode_cache=TemplateCache(),
    )

    def blank(v: Any) -> bool:  # a missing figure (older or partial reports) shows as a dash
        return v is None or isinstance(v, Undefined)

    env.filters["num"] = lambda v, d=2: (
        "—" if blank(v) else (f"{v:.{d}f}" if isinstance(v, float) else str(v))
    )
    env.filters["pct"] = lambda v: "—" if blank(v) else f"{v * 100:.0f}%"
    env.filters["signed"] = lambda v, d=2: "—" if blank(v) else f"{v:+.{d}f}"
    env.filters["segment"] = lambda v: quote(str(v), safe="")  # one URL path segment, "/" included
    # A link read from a report is followed only when it is a web address (never javascript: & co).
    env.filters["web_url"] = lambda v: (
        v if isinstance(v, str) and v.startswith(("http://", "https://")) else None
    )
    env.globals["change_figures"] = change_figures
    env.globals["artifact_change_text"] = artifact_change_text
    env.globals["uncertified"] = uncertified
    return env


def scored_points(
    report: Report,
) -> tuple[dict[str, list[float]], dict[str, list[Point]], dict[str, list[Point]]]:
    """Per variant: every case's score, and (cost, score, case) and (latency, score, case) points."""
    values: dict[str, list[float]] = {v: [] for v in report.summary}
    cost: dict[str, list[Point]] = {v: [] for v in values}
    latency: dict[str, list[Point]] = {v: [] for v in values}
    for case in report.results:
        for name, entry in case.variants.items():
            score = entry.composite_score
            if score is None or name not in values:
                continue
            values[name].append(score)
            cost[name].append((entry.cost_usd, score, case.sample_id))
            if entry.duration_ms is not None:
                latency[name].append((entry.duration_ms, score, case.sample_id))
    return values, cost, latency


def run_charts(report: Report) -> dict[str, Markup]:
    own = report.charts()
    if own is not None:
        return own
    scale = report.scale
    values, cost, latency = scored_points(report)
    intervals = {n: s.interval for n, s in report.summary.items()}
    score_label = f"score ({scale.name})"
    out = {
        "distribution": charts.distribution(
            values,
            scale.minimum,
            scale.maximum,
            "How does each variant score, case by case?",
            x_label=f"score per case ({scale.name}; higher is better)",
            intervals=intervals,
        )
    }
    for comp in report.comparisons:
        out[f"diff:{comp.treatment}"] = charts.differences(
            list(comp.per_case.items()),
            f"Where does {comp.treatment} beat {comp.control}, case by case?",
            charts.Paired(comp.treatment, comp.control, comp.verdict.margin, comp.paired.mean),
        )
    y_range = (scale.minimum, scale.maximum)
    out["cost"] = charts.scatter(
        cost, "cost per case (USD)", score_label, "Does a costlier answer score better?", y_range=y_range
    )
    seconds = max((x for pts in latency.values() for x, _, _ in pts), default=0.0) > 5000
    if seconds:
        latency = {n: [(x / 1000, y, c) for x, y, c in pts] for n, pts in latency.items()}
    out["latency"] = charts.scatter(
        latency,
        f"latency per case ({'s' if seconds else 'ms'})",
        score_label,
        "Does a slower answer score better?",
        y_range=y_range,
        what="latency",
    )
    return out


class Guard:
    """Refuses requests whose Host is not this server (DNS rebinding), and adds security headers."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str]) -> None:
        self.app = app
        self.allowed = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
        if host not in self.allowed:
            await Response("host not allowed", status_code=421)(scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


class ReportApp:
    """The pages and the feedback endpoint over one reports folder."""

    def __init__(self, reports_dir: Path, host: str, port: int, token: str | None) -> None:
        self.store = ReportStore(reports_dir)
        self.env = environment()
        self.secret = token or secrets.token_urlsafe(24)
        self.origins = {f"http://{host}:{port}"} | (
            {f"http://localhost:{port}"} if host == "127.0.0.1" else set()
        )

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(
            self.env.get_template(name).render(token=self.secret, export=False, **context),
            status_code=status_code,
        )

    async def index(self, request: Request) -> Response:
        runs = self.store.runs()
        suites = Counter(r.suite for r in runs if r.suite)
        q = request.query_params.get("q", "").strip().lower()
        label = request.query_params.get("verdict", "")
        if q:
            runs = [
                r
                for r in runs
                if q in " ".join(str(v) for v in (r.model, r.suite, *r.variants, r.id)).lower()
            ]
        if label:
            runs = [r for r in runs if label in r.labels]
        sort = request.query_params.get("sort", "date")
        key = SORTS.get(sort, "timestamp")
        descending = request.query_params.get("order", "desc") != "asc"
        runs.sort(
            key=lambda r: (
                getattr(r, key) is None,
                getattr(r, key) or 0 if key in {"cost", "samples"} else str(getattr(r, key) or ""),
            ),
            reverse=descending,
        )
        return self.page(
            "index.html",
            runs=runs,
            q=q,
            verdict=label,
            sort=sort,
            order="desc" if descending else "asc",
            suites=sorted(suites.items()),
        )

    async def run_page(self, request: Request) -> Response:
        try:
            report = self.store.load(request.path_params["run_id"])
        except NotFound:
            return HTMLResponse("no such run", status_code=404)
        cases = report.results
        pages = max(1, math.ceil(len(cases) / PAGE_SIZE))
        try:
            number = min(max(1, int(request.query_params.get("page", "1"))), pages)
        except ValueError:
            number = 1
        shown = cases[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
        return self.page(
            "run.html", report=report, cases=shown, page=number, pages=pages, charts=run_charts(report)
        )

    async def suite(self, request: Request) -> Response:
        name = request.path_params["name"]
        view = suite_view(self.store.runs(), name)
        if not view["rows"]:
            return HTMLResponse("no runs of this suite", status_code=404)
        return self.page("suite.html", **view)

    async def compare(self, request: Request) -> Response:
        ids = [request.query_params.get(side, "") for side in ("a", "b")]
        if not all(ids):
            problem = "Pick two runs to compare: one in column A and one in column B."
            return self.page("compare.html", problem=problem, status_code=400)
        try:
            a, b = (self.store.load(i) for i in ids)
        except NotFound:
            return self.page("compare.html", problem="One of the two runs does not exist.", status_code=404)
        rows = compare_rows(a, b)
        return self.page("compare.html", a=a, b=b, rows=rows, stats=compare_stats(a, b, rows))

    def same_origin(self, request: Request) -> bool:
        origin = request.headers.get("origin") or ""
        referer = request.headers.get("referer") or ""
        return origin in self.origins or (
            not origin and any(referer.startswith(o + "/") for o in self.origins)
        )

    async def form(self, request: Request) -> dict[str, Any] | JSONResponse:
        """The posted fields (form or JSON), or the error response: size-limited, never trusted."""
        size = request.headers.get("content-length")
        too_big = JSONResponse({"error": f"body must be under {MAX_BODY} bytes"}, status_code=413)
        if size is None or not size.isdigit() or int(size) > MAX_BODY:
            return too_big
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                return too_big
        try:
            if request.headers.get("content-type", "").startswith("application/json"):
                data = json.loads(raw or b"{}")
                if not isinstance(data, dict):
                    raise ValueError
                return data
            return {k: v[0] for k, v in parse_qs(raw.decode("utf-8")).items()}
        except (ValueError, UnicodeDecodeError):
            return JSONResponse({"error": "malformed body"}, status_code=400)

    async def feedback(self, request: Request) -> Response:
        if not self.same_origin(request):
            return JSONResponse({"error": "cross-origin request refused"}, status_code=403)
        data = await self.form(request)
        if isinstance(data, JSONResponse):
            return data
        given = str(data.get("token") or request.headers.get("x-skillab-token") or "")
        if not secrets.compare_digest(given, self.secret):
            return JSONResponse({"error": "missing or wrong token"}, status_code=403)
        run_id = request.path_params["run_id"]
        try:
            entry = self.store.add_feedback(
                run_id,
                str(data.get("sample_id", "")),
                str(data.get("variant", "")),
                data.get("rating"),
                data.get("comment"),
            )
        except NotFound:
            return JSONResponse({"error": "no such run"}, status_code=404)
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if request.headers.get("content-type", "").startswith("application/json"):
            return JSONResponse({"ok": True, "feedback": entry})
        anchor = f"case-{data.get('sample_id', '')}"
        return RedirectResponse(f"/run/{run_id}?page={data.get('page', 1)}#{anchor}", status_code=303)

    async def run_json(self, request: Request) -> Response:
        try:
            return JSONResponse(self.store.load(request.path_params["run_id"]).dump())
        except NotFound:
            return JSONResponse({"error": "no such run"}, status_code=404)


def create_app(
    reports_dir: Path, *, host: str = "127.0.0.1", port: int = 7799, token: str | None = None
) -> ASGIApp:
    app = ReportApp(reports_dir, host, port, token)
    routes = Starlette(
        routes=[
            Route("/", app.index),
            Route("/run/{run_id}", app.run_page),
            Route("/compare", app.compare),
            Route("/suite/{name:path}", app.suite),
            Route("/api/run/{run_id}", app.run_json),
            Route("/api/run/{run_id}/feedback", app.feedback, methods=["POST"]),
            # Browsers ask for it on every page; no icon, and no 404 in the console either.
            Route("/favicon.ico", lambda _: Response(status_code=204)),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
    )
    return Guard(routes, {o.removeprefix("http://") for o in app.origins})


@dataclass(frozen=True)
class CompareRow:
    """One case and shared variant of the compare page: its score in run A, in run B, the change."""

    sample_id: str
    variant: str
    a: float | None
    b: float | None
    errored: list[str]  # the sides ("A", "B") with an errored run

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


def compare_rows(a: Report, b: Report) -> list[CompareRow]:
    """Per case and shared variant: score in run A, in run B, and the change. The scores are the
    cases' composites, as the regression check takes them (a case's mean over its scored runs): a
    side with no score has no change, a failed call is never an improvement or a drop; the sides
    with an errored run are marked."""
    index_b = {r.sample_id: r for r in b.results}
    rows = []
    for case in a.results:
        other = index_b.get(case.sample_id)
        if other is None:
            continue
        for name, entry in case.variants.items():
            if name not in other.variants:
                continue
            ea, eb = entry, other.variants[name]
            errored = [side for side, e in (("A", ea), ("B", eb)) if not e.ok]
            rows.append(CompareRow(case.sample_id, name, ea.composite_score, eb.composite_score, errored))
    return rows


def compare_stats(a: Report, b: Report, rows: list[CompareRow]) -> dict[str, RegressionVariant]:
    """Per shared variant: B against A over the cases compared (errored ones left out), with the
    paired statistics and verdict a suite's run-to-run comparison uses."""
    stats = {}
    for name in dict.fromkeys(r.variant for r in rows):
        compared = [r for r in rows if r.variant == name and r.a is not None and r.b is not None]
        before = {r.sample_id: float(r.a or 0) for r in compared}
        after = {r.sample_id: float(r.b or 0) for r in compared}
        stats[name] = RegressionVariant.model_validate(compare_variant(before, after, b, b.meta.seed))
    return stats


def export_html(report: Report) -> str:
    """One self-contained file (inline CSS and SVG, no script, no form) for CI artifacts."""
    return "".join(export_pieces(report))


def export_pieces(report: Report) -> Iterator[str]:
    """``export_html``'s page as the template makes it, a piece at a time: a file is written from
    them (``atomic_write_chunks``) without the page of 10,000 cases whole in memory."""
    env = environment()
    css = (HERE / "static" / "app.css").read_text(encoding="utf-8")
    return env.get_template("run.html").generate(
        report=report,
        cases=report.results,
        page=1,
        pages=1,
        charts=run_charts(report),
        token="",
        export=True,
        inline_css=Markup(css),
    )
