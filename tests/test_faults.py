"""Broken networks and hostile servers: one clear error line, inside the 30-second deadline, no redirects."""

import os
import subprocess
import time

import pytest

from tests.support.apiserver import APIServer
from tests.support.plugin import FIXTURES, base_env, plugin_command

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("fault,words", [
    ("reset", "reset the connection"),
    ("close-mid-body", "closed the connection in the middle of a response"),
    ("html-500", "answered GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/"),
    ("redirect", "with a redirect (HTTP 302); redirects are not followed"),
    ("huge", "over the"),
])
def test_fault_is_one_clear_line(run, api_server, kubeconfig_for, fault, words):
    api_server.set_fault(fault)
    started = time.monotonic()
    result = run("describe", api_server.fixture_name("install"), kubeconfig=kubeconfig_for())
    assert time.monotonic() - started < 25
    assert result.returncode == 1, result
    assert result.stderr.startswith("error: ") and words in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""
    if fault == "html-500":
        assert "HTTP 500" in result.stderr and "<html>" not in result.stderr
    if fault == "redirect":
        assert not any("sso.example.invalid" in r.path for r in api_server.requests)


@pytest.mark.parametrize("framing", ["chunked", "interim", "http10-close", "folded-header"])
def test_every_framing_http_1_1_allows_reads_the_same_answer(run, api_server, kubeconfig_for, framing):
    """The plugin's own HTTP/1.1 reader (kube/http1.py) against answers framed as RFC 9112 allows: chunked
    with extensions and a trailer, interim 1xx answers first, HTTP/1.0 ending at the close, a folded header."""
    name = api_server.fixture_name("awaiting-approval")
    plain = run("describe", name, kubeconfig=kubeconfig_for())
    api_server.set_fault(framing)
    framed = run("describe", name, kubeconfig=kubeconfig_for())
    api_server.set_fault(None)
    assert plain.returncode == 0 and plain.stdout.startswith("Name:"), plain.stderr
    assert (framed.returncode, framed.stdout, framed.stderr) == (0, plain.stdout, plain.stderr)


@pytest.mark.parametrize("framing,words", [("bad-chunk", "malformed chunk size"),
                                           ("two-lengths", "different Content-Length values")])
def test_a_wrongly_framed_answer_is_one_clear_line(run, api_server, kubeconfig_for, framing, words):
    api_server.set_fault(framing)
    result = run("describe", api_server.fixture_name("awaiting-approval"), kubeconfig=kubeconfig_for())
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: server https://") and "sent a malformed HTTP response" in result.stderr
    assert words in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr


def test_a_kept_alive_connection_closed_while_idle_is_dialed_again(run, api_server, kubeconfig_for):
    """The server closes every connection after its answer, without saying so (an idle timeout in a proxy):
    each next request goes on a new connection, as Go's transport does; a write is sent once."""
    name = api_server.fixture_name("awaiting-approval")
    plain = run("describe", name, kubeconfig=kubeconfig_for())
    api_server.set_fault("idle-close")
    described = run("describe", name, kubeconfig=kubeconfig_for())
    assert (described.returncode, described.stdout) == (0, plain.stdout), described.stderr
    api_server.clear_requests()
    approved = run("approve", name, "--reason", "window", "--expires", "1h", kubeconfig=kubeconfig_for("bob@example.com"))
    api_server.set_fault(None)
    assert approved.returncode == 0, approved.stderr
    assert [r.method for r in api_server.requests].count("PATCH") == 1
    assert api_server.get_object("runtimerollouts", name)["spec"]["approval"]["user"] == "bob@example.com"


def test_an_unasked_answer_glued_to_the_last_is_never_taken_for_the_next(run, api_server, kubeconfig_for):
    """An unasked 408 arrives in the same write as an answer, the connection left open: the next request
    goes on a new connection (Go drops a connection with an unsolicited response), never reads the 408."""
    name = api_server.fixture_name("awaiting-approval")
    plain = run("describe", name, kubeconfig=kubeconfig_for())
    api_server.set_fault("glued-408")
    glued = run("describe", name, kubeconfig=kubeconfig_for())
    api_server.set_fault(None)
    assert (glued.returncode, glued.stdout, glued.stderr) == (0, plain.stdout, plain.stderr)


def test_credentials_never_follow_a_redirect(run, api_server, kubeconfig_for):
    api_server.set_fault("redirect")
    result = run("describe", api_server.fixture_name("install"), kubeconfig=kubeconfig_for("bob@example.com"))
    assert result.returncode == 1
    assert len(api_server.requests) == 1


def test_a_server_that_hangs_or_trickles_is_cut_at_the_deadline(plugin, tmp_path):
    """Both run at once (about 30 s together): each ends with one line inside the deadline, plus start-up."""
    processes = []
    servers = []
    try:
        for fault in ("hang", "trickle"):
            server = APIServer(fixtures_dir=FIXTURES).start()
            servers.append(server)
            server.fault_hang_seconds = 120
            server.fault_delay = 0.5
            kubeconfig = server.write_kubeconfig(str(tmp_path / fault))
            server.set_fault(fault)
            env = dict(base_env(tmp_path), KUBECONFIG=kubeconfig)
            processes.append((fault, time.monotonic(), subprocess.Popen(
                plugin_command(plugin) + ["describe", server.fixture_name("awaiting-approval")], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)))
        for fault, started, process in processes:
            out, err = process.communicate(timeout=60)
            elapsed = time.monotonic() - started
            assert process.returncode == 1, (fault, err)
            assert 29 <= elapsed < 36, (fault, elapsed)
            assert err.startswith("error: ") and "30-second deadline" in err, (fault, err)
            assert len(err.splitlines()) == 1
    finally:
        for server in servers:
            server.stop()
