"""Decisions that nobody meant (issue 20, "Decisions"): approve and acknowledge acknowledge steps, so steps
that cannot be read stop them; acknowledge without --release refuses while the rollout has only just moved
on to the release it waits on; a server clock far from this machine's is said before anything is written.

The write commands run as the built file against the test API server (tests/support/apiserver/); describe's
decision line is checked in process (``describe.binding_lines`` on the fixture objects at a fixed time).
"""

import copy
import datetime
import email.utils

import pytest

from kubectl_aicr.aicr import objects
from kubectl_aicr.commands import describe
from tests.support.fixture_objects import NOW, configmap, fixture
from tests.support.variants import patches as _patches, put_variant as _put_variant

pytestmark = pytest.mark.e2e

ALICE = "alice@example.com"
BOB = "bob@example.com"


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


# ---------------------------------------------------------------------------------------------
# acknowledge without --release, just after the rollout moved on (Decisions 1)


class _utc:
    """A time ``delta_seconds`` from this machine's clock, read when the test runs (not when it is collected:
    a long run would move "3 minutes ago" out of the window)."""

    def __init__(self, delta_seconds):
        self.delta_seconds = delta_seconds

    def text(self):
        when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=self.delta_seconds)
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _now_text(value):
    return value.text() if isinstance(value, _utc) else value


def _moved_on(last=None, since=None):
    """The acknowledgement fixture after nvsentinel was acknowledged with ``last`` (the entry's changes, or
    an entry of its own) and the rollout moved on to kai-scheduler; ``since``: status' awaiting since."""
    def edit(obj):
        entry = {"release": "nvsentinel", "user": BOB, "time": _utc(-120)}
        entry = dict(entry, **last) if isinstance(last, dict) else (entry if last is None else last)
        if isinstance(entry, dict):
            entry = {key: _now_text(value) for key, value in entry.items()}
        obj["spec"]["acknowledgements"].append(entry)
        obj["status"]["awaitingAcknowledgement"] = {"release": "kai-scheduler"}
        if since is not None:
            obj["status"]["awaitingAcknowledgement"]["since"] = _now_text(since)
    return edit


RECENT = {
    "another-approver-2m-ago": (_moved_on(), "%s acknowledged nvsentinel at " % BOB),
    "the-same-approver-again": (_moved_on({"user": ALICE}), "you (%s) acknowledged nvsentinel at " % ALICE),
    "a-time-that-cannot-be-read": (_moved_on({"time": "yesterday"}), "at a time that cannot be read"),
    "no-time": (_moved_on({"time": None}), "at a time that cannot be read (<none>)"),
    "a-time-in-the-future": (_moved_on({"time": _utc(3600)}), "later than the API server's clock"),
    # An entry that cannot be read refuses acknowledge with or without --release (it may already acknowledge the
    # release awaited): test_acknowledge_refuses_while_an_acknowledgement_cannot_be_read.
    "awaiting-since-3m": (_moved_on({"time": _utc(-7200)}, since=_utc(-180)),
                          "it has waited on kai-scheduler since "),
    "awaiting-since-unreadable": (_moved_on({"time": _utc(-7200)}, since="soon"),
                                  "when it began to wait cannot be read (<invalid status.awaitingAcknowledgement"
                                  ".since: not an RFC 3339 time 'soon'>)"),
}


@pytest.mark.parametrize("case", sorted(RECENT))
def test_acknowledge_without_release_refuses_just_after_the_rollout_moved_on(run, api_server, kubeconfig_for,
                                                                             case):
    """Issue 20's worst case: alice did nvsentinel's steps; bob acknowledged it a moment ago and the rollout
    now awaits kai-scheduler. The plain form would record alice for kai-scheduler: it refuses, naming the
    release awaited now, who moved it on and when, and the command with --release; --release records it."""
    edit, words = RECENT[case]
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    before = api_server.get_object("RuntimeRollout", name)
    result = run("acknowledge", name, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert error.startswith("error: rollout %s now waits on kai-scheduler, and " % name) and words in error, error
    assert "without --release, acknowledge refuses for 10m after the rollout moves on" in error
    assert ("nothing was written; if you did the post-apply steps of kai-scheduler: kubectl aicr acknowledge %s "
            "--release=kai-scheduler --expect-uid=%s --expect-digest=sha256:" % (name, before["metadata"]["uid"])
            ) in error, error
    assert _patches(api_server) == [] and api_server.get_object("RuntimeRollout", name) == before
    named = run("acknowledge", name, "--release=kai-scheduler", kubeconfig=kubeconfig_for(ALICE))
    assert named.returncode == 0, named.stderr
    acks = api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"]
    assert acks[-1]["release"] == "kai-scheduler" and acks[-1]["user"] == ALICE


@pytest.mark.parametrize("edit", [_moved_on({"time": _utc(-11 * 60)}),
                                  _moved_on({"time": _utc(-7200)}, since=_utc(-11 * 60)),
                                  _moved_on({"time": _utc(-11 * 60), "user": ALICE})],
                         ids=["acknowledged-11m-ago", "awaiting-since-11m", "own-11m-ago"])
def test_acknowledge_without_release_works_once_the_move_is_not_recent(run, api_server, kubeconfig_for, edit):
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    result = run("acknowledge", name, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    acks = api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"]
    assert acks[-1]["release"] == "kai-scheduler" and acks[-1]["user"] == ALICE


def test_the_window_is_counted_by_the_api_servers_clock(run, api_server, kubeconfig_for):
    """nvsentinel was acknowledged 30 minutes ago by this machine's clock, 5 by the API server's (its Date is
    25 minutes behind): the server's clock wrote that time, and it says the move is recent."""
    name = _put_variant(api_server, "awaiting-acknowledgement", _moved_on({"time": _utc(-30 * 60)}))
    server_now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=25)
    api_server.header_values["Date"] = email.utils.format_datetime(server_now, usegmt=True)
    try:
        result = run("acknowledge", name, kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert "%s acknowledged nvsentinel at " % BOB in error and "(5m" in error and _patches(api_server) == []


# ---------------------------------------------------------------------------------------------
# The API server's clock is said when it is far from this machine's (Decisions 5)


def _server_clock(api_server, delta):
    """The test server's Date header set ``delta`` (a timedelta) away from this machine's clock."""
    when = datetime.datetime.now(datetime.timezone.utc) + delta
    api_server.header_values["Date"] = email.utils.format_datetime(when, usegmt=True)
    return when


YEAR_BEHIND = -datetime.timedelta(days=365)


@pytest.mark.parametrize("delta", [YEAR_BEHIND, datetime.timedelta(minutes=7)], ids=["year-behind", "7m-ahead"])
def test_approve_refuses_when_the_clocks_disagree(run, api_server, kubeconfig_for, delta):
    """--expires 2h counted from a server a year behind would store an approval that every other clock reads
    as expired, and being set once it blocks any other: refused, naming both clocks, nothing sent."""
    name = api_server.fixture_name("awaiting-approval")
    _server_clock(api_server, delta)
    try:
        result = run("approve", name, "--reason", "r", "--expires", "2h", kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert "the API server's clock (its Date header) says " in error and " and this machine's " in error
    assert ("behind, more than 5m0s" if delta < datetime.timedelta(0) else "ahead, more than 5m0s") in error
    assert "--allow-clock-skew approves on the API server's clock anyway" in error
    assert _patches(api_server) == []
    assert "approval" not in api_server.get_object("RuntimeRollout", name)["spec"]


def test_approve_on_the_servers_clock_only_on_purpose(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    server_now = _server_clock(api_server, YEAR_BEHIND)
    try:
        result = run("approve", name, "--reason", "r", "--expires", "2h", "--allow-clock-skew",
                     kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "the server is 365d0h behind" in warnings[0], result.stderr
    assert "approving on the API server's clock, as --allow-clock-skew asks" in warnings[0]
    expires = api_server.get_object("RuntimeRollout", name)["spec"]["approval"]["expires"]
    counted = datetime.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    assert abs(counted - (server_now + datetime.timedelta(hours=2))) < datetime.timedelta(minutes=1)


@pytest.mark.parametrize("command,role,args", [("revoke", "approved-rolling-out", ["--reason", "r"]),
                                               ("acknowledge", "awaiting-acknowledgement", ["--release=nvsentinel"])])
def test_revoke_and_acknowledge_say_the_clocks_disagree_before_writing(run, api_server, kubeconfig_for, command,
                                                                       role, args):
    name = api_server.fixture_name(role)
    _server_clock(api_server, YEAR_BEHIND)
    try:
        result = run(command, name, *args, kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "the server is 365d0h behind, more than 5m0s" in warnings[0], result.stderr
    assert "is the API server's" in warnings[0]
    assert result.stderr.splitlines()[-1] == warnings[0]  # the last thing said before the write


@pytest.mark.parametrize("command,role,args", [("approve", "awaiting-approval", ["--reason", "r", "--expires", "2h"]),
                                               ("revoke", "approved-rolling-out", ["--reason", "r"])])
def test_clocks_a_minute_apart_are_not_a_skew(run, api_server, kubeconfig_for, command, role, args):
    _server_clock(api_server, datetime.timedelta(minutes=-1))
    try:
        result = run(command, api_server.fixture_name(role), *args, kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 0, result.stderr
    assert "warning: " not in result.stderr


def test_allow_clock_skew_takes_go_booleans(run, api_server, kubeconfig_for):
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r", "--allow-clock-skew=maybe",
                 kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 2 and 'invalid argument "maybe"' in result.stderr and api_server.requests == []


@pytest.mark.parametrize("entry", ["nvsentinel", {"release": ["nvsentinel"], "user": BOB,
                                                  "time": "2026-11-30T10:00:00Z"}], ids=["a-string", "release-a-list"])
@pytest.mark.parametrize("release", [(), ("--release=nvsentinel",)], ids=["plain", "named"])
def test_acknowledge_refuses_while_an_acknowledgement_cannot_be_read(run, api_server, kubeconfig_for, entry,
                                                                     release):
    """An acknowledgement entry that cannot be read may already acknowledge the release awaited: acknowledge
    (with or without --release) refuses rather than record it twice, and describe offers no line."""
    def edit(obj):
        obj["spec"]["acknowledgements"] = [copy.deepcopy(entry)]
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    before = api_server.get_object("RuntimeRollout", name)
    result = run("acknowledge", name, *release, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    error = _one_error(result)
    assert "an acknowledgement it records cannot be read" in error and "nvsentinel" in error, error
    assert _patches(api_server) == []
    assert api_server.get_object("RuntimeRollout", name) == before
    assert _offered(before) == []
