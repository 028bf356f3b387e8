"""``python -m deployments``: serve the scheduled benchmarks of deployments.yaml.

python -m deployments [--file deployments.yaml]          serve them (needs PREFECT_API_URL)
python -m deployments --check [--file deployments.yaml]  validate and list, serve nothing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from executors.errors import InputError
from flows.cli.prefect_env import configure_prefect


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deployments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--file", default="deployments.yaml", help="the deployments file")
    parser.add_argument("--check", action="store_true", help="validate and list; serve nothing")
    parser.add_argument(
        "--register-shards", metavar="POOL", help="deploy the shard flow to this process work pool"
    )
    args = parser.parse_args(argv)
    configure_prefect()
    from prefect import serve

    from deployments.suites import build, load

    if args.register_shards:
        from deployments.shards import register
        from flows.inputs.options import SHARD_DEPLOYMENT

        print(
            f"deployment {SHARD_DEPLOYMENT} on pool {args.register_shards}: {register(args.register_shards)}"
        )
        return 0
    path = Path(args.file)
    try:
        suites = load(path)
        if args.check:
            for s in suites:
                print(f"{s.name}: {s.config} at '{s.cron}' {s.timezone}" + (" (paused)" if s.paused else ""))
            return 0
        deployments = build(path)
    except InputError as exc:
        for line in exc.lines:
            print(f"skillab: error: {line}", file=sys.stderr)
        return 2
    serve(*deployments, pause_on_shutdown=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
