"""Decisions that nobody meant (issue 20, "Decisions"): approve and acknowledge acknowledge steps, so steps
that cannot be read stop them; acknowledge without --release refuses while the rollout has only just moved
on to the release it waits on; a server clock far from this machine's is said before anything is written.

The write commands run as the built file against the test API server (tests/support/apiserver/); describe's
decision line is checked in process (``describe.binding_lines`` on the fixture objects at a fixed time).
"""

import copy

import pytest

from kubectl_aicr.aicr import objects
from kubectl_aicr.commands import describe
from tests.support.fixture_objects import NOW, configmap, fixture

pytestmark = pytest.mark.e2e

ALICE = "alice@example.com"
BOB = "bob@example.com"


def _patches(api_server):
    return [r for r in api_server.requests if r.method == "PATCH"]


def _put_variant(api_server, role, edit):
    """Store the fixture ``role`` changed by ``edit`` (a function of the object); returns its name."""
    obj = api_server.get_object("RuntimeRollout", api_server.fixture_name(role))
    obj["metadata"].pop("resourceVersion")
    edit(obj)
    api_server.put_object(obj)
    return obj["metadata"]["name"]


def _one_error(result):
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and result.stderr.splitlines()[-1] == errors[0], result.stderr
    return errors[0]


def _offered(obj, now=NOW):
    """describe's decision line for the rollout ``obj`` (a dict), its report verified as describe does."""
    rollout = objects.rollout(obj)
    digest = rollout.assessment_digest
    verified = None
    if isinstance(digest, str):
        name = objects.assessment_configmap_name(digest)
        verified = objects.verify_report(configmap("aicr-system", name), digest, name)
    return describe.binding_lines(rollout, verified, None, now)


# ---------------------------------------------------------------------------------------------
# Steps that cannot be read are never acknowledged (Decisions 2)


def _records(value):
    def edit(obj):
        obj["spec"]["transitionRecords"] = value(obj["spec"]["transitionRecords"])
    return edit


def _record_steps(value):
    """The nvsentinel record's steps replaced by ``value(steps)``."""
    def edit(obj):
        for record in obj["spec"]["transitionRecords"]:
            if record["release"] == "nvsentinel":
                record["steps"] = value(record["steps"])
    return edit


def _when(spelling):
    return _record_steps(lambda steps: [dict(step, when=spelling) if step["when"] == "PreApply" else step
                                        for step in steps] + [{"id": "extra", "description": "x", "when": spelling}])


def _spec_steps(value):
    def edit(obj):
        obj["spec"]["steps"] = value
    return edit


UNREADABLE_FOR_APPROVE = {
    "records-a-string": (_records(lambda r: "pause the breaker first"),
                         "<invalid spec.transitionRecords: a string 'pause the breaker first'>"),
    "records-over-the-bound": (_records(lambda r: r * (objects.MAX_ITEMS // len(r) + 1)),
                               "more than the 10000 the plugin reads"),
    "record-not-a-mapping": (_records(lambda r: r + ["drain"]), "spec.transitionRecords[2]: a string 'drain'"),
    "steps-a-mapping": (_record_steps(lambda s: {"pause-breaker": s[0]}), "spec.transitionRecords[1].steps: a mapping"),
    "step-not-a-mapping": (_record_steps(lambda s: s + [7]), "spec.transitionRecords[1].steps[2]: a number"),
    "when-misspelled": (_when("preApply"), "spec.transitionRecords[1].steps[0].when: a string 'preApply', not "
                                           "PreApply or PostApply"),
    "when-missing": (_record_steps(lambda s: [{k: v for k, v in step.items() if k != "when"} for step in s]),
                     "spec.transitionRecords[1].steps[0].when: missing"),
    "description-a-number": (_record_steps(lambda s: [dict(s[0], description=42)] + s[1:]),
                             "spec.transitionRecords[1].steps[0].description: a number"),
    "spec-steps-a-mapping": (_spec_steps({"release": "gpu-operator"}), "<invalid spec.steps: a mapping>"),
    "spec-step-crds-a-string": (_spec_steps([{"release": "gpu-operator", "operation": "Upgrade",
                                              "assessment": "manual", "changesCRDs": "yes"}]),
                                "spec.steps[0].changesCRDs: a string 'yes'"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE_FOR_APPROVE))
def test_approve_refuses_steps_it_cannot_read(run, api_server, kubeconfig_for, case):
    edit, words = UNREADABLE_FOR_APPROVE[case]
    name = _put_variant(api_server, "awaiting-approval", edit)
    before = api_server.get_object("RuntimeRollout", name)
    result = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert words in error and "cannot be read" in error and "nothing was written" in error, error
    assert _patches(api_server) == []
    assert api_server.get_object("RuntimeRollout", name) == before


@pytest.mark.parametrize("case", sorted(UNREADABLE_FOR_APPROVE))
def test_describe_offers_no_approval_of_steps_it_cannot_read(case):
    obj = fixture("awaiting-approval")
    assert _offered(obj)  # offered as it is
    edit, _ = UNREADABLE_FOR_APPROVE[case]
    edited = copy.deepcopy(obj)
    edit(edited)
    rollout = objects.rollout(edited)
    assert _offered(edited) == []
    shown = "\n".join(describe.recorded_lines(rollout) + describe.step_lines(rollout))
    assert "<invalid " in shown


def _awaited_record(value):
    """The awaited release's (nvsentinel's) record edited by ``value(record)``."""
    def edit(obj):
        obj["spec"]["transitionRecords"] = [value(r) if r["release"] == "nvsentinel" else r
                                            for r in obj["spec"]["transitionRecords"]]
    return edit


UNREADABLE_FOR_ACKNOWLEDGE = {
    "records-a-string": (_records(lambda r: "reset the breaker"), "<invalid spec.transitionRecords: a string"),
    "record-not-a-mapping": (_records(lambda r: r + ["x"]), "spec.transitionRecords[2]: a string 'x'"),
    "record-without-release": (_awaited_record(lambda r: {k: v for k, v in r.items() if k != "release"}),
                               "spec.transitionRecords[1].release: missing, so it may be the record of nvsentinel"),
    "steps-a-mapping": (_awaited_record(lambda r: dict(r, steps={"reset": r["steps"][1]})),
                        "spec.transitionRecords[1].steps: a mapping"),
    "when-misspelled": (_awaited_record(lambda r: dict(r, steps=[dict(s, when="postApply") for s in r["steps"]])),
                        "spec.transitionRecords[1].steps[0].when: a string 'postApply'"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE_FOR_ACKNOWLEDGE))
@pytest.mark.parametrize("release", [[], ["--release=nvsentinel"]], ids=["plain", "named"])
def test_acknowledge_refuses_post_apply_steps_it_cannot_read(run, api_server, kubeconfig_for, case, release):
    edit, words = UNREADABLE_FOR_ACKNOWLEDGE[case]
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    before = api_server.get_object("RuntimeRollout", name)
    result = run("acknowledge", name, *release, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert "the recorded steps of nvsentinel cannot be read" in error and words in error, error
    assert _patches(api_server) == []
    assert api_server.get_object("RuntimeRollout", name) == before
    assert _offered(before) == []


def test_another_releases_unreadable_record_does_not_stop_the_acknowledgement(run, api_server, kubeconfig_for):
    """acknowledge covers the awaited release's post-apply steps only: gpu-operator's record, misspelled, is
    shown as invalid and does not stop nvsentinel's acknowledgement (approve would refuse it)."""
    def edit(obj):
        obj["spec"]["transitionRecords"][0]["steps"][0]["when"] = "postapply"
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    obj = api_server.get_object("RuntimeRollout", name)
    rollout = objects.rollout(obj)
    assert _offered(obj)
    assert "<invalid when: a string 'postapply'" in "\n".join(describe.recorded_lines(rollout))
    result = run("acknowledge", name, "--release=nvsentinel", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    acks = api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"]
    assert acks[-1]["release"] == "nvsentinel" and acks[-1]["user"] == ALICE
