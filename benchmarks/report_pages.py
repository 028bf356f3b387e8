"""The report server's page time on a large run.

    .venv/bin/python -m benchmarks.report_pages [--results 10000]

Builds a sample-mode report of N results (sample x variant) in the real report format, serves it
with the real app on 127.0.0.1, and prints the median time of the runs list, the run page (first
page of cases: cases are paginated), a late page, and the JSON API, over 5 requests each.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from flows.report.server import create_app


def fake_report(n: int) -> dict:
    cases = n // 2
    results = []
    for i in range(cases):
        variants = {}
        for v, score in (("v1", 3.0), ("v2", 4.0 + (i % 3) / 3)):
            variants[v] = {
                "ok": True,
                "compositeScore": score,
                "assertions": {
                    "passed": 1,
                    "total": 2,
                    "score": score,
                    "details": [
                        {"type": "contains", "value": "x", "weight": 1, "passed": True},
                        {
                            "type": "max_length",
                            "value": 100,
                            "weight": 1,
                            "passed": False,
                            "message": "length 120",
                        },
                    ],
                },
                "llmScore": None,
                "llmReason": None,
                "judgeStatus": "skipped",
                "durationMs": 200.0,
                "inputTokens": 20,
                "outputTokens": 30,
                "totalTokens": 50,
                "costUSD": 0.0001,
                "outputPreview": f"answer {i}",
                "output": f"answer {i} " * 20,
                "error": None,
            }
        results.append(
            {"sample_id": f"s{i:05d}", "prompt": f"question {i}", "tags": [], "variants": variants}
        )
    per_case = {f"s{i:05d}": 1.0 + (i % 3) / 3 for i in range(cases)}
    summary = {
        v: {
            "avgCompositeScore": 3.5,
            "compositeCI95": [3.4, 3.6],
            "avgAssertionScore": 3.5,
            "avgLlmScore": None,
            "passRate": 0.5,
            "errorCount": 0,
            "executions": cases,
            "ungradedCount": 0,
            "avgTotalTokens": 50.0,
            "avgDurationMs": 200.0,
            "totalCostUSD": 0.1,
        }
        for v in ("v1", "v2")
    }
    return {
        "version": 1,
        "id": "bench-large-run",
        "mode": "sample",
        "meta": {
            "variants": ["v1", "v2"],
            "model": "m",
            "executor": "openai",
            "sampleCount": cases,
            "timestamp": "2026-01-01T00:00:00Z",
            "totalCostUSD": 0.2,
        },
        "summary": summary,
        "comparisons": [
            {
                "control": "v1",
                "treatment": "v2",
                "perCase": per_case,
                "paired": {},
                "verdict": {"label": "BETTER", "band": "USE", "reason": "r"},
            }
        ],
        "scale": {"minimum": 1, "maximum": 5},
        "results": results,
        "analysis": {"insights": [], "suggestions": []},
    }


def median_ms(client: httpx.Client, url: str) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        r = client.get(url)
        r.raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench-large-run.json").write_text(json.dumps(fake_report(args.results)))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(create_app(Path(tmp), port=port), host="127.0.0.1", port=port, log_level="error")
        )
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.02)
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=120) as client:
            figures = {
                "runs list": median_ms(client, base + "/"),
                "run page (cases 1-50)": median_ms(client, base + "/run/bench-large-run"),
                "run page (last page)": median_ms(
                    client, base + f"/run/bench-large-run?page={args.results // 100}"
                ),
                "JSON API": median_ms(client, base + "/api/run/bench-large-run"),
            }
        server.should_exit = True
    print(f"report server, a run of {args.results} results (median of 5):")
    for name, ms in figures.items():
        print(f"  {name}: {ms:.0f} ms")


if __name__ == "__main__":
    main()
