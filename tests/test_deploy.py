"""The Kubernetes example and the container image's files (issue 46, item 9): every manifest valid against
Kubernetes' own schemas (kubernetes-validate ships them: offline, strict, so an unknown field fails too), every
object a manifest refers to defined, image tags pinned, CPU requests that fit the workers, and every path these
files name present."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = sorted((ROOT / "deploy").glob("*.yaml"))
KUBERNETES = "1.33.0"  # a release clusters run now; the package ships every release's schemas
DOCUMENTS = [(path.name, doc) for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]
NAMING = [ROOT / "Dockerfile", ROOT / ".dockerignore", *MANIFESTS, ROOT / "docs" / "stores.md",
          ROOT / "docs" / "operations.md", ROOT / "docs" / "security.md", ROOT / "docs" / "contributing.md"]
PATH = re.compile(r"(?<![\w/.-])((?:docs|deploy|llmsim|tests|examples|bench|profiles|\.ci)/[\w./-]*\w)")
PLACEHOLDERS = {"examples/x.py"}  # a name that stands for any (docs/contributing.md)


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in DOCUMENTS if doc["kind"] == kind]


def test_there_is_a_kubernetes_example() -> None:
    assert {doc["kind"] for _, doc in DOCUMENTS} >= {"Deployment", "Service", "PersistentVolumeClaim"}


@pytest.mark.parametrize(("source", "doc"), DOCUMENTS, ids=[f"{n}:{d['kind']}/{d['metadata']['name']}"
                                                            for n, d in DOCUMENTS])
def test_each_manifest_is_valid_against_the_kubernetes_schemas(source: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)  # raises, naming the field


def test_the_validation_catches_what_the_example_once_had() -> None:
    deployment = next(doc for doc in of_kind("Deployment") if doc["metadata"]["name"] == "llmsim")
    wrong = yaml.safe_load(yaml.safe_dump(deployment))
    wrong["spec"]["template"]["spec"]["containers"][0]["resources"]["request"] = {"cpu": "4"}  # a misspelt field
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, KUBERNETES, strict=True)


def test_every_volume_claim_secret_and_service_target_is_defined() -> None:
    claims = {doc["metadata"]["name"] for doc in of_kind("PersistentVolumeClaim")}
    header = "\n".join(line for path in MANIFESTS for line in path.read_text().splitlines() if line.startswith("#"))
    secrets = set(re.findall(r"kubectl create secret generic ([\w-]+)", header))  # made by the command it shows
    labels = [doc["spec"]["template"]["metadata"]["labels"] for doc in of_kind("Deployment")]
    for deployment in of_kind("Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        for volume in spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, volume
        for container in spec["containers"]:
            for env in container.get("env", []):
                if "secretKeyRef" in env.get("valueFrom", {}):
                    assert env["valueFrom"]["secretKeyRef"]["name"] in secrets, env
    for service in of_kind("Service"):
        assert any(service["spec"]["selector"].items() <= pod.items() for pod in labels), service


def test_images_are_pinned_and_cpu_requests_fit_the_workers() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for deployment in of_kind("Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            image = container["image"]
            name, _, tag = image.rpartition(":")
            assert name and tag and tag != "latest" and re.fullmatch(r"\d+(\.\d+)+", tag), image
            if name.endswith("/llmsim"):
                assert tag == version, f"{image}: the example names the version it documents ({version})"
                workers = next(int(e["value"]) for e in container["env"] if e["name"] == "LLMSIM_WORKERS")
                cpu = float(container["resources"]["requests"]["cpu"])
                assert cpu == workers <= 4, (cpu, workers)  # a CPU for each worker, a pod a node can place
            assert "memory" in container["resources"]["requests"], image


def test_every_path_the_deployment_files_name_exists() -> None:
    missing = [f"{path.relative_to(ROOT)}: {named}" for path in NAMING for named in PATH.findall(path.read_text())
               if named not in PLACEHOLDERS and not (ROOT / named.rstrip(".")).exists()]
    assert missing == []
