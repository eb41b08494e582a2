"""Operator objects (kubectl_aicr.aicr.objects): lenient reading, Invalid fields, report verification."""

import datetime
import hashlib

from kubectl_aicr.aicr import objects
from kubectl_aicr.aicr.objects import Invalid

D1 = "sha256:" + "1" * 64
D2 = "sha256:3f9a1c0d2b7e4a51" + "0" * 48


def _rollout(**spec):
    body = {"runtimeRef": {"name": "cluster", "uid": "u-1"}, "to": {"desiredStateDigest": D2},
            "deadline": "2026-11-30T12:00:00Z", "approvalRequired": True}
    body.update(spec)
    return {"metadata": {"name": "rollout-3f9a1c0d2b7e4a51-1", "uid": "r-1", "resourceVersion": "7"},
            "spec": body, "status": {"phase": "AwaitingApproval",
                                     "steps": [{"release": "gpu-operator", "state": "InFlight"}]}}


def test_reads_a_well_formed_rollout():
    r = objects.rollout(_rollout(steps=[{"release": "gpu-operator", "operation": "Upgrade", "assessment": "manual",
                                         "changesCRDs": True}, {"release": "nvsentinel", "operation": "Install"}]))
    assert r.name == "rollout-3f9a1c0d2b7e4a51-1" and r.runtime_uid == "u-1"
    assert r.initial_install and not r.ended
    assert r.deadline == datetime.datetime(2026, 11, 30, 12, tzinfo=datetime.timezone.utc)
    assert [s.state for s in r.steps] == ["InFlight", "Pending"]
    assert r.steps[0].changes_crds is True and r.steps[1].changes_crds is None


def test_wrong_types_become_invalid_never_a_value():
    r = objects.rollout(_rollout(deadline=12, approvalRequired="yes", steps={"a": 1},
                                 approval=["x"], startingInventory={"releases": -1, "digest": "md5:1"}))
    for value in (r.deadline, r.approval_required, r.steps, r.approval, r.inventory_releases, r.inventory_digest):
        assert isinstance(value, Invalid), value
    assert "spec.deadline" in str(r.deadline)


def test_unknown_enum_values_are_kept_and_unknown_fields_ignored():
    obj = _rollout(steps=[{"release": "x", "operation": "Teleport", "future": 1}])
    obj["status"]["phase"] = "Levitating"
    r = objects.rollout(obj)
    assert r.phase == "Levitating" and r.steps[0].operation == "Teleport"


def test_outcome_from_label_or_status_means_ended():
    obj = _rollout()
    obj["metadata"]["labels"] = {objects.OUTCOME_LABEL: "Revoked"}
    assert objects.rollout(obj).ended and objects.rollout(obj).outcome == "Revoked"
    obj = _rollout()
    obj["status"]["outcome"] = "Expired"
    assert objects.rollout(obj).outcome == "Expired"


def test_from_present_without_digest_is_invalid_not_initial_install():
    r = objects.rollout(_rollout(**{"from": {}}))
    assert isinstance(r.from_digest, Invalid) and not r.initial_install


def test_time_parsing():
    assert objects.parse_time("2026-11-30T13:00:00+01:00") == datetime.datetime(
        2026, 11, 30, 12, tzinfo=datetime.timezone.utc)
    assert objects.parse_time("2026-11-30 12:00:00") is None
    assert objects.parse_time("2026-13-30T12:00:00Z") is None
    assert objects.format_time(objects.parse_time("2026-11-30T12:00:00.5Z")) == "2026-11-30T12:00:00Z"


def _report_cm(text):
    return {"metadata": {"name": "n"}, "data": {"report.json": text}}


def test_report_verified_only_when_bytes_match_digest():
    text = '{"from": "a", "to": "b", "components": [{"component": "gpu-operator", "verdict": "safe"}]}'
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    good = objects.verify_report(_report_cm(text), digest, "n")
    assert good.problem is None and good.report.components[0].component == "gpu-operator"
    bad = objects.verify_report(_report_cm(text.replace("safe", "blocked")), digest, "n")
    assert bad.report is None and "not to the recorded digest" in bad.problem
    missing = objects.verify_report(None, digest, "n")
    assert missing.report is None and "not found" in missing.problem


def test_names_and_paths():
    assert objects.assessment_configmap_name(D2) == "aicr-assessment-3f9a1c0d2b7e4a51"
    assert objects.short_digest(D2) == "sha256:3f9a1c0d2b7e4a51"
    assert objects.rollout_path("a/b") == "/apis/operator.aicr.run/v1alpha1/runtimerollouts/a%2Fb"
    assert objects.configmap_path("aicr-system", "x") == "/api/v1/namespaces/aicr-system/configmaps/x"


def test_a_malformed_assessment_link_is_invalid_never_none():
    for value in ("sha256:x", [], {}, {"digest": None}, {"digest": 7}):
        r = objects.rollout(_rollout(assessment=value))
        assert isinstance(r.assessment_digest, Invalid), value
    assert objects.rollout(_rollout()).assessment_digest is None  # absent: no report was made


def test_a_release_listed_twice_takes_its_own_status_entry():
    obj = _rollout(steps=[{"release": "gpu-operator", "operation": "Upgrade"},
                          {"release": "gpu-operator", "operation": "Verify"}])
    obj["status"]["steps"] = [{"release": "gpu-operator", "state": "Ready"},
                              {"release": "gpu-operator", "state": "Failed", "message": "validation failed"}]
    steps = objects.rollout(obj).steps
    assert [(s.operation, s.state) for s in steps] == [("Upgrade", "Ready"), ("Verify", "Failed")]


# ---------------------------------------------------------------------------------------------
# Pinned facts: the JSON-patch tests a write carries, checked against the test server's json-patch v4
# semantics (tests/support/apiserver/ apply_json_patch, itself checked against kube-apiserver by test_contract.py)

from hypothesis import given, settings, strategies as st  # noqa: E402

from tests.support.apiserver import PatchError, apply_json_patch  # noqa: E402
from tests.support.fixture_objects import set_path  # noqa: E402

_values = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "RollingOut", D1]) \
    | st.lists(st.integers(0, 2), max_size=2) | st.fixed_dictionaries({"release": st.sampled_from(["a", "b"])})
_places = st.sampled_from(["metadata.uid", "metadata.labels", "spec.to", "spec.to.desiredStateDigest",
                           "spec.assessment", "spec.assessment.digest", "spec.approval", "status",
                           "status.phase", "status.awaitingAcknowledgement", "status.awaitingAcknowledgement.release",
                           "spec.acknowledgements", "status.outcome"])


def _with(changes):
    obj = _rollout(assessment={"digest": D1})
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def _passes(obj, op):
    try:
        apply_json_patch(obj, [op])
        return True
    except PatchError:
        return False


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_places, _values, max_size=4), st.dictionaries(_places, _values, max_size=4))
def test_a_pin_passes_exactly_while_its_fact_is_unchanged(first, second):
    read, later = _with(first), _with(second)
    for fact in objects.FACT_POINTERS:
        op = objects.pin_operation(read, fact)
        assert _passes(read, op), (fact, op)
        same = objects.json_equal(objects.fact_value(read, fact), objects.fact_value(later, fact))
        if not same:  # a changed fact always fails its test: the server refuses the write
            assert not _passes(later, op), (fact, op, later)
        else:  # the same fact: the test made again from the later read (as the write does) passes on it
            assert _passes(later, objects.pin_operation(later, fact)), (fact, later)


def test_pins_of_absent_parents_and_of_wrong_types():
    obj = _rollout()
    assert objects.pin_operation(obj, "assessment") == {"op": "test", "path": "/spec/assessment", "value": None}
    assert objects.pin_operation(obj, "outcome-label") == {"op": "test", "path": "/metadata/labels", "value": None}
    obj["metadata"]["labels"] = {"operator.aicr.run/outcome": "Failed"}
    assert objects.pin_operation(obj, "outcome-label") == {
        "op": "test", "path": "/metadata/labels/operator.aicr.run~1outcome", "value": "Failed"}
    obj["spec"]["to"] = "sha256:not-a-mapping"
    assert objects.pin_operation(obj, "target") == {"op": "test", "path": "/spec/to", "value": "sha256:not-a-mapping"}
    assert not objects.json_equal(True, 1) and objects.json_equal({"a": [1]}, {"a": [1]})
