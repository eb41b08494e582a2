"""A decision lands only on what the approver was shown (issue 11).

approve, revoke and acknowledge read the rollout once, decide, show what the decision rests on and write
it pinned to those facts (JSON-patch ``test`` operations). These tests land another client's write
between the command's read and its write (tests/support/interpositions.py, applied by the test server), refuse
before writing where the command must, check that every refusal sends no PATCH (the server's request
log), that both dry-run modes store nothing, that the server's answer is checked, and that a decision
that landed is never reported as a failure because its confirmation could not be printed.
"""

import copy
import json
import subprocess

import pytest

from tests.support import interpositions
from tests.support.interpositions import busy_operator
from tests.support.plugin import base_env, plugin_command

pytestmark = pytest.mark.e2e

# the query of a --dry-run=server PATCH (commands/writes.py WRITE_QUERY after dryRun)
DRY_RUN_QUERY = "dryRun=All&fieldManager=kubectl-aicr&fieldValidation=Strict"

ALICE = "alice@example.com"
ARGS = {"approve": ["--reason", "Maintenance window"], "revoke": ["--reason", "Stop"], "acknowledge": []}
# What each command writes, and the fields its decision rests on (as the command's first read saw them).
WRITTEN = {"approve": "approval", "revoke": "revocation", "acknowledge": "acknowledgements"}
RESTS_ON = {
    "approve": [("metadata", "uid"), ("spec", "to"), ("spec", "assessment"), ("status", "phase")],
    "revoke": [("metadata", "uid"), ("spec", "to"), ("spec", "assessment"), ("status", "phase"),
               ("spec", "approval")],
    "acknowledge": [("metadata", "uid"), ("spec", "to"), ("spec", "assessment"), ("status", "phase"),
                    ("status", "awaitingAcknowledgement")],
}


def rollout(api_server, role):
    return api_server.get_object("RuntimeRollout", api_server.fixture_name(role))


def patches(api_server):
    return [r for r in api_server.requests if r.method == "PATCH"]


def by_alice(obj):
    """Every decision alice's command could have stored on ``obj``."""
    spec = obj.get("spec") or {}
    found = []
    for field in ("approval", "revocation"):
        if isinstance(spec.get(field), dict) and spec[field].get("user") == ALICE:
            found.append(field)
    found += ["acknowledgement of %s" % a.get("release") for a in spec.get("acknowledgements") or []
              if isinstance(a, dict) and a.get("user") == ALICE]
    return found


def field(obj, path):
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


MATRIX = [(command, change, "before-patch") for command in interpositions.COMMANDS
          for change in interpositions.CHANGES]
MATRIX += [("approve", change, "after-read") for change in interpositions.CHANGES]


@pytest.mark.parametrize("command,change,when", MATRIX)
def test_a_change_between_read_and_write(run, api_server, kubeconfig_for, command, change, when):
    role = interpositions.TARGETS[command]
    first = rollout(api_server, role)
    name = first["metadata"]["name"]
    actions = interpositions.CHANGES[change].make(copy.deepcopy(first), api_server.operator_namespace)
    if actions is None:
        pytest.skip("%s does not apply to the %s rollout" % (change, role))
    before_alice = by_alice(first)
    api_server.interpose(name, actions, when)
    result = run(command, name, *ARGS[command], kubeconfig=kubeconfig_for(ALICE))
    log = api_server.requests
    landed = [i for i, r in enumerate(log) if r.method == "INTERPOSE"]
    assert len(landed) == 1, "the change never landed between the read and the write"
    reads = [i for i, r in enumerate(log) if r.method == "GET" and r.path.endswith("/" + name)]
    assert reads and reads[0] < landed[0]
    after = api_server.get_object("RuntimeRollout", name)
    words = interpositions.refusal_words(change, command, after_read=(when == "after-read"))
    if words is None:  # the change does not touch what the decision rests on: it lands
        assert result.returncode == 0, result.stderr
        sent = patches(api_server)
        # A status write never stops it (no resourceVersion is tested); where a test looked at a parent that was
        # absent (metadata.labels), the re-read finds the same facts and the same decision is sent again.
        assert [r.status for r in sent] == ([200] if change != "unrelated-label-added" else [422, 200])
        decided = [[op for op in json.loads(r.body) if op["op"] != "test"] for r in sent]
        assert all(d == decided[0] for d in decided)
        for path in RESTS_ON[command]:
            assert field(after, path) == field(first, path), path
        written = by_alice(after)
        assert len(written) == len(before_alice) + 1
        if command == "acknowledge":
            awaited = first["status"]["awaitingAcknowledgement"]["release"]
            assert after["spec"]["acknowledgements"][-1]["release"] == awaited
            assert after["spec"]["acknowledgements"][:-1] == first["spec"]["acknowledgements"]
        return
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and words in errors[0], result.stderr
    assert result.stdout == ""
    assert by_alice(after) == before_alice, "something was stored that the first read would not justify"
    assert all(r.status != 200 for r in patches(api_server))
    if when == "after-read" and command == "approve" and change == "report-swapped":
        assert patches(api_server) == []  # refused before writing
    else:
        assert "nothing was written" in errors[0] and "describe it again" in errors[0]


def test_acknowledge_never_moves_on_to_the_next_release(run, api_server, kubeconfig_for):
    """Issue 11's first case: alice reads a rollout waiting on gpu-operator; bob acknowledges it and the
    operator moves on to nvsentinel before her write lands. Nothing is recorded for nvsentinel."""
    obj = rollout(api_server, "awaiting-acknowledgement")
    obj["status"]["awaitingAcknowledgement"] = {"release": "gpu-operator"}
    obj["spec"]["acknowledgements"] = []
    obj["metadata"].pop("resourceVersion")
    api_server.put_object(obj)
    name = obj["metadata"]["name"]
    api_server.interpose(name, [
        {"action": "patch", "kind": "RuntimeRollout", "name": name, "subresource": "", "user": "bob@example.com",
         "patch": [{"op": "add", "path": "/spec/acknowledgements/-",
                    "value": {"release": "gpu-operator", "user": "bob@example.com", "time": interpositions.TIME}}]},
        {"action": "patch", "kind": "RuntimeRollout", "name": name, "subresource": "status", "user": "operator",
         "patch": [{"op": "replace", "path": "/status/awaitingAcknowledgement", "value": {"release": "nvsentinel"}}]},
    ])
    result = run("acknowledge", name, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1
    assert "the rollout now waits on nvsentinel, not gpu-operator" in result.stderr
    assert "release gpu-operator is already acknowledged by bob@example.com" in result.stderr
    acks = api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"]
    assert [a["user"] for a in acks] == ["bob@example.com"]


def test_the_facts_and_steps_are_shown_before_the_write(run, api_server, kubeconfig_for):
    """Shown on stderr before anything is sent: even a write that is then refused showed them first."""
    first = rollout(api_server, "awaiting-approval")
    name = first["metadata"]["name"]
    api_server.interpose(name, interpositions.phase_moved(first, "aicr-system"))
    result = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("error: ") and "is now in phase RollingOut, not AwaitingApproval" in lines[-1]
    shown = "\n".join(lines[:-1])
    assert "UID:          %s" % first["metadata"]["uid"] in shown
    assert "Target plan:  %s" % first["spec"]["to"]["desiredStateDigest"] in shown
    assert "%s (report aicr-assessment-" % first["spec"]["assessment"]["digest"] in shown
    assert "this approval acknowledges the pre-apply steps:" in shown and "pause-breaker" in shown


def test_the_write_tests_the_facts_and_not_the_resource_version(run, api_server, kubeconfig_for):
    first = rollout(api_server, "awaiting-acknowledgement")
    result = run("acknowledge", first["metadata"]["name"], kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    sent = json.loads(patches(api_server)[0].body)
    tests = {op["path"]: op["value"] for op in sent if op["op"] == "test"}
    assert tests["/metadata/uid"] == first["metadata"]["uid"]
    assert tests["/spec/to/desiredStateDigest"] == first["spec"]["to"]["desiredStateDigest"]
    assert tests["/spec/assessment/digest"] == first["spec"]["assessment"]["digest"]
    assert tests["/status/phase"] == "AwaitingAcknowledgement"
    assert tests["/status/awaitingAcknowledgement/release"] == "nvsentinel"
    assert tests["/spec/acknowledgements"] == first["spec"]["acknowledgements"]
    assert tests["/spec/transitionRecords"] == first["spec"]["transitionRecords"]  # the post-apply steps (issue 20)
    assert "/metadata/resourceVersion" not in tests
    assert [op["op"] for op in sent][-1] == "add" and sent.index(sent[-1]) == len(tests)


def test_approve_tests_the_records_and_steps_it_acknowledges(run, api_server, kubeconfig_for):
    """Issue 20: the pre-apply steps an approval acknowledges (spec.transitionRecords) and the steps it lets the
    operator run (spec.steps) are tested as read, in the same patch as the facts."""
    first = rollout(api_server, "awaiting-approval")
    result = run("approve", first["metadata"]["name"], "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    sent = json.loads(patches(api_server)[0].body)
    tests = {op["path"]: op["value"] for op in sent if op["op"] == "test"}
    assert tests["/spec/transitionRecords"] == first["spec"]["transitionRecords"]
    assert tests["/spec/steps"] == first["spec"]["steps"]
    assert [op["op"] for op in sent][-1] == "add" and len(sent) == len(tests) + 1


@pytest.mark.parametrize("command,change", [("approve", "records-changed"), ("approve", "steps-changed"),
                                            ("acknowledge", "records-changed")])
def test_a_change_of_what_is_acknowledged_is_never_sent_again(run, api_server, kubeconfig_for, command, change):
    """Issue 20: a step added between the read and the write refuses after ONE patch (the failed test), saying
    what changed; it is never sent again as the same decision."""
    first = rollout(api_server, interpositions.TARGETS[command])
    name = first["metadata"]["name"]
    api_server.interpose(name, interpositions.CHANGES[change].make(copy.deepcopy(first), "aicr-system"))
    result = run(command, name, *ARGS[command], kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1
    assert "rollout %s changed after it was read: its " % name in result.stderr
    assert [r.status for r in patches(api_server)] == [422]
    assert by_alice(api_server.get_object("RuntimeRollout", name)) == by_alice(first)


def test_a_retry_after_a_conflict_is_the_same_decision(run, api_server, kubeconfig_for, monkeypatch):
    """A conflict where nothing pinned changed: the very same patch (same time, same facts) is sent again."""
    calls = []
    original = api_server._patch

    def conflict_once(res, a, req):
        calls.append(req.body)
        if len(calls) == 1:
            from tests.support.apiserver import conflict
            raise conflict(res, a.name)
        return original(res, a, req)
    monkeypatch.setattr(api_server, "_patch", conflict_once)
    name = api_server.fixture_name("approved-rolling-out")
    result = run("revoke", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    assert len(calls) == 2 and calls[0] == calls[1]
    assert api_server.get_object("RuntimeRollout", name)["spec"]["revocation"]["user"] == ALICE


def test_an_admission_denial_is_shown_as_it_came_while_the_operator_keeps_writing(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("validating")
    with busy_operator(api_server, name):
        result = run("revoke", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1
    assert "ValidatingAdmissionPolicy 'aicr-rollout-revocation'" in result.stderr
    assert "cannot be set while status.phase is Validating" in result.stderr
    assert len(patches(api_server)) == 1
    assert "revocation" not in api_server.get_object("RuntimeRollout", name)["spec"]


# ---------------------------------------------------------------------------------------------
# Refusals decided before writing: no PATCH


def _put_variant(api_server, role, edit):
    obj = rollout(api_server, role)
    obj["metadata"].pop("resourceVersion")
    edit(obj)
    api_server.put_object(obj)
    return obj["metadata"]["name"]


def _malformed_digest(obj):
    obj["spec"]["assessment"]["digest"] = obj["spec"]["assessment"]["digest"].upper().replace("SHA256", "sha256")


def _null_digest(obj):
    obj["spec"]["assessment"] = {"digest": None}


def _expired_approval(obj):
    obj["spec"]["approval"] = {"user": "bob@example.com", "expires": "2026-01-01T00:00:00Z", "reason": "r"}


@pytest.mark.parametrize("role,edit,args,code,words", [
    ("tampered-report", None, [], 3, "is not verified: the bytes of report.json"),
    ("report-missing", None, [], 1, "is not verified: report ConfigMap aicr-assessment-"),
    ("awaiting-approval", _malformed_digest, [], 3, "is not verified: <invalid spec.assessment.digest"),
    ("awaiting-approval", _null_digest, [], 3, "is not verified: <invalid spec.assessment.digest: missing>"),
    ("awaiting-approval", _expired_approval, [], 1, "that approval has expired"),
    ("awaiting-approval", None, ["--expect-digest", "sha256:" + "0" * 16], 1, "(--expect-digest)"),
    ("deadline-passed", None, [], 1, "has passed, so an approval has no default end; give --expires DURATION"),
])
def test_approve_refusals_send_no_patch(run, api_server, kubeconfig_for, role, edit, args, code, words):
    name = _put_variant(api_server, role, edit) if edit else api_server.fixture_name(role)
    before = api_server.get_object("RuntimeRollout", name)
    result = run("approve", name, "--reason", "r", *args, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert words in result.stderr
    assert patches(api_server) == []
    assert api_server.get_object("RuntimeRollout", name) == before


def test_an_unverified_report_is_approved_only_on_purpose(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("tampered-report")
    result = run("approve", name, "--reason", "r", "--allow-unverified-report", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and "although its assessment report is not verified" in warning[0]
    assert "(NOT VERIFIED: the bytes of report.json" in result.stderr
    assert api_server.get_object("RuntimeRollout", name)["spec"]["approval"]["user"] == ALICE


def test_following_the_deadline_advice_gives_no_contradicting_warning(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("deadline-passed")
    result = run("approve", name, "--reason", "r", "--expires", "30m", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    assert "has passed; this approval lasts until " in result.stderr
    assert "outlasts" not in result.stderr


@pytest.mark.parametrize("given", ["full", "sha256-prefix", "bare-prefix"])
def test_approve_bound_to_the_digest_describe_printed(run, api_server, kubeconfig_for, given):
    name = api_server.fixture_name("awaiting-approval")
    digest = rollout(api_server, "awaiting-approval")["spec"]["to"]["desiredStateDigest"]
    shown = run("describe", name, kubeconfig=kubeconfig_for(ALICE)).stdout
    assert "Target plan:" in shown and digest[:7 + 16] in shown  # describe prints digests shortened to 16 hex
    value = {"full": digest, "sha256-prefix": digest[:7 + 16], "bare-prefix": digest[7:7 + 20]}[given]
    result = run("approve", name, "--reason", "r", "--expect-digest", value, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("value", ["sha256:" + "a" * 15, "ABCDEF0123456789", "sha256:" + "a" * 65, "latest"])
def test_a_malformed_expected_digest_is_a_usage_error(run, api_server, kubeconfig_for, value):
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r", "--expect-digest", value,
                 kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 2 and "is not a desired-state digest" in result.stderr
    assert api_server.requests == []


def test_acknowledge_bound_to_the_release(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-acknowledgement")
    refused = run("acknowledge", name, "--release", "gpu-operator", kubeconfig=kubeconfig_for(ALICE))
    assert refused.returncode == 1
    assert "waits on nvsentinel, not gpu-operator (--release)" in refused.stderr
    assert patches(api_server) == []
    done = run("acknowledge", name, "--release=nvsentinel", kubeconfig=kubeconfig_for(ALICE))
    assert done.returncode == 0, done.stderr
    assert api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"][-1]["release"] == "nvsentinel"


# ---------------------------------------------------------------------------------------------
# --dry-run


@pytest.mark.parametrize("command", interpositions.COMMANDS)
@pytest.mark.parametrize("mode", ["server", "client"])
def test_dry_run_stores_nothing(run, api_server, kubeconfig_for, command, mode):
    name = api_server.fixture_name(interpositions.TARGETS[command])
    before = api_server.get_object("RuntimeRollout", name)
    result = run(command, name, *ARGS[command], "--dry-run=" + mode, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.endswith(" (server dry run)" if mode == "server" else " (dry run)")
    assert api_server.get_object("RuntimeRollout", name) == before  # same resourceVersion too
    sent = patches(api_server)
    if mode == "client":
        assert sent == []
        line = [x for x in result.stdout.splitlines() if x.startswith("would send: PATCH ")]
        assert len(line) == 1 and '"op": "test", "path": "/metadata/uid"' in line[0]
    else:
        assert len(sent) == 1 and sent[0].query == DRY_RUN_QUERY and sent[0].status == 200


def test_server_dry_run_is_judged_by_admission(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("validating")
    result = run("revoke", name, "--reason", "r", "--dry-run=server", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1 and "ValidatingAdmissionPolicy" in result.stderr
    assert [r.query for r in patches(api_server)] == [DRY_RUN_QUERY]


@pytest.mark.parametrize("flag,words", [("--dry-run=maybe", 'Invalid dry-run value (maybe). Must be "none", '
                                                              '"server", or "client".'),
                                         ("--allow-unverified-report=maybe", 'invalid argument "maybe"')])
def test_bad_flag_values_are_usage_errors(run, api_server, kubeconfig_for, flag, words):
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r", flag,
                 kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 2 and words in result.stderr and api_server.requests == []


def test_bare_dry_run_is_client_as_in_kubectl(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("approved-rolling-out")
    result = run("revoke", "--dry-run", name, "--reason", "r", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    assert "--dry-run is deprecated and can be replaced with --dry-run=client." in result.stderr
    assert patches(api_server) == []


# ---------------------------------------------------------------------------------------------
# The server's answer, and the output after the write


@pytest.mark.parametrize("command", interpositions.COMMANDS)
@pytest.mark.parametrize("answer", ["another-rollout", "another-entry"])
def test_an_answer_about_something_else_is_not_success(run, api_server, kubeconfig_for, monkeypatch, command,
                                                       answer):
    original = api_server._patch

    def wrong(res, a, req):
        code, obj = original(res, a, req)
        if answer == "another-rollout":
            return code, api_server.fixture("succeeded")
        obj = copy.deepcopy(obj)
        field_name = WRITTEN[command]
        value = obj["spec"][field_name]
        entry = value[-1] if isinstance(value, list) else value
        entry["expires" if "expires" in entry else "time"] = "2020-01-01T00:00:00Z"
        return code, obj
    monkeypatch.setattr(api_server, "_patch", wrong)
    name = api_server.fixture_name(interpositions.TARGETS[command])
    result = run(command, name, *ARGS[command], kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 4  # UnknownOutcome: the server stored something; never reported as not stored
    assert "answered the write of rollout %s with something other than what was written" % name in result.stderr
    assert "the write may have been recorded; check with kubectl aicr describe %s" % name in result.stderr
    assert result.stdout == ""


def _shell(plugin, args, redirect, kubeconfig, home):
    command = " ".join(plugin_command(plugin) + ["'%s'" % a for a in args]) + " " + redirect
    return subprocess.run(["/bin/sh", "-c", command], env=dict(base_env(home), KUBECONFIG=str(kubeconfig)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
@pytest.mark.parametrize("command", interpositions.COMMANDS)
def test_a_recorded_decision_is_not_reported_as_a_failure_when_printing_fails(plugin, api_server, tmp_path,
                                                                             redirect, command):
    name = api_server.fixture_name(interpositions.TARGETS[command])
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), user=ALICE)
    result = _shell(plugin, [command, name] + ARGS[command], redirect, kubeconfig, tmp_path)
    assert result.returncode == 0, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("warning: the ") and " was recorded, but its confirmation could not be written" in last
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr
    assert WRITTEN[command] in api_server.get_object("RuntimeRollout", name)["spec"]


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-"])
@pytest.mark.parametrize("args", [["describe", "{install}"], ["version"], ["help"],
                                  ["approve", "{approve}", "--reason", "r", "--dry-run=client"]])
def test_no_command_prints_exception_ignored(plugin, api_server, tmp_path, redirect, args):
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), user=ALICE)
    names = {"{install}": api_server.fixture_name("install"), "{approve}": api_server.fixture_name("awaiting-approval")}
    result = _shell(plugin, [names.get(a, a) for a in args], redirect, kubeconfig, tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("error: cannot write the output")
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr
    assert patches(api_server) == []
