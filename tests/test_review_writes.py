"""A second break-it review of the write path (after issue 20): describe's decision line offers only commands
that work, and a write command decides only on the rollout it was asked about.

Each test runs the built file against the test API server (tests/support/apiserver/), as a user does.
"""

import datetime
import email.utils
import shlex
import signal
import subprocess
import time

import pytest

from tests.support.plugin import base_env, plugin_command
from tests.support.variants import patches as _patches, put_variant as _put_variant

pytestmark = pytest.mark.e2e

ALICE = "alice@example.com"
BOB = "bob@example.com"


def _decision_line(result):
    """The words of describe's ``Decide on exactly this:`` line after ``kubectl aicr``, or None."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("Decide on exactly this: ")]
    if not lines:
        return None
    words = shlex.split(lines[0][len("Decide on exactly this: "):])
    assert words[:2] == ["kubectl", "aicr"], lines[0]
    return words[2:]


def _offered_line_works_or_none(run, kubeconfig, name):
    """Run describe on ``name``; when it offers a line, run it as a user does (a reason typed after
    ``--reason``) and return the result; None when it offers none."""
    described = run("describe", name, kubeconfig=kubeconfig)
    words = _decision_line(described)
    if words is None:
        return None
    if words[-1] == "--reason":
        words.append("Checked by hand")
    return run(*words, kubeconfig=kubeconfig)


def _now_text():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_no_acknowledge_line_for_a_release_already_acknowledged(run, api_server, kubeconfig_for):
    """Bob acknowledged nvsentinel and the operator has not moved on yet: acknowledge refuses it ("already
    acknowledged"), so describe must not offer it."""
    def edit(obj):
        obj["spec"]["acknowledgements"].append({"release": "nvsentinel", "user": BOB, "time": _now_text()})
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    result = _offered_line_works_or_none(run, kubeconfig_for(ALICE), name)
    assert result is None, (result.returncode, result.stderr)
    assert _patches(api_server) == []


def test_no_acknowledge_line_for_an_empty_release(run, api_server, kubeconfig_for):
    """status.awaitingAcknowledgement.release "": the line would be ``--release=`` (a usage error, exit 2)."""
    def edit(obj):
        obj["status"]["awaitingAcknowledgement"]["release"] = ""
    name = _put_variant(api_server, "awaiting-acknowledgement", edit)
    result = _offered_line_works_or_none(run, kubeconfig_for(ALICE), name)
    assert result is None, (result.returncode, result.stderr)


def test_no_approve_line_while_the_clocks_disagree(run, api_server, kubeconfig_for):
    """approve refuses while the API server's clock is more than 5 minutes from this machine's (without
    --allow-clock-skew), so describe offers no approve line then, and says why."""
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=30)
    api_server.header_values["Date"] = email.utils.format_datetime(when, usegmt=True)
    kubeconfig = kubeconfig_for(ALICE)
    name = api_server.fixture_name("awaiting-approval")
    try:
        described = run("describe", name, kubeconfig=kubeconfig)
        result = _offered_line_works_or_none(run, kubeconfig, name)
    finally:
        api_server.header_values.clear()
    assert result is None, (result.returncode, result.stderr)
    assert "the server is 30m" in described.stderr and "behind, more than 5m0s" in described.stderr
    assert _patches(api_server) == []


@pytest.mark.parametrize("role,command,args", [
    ("awaiting-approval", "approve", ["--reason", "r"]),
    ("approved-rolling-out", "revoke", ["--reason", "r"]),
    ("awaiting-acknowledgement", "acknowledge", []),
])
def test_a_rollout_read_under_another_name_is_never_decided_on(run, api_server, kubeconfig_for, monkeypatch, role,
                                                             command, args):
    """A hostile server answers GET of rollout A with rollout B (its name, UID and facts): the command would show
    "approving rollout B" and send the PATCH for A. Refused before writing, naming both."""
    asked = api_server.fixture_name(role)
    other = api_server.get_object("RuntimeRollout", asked)
    other["metadata"]["name"] = "rollout-decoy-1"
    original = api_server._get

    def wrong(res, a):
        code, obj = original(res, a)
        if res.plural == "runtimerollouts" and a.name == asked:
            return code, other
        return code, obj
    monkeypatch.setattr(api_server, "_get", wrong)
    result = run(command, asked, *args, kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    assert "rollout-decoy-1" in result.stderr and asked in result.stderr
    assert "nothing was written" in result.stderr.splitlines()[-1]
    assert _patches(api_server) == []


# ---------------------------------------------------------------------------------------------
# A 409 may answer a write that was stored (README, "A write whose outcome is unknown"): until the read after
# it shows otherwise, the outcome is unknown, never "nothing was written".

WRITES = {"approve": ("awaiting-approval", ["--reason", "r"], "approval"),
          "revoke": ("approved-rolling-out", ["--reason", "r"], "revocation"),
          "acknowledge": ("awaiting-acknowledgement", [], "acknowledgements")}


def _stored(api_server, name, field):
    spec = api_server.get_object("RuntimeRollout", name)["spec"]
    if field == "acknowledgements":
        return any(entry.get("user") == ALICE for entry in spec.get(field) or [])
    return field in spec


def _after_a_stored_conflict(api_server, monkeypatch, answer):
    """The next PATCH is stored and answered 409 (the store-conflict fault); the first GET of a rollout after
    it is answered by ``answer()`` (an (HTTP status, body) pair), every later one as usual."""
    api_server.set_fault("store-conflict", count=1, method="PATCH")
    original = api_server._get
    state = {"answered": False}

    def get(res, a):
        patched = any(r.method == "PATCH" for r in api_server.requests)
        if res.plural == "runtimerollouts" and patched and not state["answered"]:
            state["answered"] = True
            return answer()
        return original(res, a)
    monkeypatch.setattr(api_server, "_get", get)
    return state


@pytest.mark.parametrize("command", sorted(WRITES))
def test_an_error_reading_again_after_a_conflict_may_have_been_recorded(run, api_server, kubeconfig_for,
                                                                        monkeypatch, command):
    """store-conflict, then the read again answered 503: the write is stored, so exit 1 ("an API error") would
    report a stored decision as failed; exit 4, "the write may have been recorded"."""
    role, args, field = WRITES[command]
    name = api_server.fixture_name(role)
    from tests.support.apiserver.status import status
    _after_a_stored_conflict(api_server, monkeypatch,
                             lambda: (503, status(503, "ServiceUnavailable", "etcd is unavailable")))
    result = run(command, name, *args, kubeconfig=kubeconfig_for(ALICE))
    assert _stored(api_server, name, field)
    assert result.returncode in (0, 4), result.stderr
    if result.returncode == 4:
        assert "the write may have been recorded; check with kubectl aicr describe %s" % name in result.stderr


@pytest.mark.parametrize("command", sorted(WRITES))
def test_ctrl_c_while_reading_again_after_a_conflict_is_never_nothing_written(plugin, api_server, tmp_path,
                                                                              monkeypatch, command):
    """store-conflict, then Ctrl-C while the read again is under way: the write is stored; "interrupted
    before the write was sent; nothing was written" (exit 130) is false. The one read after an interrupt
    shows it recorded: exit 0."""
    role, args, field = WRITES[command]
    name = api_server.fixture_name(role)
    import threading
    release = threading.Event()

    def hang():
        release.wait(20)
        return 503, {}
    _after_a_stored_conflict(api_server, monkeypatch, hang)
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), user=ALICE)
    process = subprocess.Popen(plugin_command(plugin) + [command, name] + args,
                               env=dict(base_env(tmp_path), KUBECONFIG=str(kubeconfig)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
                any(r.method == "PATCH" for r in api_server.requests)
                and sum(r.method == "GET" for r in api_server.requests) >= 2):
            time.sleep(0.02)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        release.set()
    assert _stored(api_server, name, field)
    assert "nothing was written" not in err, err
    assert process.returncode in (0, 4), err


def test_a_refusal_counted_on_a_skewed_server_clock_names_the_clock(run, api_server, kubeconfig_for):
    """The API server's clock a day ahead: by it the deadline (4 hours ahead by every other clock) has passed.
    approve said only "its deadline ... has passed ... give --expires", and with --expires it then refused for
    the clocks; the first refusal names the clocks too."""
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    api_server.header_values["Date"] = email.utils.format_datetime(when, usegmt=True)
    try:
        result = run("approve", api_server.fixture_name("awaiting-approval"), "--reason", "r",
                     kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 1, result.stderr
    error = result.stderr.splitlines()[-1]
    assert "has passed" in error and "counted on the API server's clock" in error, error
    assert "the server is 23h59m ahead" in error or "the server is 1d0h ahead" in error, error
    assert _patches(api_server) == []


def test_no_approve_line_for_a_malformed_revocation(run, api_server, kubeconfig_for):
    """spec.revocation a string on a rollout awaiting approval: approve refuses the malformed rollout, so
    describe offers no approve line."""
    def edit(obj):
        obj["spec"]["revocation"] = "oops"
    name = _put_variant(api_server, "awaiting-approval", edit)
    result = _offered_line_works_or_none(run, kubeconfig_for(ALICE), name)
    assert result is None, (result.returncode, result.stderr)
    assert _patches(api_server) == []


# ---------------------------------------------------------------------------------------------
# A server clock at the edge of the calendar


def test_acknowledge_on_a_server_clock_in_year_1_is_one_refusal_not_a_crash(run, api_server, kubeconfig_for):
    """Date: year 0001: ``now - 10 minutes`` overflowed (exit 70, internal error). Every acknowledgement then
    reads later than the API server's clock: the plain form refuses, as for any time later than that clock."""
    api_server.header_values["Date"] = "Mon, 01 Jan 0001 00:04:00 GMT"
    try:
        result = run("acknowledge", api_server.fixture_name("awaiting-acknowledgement"),
                     kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    assert "later than the API server's clock" in result.stderr.splitlines()[-1], result.stderr
    assert _patches(api_server) == []


def test_times_before_year_1000_are_written_in_rfc_3339(run, api_server, kubeconfig_for):
    """strftime's %Y writes year 1 as "1" on glibc: the time a write sends ("1-01-01T00:04:00Z") and the times
    shown were not RFC 3339. Four digits, always."""
    api_server.header_values["Date"] = "Mon, 01 Jan 0001 00:04:00 GMT"
    try:
        result = run("revoke", api_server.fixture_name("approved-rolling-out"), "--reason", "r", "--dry-run=client",
                     kubeconfig=kubeconfig_for(ALICE))
    finally:
        api_server.header_values.clear()
    assert result.returncode == 0, result.stderr
    assert "says 0001-01-01T00:04:" in result.stderr, result.stderr
    assert '"time": "0001-01-01T00:04:' in result.stdout, result.stdout


# ---------------------------------------------------------------------------------------------
# The command acknowledge's recent-move refusal offers is bound to the rollout it refused


def _moved_on_two_minutes_ago(obj):
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=2)
    obj["spec"]["acknowledgements"].append({"release": "nvsentinel", "user": BOB,
                                            "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ")})
    obj["status"]["awaitingAcknowledgement"] = {"release": "kai-scheduler"}


def _offered_by_refusal(result):
    error = result.stderr.splitlines()[-1]
    assert "if you did the post-apply steps of kai-scheduler: " in error, error
    words = shlex.split(error.split("if you did the post-apply steps of kai-scheduler: ", 1)[1])
    assert words[:2] == ["kubectl", "aicr"], error
    return words[2:]


def test_the_command_a_recent_move_refusal_offers_is_bound_to_the_rollout_refused(run, api_server, kubeconfig_for):
    """The refusal offered ``kubectl aicr acknowledge R --release=kai-scheduler``: without the refused
    rollout's UID, pasted in a shell whose context (or --context, --kubeconfig) differs, or after the
    rollout was recreated, it acknowledges another rollout of that name (the same plan on another cluster has
    the same name). It carries --expect-uid and --expect-digest, as describe's line does: pasted as it is it
    works; after the rollout was deleted and created again it refuses and writes nothing."""
    name = _put_variant(api_server, "awaiting-acknowledgement", _moved_on_two_minutes_ago)
    kubeconfig = kubeconfig_for(ALICE)
    refused = run("acknowledge", name, kubeconfig=kubeconfig)
    assert refused.returncode == 1, refused.stderr
    words = _offered_by_refusal(refused)
    obj = api_server.get_object("RuntimeRollout", name)
    assert "--expect-uid=" + obj["metadata"]["uid"] in words, words
    assert any(word.startswith("--expect-digest=sha256:") for word in words), words
    from tests.support import interpositions
    api_server._apply_action(interpositions.recreated(obj, None)[0])  # the same name, a new UID
    again = run(*words, kubeconfig=kubeconfig)
    assert again.returncode == 1 and "--expect-uid" in again.stderr, again.stderr
    assert _patches(api_server) == []


def test_the_command_a_recent_move_refusal_offers_works_as_pasted(run, api_server, kubeconfig_for):
    name = _put_variant(api_server, "awaiting-acknowledgement", _moved_on_two_minutes_ago)
    kubeconfig = kubeconfig_for(ALICE)
    words = _offered_by_refusal(run("acknowledge", name, kubeconfig=kubeconfig))
    pasted = run(*words, kubeconfig=kubeconfig)
    assert pasted.returncode == 0, pasted.stderr
    acks = api_server.get_object("RuntimeRollout", name)["spec"]["acknowledgements"]
    assert acks[-1]["release"] == "kai-scheduler" and acks[-1]["user"] == ALICE


# ---------------------------------------------------------------------------------------------
# describe's line keeps the connection the describe used


@pytest.mark.parametrize("role", ["awaiting-approval", "approved-rolling-out", "awaiting-acknowledgement"])
def test_the_decision_line_keeps_the_kubeconfig_context_and_identity_describe_used(run, api_server, tmp_path, role):
    """``kubectl aicr describe R --kubeconfig K --context bob``: the line offered was ``kubectl aicr approve R
    --expect-uid=...``, which, pasted, runs against the shell's own kubeconfig and context: another cluster's
    rollout of that name (the same plan has the same name everywhere), refused only by --expect-uid, with "it
    was deleted and created again". The line carries the --kubeconfig, --context (and --as, --operator-namespace)
    describe was given; pasted in a shell with another KUBECONFIG it acts, as bob, on the rollout described."""
    kubeconfig = api_server.write_kubeconfig_all(str(tmp_path / "kc-all"))
    name = api_server.fixture_name(role)
    described = run("describe", name, "--kubeconfig", kubeconfig, "--context", "bob", "--operator-namespace",
                    "aicr-system", kubeconfig=str(tmp_path / "no-such-kubeconfig"))
    words = _decision_line(described)
    assert words is not None, described.stdout + described.stderr
    assert "--kubeconfig=" + kubeconfig in words and "--context=bob" in words, words
    if words[-1] == "--reason":
        words.append("Checked by hand")
    pasted = run(*words, kubeconfig=str(tmp_path / "no-such-kubeconfig"))
    assert pasted.returncode == 0, pasted.stderr
    assert "warning: " not in pasted.stderr, pasted.stderr  # no flag the command does not use
    spec = api_server.get_object("RuntimeRollout", name)["spec"]
    written = spec.get("revocation") if role == "approved-rolling-out" else (
        spec["acknowledgements"][-1] if role == "awaiting-acknowledgement" else spec["approval"])
    assert written["user"] == BOB, written


@pytest.mark.parametrize("command", sorted(WRITES))
def test_check_with_describe_names_the_context_the_write_used(run, api_server, tmp_path, monkeypatch, command):
    """Exit 4 says "check with kubectl aicr describe R": run in the shell as it is, without the --kubeconfig and
    --context the write was given, it describes another cluster's rollout of that name (which may well show
    nothing recorded, and a decision line). The command to check with carries them."""
    role, args, _ = WRITES[command]
    name = api_server.fixture_name(role)
    kubeconfig = api_server.write_kubeconfig_all(str(tmp_path / "kc-all"))
    api_server.set_fault("store-etcd-500", method="PATCH")  # the write stored, answered 500
    original = api_server._get
    from tests.support.apiserver.status import status

    def get(res, a):  # and every read after it fails
        if res.plural == "runtimerollouts" and any(r.method == "PATCH" for r in api_server.requests):
            return 503, status(503, "ServiceUnavailable", "etcd is unavailable")
        return original(res, a)
    monkeypatch.setattr(api_server, "_get", get)
    result = run(command, name, "--kubeconfig", kubeconfig, "--context", "bob", *args,
                 kubeconfig=str(tmp_path / "no-such-kubeconfig"))
    assert result.returncode == 4, result.stderr
    assert result.stderr.splitlines()[-1].endswith(
        "the write may have been recorded; check with kubectl aicr describe %s --kubeconfig=%s --context=bob"
        % (name, kubeconfig)), result.stderr
