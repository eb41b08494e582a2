"""--as, --as-group, --as-uid: the Impersonate-* headers the real kubectl sends for the same kubeconfig and flags
(the oracle, seen in the test server's request log), and the identity that approve records under impersonation."""

import os
import subprocess

import pytest

from tests.support.apiserver import _write_yaml
from tests.support.plugin import VENV_BIN, base_env

pytestmark = pytest.mark.e2e

ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
KUBECONFIG_AS = {"as": "bob@example.com", "as-groups": ["kg1", "kg2"], "as-uid": "kuid",
                 "as-user-extra": {"reason": ["change 42"]}}


def admin_kubeconfig(api_server, path, impersonation=None):
    config = api_server.kubeconfig(users=["admin"])
    config["users"][0]["user"].update(impersonation or {})
    return _write_yaml(str(path), config)


def headers(record):
    """The Impersonate-* headers of one request, names lower-cased (HTTP names are case-insensitive; Go
    canonicalises them, Python keeps them as written)."""
    return {name.lower(): values for name, values in record.impersonation.items()}


def kubectl_request(api_server, kubeconfig, flags, tmp_path):
    api_server.clear_requests()
    env = dict(base_env(tmp_path), KUBECONFIG=str(kubeconfig))
    result = subprocess.run([os.path.join(VENV_BIN, "kubectl")] + flags + ["get", "--raw", ROLLOUTS], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    records = [r for r in api_server.requests if r.path == ROLLOUTS]
    assert len(records) <= 1, result.stderr
    return result, records[0] if records else None


@pytest.mark.parametrize("in_kubeconfig", [False, True])
@pytest.mark.parametrize("flags", [
    ["--as", "carol@example.com", "--as-group", "aicr-readers", "--as-group", "g2", "--as-uid", "u1"],
    ["--as", "carol@example.com", "--as-group", "aicr-readers"],
    ["--as", "carol@example.com"],
    ["--as-group", "aicr-readers"],
    ["--as-uid", "u2"],
    [],
])
def test_headers_match_kubectl(run, api_server, tmp_path, flags, in_kubeconfig):
    kubeconfig = admin_kubeconfig(api_server, tmp_path / "kc", KUBECONFIG_AS if in_kubeconfig else None)
    kubectl, expected = kubectl_request(api_server, kubeconfig, flags, tmp_path)
    api_server.clear_requests()
    result = run("list", *flags, kubeconfig=kubeconfig)
    records = [r for r in api_server.requests if r.path == ROLLOUTS]
    assert (result.returncode == 0) == (kubectl.returncode == 0), result.stderr
    if expected is None:  # kubectl refused before sending: groups or a UID without a user to impersonate
        assert records == [] and result.stderr == kubectl.stderr
        assert "without impersonating a user" in result.stderr
        return
    assert records, result.stderr
    assert headers(records[0]) == headers(expected)
    assert records[0].user == expected.user  # the identity the server acted as


def test_approve_records_the_impersonated_user(run, api_server, tmp_path):
    kubeconfig = admin_kubeconfig(api_server, tmp_path / "kc", {"as": "mallory@example.com"})
    name = api_server.fixture_name("awaiting-approval")
    result = run("approve", name, "--reason", "on behalf of the change board", "--as", "alice@example.com",
                 "--as-group", "aicr-approvers", kubeconfig=kubeconfig)
    assert result.returncode == 0, result.stderr
    approval = api_server.get_object("RuntimeRollout", name)["spec"]["approval"]
    assert approval["user"] == "alice@example.com"
    review = [r for r in api_server.requests if r.path.endswith("/selfsubjectreviews")]
    assert review and all(headers(r)["impersonate-user"] == ["alice@example.com"] for r in api_server.requests)
    assert {r.user for r in api_server.requests} == {"alice@example.com"}


def test_impersonation_without_the_right_is_refused_and_nothing_written(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    result = run("approve", name, "--reason", "x", "--as", "alice@example.com",
                 kubeconfig=kubeconfig_for("bob@example.com"))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "cannot impersonate" in lines[0], result.stderr
    assert "approval" not in api_server.get_object("RuntimeRollout", name)["spec"]
    assert not [r for r in api_server.requests if r.method == "PATCH"]
