"""The fleet's Docker work pool and its session deployment (``python -m deployments --register-fleet``).

The pool's job template starts the fleet's image (built here first, deployments/image.py) with:

- the host's network (``network_mode``: a session's model endpoint and the Prefect API are wherever
  the worker's machine reaches them). The agent itself never gets it: inside the container it runs in
  bubblewrap with its own network namespace, reaching only the model endpoint through the forwarder,
  as on the host. Bubblewrap needs namespaces inside the container: the container gets
  ``SYS_ADMIN`` and ``NET_ADMIN`` and no seccomp or AppArmor profile, which the agent, with every
  capability dropped inside bubblewrap, does not inherit;
- the provider keys, as Prefect Secret blocks (``skillab-anthropic-api-key``, ...) the worker resolves
  when it starts a container: never a flow-run parameter, never in results;
- a local storage folder mounted at its own path (an ``s3://`` URL needs nothing mounted).

Workers are Prefect's own: ``prefect worker start --pool POOL --type docker`` (extra ``fleet``
installs prefect-docker) on any machine with the image and access to the storage.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from deployments.image import Built, build
from executors.egress import PROVIDERS
from executors.errors import InputError
from flows.engine.remote import SESSION_FLOW, container_session, source_digest

#: What bubblewrap needs to build its sandbox inside the container (measured: less and it cannot).
CONTAINER_OPTIONS = {
    "cap_add": ["SYS_ADMIN", "NET_ADMIN"],
    "security_opt": ["seccomp=unconfined", "apparmor=unconfined"],
}


def secret_block(env: str) -> str:
    return "skillab-" + env.lower().replace("_", "-")


#: What s3fs (botocore) reads to reach an S3 storage: given to the containers like the keys.
STORAGE_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_DEFAULT_REGION",
)


def _keys(storage: str) -> dict[str, str]:
    """The provider keys (and, for an s3:// storage, its credentials) set in this process's
    environment: env name -> value."""
    names = [c.env for p in PROVIDERS.values() for c in p.credentials]
    names += list(STORAGE_ENV) if storage.startswith("s3://") else []
    return {name: value for name in names if (value := os.environ.get(name))}


def job_template(image: str, storage: str, keys: dict[str, str]) -> dict[str, Any]:
    """prefect-docker's base job template with the fleet's defaults."""
    from prefect_docker.worker import DockerWorker

    template = DockerWorker.get_default_base_job_template()
    props = template["variables"]["properties"]
    local = "://" not in storage or storage.startswith("file://")
    folder = storage.removeprefix("file://")
    defaults: dict[str, Any] = {
        "image": image,
        "image_pull_policy": "Never",  # built here; no registry is reachable
        "network_mode": "host",
        "auto_remove": True,
        "stream_output": True,  # the container's output in the worker's log
        "container_create_kwargs": CONTAINER_OPTIONS,
        "volumes": [f"{folder}:{folder}"] if local else [],
        "env": {env: "{{ prefect.blocks.secret." + secret_block(env) + " }}" for env in keys},
    }
    for name, value in defaults.items():
        props[name]["default"] = value
    return template


async def _pool(name: str, template: dict[str, Any]) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate, WorkPoolUpdate
    from prefect.exceptions import ObjectAlreadyExists

    async with get_client() as client:
        try:
            await client.create_work_pool(
                WorkPoolCreate(name=name, type="docker", base_job_template=template)
            )
        except ObjectAlreadyExists:
            pool = await client.read_work_pool(name)
            if pool.type != "docker":
                raise InputError(f"--register-fleet {name}: a {pool.type} pool of that name exists") from None
            await client.update_work_pool(name, WorkPoolUpdate(base_job_template=template))


def register(pool: str, storage: str, clis: tuple[str, ...] = ("claude",)) -> tuple[Built, Any]:
    """Build the image, make (or update) the Docker pool and the session deployment on it; the
    deployment's version is the code's digest, which a dispatching run checks."""
    from prefect.blocks.system import Secret
    from prefect.types.entrypoint import EntrypointType

    if "://" not in storage:
        storage = str(Path(storage).resolve())
        Path(storage).mkdir(parents=True, exist_ok=True)
    built = build(clis)
    keys = _keys(storage)
    for env, value in keys.items():
        Secret(value=value).save(secret_block(env), overwrite=True)
    asyncio.run(_pool(pool, job_template(built.tag, storage, keys)))
    deployment_id = container_session.deploy(
        name=pool,
        work_pool_name=pool,
        image=built.tag,
        build=False,
        push=False,
        version=source_digest(),
        parameters={"storage": storage},
        job_variables={"image": built.tag},
        # imported from the image's own copy (on its PYTHONPATH), not copied from a path per run
        entrypoint_type=EntrypointType.MODULE_PATH,
        print_next_steps=False,
        tags=["skillab", "fleet"],
        description="One agent session of a skillab run, in the fleet's container.",
    )
    return built, f"{SESSION_FLOW}/{pool} ({deployment_id})"
