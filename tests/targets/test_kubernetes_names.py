"""Names and labels on a cluster, by Kubernetes' own rules (pure; no cluster)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.errors import InputError
from redline.targets.kubernetes_names import (
    MANAGED_BY_KEY,
    check_dns_label,
    check_labels,
    experiment_value,
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
    labels_of,
    object_name,
    selector,
    slug,
    target_value,
    toolbox_name,
)

RUN = "20261201T120000Z-1a2b3c4d"


@pytest.mark.parametrize(
    ("value", "label", "subdomain"),
    [
        ("rl-ladder-1a2b3c4d", True, True),
        ("a", True, True),
        ("node-1.example.com", False, True),
        ("Upper", False, False),
        ("-lead", False, False),
        ("trail-", False, False),
        ("under_score", False, False),
        ("x" * 63, True, True),
        ("x" * 64, False, True),
        ("", False, False),
    ],
)
def test_dns_names(value: str, label: bool, subdomain: bool) -> None:
    assert is_dns_label(value) is label
    assert is_dns_subdomain(value) is subdomain


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("boot.log", True),
        ("20261201T120000Z-1a2b3c4d", True),
        ("a_b-c.D", True),
        ("-x", False),
        ("x.", False),
        ("a b", False),
        ("x" * 64, False),
    ],
)
def test_label_values(value: str, ok: bool) -> None:
    assert is_label_value(value) is ok


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app.kubernetes.io/managed-by", True),
        ("nvidia.com/gpu", True),
        ("plain", True),
        ("Bad_Prefix/x", False),
        ("a/b/c", False),
        ("x/", False),
        ("x/" + "n" * 64, False),
    ],
)
def test_qualified_names(key: str, ok: bool) -> None:
    assert is_qualified_name(key) is ok


def test_a_bad_name_or_label_is_refused_with_the_rule() -> None:
    with pytest.raises(InputError, match="lowercase letters, digits and '-'"):
        check_dns_label("My_NS", "namespace")
    with pytest.raises(InputError, match="label rules"):
        check_labels({"ok": "fine", "bad key!": "x"})


@given(st.text(max_size=200))
def test_slug_is_always_a_dns_label_within_its_limit(text: str) -> None:
    made = slug(text, 20)
    assert is_dns_label(made) and len(made) <= 20


def test_names_are_experiment_prefixed_new_per_run_and_fit_a_helm_release() -> None:
    name = object_name("rl", "My Ladder_v2.yml", RUN)
    assert name == "rl-my-ladder-v2-yml-1a2b3c4d"
    other = object_name("rl", "My Ladder_v2.yml", "20261201T120000Z-99999999")
    assert other != name  # never the same name twice: a standing release is never reused
    long = object_name("redline-experiments", "a" * 300, RUN)
    assert len(long) <= 53 and is_dns_label(long) and long.endswith("-1a2b3c4d")
    assert object_name("rl", None, RUN) == "rl-adhoc-1a2b3c4d"


def test_the_experiment_label_names_prefix_and_experiment() -> None:
    assert experiment_value("rl", "qwen-ceiling") == "rl-qwen-ceiling"
    assert is_label_value(experiment_value("redline", "X" * 500))
    assert experiment_value("rl", None) == "rl-adhoc"


def test_a_target_name_becomes_a_label_value() -> None:
    assert target_value("gpu1.prod") == "gpu1.prod"
    assert is_label_value(target_value("t" * 70 + "_"))
    assert is_dns_label(toolbox_name("redline", "H200_cluster.A"))


def test_server_labels_carry_managed_by_experiment_run_and_log() -> None:
    labels = labels_of("rl", "ladder", "k8s", RUN, log_name="boot.log", exclusive=True, release="rl-ladder-1a2b3c4d")
    assert labels == {
        "app.kubernetes.io/managed-by": "redline",
        "redline.dev/experiment": "rl-ladder",
        "redline.dev/run": RUN,
        "redline.dev/target": "k8s",
        "redline.dev/role": "server",
        "redline.dev/exclusive": "true",
        "redline.dev/log": "boot.log",
        "redline.dev/release": "rl-ladder-1a2b3c4d",
    }
    with pytest.raises(InputError, match="plain file name"):
        labels_of("rl", "ladder", "k8s", RUN, log_name="logs/boot.log", exclusive=False)


def test_a_selector_always_names_a_run_or_a_target() -> None:
    assert selector({"redline.dev/run": RUN}) == f"{MANAGED_BY_KEY}=redline,redline.dev/run={RUN}"
    # Helm stamps managed-by=Helm on what a chart makes: helm mode selects by redline's own labels
    assert selector({"redline.dev/run": RUN}, managed_by=False) == f"redline.dev/run={RUN}"
    with pytest.raises(InputError, match="must name redline.dev/run or redline.dev/target"):
        selector({"app.kubernetes.io/managed-by": "redline"})  # never everything that merely says redline
    with pytest.raises(InputError):
        selector({"redline.dev/run": "x,app=other"})  # a selector cannot be widened through a value
