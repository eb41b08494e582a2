"""describe, end to end: dist/kubectl-aicr as a process against the HTTPS test API server."""

import re

import pytest

from tests.support.plugin import describe
from tests.support.text import check_awaiting_approval, field

pytestmark = pytest.mark.e2e


def test_upgrade_awaiting_approval_with_verified_report(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="awaiting-approval", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    check_awaiting_approval(result.stdout, api_server.fixture("awaiting-approval"))
    assert result.stderr == ""


def test_initial_install(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="install", kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert field(result.stdout, "Transition") == "none (initial install)"
    assert field(result.stdout, "Approval") == "not required"
    assert "Assessment: none" in result.stdout.splitlines()
    assert re.search(r"^  gpu-operator\s+Install\s+safe\s+yes\s+InFlight: Waiting", result.stdout, re.M)


def test_tampered_report_is_never_shown_and_exits_non_zero(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="tampered-report", kubeconfig=kubeconfig_for())
    assert result.returncode == 3
    assert field(result.stdout, "Assessment").startswith("NOT VERIFIED, NOT SHOWN: ")
    assert "COMPONENT" not in result.stdout  # no report rows at all
    assert field(result.stdout, "Phase") == "AwaitingApproval"  # the rest is printed
    assert result.stderr.startswith("error: assessment report not verified: ")
    assert len(result.stderr.splitlines()) == 1


def test_missing_report_is_not_verified(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="report-missing", kubeconfig=kubeconfig_for())
    assert result.returncode == 1  # unavailable, not a content mismatch (that is exit 3)
    assert "was not found" in field(result.stdout, "Assessment")


def test_approved_revoked_and_acknowledged_are_shown(run, api_server, kubeconfig_for):
    approved = api_server.fixture("approved-rolling-out")
    out = describe(run, api_server, role="approved-rolling-out", kubeconfig=kubeconfig_for()).stdout
    approval = approved["spec"]["approval"]
    assert field(out, "Approval").startswith("approved by %s until %s (expires in " % (approval["user"],
                                                                                     approval["expires"]))
    assert field(out, "Approval reason") == approval["reason"]
    revoked = api_server.fixture("revoked")
    result = describe(run, api_server, role="revoked", kubeconfig=kubeconfig_for())
    assert field(result.stdout, "Outcome") == "Revoked"
    assert field(result.stdout, "Revocation").startswith("revoked by %s at " % revoked["spec"]["revocation"]["user"])
    waiting = api_server.fixture("awaiting-acknowledgement")
    out = describe(run, api_server, role="awaiting-acknowledgement", kubeconfig=kubeconfig_for()).stdout
    for ack in waiting["spec"]["acknowledgements"]:
        assert "Acknowledged: %s by %s at %s" % (ack["release"], ack["user"], ack["time"]) in out


def test_reader_may_describe(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="awaiting-approval", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0


def test_not_found_is_printed_as_kubectl_prints_it(run, api_server, kubeconfig_for):
    result = run("describe", "nope", kubeconfig=kubeconfig_for())
    assert result.returncode == 1
    assert result.stderr == 'error: runtimerollouts.operator.aicr.run "nope" not found\n'
    assert result.stdout == ""


def test_stranger_is_forbidden_in_one_line(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="install", kubeconfig=kubeconfig_for("mallory@example.com"))
    assert result.returncode == 1
    assert result.stderr.startswith('error: runtimerollouts.operator.aicr.run "rollout-')
    assert 'is forbidden: User "mallory@example.com" cannot get resource "runtimerollouts"' in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("style", ["cert-files", "cert-data", "token"])
def test_every_credential_style_authenticates_as_its_user(run, api_server, kubeconfig_for, style):
    result = run("describe", api_server.fixture_name("install"),
                 kubeconfig=kubeconfig_for("alice@example.com", style=style))
    assert result.returncode == 0, result.stderr
    seen = [r for r in api_server.requests if r.path.startswith("/apis/operator.aicr.run")]
    assert seen and all(r.user == "alice@example.com" for r in seen), seen


def test_two_requests_share_one_connection(run, api_server, kubeconfig_for):
    result = describe(run, api_server, role="awaiting-approval", kubeconfig=kubeconfig_for())
    assert result.returncode == 0
    requests = api_server.requests
    assert [r.method for r in requests] == ["GET", "GET"]
    assert len({r.connection_id for r in requests}) == 1


def test_ca_data_verifies_and_untrusted_server_fails_in_one_line(run, api_server, kubeconfig_for, tmp_path):
    assert run("describe", api_server.fixture_name("install"),
               kubeconfig=kubeconfig_for(ca="data")).returncode == 0
    result = run("describe", "x", kubeconfig=kubeconfig_for(ca=None), env={"SSL_CERT_FILE": "/nonexistent"})
    assert result.returncode == 1
    assert result.stderr.startswith("error: TLS: the certificate of server %s is not trusted" % api_server.url)
    assert len(result.stderr.splitlines()) == 1


def test_connection_refused_names_the_server(run, api_server, kubeconfig_for):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = "https://127.0.0.1:%d" % port
    result = run("describe", "x", kubeconfig=kubeconfig_for(server=server))
    assert result.returncode == 1
    assert result.stderr == "error: cannot connect to server %s: connection refused\n" % server


def test_the_target_plan_describe_prints_is_what_reproduce_takes(run, api_server, kubeconfig_for, tmp_path):
    out = describe(run, api_server, role="awaiting-approval", kubeconfig=kubeconfig_for()).stdout
    target = field(out, "Target plan")
    assert re.fullmatch(r"sha256:[0-9a-f]{16}", target)
    result = run("reproduce", target, "--dir", tmp_path / "r", kubeconfig=kubeconfig_for("alice@example.com"))
    assert result.returncode == 0, result.stderr
    assert field(result.stdout, "Plan").startswith(api_server.fixture("awaiting-approval")["spec"]["to"][
        "desiredStateDigest"] + " (ConfigMap aicr-plan-%s; found by its digest prefix)" % target[7:])
