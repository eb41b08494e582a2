"""approve, revoke and acknowledge, end to end: set-once decisions, refusals, and races between processes."""

import datetime
import re
import subprocess

import pytest
import yaml

from tests.support.plugin import base_env, plugin_command

pytestmark = pytest.mark.e2e

RFC3339 = "%Y-%m-%dT%H:%M:%SZ"


def parse(text):
    return datetime.datetime.strptime(text, RFC3339).replace(tzinfo=datetime.timezone.utc)


def spec(api_server, role):
    return api_server.get_object("RuntimeRollout", api_server.fixture_name(role))["spec"]


def writes_seen(api_server):
    return [r for r in api_server.requests if r.method not in ("GET", "INTERPOSE") and "selfsubjectreviews" not in r.path]


def test_approve_records_the_server_reported_user_until_expiry(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    result = run("approve", name, "--expires", "1h30m", "--reason", "Maintenance window",
                 kubeconfig=kubeconfig_for("bob@example.com"))
    assert result.returncode == 0, result.stderr
    approval = spec(api_server, "awaiting-approval")["approval"]
    assert approval["user"] == "bob@example.com" and approval["reason"] == "Maintenance window"
    expires = parse(approval["expires"])
    assert before + datetime.timedelta(minutes=90) <= expires <= before + datetime.timedelta(minutes=91)
    assert result.stdout.splitlines()[0] == "rollout %s approved by bob@example.com until %s" % (
        name, approval["expires"])
    patches = writes_seen(api_server)
    assert len(patches) == 1 and patches[0].content_type == "application/json-patch+json"
    assert b'"op": "test", "path": "/metadata/uid"' in patches[0].body  # pinned facts (test_decision_pinning.py)
    described = run("describe", name, kubeconfig=kubeconfig_for("carol@example.com")).stdout
    assert "approved by bob@example.com until %s" % approval["expires"] in described


def test_approve_without_expires_lasts_until_the_deadline(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    result = run("approve", name, "--reason", "ok", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    rollout = spec(api_server, "awaiting-approval")
    assert rollout["approval"]["expires"] == rollout["deadline"]
    assert rollout["approval"]["user"] == "alice@example.com"  # from the client certificate's CN


def test_username_comes_from_the_server_not_the_kubeconfig(run, api_server, kubeconfig_for, tmp_path):
    config = api_server.kubeconfig(users=["bob@example.com"])
    config["users"][0]["name"] = "cluster-admin"
    config["contexts"][0]["context"]["user"] = "cluster-admin"
    path = tmp_path / "renamed"
    path.write_text(yaml.safe_dump(config))
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r", kubeconfig=path)
    assert result.returncode == 0, result.stderr
    assert spec(api_server, "awaiting-approval")["approval"]["user"] == "bob@example.com"


@pytest.mark.parametrize("role,args,words", [
    ("approved-rolling-out", [], "is already approved by alice@example.com until "),
    ("succeeded", [], "has ended (outcome Succeeded)"),
    ("revoked", [], "has ended (outcome Revoked)"),
    ("install", [], "needs no approval"),
    ("deadline-passed", [], "its deadline"),
])
def test_approve_refusals_write_nothing(run, api_server, kubeconfig_for, role, args, words):
    before = api_server.get_object("RuntimeRollout", api_server.fixture_name(role))
    result = run("approve", api_server.fixture_name(role), "--reason", "r", *args, kubeconfig=kubeconfig_for())
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and words in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert writes_seen(api_server) == []
    assert api_server.get_object("RuntimeRollout", api_server.fixture_name(role)) == before


def test_deadline_passed_can_be_approved_with_expires(run, api_server, kubeconfig_for):
    result = run("approve", api_server.fixture_name("deadline-passed"), "--reason", "r", "--expires", "30m",
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args,words", [
    (["--reason", ""], "--reason must not be empty"),
    ([], "--reason TEXT is required"),
    (["--reason", "x" * 1025], "--reason is 1025 characters; at most 1024"),
    (["--reason", "r", "--expires", "-1h"], "--expires -1h is negative"),
    (["--reason", "r", "--expires=2d"], "invalid duration '2d'"),
    (["--reason", "r", "--expires", "soon"], "invalid duration 'soon'"),
])
def test_bad_flags_are_refused_before_any_request(run, api_server, kubeconfig_for, args, words):
    result = run("approve", api_server.fixture_name("awaiting-approval"), *args, kubeconfig=kubeconfig_for())
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and words in result.stderr
    assert api_server.requests == []


def test_reason_of_exactly_1024_characters_is_accepted(run, api_server, kubeconfig_for):
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "é" * 1024,
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr


def test_reader_cannot_approve_and_nothing_changes(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    before = api_server.get_object("RuntimeRollout", name)
    result = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 1
    assert re.match(r'error: runtimerollouts.operator.aicr.run "%s" is forbidden: User "carol@example.com" '
                    r'cannot patch resource "runtimerollouts"' % name, result.stderr.splitlines()[-1])
    assert api_server.get_object("RuntimeRollout", name) == before


def test_revoke_records_user_time_reason(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("approved-rolling-out")
    result = run("revoke", name, "--reason", "Training job not checkpointed",
                 kubeconfig=kubeconfig_for("bob@example.com"))
    assert result.returncode == 0, result.stderr
    revocation = spec(api_server, "approved-rolling-out")["revocation"]
    assert revocation["user"] == "bob@example.com" and revocation["reason"] == "Training job not checkpointed"
    assert abs((parse(revocation["time"]) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) < 30
    assert result.stdout.startswith("rollout %s revoked by bob@example.com at %s" % (name, revocation["time"]))


@pytest.mark.parametrize("role,words", [
    ("awaiting-approval", "is not approved; there is nothing to revoke"),
    ("revoked", "is already revoked by "),
    ("succeeded", "has ended (outcome Succeeded)"),
])
def test_revoke_refusals(run, api_server, kubeconfig_for, role, words):
    result = run("revoke", api_server.fixture_name(role), "--reason", "r", kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and words in result.stderr
    assert writes_seen(api_server) == []


def test_revoke_while_validating_shows_the_servers_refusal_as_it_came(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("validating")
    before = api_server.get_object("RuntimeRollout", name)
    result = run("revoke", name, "--reason", "r", kubeconfig=kubeconfig_for())
    assert result.returncode == 1
    patch = writes_seen(api_server)[-1]
    assert patch.status == 422
    assert "ValidatingAdmissionPolicy" in result.stderr and "Validating" in result.stderr
    assert api_server.get_object("RuntimeRollout", name) == before


def test_acknowledge_appends_for_the_awaited_release(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-acknowledgement")
    before = spec(api_server, "awaiting-acknowledgement").get("acknowledgements") or []
    awaited = api_server.fixture("awaiting-acknowledgement")["status"]["awaitingAcknowledgement"]["release"]
    result = run("acknowledge", name, kubeconfig=kubeconfig_for("bob@example.com"))
    assert result.returncode == 0, result.stderr
    after = spec(api_server, "awaiting-acknowledgement")["acknowledgements"]
    assert after[:len(before)] == before and len(after) == len(before) + 1
    assert after[-1]["release"] == awaited and after[-1]["user"] == "bob@example.com"
    described = run("describe", name, kubeconfig=kubeconfig_for()).stdout
    assert "Acknowledged: %s by bob@example.com at %s" % (awaited, after[-1]["time"]) in described


def test_acknowledge_refuses_a_rollout_that_is_not_waiting(run, api_server, kubeconfig_for):
    result = run("acknowledge", api_server.fixture_name("approved-rolling-out"), kubeconfig=kubeconfig_for())
    assert result.returncode == 1
    assert "is not waiting for an acknowledgement (phase RollingOut)" in result.stderr
    assert writes_seen(api_server) == []


def _start(plugin, args, kubeconfig, home):
    env = dict(base_env(home), KUBECONFIG=kubeconfig)
    return subprocess.Popen(plugin_command(plugin) + args, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True)


def _finish(processes):
    results = []
    for process in processes:
        out, err = process.communicate(timeout=90)
        results.append((process.returncode, out, err))
    return results


def test_twenty_approvers_at_once_exactly_one_approval(plugin, api_server, tmp_path):
    name = api_server.fixture_name("awaiting-approval")
    approvers = ["approver-%02d" % i for i in range(1, 21)]
    configs = [api_server.write_kubeconfig(str(tmp_path / a), user=a) for a in approvers]
    processes = [_start(plugin, ["approve", name, "--reason", "by " + a], c, tmp_path)
                 for a, c in zip(approvers, configs)]
    results = _finish(processes)
    approval = spec(api_server, "awaiting-approval")["approval"]
    winners = [i for i, (code, _, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    assert approval["user"] == approvers[winners[0]] and approval["reason"] == "by " + approvers[winners[0]]
    for code, out, err in (r for i, r in enumerate(results) if i not in winners):
        assert code == 1 and out == ""
        assert "is already approved by %s until %s" % (approval["user"], approval["expires"]) in err, err
    stored = [r for r in writes_seen(api_server) if r.status == 200]
    assert len(stored) == 1


def test_approve_racing_revoke_never_loses_a_decision(plugin, api_server, tmp_path):
    name = api_server.fixture_name("awaiting-approval")
    alice = api_server.write_kubeconfig(str(tmp_path / "a"), user="approver-01")
    bob = api_server.write_kubeconfig(str(tmp_path / "b"), user="approver-02")
    results = _finish([_start(plugin, ["approve", name, "--reason", "go"], alice, tmp_path),
                       _start(plugin, ["revoke", name, "--reason", "stop"], bob, tmp_path)])
    stored = spec(api_server, "awaiting-approval")
    assert results[0][0] == 0 and stored["approval"]["user"] == "approver-01"
    if results[1][0] == 0:  # revoke ran after the approval: both recorded
        assert stored["revocation"]["user"] == "approver-02"
    else:  # revoke ran first: refused, saying why, and nothing half-written
        assert "is not approved" in results[1][2] and "revocation" not in stored


def test_two_acknowledgements_racing_record_one(plugin, api_server, tmp_path):
    name = api_server.fixture_name("awaiting-acknowledgement")
    before = len(spec(api_server, "awaiting-acknowledgement").get("acknowledgements") or [])
    configs = [api_server.write_kubeconfig(str(tmp_path / u), user=u) for u in ("approver-01", "approver-02")]
    results = _finish([_start(plugin, ["acknowledge", name], c, tmp_path) for c in configs])
    after = spec(api_server, "awaiting-acknowledgement")["acknowledgements"]
    assert len(after) == before + 1
    assert sorted(code for code, _, _ in results) == [0, 1]
    loser = [err for code, _, err in results if code == 1][0]
    assert "is already acknowledged by %s" % after[-1]["user"] in loser


@pytest.mark.parametrize("command", [["approve", "--reason", "r"], ["revoke", "--reason", "r"], ["acknowledge"]])
def test_without_self_subject_review_nothing_is_written(run, api_server, kubeconfig_for, command):
    """A server that refuses SelfSubjectReview (as Kubernetes before 1.28 does): a clear error, no write."""
    grants = list(api_server.grants)
    api_server.grants[:] = [g for g in grants if "selfsubjectreviews" not in repr(g)]
    try:
        result = run(command[0], api_server.fixture_name("awaiting-acknowledgement"), *command[1:],
                     kubeconfig=kubeconfig_for("bob@example.com"))
    finally:
        api_server.grants[:] = grants
    assert result.returncode == 1
    assert "refused the SelfSubjectReview" in result.stderr and "nothing was written" in result.stderr
    assert [r.method for r in api_server.requests] == ["POST"]


@pytest.mark.parametrize("args,words", [
    (["--expires", "1ms"], "would end the approval almost at once"),
    (["--expires", "59s"], "would end the approval almost at once"),
    (["--expires", "3000000h"], "longer than Go's largest duration"),
    (["--expires", "9999999999999999999h"], "longer than Go's largest duration"),
])
def test_expiries_that_would_waste_or_break_an_approval_are_refused(run, api_server, kubeconfig_for, args, words):
    result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r", *args,
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 2 and words in result.stderr
    assert api_server.requests == []


@pytest.mark.parametrize("reason,words", [("   ", "must not be blank"), ("a\nb", "one line of printable text"),
                                          ("x\x1b[31m", "one line of printable text")])
def test_reasons_that_are_blank_or_hold_control_characters_are_refused(run, api_server, kubeconfig_for, reason,
                                                                       words):
    result = run("revoke", api_server.fixture_name("approved-rolling-out"), "--reason", reason,
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 2 and words in result.stderr and "\x1b" not in result.stderr


def test_approve_refuses_an_unverified_report_and_warns_before_writing_when_allowed(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("tampered-report")
    refused = run("approve", name, "--reason", "r", "--expires", "100h", kubeconfig=kubeconfig_for())
    assert refused.returncode == 3 and "is not verified" in refused.stderr and writes_seen(api_server) == []
    result = run("approve", name, "--reason", "r", "--expires", "100h", "--allow-unverified-report",
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    warnings = result.stderr.splitlines()
    assert any(w.startswith("warning: approving rollout ") and "is not verified" in w for w in warnings)
    assert any(w.startswith("warning: the approval (until ") and "outlasts the rollout's deadline" in w
               for w in warnings)


def test_times_come_from_the_api_servers_clock(run, api_server, kubeconfig_for, monkeypatch):
    """Times written are the API server's (its Date header), not this machine's: here the server runs a day ahead."""
    import email.utils
    import time
    import tests.support.apiserver
    monkeypatch.setattr(tests.support.apiserver._Handler, "date_time_string",
                        lambda self, timestamp=None: email.utils.formatdate(time.time() + 86400, usegmt=True))
    result = run("revoke", api_server.fixture_name("approved-rolling-out"), "--reason", "r",
                 kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    recorded = parse(spec(api_server, "approved-rolling-out")["revocation"]["time"])
    ahead = (recorded - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    assert 86400 - 30 < ahead < 86400 + 30


def test_unused_flags_are_accepted_with_a_warning(run, api_server, kubeconfig_for):
    result = run("describe", api_server.fixture_name("install"), "--reason", "r", kubeconfig=kubeconfig_for())
    assert result.returncode == 0
    assert result.stderr == "warning: kubectl aicr describe does not use --reason; it was ignored\n"


def test_a_rollout_that_keeps_changing_elsewhere_is_approved_at_once(run, api_server, kubeconfig_for):
    """A busy controller bumps the resourceVersion all the time: the write tests the facts the approval rests
    on, not the resourceVersion, so unrelated status writes never stop it (one PATCH, stored)."""
    from tests.support.interpositions import busy_operator
    name = api_server.fixture_name("awaiting-approval")
    api_server.clear_requests()
    with busy_operator(api_server, name):
        result = run("approve", name, "--reason", "r", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    patches = [r for r in api_server.requests if r.method == "PATCH"]
    assert [r.status for r in patches] == [200]
    assert spec(api_server, "awaiting-approval")["approval"]["user"] == "alice@example.com"
