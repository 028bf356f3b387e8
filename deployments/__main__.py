"""``python -m deployments``: serve the scheduled benchmarks of deployments.yaml.

python -m deployments [--file deployments.yaml]          serve them (needs PREFECT_API_URL)
python -m deployments --check [--file deployments.yaml]  validate and list, serve nothing
python -m deployments --build-image [--fleet-cli claude,codex]       the fleet's session image
python -m deployments --register-fleet POOL --fleet-storage URL     its Docker pool and deployment
python -m deployments --fleet-gateway POOL     on each worker machine: its containers' way out
python -m deployments --fleet-worker POOL [--limit N]   a worker of the pool, the next container started ahead
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from executors.errors import InputError
from flows.cli.prefect_env import configure_prefect


def _parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--build-image", action="store_true", help="build the fleet's session image (cached)")
    parser.add_argument(
        "--register-fleet",
        metavar="POOL",
        help="build the image; make the Docker pool and session deployment",
    )
    parser.add_argument(
        "--fleet-storage",
        metavar="URL",
        help="where sessions travel: a folder (mounted) or s3://bucket/prefix",
    )
    parser.add_argument("--fleet-cli", default="claude", help="agent CLIs in the image, comma-separated")
    parser.add_argument(
        "--fleet-gateway",
        metavar="POOL",
        help="serve the pool's gateway on this worker machine (its containers have no other network)",
    )
    parser.add_argument(
        "--fleet-worker",
        metavar="POOL",
        help="a Docker worker of the pool that starts the next waiting run's container ahead",
    )
    parser.add_argument("--limit", type=int, default=1, help="--fleet-worker: flow runs at once")
    parser.add_argument("--name", help="--fleet-worker: the worker's name (else Prefect makes one)")
    return parser


def _errors(exc: InputError) -> int:
    for line in exc.lines:
        print(f"skillab: error: {line}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.fleet_gateway:
        configure_prefect()
        from flows.engine.gateway import run

        return run(args.fleet_gateway)
    if args.fleet_worker:
        if args.limit < 1:
            return _errors(InputError(f"--limit {args.limit}: a worker runs at least one flow run at once"))
        configure_prefect()
        from deployments.fleet_worker import run_worker

        try:
            return run_worker(args.fleet_worker, args.limit, args.name)
        except InputError as exc:
            return _errors(exc)
    clis = tuple(c.strip() for c in args.fleet_cli.split(",") if c.strip())
    if args.build_image or args.register_fleet:
        try:
            return fleet_command(args.register_fleet, args.fleet_storage, clis)
        except InputError as exc:
            return _errors(exc)
        except RuntimeError as exc:  # a step of the build failed: its command's tail, not a traceback
            print(f"skillab: error: {exc}", file=sys.stderr)
            return 1
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
        return _errors(exc)
    serve(*deployments, pause_on_shutdown=False)
    return 0


def fleet_command(pool: str | None, storage: str | None, clis: tuple[str, ...]) -> int:
    if pool is None:
        from deployments.image import build

        built = build(clis)
    else:
        if not storage:
            raise InputError("--register-fleet needs --fleet-storage URL (a folder, or s3://bucket/prefix)")
        configure_prefect()
        from deployments.fleet import register

        built, deployment = register(pool, storage, clis)
        print(
            f"deployment {deployment} on Docker pool {pool}; start workers (and the gateway) on each "
            f"worker machine with `python -m deployments --fleet-worker {pool}` (or Prefect's own "
            f"`prefect worker start --pool {pool} --type docker`, without the containers started ahead)"
        )
    made = ", ".join(built.made) or "nothing (every layer was there)"
    print(f"image {built.tag}: {built.seconds:.1f} s, made {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
