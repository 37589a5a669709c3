"""Kind descriptions as the configuration carries them (docs/kinds.md): what is accepted,
what is refused with one line naming the entry and the field, and the shipped ones."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonpath_ng.parser import parse as parse_path

from megamon.config import parse_config
from megamon.domain.descriptions import (
    JOBSET_DESCRIPTION,
    LWS_DESCRIPTION,
    KindDescription,
    compile_path,
    shipped,
    shipped_names,
)
from megamon.domain.kinds import KIND_SPECS, Kind, KindSpec, event_file, kind_spec
from megamon.errors import ConfigError


def rayjob(**changes: Any) -> dict[str, Any]:
    """A kind megamon ships nothing for, declared the way a user would."""
    description: dict[str, Any] = {
        "Noun": "rayjob",
        "Group": "ray.io",
        "Version": "v1",
        "Resource": "rayjobs",
        "Expected": {"Path": "spec.rayClusterSpec.workerGroupSpecs[*].replicas", "Default": 1},
        "Ready": {"Path": "status.rayClusterStatus.readyWorkerReplicas"},
        "Completed": [{"Type": "Complete"}],
        "Failed": [{"Type": "Failed"}],
        "NodeSelector": {
            "Each": "spec.rayClusterSpec.workerGroupSpecs[*]",
            "Path": "template.spec.nodeSelector",
            "Replicas": "numOfHosts",
        },
        "Labels": {"Name": "rayjob_name", "Namespace": "rayjob_namespace", "UID": "rayjob_uid"},
        "EventFile": "rayjobs.json",
    }
    description.update(changes)
    return description


def config_with(*kinds: object) -> bytes:
    return orjson.dumps({"WorkloadKinds": list(kinds)})


def refusal(*kinds: object) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(config_with(*kinds), "config.json")
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_shipped_descriptions_of_the_built_in_kinds_keep_their_names() -> None:
    for name, kind in ((JOBSET_DESCRIPTION, Kind.JOBSET), (LWS_DESCRIPTION, Kind.LEADERWORKERSET)):
        description = shipped(name)
        assert description.kind is kind
        spec = description.spec()
        assert (spec.event_file, spec.report_up_key, spec.report_summaries_key, spec.noun) == (
            KIND_SPECS[kind].event_file,
            KIND_SPECS[kind].report_up_key,
            KIND_SPECS[kind].report_summaries_key,
            KIND_SPECS[kind].noun,
        )


def test_megamon_ships_trainjob_and_kueue_workload() -> None:
    assert {"trainjob", "kueue-workload", "rayjob"} <= set(shipped_names())
    config = parse_config(config_with("trainjob", "kueue-workload"), "config.json")
    kinds = [description.kind for description in config.WorkloadKinds]
    assert [k.value for k in kinds] == ["trainjob", "kueue_workload"]
    assert [event_file(k) for k in kinds] == ["trainjobs.json", "kueue-workloads.json"]


def test_a_declared_kind_becomes_a_kind_with_its_own_files() -> None:
    config = parse_config(config_with(rayjob()), "config.json")
    (description,) = config.WorkloadKinds
    kind = description.kind
    assert kind == Kind("rayjob") and not kind.builtin and kind not in list(Kind)
    labels = ("rayjob_name", "rayjob_namespace", "rayjob_uid")
    assert kind_spec(kind) == KindSpec(
        "rayjobs.json", "rayjobUp", "rayjobUpSummaries", "rayjob", labels
    )


def test_a_kind_read_back_without_its_description_has_no_files() -> None:
    with pytest.raises(KeyError, match="not described"):
        event_file(Kind("rayjob"))


@pytest.mark.parametrize(
    ("entry", "where", "why"),
    [
        ("ray", "WorkloadKinds", "no shipped description 'ray'"),
        ("jobset", "WorkloadKinds", "'jobset' is a built-in kind"),
        (rayjob(Noun="Ray-Job"), "WorkloadKinds.0.Noun", "not a metric noun"),
        (rayjob(EventFile="/etc/passwd"), "WorkloadKinds.0.EventFile", "not an event file"),
        (rayjob(EventFile="jobsets.json"), "WorkloadKinds", "'jobsets.json' is already used"),
        (rayjob(Ready={"Path": "status.[["}), "WorkloadKinds.0.Ready.Path", "not a field path"),
        (
            rayjob(Ready={"Path": "a", "Times": ["b"]}),
            "WorkloadKinds.0.Ready",
            "Times multiplies per element: it needs Each",
        ),
        (rayjob(Expected={"Path": []}), "WorkloadKinds.0.Expected.Path", "at least 1 item"),
        (
            rayjob(Labels={"Name": "spot", "Namespace": "n", "UID": "u"}),
            "WorkloadKinds.0.Labels.Name",
            "a label megamon already uses",
        ),
        (
            rayjob(Labels={"Name": "n", "Namespace": "n", "UID": "u"}),
            "WorkloadKinds.0.Labels",
            "three different labels",
        ),
        (rayjob(Namespaced="yes"), "WorkloadKinds.0.Namespaced", "valid boolean"),
        (rayjob(Replicas=1), "WorkloadKinds.0.Replicas", "Extra inputs are not permitted"),
        (
            rayjob(Completed=[{"Field": "status.[[", "AnyOf": ["Complete"]}]),
            "WorkloadKinds.0.Completed.0.Field",
            "not a field path",
        ),
        (
            rayjob(Completed=[{"Field": "status.jobDeploymentStatus"}]),
            "WorkloadKinds.0.Completed.0",
            "Field 'status.jobDeploymentStatus' needs AnyOf or NoneOf",
        ),
        (
            rayjob(Failed=[{"Field": "status.x", "AnyOf": []}]),
            "WorkloadKinds.0.Failed.0",
            "AnyOf of Field 'status.x' lists no value",
        ),
        (
            rayjob(Failed=[{"Type": "Failed", "Field": "status.x", "AnyOf": ["Failed"]}]),
            "WorkloadKinds.0.Failed.0",
            "exactly one of them (got Type, Field)",
        ),
        (
            rayjob(Suspended=[{"AnyOf": ["Suspended"]}]),
            "WorkloadKinds.0.Suspended.0",
            "AnyOf lists values of a field: it needs Field",
        ),
        (
            rayjob(Completed=[{"All": [{"Field": "status.a", "AnyOf": ["x"]}, {"Reason": "r"}]}]),
            "WorkloadKinds.0.Completed.0.All.1",
            "Reason is a condition's: it needs Type",
        ),
        (
            rayjob(NodeSelector={"Path": "spec.selector", "Each": "spec.groups[*]"}),
            "WorkloadKinds.0.NodeSelector",
            "Path 'spec.selector' does not end in nodeSelector: say where the pod template's "
            "containers are (Containers) or declare ChipsPerReplica",
        ),
        (
            rayjob(NodeSelector={"Path": "nodeSelector", "ChipsPerReplica": "slices"}),
            "WorkloadKinds.0.NodeSelector.ChipsPerReplica",
            "'slices' is neither a number of chips (0 or more) nor 'topology'",
        ),
        (
            rayjob(NodeSelector={"Path": "nodeSelector", "ChipsPerReplica": -4}),
            "WorkloadKinds.0.NodeSelector.ChipsPerReplica",
            "-4 is neither a number of chips (0 or more) nor 'topology'",
        ),
        (rayjob(Version=[]), "WorkloadKinds.0.Version", "at least 1 item"),
        (rayjob(Version=["v1", "V2"]), "WorkloadKinds.0.Version", "'V2' is not an API version"),
        (rayjob(Version=["v1", "v1"]), "WorkloadKinds.0.Version", "a version is listed twice"),
        (rayjob(Version=1), "WorkloadKinds.0.Version", "valid list"),
        (
            rayjob(Queued=[{"Type": "Admitted", "Until": "Admitted"}]),
            "WorkloadKinds.0.Queued.0.Until",
            "'Admitted' is not a stage name",
        ),
        (
            rayjob(Queued=[{"Type": "A", "Until": f"s{n}"} for n in range(5)]),
            "WorkloadKinds.0.Queued",
            "at most 4 items",
        ),
        (
            rayjob(Queued=[{"Type": "A", "Until": "s"}, {"Type": "B", "Until": "s"}]),
            "WorkloadKinds.0.Queued",
            "a stage is named twice",
        ),
        (
            rayjob(Interrupted=[{"Type": "Evicted", "Means": "lost"}]),
            "WorkloadKinds.0.Interrupted.0.Means",
            "'lost' is not a reason a condition can mean (one of node-lost, ",
        ),
    ],
)
def test_a_bad_description_is_refused_in_one_line(entry: object, where: str, why: str) -> None:
    message = refusal(entry)
    assert message.startswith(f"config.json: {where}: "), message
    assert why in message


@pytest.mark.parametrize(
    ("entry", "key", "meant"),
    [
        (rayjob(Completd=[]), "WorkloadKinds.0.Completd", "WorkloadKinds.0.Completed"),
        (rayjob(noun="x"), "WorkloadKinds.0.noun", "WorkloadKinds.0.Noun"),
        (
            rayjob(Completed=[{"field": "status.jobDeploymentStatus", "AnyOf": ["Complete"]}]),
            "WorkloadKinds.0.Completed.0.field",
            "WorkloadKinds.0.Completed.0.Field",
        ),
        (
            rayjob(Failed=[{"Field": "status.jobDeploymentStatus", "anyOf": ["Failed"]}]),
            "WorkloadKinds.0.Failed.0.anyOf",
            "WorkloadKinds.0.Failed.0.AnyOf",
        ),
        (
            rayjob(ReadyWhen=[{"Field": "status.jobDeploymentStatus", "noneOf": ["Failed"]}]),
            "WorkloadKinds.0.ReadyWhen.0.noneOf",
            "WorkloadKinds.0.ReadyWhen.0.NoneOf",
        ),
        (
            rayjob(NodeSelector={"Path": "nodeSelector", "ChipsPerReplicas": 4}),
            "WorkloadKinds.0.NodeSelector.ChipsPerReplicas",
            "WorkloadKinds.0.NodeSelector.ChipsPerReplica",
        ),
    ],
)
def test_a_mistyped_key_of_a_description_is_refused_with_the_key_it_was_meant_to_be(
    entry: object, key: str, meant: str
) -> None:
    """As the configuration's own keys are (``EventBucketName``: did you mean …?)."""
    assert refusal(entry) == f"config.json: unknown key {key}: did you mean {meant}?"


def test_field_values_end_a_kind_and_make_it_ready() -> None:
    config = parse_config(config_with("rayjob"), "config.json")
    (description,) = config.WorkloadKinds
    assert description.kind == Kind("rayjob") and description.ReadyWhen[0].Field is not None
    completed, *_ = description.Completed
    assert [part.Field for part in completed.All or []] == [
        "status.jobDeploymentStatus",
        "status.jobStatus",
    ]


def test_a_misspelt_key_of_a_description_is_named_with_the_key_it_looks_like() -> None:
    entry = rayjob()
    entry["Versions"] = entry.pop("Version")
    assert refusal(entry) == (
        "config.json: unknown key WorkloadKinds.0.Versions: did you mean WorkloadKinds.0.Version?"
    )
    typo = rayjob(Interrupted=[{"Type": "Evicted", "Reason": "NodeFailures", "Mean": "node-lost"}])
    assert (
        "unknown key WorkloadKinds.0.Interrupted.0.Mean: did you mean "
        "WorkloadKinds.0.Interrupted.0.Means?"
    ) in refusal(typo)


def test_a_description_lists_its_versions_in_order_of_preference() -> None:
    config = parse_config(config_with(rayjob(Version=["v2", "v1"]), "kueue-workload"), "c.json")
    assert [d.Version for d in config.WorkloadKinds] == [["v2", "v1"], ["v1beta2", "v1beta1"]]


def test_one_version_as_a_string_is_still_read() -> None:
    (description,) = parse_config(config_with(rayjob(Version="v1")), "config.json").WorkloadKinds
    assert description.Version == ["v1"]


def test_a_kind_is_described_once() -> None:
    assert "kind 'trainjob' is described twice" in refusal("trainjob", "trainjob")
    clash = rayjob(Noun="other")
    assert "'rayjobs.json' is already used" in refusal(rayjob(), clash)


def test_every_shipped_description_is_valid_data() -> None:
    for name in shipped_names():
        description = shipped(name)
        assert KindDescription.model_validate_json(description.model_dump_json()) == description


_json = st.recursive(
    st.none() | st.integers(-3, 3) | st.sampled_from(["a", "b"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=12,
)
_step = st.sampled_from(["a", "b", "c", "[*]", "[0]", "[1]", "[-1]"])


@given(value=_json, steps=st.lists(_step, min_size=1, max_size=4))
def test_a_simple_path_reads_what_jsonpath_ng_reads(value: object, steps: list[str]) -> None:
    """The fast reader of fields, indexes and [*] agrees with the library's evaluator."""
    text = steps[0] if not steps[0].startswith("[") else f"a{steps[0]}"
    for step in steps[1:]:
        text += step if step.startswith("[") else f".{step}"
    compiled = compile_path(text)
    assert compiled.values(value) == [m.value for m in parse_path(text).find(value)], text
