"""A stored decision is never reported as a plain failure (issue 20, "Decisions", item 4).

Every outcome of the PATCH other than a 4xx answer (which kube-apiserver gives before storing) is unknown:
a 5xx of any body, a lost answer, an interrupt (Ctrl-C, SIGTERM, SIGHUP) once its first byte was sent. The
command reads the rollout again and recognises its own entry (exit 0, a note on stderr), or says the write
may have been recorded (exit 4, errors.UnknownOutcome). The test server stores the PATCH and then answers
500/502/503/504 (Status JSON, HTML, empty), or holds the answer while the test signals the plugin process.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from tests.support.plugin import base_env, plugin_command

pytestmark = pytest.mark.e2e

ALICE = "alice@example.com"
EXIT_UNKNOWN = 4
COMMANDS = {"approve": ("awaiting-approval", ["--reason", "stored"], "approval"),
            "revoke": ("approved-rolling-out", ["--reason", "stored"], "revocation"),
            "acknowledge": ("awaiting-acknowledgement", [], "acknowledgements")}


def _patches(api_server):
    return [r for r in api_server.requests if r.method == "PATCH"]


def _alice_entries(api_server, name, field):
    value = api_server.get_object("RuntimeRollout", name)["spec"].get(field)
    values = value if isinstance(value, list) else [value] if value else []
    return [v for v in values if isinstance(v, dict) and v.get("user") == ALICE]


def _may_have_been_recorded(result, name):
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert errors[0].endswith("the write may have been recorded; check with kubectl aicr describe %s" % name)
    assert "nothing was written" not in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


# ---------------------------------------------------------------------------------------------
# 5xx answers


@pytest.mark.parametrize("command,fault", [
    ("approve", "store-etcd-500"), ("approve", "store-timeout-504"), ("approve", "store-bad-gateway-502"),
    ("approve", "store-unavailable-503"), ("approve", "store-html-500"),
    ("revoke", "store-timeout-504"), ("acknowledge", "store-etcd-500"), ("acknowledge", "store-bad-gateway-502"),
])
def test_a_stored_write_answered_with_a_5xx_is_recorded(run, api_server, kubeconfig_for, command, fault):
    role, args, field = COMMANDS[command]
    name = api_server.fixture_name(role)
    api_server.set_fault(fault, count=1, method="PATCH")
    result = run(command, name, *args, kubeconfig=kubeconfig_for(ALICE))
    assert len(_alice_entries(api_server, name, field)) == 1, "the fault must store the write"
    assert result.returncode == 0, result.stderr
    assert "error:" not in result.stderr
    assert "the server answered the write with HTTP %s" % fault.rsplit("-", 1)[1] in result.stderr
    assert "shows this decision recorded" in result.stderr
    assert result.stdout.startswith("rollout %s" % name) and ALICE in result.stdout
    assert [r.fault for r in _patches(api_server)] == [fault]  # never sent twice


def test_a_5xx_before_anything_was_stored_sends_the_same_patch_again(run, api_server, kubeconfig_for):
    """The re-read shows the same facts and no entry: the same pinned patch again (never a new decision)."""
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("unavailable-503", count=1, method="PATCH")
    result = run("approve", name, "--reason", "again", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    sent = _patches(api_server)
    assert [r.status for r in sent] == [503, 200]
    assert json.loads(sent[0].body) == json.loads(sent[1].body)
    assert len(_alice_entries(api_server, name, "approval")) == 1


def test_a_5xx_to_every_send_says_the_write_may_have_been_recorded(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("etcd-500", method="PATCH")
    result = run("approve", name, "--reason", "never", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == EXIT_UNKNOWN, result.stderr
    _may_have_been_recorded(result, name)
    assert "HTTP 500" in result.stderr and "etcdserver: request timed out" in result.stderr
    sent = _patches(api_server)
    assert 1 < len(sent) <= 4 and len({r.body for r in sent}) == 1  # the same decision, a bounded number of times


def test_a_429_is_not_stored_and_is_shown_as_it_came(run, api_server, kubeconfig_for):
    """The max-in-flight filter and APF answer 429 without calling the handler: a clean "not stored", never
    sent again as if unknown."""
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("too-many-429", method="PATCH")
    result = run("approve", name, "--reason", "busy", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    assert "HTTP 429" in result.stderr and "may have been recorded" not in result.stderr
    assert len(_patches(api_server)) == 1
    assert _alice_entries(api_server, name, "approval") == []


def test_a_server_dry_run_answered_with_a_5xx_is_an_error_as_it_came(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("timeout-504", method="PATCH")
    result = run("approve", name, "--reason", "dry", "--dry-run=server", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1, result.stderr
    assert "Timeout: request did not complete" in result.stderr and "may have been recorded" not in result.stderr
    assert len(_patches(api_server)) == 1


# ---------------------------------------------------------------------------------------------
# Interrupts while the answer is arriving


def _start(plugin, api_server, tmp_path, command, name, args):
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), user=ALICE)
    env = dict(base_env(tmp_path), KUBECONFIG=str(kubeconfig))
    return subprocess.Popen(plugin_command(plugin) + [command, name] + args, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, cwd=str(tmp_path))


def _wait_for(condition, what):
    deadline = time.monotonic() + 20
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert condition(), what


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_after_the_write_was_stored_is_recorded(plugin, api_server, tmp_path, signum):
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("store-hang", count=1, method="PATCH")
    process = _start(plugin, api_server, tmp_path, "approve", name, ["--reason", "stored"])
    try:
        _wait_for(lambda: _alice_entries(api_server, name, "approval"), "the write was never stored")
        process.send_signal(signum)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert out.startswith("rollout %s approved by %s" % (name, ALICE))
    assert "error:" not in err and "shows this decision recorded" in err
    assert ("interrupted" if signum == signal.SIGINT else signal.Signals(signum).name) in err
    assert len(_patches(api_server)) == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_while_the_answer_is_awaited_says_the_write_may_have_been_recorded(plugin, api_server, tmp_path,
                                                                                      signum):
    """Not stored when read again, but a write still in flight may land later: never "nothing was written",
    never sent again."""
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("hang", count=1, method="PATCH")
    process = _start(plugin, api_server, tmp_path, "approve", name, ["--reason", "held"])
    try:
        _wait_for(lambda: any(r.fault == "hang" for r in api_server.requests), "the PATCH never arrived")
        process.send_signal(signum)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == EXIT_UNKNOWN, err
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    _may_have_been_recorded(result, name)
    assert "not recorded yet" in err
    assert len(_patches(api_server)) == 1 and _alice_entries(api_server, name, "approval") == []


def test_a_second_ctrl_c_ends_the_read_again_at_once(plugin, api_server, tmp_path):
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("hang", count=1, method="PATCH")
    process = _start(plugin, api_server, tmp_path, "approve", name, ["--reason", "held"])
    try:
        _wait_for(lambda: any(r.fault == "hang" for r in api_server.requests), "the PATCH never arrived")
        api_server.set_fault("hang")  # the read again is held too
        process.send_signal(signal.SIGINT)
        _wait_for(lambda: [r.method for r in api_server.requests if r.fault == "hang"] == ["PATCH", "GET"],
                  "the rollout was never read again")
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
        ended = time.monotonic() - sent
    finally:
        process.kill()
    assert ended < 2, ended
    assert process.returncode == EXIT_UNKNOWN, err
    _may_have_been_recorded(subprocess.CompletedProcess(process.args, process.returncode, out, err), name)
    assert "and interrupted again" in err
    assert len(_patches(api_server)) == 1


def test_the_read_after_an_interrupt_is_bounded(plugin, api_server, tmp_path):
    """The read again is held too, and nobody presses Ctrl-C again: it ends after about 5 seconds."""
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("hang", count=1, method="PATCH")
    process = _start(plugin, api_server, tmp_path, "approve", name, ["--reason", "held"])
    try:
        _wait_for(lambda: any(r.fault == "hang" for r in api_server.requests), "the PATCH never arrived")
        api_server.set_fault("hang")
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
        ended = time.monotonic() - sent
    finally:
        process.kill()
    assert 4.5 <= ended < 8, ended
    assert process.returncode == EXIT_UNKNOWN, err
    _may_have_been_recorded(subprocess.CompletedProcess(process.args, process.returncode, out, err), name)
    assert "terminated by SIGTERM while the write was sent or answered" in err and "5-second deadline" in err
    assert len(_patches(api_server)) == 1


# ---------------------------------------------------------------------------------------------
# Sending the same patch again is safe


@pytest.mark.parametrize("delay", [0.0, 1.5])
def test_a_write_delivered_late_after_a_lost_answer_lands_once(run, api_server, kubeconfig_for, delay):
    """The connection is reset, and the PATCH is carried out all the same, at once or after the same patch was
    sent again (a proxy delivering it late): whichever comes second fails its pinned tests, so the decision is
    recorded once and the command says so; a resend is never a second decision."""
    name = api_server.fixture_name("awaiting-approval")
    held, api_server.fault_delay = api_server.fault_delay, delay
    del api_server.late_answers[:]
    try:
        api_server.set_fault("reset-store-later", count=1, method="PATCH")
        result = run("approve", name, "--reason", "late", kubeconfig=kubeconfig_for(ALICE))
        _wait_for(lambda: api_server.late_answers, "the reset PATCH was never carried out")
    finally:
        api_server.fault_delay = held
    assert result.returncode == 0, result.stderr
    assert len(_alice_entries(api_server, name, "approval")) == 1
    outcomes = api_server.late_answers + [r.status for r in _patches(api_server)[1:]]
    assert outcomes.count(200) == 1 and set(outcomes) <= {200, 422}, outcomes
    assert result.stdout.startswith("rollout %s approved by %s" % (name, ALICE))
