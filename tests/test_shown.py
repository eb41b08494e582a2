"""What is shown must be true (issue 20): describe, list and the write commands never drop what the cluster
sent, never show a wrong-typed value as "none", never print an empty value as nothing, never show two
different values alike, and show a valid time as a time.

In process: describe's and list's rendering of rollouts read from the fixture objects (as
tests/test_describe_render.py does), printed through the writer; end to end: the write commands against the
test API server.
"""

import copy
import datetime
import hashlib
import io
import json

import pytest

from kubectl_aicr import output
from kubectl_aicr.aicr import objects
from kubectl_aicr.commands import describe
from kubectl_aicr.commands import list as list_command
from tests.support.fixture_objects import NOW, configmap, fixture, set_path

NAMESPACE = "aicr-system"
ALICE = "alice@example.com"


def edited(role, changes):
    obj = fixture(role)
    for path, value in changes.items():
        set_path(obj, path, value)
    return obj


def printed(lines):
    """What the writer puts on the terminal for ``lines``."""
    stream = io.StringIO()
    output.write_lines(lines, stream)
    return stream.getvalue().splitlines()


def described(obj, report=None):
    """describe's printed lines for ``obj``; ``report``: the text of its report (its digest recorded)."""
    if report is not None:
        obj["spec"]["assessment"] = {"digest": "sha256:" + hashlib.sha256(report.encode("utf-8")).hexdigest()}
    rollout = objects.rollout(obj)
    verified = None
    if isinstance(rollout.assessment_digest, str):
        name = objects.assessment_configmap_name(rollout.assessment_digest)
        found = configmap(NAMESPACE, name) if report is None else {"data": {"report.json": report}}
        verified = objects.verify_report(found, rollout.assessment_digest, name)
    return printed(describe.render(rollout, verified, NAMESPACE, NOW))


def listed(*objs, now=NOW):
    """list's printed table rows for ``objs``: {NAME: {column: cell}} (cells split on the header's columns)."""
    lines = printed(list_command.render([objects.rollout(obj) for obj in objs], now))
    header = lines[0]
    starts = [header.index(title) for title in list_command.HEADERS]
    rows = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows[cells[0]] = dict(zip(list_command.HEADERS, cells))
    return rows


def field(lines, label):
    values = [line[len(label) + 1:].strip() for line in lines if line.startswith(label + ":")]
    assert len(values) == 1, (label, lines)
    return values[0]


# ---------------------------------------------------------------------------------------------
# RFC 3339 times Python's datetime cannot hold are times (helpers.OutOfRange), not invalid


LATE = "9999-12-31T23:59:59-01:00"   # 10000-01-01T00:59:59Z: Go holds it, datetime does not
EARLY = "0000-03-01T00:00:00Z"


def test_a_time_past_the_year_9999_in_utc_is_shown_as_it_is():
    lines = described(edited("awaiting-approval", {"spec.deadline": LATE}))
    assert field(lines, "Deadline") == LATE + " (after 9999-12-31T23:59:59Z)"
    lines = described(edited("approved-rolling-out", {"spec.approval.expires": LATE}))
    assert field(lines, "Approval") == "approved by %s until %s (after 9999-12-31T23:59:59Z)" % (ALICE, LATE)
    rows = listed(edited("approved-rolling-out", {"spec.deadline": LATE}))
    assert list(rows.values())[0]["DEADLINE"] == LATE + " (after 9999-12-31T23:59:59Z)"


def test_an_approval_that_ended_in_year_0000_is_expired():
    obj = edited("approved-rolling-out", {"spec.approval.expires": EARLY})
    assert list(listed(obj).values())[0]["APPROVAL"] == "expired"
    assert field(described(obj), "Approval") == "approved by %s until %s (before 0001-01-01T00:00:00Z)" % (
        ALICE, EARLY)


def test_year_0000_deadlines_sort_first():
    early = edited("awaiting-approval", {"spec.deadline": EARLY, "metadata.name": "rollout-early-1"})
    late = edited("awaiting-approval", {"spec.deadline": LATE, "metadata.name": "rollout-late-1"})
    assert list(listed(late, fixture("awaiting-approval"), early)) == [
        "rollout-early-1", "rollout-7953c836e83feab1-1", "rollout-late-1"]


@pytest.mark.e2e
def test_approve_without_expires_refuses_a_deadline_it_cannot_write_in_utc(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("no-assessment")
    obj = api_server.get_object("RuntimeRollout", name)
    obj["spec"]["deadline"] = LATE
    api_server.put_object(obj)
    refused = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == (
        "error: rollout %s: its deadline %s (after 9999-12-31T23:59:59Z) cannot be written as an approval's "
        "expiry in UTC; give --expires DURATION" % (name, LATE))
    assert [r for r in api_server.requests if r.method == "PATCH"] == []
    done = run("approve", name, "--reason", "r", "--expires", "1h", kubeconfig=kubeconfig_for(ALICE))
    assert done.returncode == 0, done.stderr
    assert "  Deadline:     %s (after 9999-12-31T23:59:59Z)" % LATE in done.stderr.splitlines()


# ---------------------------------------------------------------------------------------------
# A wrong-typed item or container is shown as invalid, never dropped, never shown as "none"


def candidate_report(**changes):
    """The fixture's candidate report (a dict) with top-level ``changes``."""
    with open("tests/fixtures/reports/upgrade-candidate.json", encoding="utf-8") as f:
        report = json.load(f)
    report.update(changes)
    return report


def at_risk_lines(report):
    lines = described(fixture("awaiting-approval"), json.dumps(report))
    start = [i for i, line in enumerate(lines) if line.startswith("  At risk")][0]
    end = [i for i, line in enumerate(lines) if line.startswith("Recorded steps")][0]
    return lines[start:end]


FINDING = {"group": "nvidia.com", "kind": "ClusterPolicy", "components": ["gpu-operator"], "name": "cluster-policy"}


@pytest.mark.parametrize("at_risk, expected", [
    ({"scanned": True, "findings": [FINDING, "x", 7]}, [
        "At risk:", "KIND OBJECT COMPONENTS", "ClusterPolicy.nvidia.com cluster-policy gpu-operator",
        "<invalid atRisk.findings[1]: a string 'x'> <none> <none>",
        "<invalid atRisk.findings[2]: a number> <none> <none>"]),
    ({"scanned": True, "findings": {"ClusterPolicy": FINDING}}, ["At risk: <invalid atRisk.findings: a mapping>"]),
    ({"scanned": True, "findings": "none"}, ["At risk: <invalid atRisk.findings: a string 'none'>"]),
    ({"scanned": True, "findings": []}, ["At risk: no objects found"]),
    ({"scanned": False}, ["At risk: not scanned"]),
    ({"scanned": "yes", "findings": []}, ["At risk: <none>", "At risk scanned: <invalid scanned: a string 'yes'>"]),
    ({"scanned": True, "findings": [dict(FINDING, kind=None, namespace="gpu", components=["a", 3])]}, [
        "At risk:", "KIND OBJECT COMPONENTS", "<none>.nvidia.com gpu/cluster-policy a, <invalid components[1]: a number>"]),
    ({"scanned": True, "findings": [dict(FINDING, components="gpu-operator")]}, [
        "At risk:", "KIND OBJECT COMPONENTS",
        "ClusterPolicy.nvidia.com cluster-policy <invalid components: a string 'gpu-operator'>"]),
    (["x"], ["At risk: <invalid atRisk: a list>"]),
], ids=["items", "a mapping", "a string", "none found", "not scanned", "scanned malformed", "fields", "components",
        "atRisk a list"])
def test_at_risk_findings_are_never_dropped_nor_called_none(at_risk, expected):
    lines = at_risk_lines(candidate_report(atRisk=at_risk))
    assert [" ".join(line.split()) for line in lines] == expected


def test_at_risk_is_shown_when_the_report_lists_no_components():
    lines = at_risk_lines(candidate_report(components=[], atRisk={"scanned": True, "findings": [FINDING]}))
    assert " ".join(lines[-1].split()) == "ClusterPolicy.nvidia.com cluster-policy gpu-operator"


def test_a_parent_that_is_not_a_mapping_is_invalid_never_not_set():
    lines = described(edited("awaiting-approval", {"spec.to": "sha256:7953", "spec.runtimeRef": ["cluster"],
                                                   "spec.startingInventory": 17}))
    assert field(lines, "Target plan") == "<invalid spec.to: a string 'sha256:7953'>"
    assert field(lines, "Runtime") == "<invalid spec.runtimeRef: a list>"
    assert field(lines, "Starting inventory") == "<invalid spec.startingInventory: a number>"
    lines = described(fixture("awaiting-approval"), json.dumps(candidate_report(summary="5 of 5")))
    assert field(lines, "  Summary") == "<invalid summary: a string '5 of 5'>"


def test_status_steps_that_cannot_be_read_are_shown():
    obj = fixture("install")
    steps = obj["status"]["steps"]
    obj["status"]["steps"] = "Ready"
    lines = described(obj)
    rows = lines[lines.index("Steps:") + 2:lines.index("Steps:") + 5]
    assert all(row.endswith("<invalid status.steps: a string 'Ready'>") for row in rows), rows
    obj["status"]["steps"] = steps + ["x", {"state": "Failed"}]
    lines = described(obj)
    assert " ".join(lines[lines.index("Steps:") + 5].split()) == "<invalid status.steps[3]: a string 'x'> " \
        "<none> <none> <none> <none>"
    assert " ".join(lines[lines.index("Steps:") + 6].split()) == "<invalid status.steps[4].release: missing> " \
        "<none> <none> <none> <none>"


def test_the_steps_a_decision_covers_are_shown_even_when_malformed():
    from kubectl_aicr.commands import writes
    rollout = objects.rollout(edited("awaiting-approval", {"spec.transitionRecords": {"nvsentinel": []}}))
    assert writes.record_step_lines(rollout, "PreApply", "covers:") == [
        "covers:", "  <invalid spec.transitionRecords: a mapping>"]
    obj = fixture("awaiting-approval")
    obj["spec"]["transitionRecords"].append(5)
    obj["spec"]["transitionRecords"][0]["steps"].append({"id": "x", "description": "d", "when": 1})
    lines = writes.record_step_lines(objects.rollout(obj), "PreApply", "covers:")
    records = obj["spec"]["transitionRecords"]
    assert "  %s x: d (<invalid when: a number>)" % records[0]["release"] in lines
    assert lines[-1] == "  <invalid spec.transitionRecords[%d]: a number>" % (len(records) - 1)


def test_list_shows_a_rollout_whose_outcome_is_malformed(monkeypatch):
    from types import SimpleNamespace
    obj = edited("awaiting-approval", {"status.outcome": ["Failed"]})
    assert objects.rollout(obj).ended  # never decided on
    assert list(listed(obj).values())[0]["PHASE"] == "AwaitingApproval (<invalid status.outcome: a list>)"

    class Client:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def get(self, path, query=None):
            return {"kind": "RuntimeRolloutList", "items": [obj], "metadata": {}}

    written = []
    monkeypatch.setattr(list_command.clientcmd, "connect", lambda invocation: Client())
    monkeypatch.setattr(list_command.output, "write_lines", written.extend)
    assert list_command.run(SimpleNamespace(all=False), now=NOW) == 0
    assert written[1].startswith("rollout-7953c836e83feab1-1 ")


# ---------------------------------------------------------------------------------------------
# An empty value is never printed as nothing; look-alike cluster text is quoted (output.cluster_text)


@pytest.mark.parametrize("text, shown", [
    ("alice", "alice"), ("", "<none>"), ("alice ", '"alice "'), (" alice", '" alice"'), ("alice\t", '"alice\t"'),
    ("alice\u00a0", '"alice\u00a0"'), ('"alice"', '"\\"alice\\""'), ("a\\x1b", '"a\\\\x1b"'), ("<none>", '"<none>"'),
    ("<invalid x: y>", '"<invalid x: y>"'), ('say "hi"', 'say "hi"'), ("a < b", "a < b"),
])
def test_the_rule_for_cluster_text(text, shown):
    assert output.cluster_text(text) == shown
    value = output.ClusterText(text)
    assert "%s" % value == str(value) == "{}".format(value) == output.or_none(value) == shown
    assert value == text and hash(value) == hash(text) and json.dumps(value) == json.dumps(text) and value.raw == text


def test_look_alike_values_are_told_apart_in_describe_and_list():
    """A username with a trailing space, one in angle brackets, one holding a literal backslash escape and one
    holding the character the writer escapes the same way: four different lines, none like ``alice``."""
    seen = set()
    for user in ("alice", "alice ", "<none>", "alice\\x1b", "alice\x1b"):
        obj = edited("approved-rolling-out", {"spec.approval.user": user})
        approval = field(described(obj), "Approval")
        cell = list(listed(obj).values())[0]["APPROVAL"]
        assert approval.startswith("approved by ") and cell.startswith("approved by ")
        seen.add((approval, cell))
    assert len(seen) == 5
    obj = edited("approved-rolling-out", {"spec.approval.user": "alice "})
    assert field(described(obj), "Approval").startswith('approved by "alice " until ')
    assert list(listed(obj).values())[0]["APPROVAL"].startswith('approved by "alice " until ')
    obj = edited("awaiting-acknowledgement", {"status.awaitingAcknowledgement.release": "nvsentinel ",
                                              "status.message": "", "spec.steps": [{"release": " a"}]})
    lines = described(obj)
    assert field(lines, "Awaiting") == 'acknowledgement of "nvsentinel "'
    assert field(lines, "Message") == "<none>"
    assert " ".join(lines[lines.index("Steps:") + 2].split()) == '" a" <none> <none> <none> Pending'
    assert list(listed(obj).values())[0]["WAITING ON"] == '"nvsentinel "'


def test_every_message_about_a_change_shows_an_empty_value_as_none():
    from kubectl_aicr.commands import writes
    before = fixture("awaiting-approval")
    after = edited("awaiting-approval", {"status.phase": "Completed", "status.outcome": ""})
    text = writes.changes_text(before, after, ["phase", "outcome"])
    assert text == "the rollout is now in phase Completed, not AwaitingApproval; the rollout has ended (outcome <none>)"
    after = edited("awaiting-approval", {"spec.approval": {"user": "", "expires": "2026-12-01T00:00:00Z"}})
    assert writes.changes_text(before, after, ["approval"]) == \
        "it is already approved by <none> until 2026-12-01T00:00:00Z"
    after = edited("awaiting-approval", {"spec.deadline": None, "spec.approvalRequired": None})
    assert writes.changes_text(before, after, ["deadline", "approval-required"]) == \
        "its deadline is now <none>, not 2026-11-30T16:00:00Z; spec.approvalRequired is now <none>, not True"


DORA = "dora@example.com "  # a username with a trailing space


@pytest.fixture(scope="module")
def dora_server():
    from tests.support.apiserver import APIServer
    from tests.support.apiserver.rbac import User, default_users
    from tests.support.apiserver.resources import APPROVERS
    from tests.support.plugin import FIXTURES
    with APIServer(fixtures_dir=FIXTURES, users=default_users() + [User(DORA, (APPROVERS,))]) as server:
        yield server


@pytest.mark.e2e
def test_a_username_with_a_trailing_space_is_quoted_in_every_view(run, dora_server, tmp_path):
    name = dora_server.fixture_name("awaiting-approval")
    dora = dora_server.write_kubeconfig(str(tmp_path / "dora"), user=DORA)
    alice = dora_server.write_kubeconfig(str(tmp_path / "alice"), user=ALICE)
    done = run("approve", name, "--reason", "r", "--expires", "1h", kubeconfig=dora)
    assert done.returncode == 0, done.stderr
    assert dora_server.get_object("RuntimeRollout", name)["spec"]["approval"]["user"] == DORA  # stored as it is
    assert done.stderr.splitlines()[0] == ('approving rollout %s as "dora@example.com ", on what was read (the write '
                                           'is refused if any of it changes):' % name)
    assert done.stdout.splitlines()[0].startswith('rollout %s approved by "dora@example.com " until ' % name)
    shown = run("describe", name, kubeconfig=alice)
    assert field(shown.stdout.splitlines(), "Approval").startswith('approved by "dora@example.com " until ')
    listed_out = run("list", kubeconfig=alice)
    row, = [line for line in listed_out.stdout.splitlines() if line.startswith(name + " ")]
    assert '  approved by "dora@example.com " until ' in row
    again = run("approve", name, "--reason", "r", kubeconfig=alice)
    assert again.returncode == 1
    assert 'is already approved by "dora@example.com " until ' in again.stderr.splitlines()[-1]
    revoked = run("revoke", name, "--reason", "r", kubeconfig=dora)
    assert revoked.returncode == 0, revoked.stderr
    assert [l for l in revoked.stderr.splitlines() if l.startswith("  Approval:")][0].startswith(
        '  Approval:     by "dora@example.com " until ')
    assert revoked.stdout.splitlines()[0].startswith('rollout %s revoked by "dora@example.com " at ' % name)


@pytest.mark.e2e
def test_an_ended_rollout_with_an_empty_outcome_says_so(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    obj = api_server.get_object("RuntimeRollout", name)
    obj["status"]["phase"], obj["status"]["outcome"] = "Completed", ""
    obj["metadata"].get("labels", {}).pop(objects.OUTCOME_LABEL, None)
    api_server.put_object(obj)
    refused = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == \
        "error: rollout %s has ended (outcome <none>); it cannot be approved" % name


@pytest.mark.e2e
def test_an_awaited_release_with_a_trailing_space_is_quoted_in_the_block_and_the_result(run, api_server,
                                                                                       kubeconfig_for):
    name = api_server.fixture_name("awaiting-acknowledgement")
    obj = api_server.get_object("RuntimeRollout", name)
    obj["status"]["awaitingAcknowledgement"]["release"] = "nvsentinel "
    api_server.put_object(obj)
    done = run("acknowledge", name, kubeconfig=kubeconfig_for(ALICE))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith('acknowledging release "nvsentinel " of rollout %s as ' % name)
    assert '  Awaiting:     acknowledgement of "nvsentinel "' in done.stderr.splitlines()
    assert done.stdout.splitlines()[0].startswith('rollout %s: "nvsentinel " acknowledged by %s at ' % (name, ALICE))
    assert api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"][-1]["release"] == "nvsentinel "
