"""commands/writes.py ``land`` in process, with a scripted client: what it says when it is interrupted or the
send fails before the write left, and when a write whose outcome is unknown can or cannot still land
(issue 20, "Decisions", item 4). The built plugin against the test API server: tests/test_unknown_outcome.py."""

import copy
import signal

import pytest

from kubectl_aicr import helpers, main
from kubectl_aicr.aicr import objects
from kubectl_aicr.commands import approve, revoke, writes
from kubectl_aicr.errors import AicrError, ApiError, RefusedError, TransportError, UnknownOutcome
from kubectl_aicr.kube import kubeconfig, rest
from tests.support.fixture_objects import NOW, fixture

ALICE, BOB = "alice@example.com", "bob@example.com"


class ScriptedClient:
    """``request`` and ``get`` play the next step of their script: a step is (sent?, result), where sent says
    whether the request's first byte left (``sent`` counts it) and result is a dict to return or an exception
    to raise."""

    def __init__(self, patches, reads=()):
        self.patches, self.reads = list(patches), list(reads)
        self.sent, self.closed, self.deadline = 0, 0, rest.Deadline()
        self.requests = []

    def _play(self, steps, method):
        self.requests.append(method)
        sent, result = steps.pop(0)
        self.sent += bool(sent)
        if isinstance(result, BaseException):
            raise result
        return copy.deepcopy(result)

    def request(self, method, path, query=None, body=None, content_type=None):
        return self._play(self.patches, method)

    def get(self, path, query=None):
        return self._play(self.reads, "GET")

    def close(self):
        self.closed += 1


def _approval():
    raw = fixture("awaiting-approval")
    operations = objects.approval_operations(ALICE, NOW.replace(hour=14), "window")
    return raw, writes.Decision(raw["metadata"]["name"], raw, approve.FACTS, operations)


def _revocation():
    raw = fixture("approved-rolling-out")
    operations = objects.revocation_operations(ALICE, NOW, "stop")
    return raw, writes.Decision(raw["metadata"]["name"], raw, revoke.FACTS, operations)


def _terminated(signum):
    terminated = helpers.Terminated("terminated by %s" % signal.Signals(signum).name)
    terminated.exit_code = 128 + signum
    return terminated


@pytest.fixture(autouse=True)
def _nothing_recorded():
    writes.recorded = writes.landing = None
    yield
    writes.recorded = writes.landing = None


@pytest.mark.parametrize("interrupt,code,words", [
    (KeyboardInterrupt(), 130, "interrupted"),
    (_terminated(signal.SIGTERM), 143, "terminated by SIGTERM"),
    (_terminated(signal.SIGHUP), 129, "terminated by SIGHUP"),
])
def test_interrupted_before_the_write_was_sent_says_nothing_was_written(interrupt, code, words):
    raw, decision = _approval()
    client = ScriptedClient([(False, interrupt)])
    with pytest.raises(AicrError) as caught:
        writes.land(client, decision)
    assert str(caught.value) == "%s before the write was sent; nothing was written" % words
    assert caught.value.exit_code == code and not isinstance(caught.value, UnknownOutcome)
    assert client.requests == ["PATCH"] and writes.recorded is None


def test_interrupted_after_a_refused_send_says_nothing_was_written():
    """A conflict (not stored), then the interrupt before the same patch left again."""
    raw, decision = _approval()
    conflict = ApiError("the object has been modified", code=409, reason="Conflict")
    client = ScriptedClient([(True, conflict), (False, KeyboardInterrupt())], [(True, raw)])
    with pytest.raises(AicrError) as caught:
        writes.land(client, decision)
    assert "before the write was sent; nothing was written" in str(caught.value)
    assert client.requests == ["PATCH", "GET", "PATCH"]


def test_a_send_that_failed_before_its_first_byte_is_not_read_again_nor_sent_again():
    raw, decision = _approval()
    client = ScriptedClient([(False, TransportError("cannot connect to server https://x: connection refused"))])
    with pytest.raises(TransportError) as caught:
        writes.land(client, decision)
    assert not isinstance(caught.value, UnknownOutcome)
    assert str(caught.value).endswith("connection refused; the write was not sent, nothing was written")
    assert client.requests == ["PATCH"]


@pytest.mark.parametrize("failure", [ApiError("Internal error occurred: etcdserver: request timed out", code=500),
                                     TransportError("server https://x reset the connection")])
def test_an_unknown_outcome_then_another_approval_can_never_land(failure):
    raw, decision = _approval()
    now = copy.deepcopy(raw)
    now["spec"]["approval"] = {"user": BOB, "expires": "2026-11-30T13:00:00Z", "reason": "mine"}
    client = ScriptedClient([(True, failure)], [(True, now)])
    with pytest.raises(RefusedError) as caught:
        writes.land(client, decision)
    message = str(caught.value)
    assert "already approved by %s" % BOB in message
    assert "this decision was not recorded and cannot be any more" in message
    assert client.requests == ["PATCH", "GET"]


@pytest.mark.parametrize("failure", [ApiError("Timeout: request did not complete", code=504, reason="Timeout"),
                                     TransportError("server https://x closed the connection in the middle of a "
                                                    "response")])
def test_an_unknown_outcome_then_a_phase_change_may_still_land(failure):
    """revoke pins phase RollingOut; the operator moves to AwaitingAcknowledgement and may come back, so the
    revocation still on its way may land then: never "nothing was written"."""
    raw, decision = _revocation()
    now = copy.deepcopy(raw)
    now["status"]["phase"] = "AwaitingAcknowledgement"
    client = ScriptedClient([(True, failure)], [(True, now)])
    with pytest.raises(UnknownOutcome) as caught:
        writes.land(client, decision)
    message = str(caught.value)
    assert "nothing was written" not in message and "may still land" in message
    assert message.endswith("the write may have been recorded; check with kubectl aicr describe %s"
                            % decision.name)
    assert caught.value.exit_code == 4 and client.requests == ["PATCH", "GET"]


def test_a_refusal_of_the_send_again_after_an_unknown_outcome_may_have_been_recorded():
    """The first send's outcome is unknown (503); the same patch again is refused (403): the first may still
    land."""
    raw, decision = _approval()
    client = ScriptedClient([(True, ApiError("no", code=503)), (True, ApiError("forbidden", code=403))],
                            [(True, raw)])
    with pytest.raises(UnknownOutcome) as caught:
        writes.land(client, decision)
    assert "the write sent again was refused: forbidden" in str(caught.value)


def test_an_interrupt_after_the_decision_was_stored_exits_0(monkeypatch, capsys):
    """land returned the stored rollout; Ctrl-C (or SIGTERM) before the confirmation was printed."""
    def command(invocation):
        writes.recorded = invocation.name
        raise KeyboardInterrupt()
    monkeypatch.setattr(main, "_command", lambda name: command)
    monkeypatch.setattr(helpers, "end_on_termination", lambda: {})
    assert main._main(["approve", "r-1", "--reason", "x"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: the decision on rollout r-1 was recorded, but the command was interrupted")
    assert "error:" not in err


def test_an_interrupt_before_the_write_says_nothing_was_written(monkeypatch, capsys):
    def command(invocation):
        raise _terminated(signal.SIGTERM)
    monkeypatch.setattr(main, "_command", lambda name: command)
    monkeypatch.setattr(helpers, "end_on_termination", lambda: {})
    assert main._main(["approve", "r-1", "--reason", "x"]) == 143
    assert capsys.readouterr().err == "error: terminated by SIGTERM before the write was sent; nothing was written\n"


def test_an_interrupt_that_escapes_land_after_it_began_may_have_been_recorded(monkeypatch, capsys):
    """An interrupt in the few instructions land's own handling does not cover (between two interrupts)."""
    def command(invocation):
        writes.landing = invocation.name
        raise KeyboardInterrupt()
    monkeypatch.setattr(main, "_command", lambda name: command)
    monkeypatch.setattr(helpers, "end_on_termination", lambda: {})
    assert main._main(["approve", "r-1", "--reason", "x"]) == 4
    assert capsys.readouterr().err == ("error: interrupted while the write was sent or answered; the write may "
                                       "have been recorded; check with kubectl aicr describe r-1\n")


def test_a_recognised_decision_is_recorded_even_when_stderr_is_gone(monkeypatch):
    """After SIGHUP (the terminal closed) stderr fails: the note cannot be written, the decision is still
    recorded (never an internal error)."""
    raw, decision = _approval()
    now = copy.deepcopy(raw)
    now["spec"]["approval"] = decision.operations[0]["value"]

    def gone(message):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(writes.output, "warning", gone)
    client = ScriptedClient([(True, _terminated(signal.SIGHUP))], [(True, now)])
    assert writes.land(client, decision) == now
    assert decision.confirmed and writes.recorded == decision.name and client.closed == 1


def test_the_client_counts_a_request_as_sent_only_once_it_may_have_left(api_server):
    anonymous = rest.auth.Authenticator(kubeconfig.AuthInfo(name="anonymous"))
    refused = rest.Client(rest.RESTConfig(host="https://127.0.0.1:1", cluster_name="c"), anonymous)
    with refused, pytest.raises(TransportError, match="connection refused"):
        refused.request("PATCH", "/x", body=[], content_type=writes.JSON_PATCH)
    assert refused.sent == 0
    client = rest.Client(rest.RESTConfig(host=api_server.url, cluster_name="c", ca_file=api_server.ca_file),
                         anonymous)
    with client:
        try:
            client.get("/version")
        except ApiError:  # anonymous may be refused: it was sent all the same
            pass
    assert client.sent == 1


def test_a_capped_deadline_is_as_it_was_after_the_block():
    deadline = rest.Deadline(30)
    at = deadline.at
    with deadline.capped(5):
        assert deadline.remaining() <= 5 and deadline.seconds == 5
    assert (deadline.at, deadline.seconds) == (at, 30)
    short = rest.Deadline(2)
    with short.capped(5):  # never longer than it was
        assert short.remaining() <= 2 and short.seconds == 2
