"""Completion through the real kubectl: `kubectl __complete aicr ...` runs our kubectl_complete-aicr."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.support.plugin import ROOT, VENV_BIN, base_env

pytestmark = pytest.mark.e2e


@pytest.fixture
def complete(plugin, tmp_path):
    """``complete(*words, kubeconfig=...)`` -> (candidates, directive line), via kubectl's own __complete."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "--release", "--dist", str(tmp_path / "dist"),
                    "--manifest", str(tmp_path / "aicr.yaml")], check=True, stdout=subprocess.DEVNULL)
    for name in ("kubectl-aicr", "kubectl_complete-aicr"):
        shutil.copy2(tmp_path / "dist" / name, bin_dir / name)

    def run(*words, kubeconfig=None):
        env = base_env(tmp_path)
        env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
        if kubeconfig:
            env["KUBECONFIG"] = str(kubeconfig)
        result = subprocess.run([os.path.join(VENV_BIN, "kubectl"), "__complete", "aicr"] + list(words), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        lines = result.stdout.splitlines()
        return [line for line in lines if not line.startswith(":")], [line for line in lines if line.startswith(":")]
    return run


def test_commands_and_flags(complete):
    names, directive = complete("")
    assert {"describe", "approve", "revoke", "acknowledge", "reproduce", "help"} <= set(names)
    assert directive == [":4"]
    assert complete("ap")[0] == ["approve"]
    assert complete("describe", "x", "--expi")[0] == ["--expires"]


def test_context_names_from_the_kubeconfig(complete, api_server, tmp_path):
    kubeconfig = api_server.write_kubeconfig_all(str(tmp_path / "kc"))
    names, _ = complete("describe", "--context", "ap", kubeconfig=kubeconfig)
    assert names == ["approver-%02d" % i for i in range(1, 21)]
    assert complete("--context=ca", kubeconfig=kubeconfig)[0] == ["--context=carol"]


def test_rollout_and_plan_names_from_the_cluster(complete, api_server, kubeconfig_for):
    kubeconfig = kubeconfig_for("carol@example.com")
    names, directive = complete("describe", "rollout-", kubeconfig=kubeconfig)
    expected = sorted(api_server.fixture_name(role) for role in ("install", "awaiting-approval", "revoked"))
    assert set(expected) <= set(names) and directive == [":4"]
    plans, _ = complete("reproduce", "aicr-plan-", kubeconfig=kubeconfig)
    assert api_server.fixture("plan-active")["metadata"]["name"] in plans


def test_unreachable_cluster_quietly_completes_nothing_in_a_short_bound(complete, api_server, kubeconfig_for):
    api_server.set_fault("hang")
    started = time.monotonic()
    names, directive = complete("describe", "", kubeconfig=kubeconfig_for())
    assert names == [] and directive == [":4"]
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("command,roles", [
    ("approve", ("awaiting-approval", "tampered-report", "deadline-passed", "no-assessment", "report-missing")),
    ("acknowledge", ("awaiting-acknowledgement",)),
    # approved and not ended; validating is left out: the server refuses a revocation in that phase
    ("revoke", ("approved-rolling-out", "awaiting-acknowledgement")),
])
def test_only_the_rollouts_a_command_can_act_on(complete, api_server, kubeconfig_for, command, roles):
    names, directive = complete(command, "", kubeconfig=kubeconfig_for("carol@example.com"))
    assert sorted(names) == sorted(api_server.fixture_name(role) for role in roles)
    assert directive == [":4"]


def test_completion_reads_rollouts_in_pages_as_list_does(complete, api_server, kubeconfig_for):
    template = api_server.fixture("awaiting-acknowledgement")
    for index in range(300):
        obj = dict(template, metadata={"name": "rollout-paged-%03d" % index})
        api_server.put_object(obj)
    names, _ = complete("acknowledge", "rollout-paged-", kubeconfig=kubeconfig_for("carol@example.com"))
    assert names == ["rollout-paged-%03d" % i for i in range(300)]
    assert sum(1 for r in api_server.requests if "continue=" in (r.query or "")) >= 1


def test_rollout_names_of_a_list_over_the_response_bound(complete, api_server, kubeconfig_for):
    """260 rollouts of 70 KB: the first page (250, 17.5 MB) is over the plugin's 16 MiB bound on one answer;
    completion reads the list in smaller pages, as list does, and offers every name."""
    names = api_server.add_rollouts(260, size=70 * 1024)
    candidates, directive = complete("describe", "rollout-bulk-", kubeconfig=kubeconfig_for("carol@example.com"))
    assert candidates == sorted(names) and directive == [":4"]
