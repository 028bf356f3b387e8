"""An S3 endpoint on 127.0.0.1: moto's server (the real protocol), with an empty bucket and its
credentials in the environment, where s3fs and --register-fleet read them. moto keeps its buckets
in the process, across servers: each call makes a bucket of its own name."""

from __future__ import annotations

import contextlib
import socket
import uuid
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def s3_bucket(monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[str]:
    """A fresh bucket named ``prefix-<random>``; yields its name."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        for name, value in {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "fleet-test",
            "AWS_SECRET_ACCESS_KEY": "fleet-test-secret",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        import fsspec

        bucket = f"{prefix}-{uuid.uuid4().hex[:8]}"
        fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
        yield bucket
    finally:
        server.stop()
