"""Untrusted text from the cluster: terminal controls are made visible, never interpreted, in every command."""

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_aicr import objects
from kubectl_aicr.commands import describe

HOSTILE = "x\x1b[2J\x1b]0;pwned\x07\r\x08\x9b31m\u202eevil\u2066\n\x00end"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def clean(text):
    """No control characters other than the newlines that end lines."""
    return RAW_CONTROL.search(text) is None


def hostile_rollout(api_server, role):
    obj = copy.deepcopy(api_server.fixture(role))
    spec, status = obj["spec"], obj.setdefault("status", {})
    status["message"] = HOSTILE
    status["phase"] = "AwaitingApproval" + HOSTILE
    for step in spec.get("steps", []):
        step["release"] = step["release"] + HOSTILE
        step["operation"] = HOSTILE
    for record in spec.get("transitionRecords", []):
        record["precondition"] = HOSTILE
        for step in record.get("steps", []):
            step["description"] = HOSTILE
    spec["runtimeRef"]["name"] = HOSTILE
    obj["metadata"].pop("resourceVersion", None)
    return obj


@pytest.mark.e2e
def test_describe_escapes_every_hostile_field(run, api_server, kubeconfig_for):
    obj = hostile_rollout(api_server, "awaiting-approval")
    obj["spec"]["acknowledgements"] = [{"release": HOSTILE, "user": HOSTILE, "time": "2026-11-30T10:30:00Z"}]
    api_server.put_object(obj)
    result = run("describe", obj["metadata"]["name"], kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert clean(result.stdout) and clean(result.stderr)
    assert "x\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\x08\\x9b31m\\u202eevil\\u2066\\x0a\\x00end" in result.stdout
    assert "Acknowledged: x\\x1b[2J" in result.stdout


@pytest.mark.e2e
def test_refusals_and_server_messages_are_escaped(run, api_server, kubeconfig_for):
    obj = copy.deepcopy(api_server.fixture("approved-rolling-out"))
    obj["spec"]["approval"]["user"] = HOSTILE
    obj["metadata"].pop("resourceVersion", None)
    api_server.put_object(obj)
    for args in (["approve", obj["metadata"]["name"], "--reason", "r"], ["describe", obj["metadata"]["name"]]):
        result = run(*args, kubeconfig=kubeconfig_for())
        assert clean(result.stdout) and clean(result.stderr), result
        assert "\\x1b[2J" in result.stdout + result.stderr


@pytest.mark.e2e
def test_a_name_from_the_command_line_is_escaped_in_errors(run, api_server, kubeconfig_for):
    result = run("describe", "evil\x1b[31m", kubeconfig=kubeconfig_for())
    assert result.returncode == 2 and clean(result.stderr) and "is not a rollout name" in result.stderr
    assert "\\x1b[31m" in result.stderr or "\\u001b[31m" in result.stderr


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)

ROLLOUT_FIELDS = ["metadata.name", "metadata.uid", "metadata.resourceVersion", "metadata.labels",
                  "spec.runtimeRef", "spec.runtimeRef.uid", "spec.from", "spec.from.desiredStateDigest", "spec.to",
                  "spec.deadline", "spec.approvalRequired", "spec.startingInventory",
                  "spec.startingInventory.releases", "spec.assessment", "spec.assessment.digest", "spec.steps",
                  "spec.transitionRecords", "spec.approval", "spec.approval.expires", "spec.revocation",
                  "spec.acknowledgements", "status", "status.phase", "status.outcome", "status.message",
                  "status.awaitingAcknowledgement", "status.steps"]


def _set(obj, path, value):
    keys = path.split(".")
    for key in keys[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[keys[-1]] = value


BASE = {"metadata": {"name": "r", "uid": "u", "resourceVersion": "1"},
        "spec": {"runtimeRef": {"name": "cluster"}, "to": {"desiredStateDigest": "sha256:" + "a" * 64},
                 "deadline": "2026-11-30T12:00:00Z", "approvalRequired": True,
                 "steps": [{"release": "gpu-operator", "operation": "Upgrade"}],
                 "approval": {"user": "a", "expires": "2026-11-30T12:00:00Z", "reason": "r"}},
        "status": {"phase": "RollingOut"}}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(ROLLOUT_FIELDS), json_values, min_size=1, max_size=6))
def test_describe_never_crashes_and_never_shows_a_wrong_type_as_valid(changes):
    import datetime
    obj = copy.deepcopy(BASE)
    for path, value in changes.items():
        _set(obj, path, value)
    rollout = objects.rollout(obj)
    lines = describe.render(rollout, None, "aicr-system", datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc))
    text = "\n".join(lines)
    assert clean(text)
    deadline = obj["spec"].get("deadline") if isinstance(obj.get("spec"), dict) else None
    if deadline is not None and not (isinstance(deadline, str) and objects.parse_time(deadline)):
        assert "<invalid spec.deadline" in text
    required = obj["spec"].get("approvalRequired") if isinstance(obj.get("spec"), dict) else None
    if required is not None and not isinstance(required, bool):
        assert "<invalid spec.approvalRequired" in text or "approved by" in text


@pytest.mark.e2e
def test_every_command_escapes_hostile_text_in_what_it_prints(run, api_server, kubeconfig_for, tmp_path):
    """Hostile strings in the fields each command prints: refusals, confirmations and reproduce's plan."""
    revoked = copy.deepcopy(api_server.fixture("revoked"))
    revoked["spec"]["revocation"]["user"] = HOSTILE
    revoked["metadata"].pop("resourceVersion", None)
    api_server.put_object(revoked)
    waiting = hostile_rollout(api_server, "approved-rolling-out")
    waiting["status"]["phase"] = HOSTILE
    api_server.put_object(waiting)
    acked = copy.deepcopy(api_server.fixture("awaiting-acknowledgement"))
    release = acked["status"]["awaitingAcknowledgement"]["release"]
    acked["spec"]["acknowledgements"] = [{"release": release, "user": HOSTILE, "time": "2026-11-30T10:30:00Z"}]
    acked["metadata"].pop("resourceVersion", None)
    api_server.put_object(acked)
    plan = copy.deepcopy(api_server.fixture("plan-applications"))
    plan["data"]["bundle"] = HOSTILE
    plan["metadata"].pop("resourceVersion", None)
    api_server.put_object(plan)
    digest = plan["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"]
    runs = [
        run("revoke", revoked["metadata"]["name"], "--reason", "r", kubeconfig=kubeconfig_for()),
        run("acknowledge", waiting["metadata"]["name"], kubeconfig=kubeconfig_for()),
        run("acknowledge", acked["metadata"]["name"], kubeconfig=kubeconfig_for()),
        run("approve", waiting["metadata"]["name"], "--reason", "r", kubeconfig=kubeconfig_for()),
        run("reproduce", digest, "--dir", tmp_path / "r", kubeconfig=kubeconfig_for()),
        run("describe", waiting["metadata"]["name"], kubeconfig=kubeconfig_for()),
    ]
    for result in runs:
        assert clean(result.stdout) and clean(result.stderr), result
    assert "\\x1b[2J" in runs[0].stderr and "\\x1b[2J" in runs[1].stderr and "\\x1b[2J" in runs[2].stderr
