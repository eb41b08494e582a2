"""list against answers it cannot read, and the outcome of ended rollouts: dist/kubectl-aicr as a process
against the HTTPS test API server (and the real kubectl as the oracle of what a non-List answer is)."""

import os
import subprocess

import pytest

from tests.support.text import list_table, one_error_line

pytestmark = pytest.mark.e2e

ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
ENDED = ("revoked", "succeeded", "expired", "failed")  # the fixture rollouts with an outcome (tests/fixtures/README.md)
KUBECTL = os.path.join(os.path.dirname(__file__), os.pardir, ".venv", "bin", "kubectl")
PLANS = "/api/v1/namespaces/aicr-system/configmaps"
# 200 answers that are not a List: what a broken proxy, a wrong path or a misbehaving server may send
NOT_A_LIST = {
    "empty object": {},
    "one object without items": {"kind": "RuntimeRollout", "apiVersion": "operator.aicr.run/v1alpha1",
                                 "metadata": {"name": "rollout-x"}},
    "items not an array": {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
                           "items": {"a": {}}},
    "a JSON array": [],
    "a JSON string": "ok",
}


@pytest.fixture
def answers(api_server):
    """``api_server.answers`` (path -> (status, payload)), emptied after the test."""
    yield api_server.answers
    api_server.answers.clear()


@pytest.mark.parametrize("case", sorted(NOT_A_LIST))
def test_list_refuses_an_answer_that_is_not_a_list(run, api_server, answers, kubeconfig_for, case):
    answers[ROLLOUTS] = (200, NOT_A_LIST[case])
    for flags in ((), ("--all",)):
        result = run("list", *flags, kubeconfig=kubeconfig_for("carol@example.com"))
        assert result.returncode == 1, (case, result.stdout, result.stderr)
        assert result.stdout == ""
        line = one_error_line(result)
        assert "runtimerollouts" in line.lower(), line
        if isinstance(NOT_A_LIST[case], dict):  # the transport refuses what is not a JSON object already
            assert "not a List" in line, line
        assert "No rollouts" not in result.stdout + result.stderr


def test_kubectl_too_refuses_an_empty_object_as_a_list(api_server, answers, kubeconfig_for):
    """The oracle: kubectl get on the same answer fails (apimachinery: ``Object 'Kind' is missing in '{}'``)."""
    answers[ROLLOUTS] = (200, {})
    result = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig_for("carol@example.com"), "get",
                             "runtimerollouts.operator.aicr.run"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0, result.stdout
    assert "Object 'Kind' is missing" in result.stderr, result.stderr


def test_an_empty_list_is_still_nothing_in_progress(run, api_server, answers, kubeconfig_for):
    for items in ([], None):
        answers[ROLLOUTS] = (200, {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
                                   "metadata": {"resourceVersion": "1"}, "items": items})
        result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("No rollouts in progress")


@pytest.mark.parametrize("case", ["empty object", "one object without items"])
def test_reproduce_refuses_a_plan_list_it_cannot_read(run, api_server, answers, kubeconfig_for, tmp_path, case):
    digest = api_server.fixture("plan-candidate")["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"]
    answers[PLANS] = (200, NOT_A_LIST[case])
    result = run("reproduce", digest, "--dir", tmp_path / "out", kubeconfig=kubeconfig_for())
    assert result.returncode == 1, result.stderr
    line = one_error_line(result)
    assert "not a List" in line and "plan ConfigMaps" in line, line
    assert "no plan ConfigMap" not in line
    assert not (tmp_path / "out").exists()


def test_all_shows_each_ended_rollouts_outcome(run, api_server, kubeconfig_for):
    result = run("list", "--all", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    rows, _ = list_table(result.stdout)
    phases = {role: rows[api_server.fixture_name(role)]["PHASE"] for role in ENDED}
    assert phases == {"succeeded": "Completed (Succeeded)", "failed": "Completed (Failed)",
                      "expired": "Completed (Expired)", "revoked": "Completed (Revoked)"}, phases
    # the rollouts in progress carry no outcome: their phase alone
    assert rows[api_server.fixture_name("awaiting-approval")]["PHASE"] == "AwaitingApproval"


def test_help_list_documents_the_outcome(run):
    result = run("help", "list")
    assert result.returncode == 0
    assert "Completed (Succeeded)" in " ".join(result.stdout.split())
