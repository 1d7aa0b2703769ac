"""The topology of tests/deploy/topology.py with no shared disk: the stored files live in an
S3-compatible object store on a host of its own, and no two hosts share a folder for them.

    objects   10.231.0.<next>  moto's S3 server (tests/s3_server.py), one bucket

The web host and each worker host get their own MEDIA_ROOT, EVALSERVER_CACHE_DIR and upload
folder (under <workdir>/hosts/<role>/), and every process names the bucket as its storage
(EVALSERVER_STORAGE_BACKEND=storages.backends.s3.S3Storage: docs/operators/many-machines.md,
"Files in object storage"). An upload made on the web host is scored on a worker host only if
everything it needs crosses the network: the upload, the compiled label sets, the compact arrays.
The data directory stays shared: it is read-only input, as a dataset mount would be.

Used by tests/deploy/test_multi_host.py (its no-shared-disk mode) and bench/cluster.py --s3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import s3_server
from tests.deploy.topology import SUBNET, Cluster, Host

OBJECTS_PORT = 5000
BUCKET = "evalserver-media"


class ObjectStoreCluster(Cluster):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # one more host after the others (network() makes one per entry of self.hosts)
        tag = self.switch.removesuffix("-switch")
        self.hosts["objects"] = Host("objects", f"{tag}-objects",
                                     f"{SUBNET}.{10 + len(self.hosts)}")
        self._processes["objects"] = []
        self.objects_url = f"http://{self.hosts['objects'].address}:{OBJECTS_PORT}"
        self.env.update(s3_server.storage_env(self.objects_url, BUCKET))
        # the web host's own folders (self.env is what `run` and `spawn` give every host;
        # a worker host's are set by `spawn` below)
        self.env.update(self.host_folders("web"))

    def host_folders(self, role: str) -> dict[str, str]:
        """MEDIA_ROOT, EVALSERVER_CACHE_DIR and EVALSERVER_UPLOAD_TEMP_DIR of a host: its
        own, made empty."""
        base = self.workdir / "hosts" / role
        for folder in ("media", "cache", "uploads"):
            (base / folder).mkdir(parents=True, exist_ok=True)
        return {"MEDIA_ROOT": str(base / "media"), "EVALSERVER_CACHE_DIR": str(base / "cache"),
                "EVALSERVER_UPLOAD_TEMP_DIR": str(base / "uploads")}

    def host_files(self, role: str) -> list[Path]:
        """Every file under a host's own media and cache folders."""
        base = self.workdir / "hosts" / role
        return sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())

    def network(self) -> None:
        """The network, then the object store's host and its bucket (before anything on the
        web host stores a file: load_benchmarks stores the compiled label sets)."""
        super().network()
        self.spawn("objects", s3_server.server_argv(self.hosts["objects"].address,
                                                    OBJECTS_PORT), "objects.log")
        self.wait_for_port("objects", OBJECTS_PORT, log_name="objects.log")
        self.in_client(s3_server.bucket_create, self.objects_url, BUCKET)

    def spawn(self, role: str, argv: list[str], log_name: str,
              env: dict[str, str] | None = None) -> Any:
        if role in self.worker_roles:
            env = {**self.host_folders(role), **(env or {})}
        return super().spawn(role, argv, log_name, env)

    def object_names(self) -> list[str]:
        """Every object in the bucket (asked from the client host)."""
        return self.in_client(s3_server.object_names, self.objects_url, BUCKET)

