"""A second break-it review of the write path (after issue 20): describe's decision line offers only commands
that work, and a write command decides only on the rollout it was asked about.

Each test runs the built file against the test API server (tests/support/apiserver/), as a user does.
"""

import datetime
import email.utils
import shlex

import pytest

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
