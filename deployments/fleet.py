"""The fleet's Docker work pool and its session deployment (``python -m deployments --register-fleet``).

The pool's job template starts the fleet's image (built here first, deployments/image.py) with:

- no network (``network_mode: none``): its only way out is the pool's gateway on the worker machine
  (``python -m deployments --fleet-gateway POOL``, flows/engine/gateway.py), whose socket is bound in
  read-only and leads to the Prefect API and the endpoints a run named, nothing else. The agent,
  inside bubblewrap there, reaches only its model through the forwarder, as on the host;
- only the privileges bubblewrap needs (``CONTAINER_OPTIONS``: every capability dropped but
  ``SYS_ADMIN`` and ``NET_ADMIN``, no-new-privileges, a seccomp profile that refuses what no session
  needs), written into the template as literals a flow run cannot override;
- one provider key, the session's runner's, as a reference to a Prefect Secret block
  (``skillab-anthropic-api-key``, ...) in that flow run's job variables, which the worker resolves
  when it starts the container: never a flow-run parameter, never in results, no other provider's;
- of the storage, its session's part alone: of a folder, its inputs read-only and its own results
  folder, mounted for that flow run; of an ``s3://`` storage, URLs signed for that part in the flow
  run's parameters (no credential of the bucket reaches a container).

Workers are prefect-docker's, beside the pool's gateway, on any machine with the image and access to
the storage: the fleet's own (``python -m deployments --fleet-worker POOL``, deployments/
fleet_worker.py: the next waiting run's container started ahead) or Prefect's ``prefect worker
start --pool POOL --type docker``; extra ``fleet`` installs prefect-docker.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from deployments.image import Built, build
from executors.egress import PROVIDERS
from executors.errors import InputError
from executors.parsing import JsonObject
from flows.engine.gateway import INSIDE, host_folder
from flows.engine.remote import SESSION_FLOW, container_session, secret_block, source_digest

#: System calls no session needs and a container escape would (module loading, kexec, ptrace,
#: another namespace's handles, keys, BPF, the new mount API bubblewrap does not use): refused with
#: EPERM. Everything else stays allowed, because bubblewrap itself needs mount, pivot_root and
#: unshare, which Docker's default profile refuses.
DENIED_SYSCALLS = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
    "finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "get_kernel_syms", "init_module",
    "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie",
    "move_mount", "name_to_handle_at", "nfsservctl", "open_by_handle_at", "open_tree",
    "perf_event_open", "process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
    "reboot", "request_key", "setns", "settimeofday", "stime", "swapoff", "swapon", "sysfs", "_sysctl",
    "umount", "uselib", "userfaultfd", "ustat", "vm86", "vm86old",
)  # fmt: skip
SECCOMP = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"],
    "syscalls": [{"names": list(DENIED_SYSCALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
}
#: The container's privileges: every capability dropped but the two bubblewrap needs to build its
#: sandbox (SYS_ADMIN for its mounts, NET_ADMIN for the new network namespace's loopback: measured,
#: less and it cannot), no privilege gained through exec, the seccomp profile above, and no AppArmor
#: profile (Docker's denies mount). Literals of the job template: a flow run cannot change them.
CONTAINER_OPTIONS = {
    "cap_drop": ["ALL"],
    "cap_add": ["SYS_ADMIN", "NET_ADMIN"],
    "security_opt": ["no-new-privileges", f"seccomp={json.dumps(SECCOMP)}", "apparmor=unconfined"],
}


#: The container's command: the flow run begun, run and ended without Prefect's engine (its imports
#: alone were half of a container's cost), over the API's route to the gateway.
CONTAINER_COMMAND = "python -m flows.engine.container_engine"


def gateway_mount(pool: str) -> JsonObject:
    """The gateway's folder on the worker machine, read-only in every container of the pool."""
    return {"Type": "bind", "Source": str(host_folder(pool)), "Target": str(INSIDE), "ReadOnly": True}


def _keys() -> dict[str, str]:
    """The provider keys set in this process's environment: env name -> value."""
    names = [c.env for p in PROVIDERS.values() for c in p.credentials]
    return {name: value for name in names if (value := os.environ.get(name))}


def job_template(pool: str, image: str) -> JsonObject:
    """prefect-docker's base job template with the fleet's defaults and its fixed settings."""
    from prefect_docker.worker import DockerWorker

    template = DockerWorker.get_default_base_job_template()
    props = template["variables"]["properties"]
    fixed = {  # literals, not variables: a flow run's job variables cannot change them
        "container_create_kwargs": CONTAINER_OPTIONS | {"mounts": [gateway_mount(pool)]},
        "privileged": False,
        "network_mode": "none",  # no network: the gateway's socket is the only way out
        "networks": [],
        "command": CONTAINER_COMMAND,
    }
    for name in fixed:
        props.pop(name, None)
    template["job_configuration"] |= fixed
    defaults: JsonObject = {
        "image": image,
        "image_pull_policy": "Never",  # built here; no registry is reachable
        "auto_remove": True,
        "stream_output": True,  # the container's output in the worker's log
        # a folder storage is mounted per flow run, its session's part only (storage.storage_mounts)
        "volumes": [],
        "env": {},  # no credential: each session's flow run names its own provider's key
    }
    for name, value in defaults.items():
        props[name]["default"] = value
    return template


async def _pool(name: str, template: JsonObject) -> None:
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
    keys = _keys()
    for env, value in keys.items():
        Secret(value=value).save(secret_block(env), overwrite=True)
    asyncio.run(_pool(pool, job_template(pool, built.tag)))
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
