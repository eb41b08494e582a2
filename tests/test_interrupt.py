"""Ctrl-C at any moment: exit 130 with one line, no temporary files left, no half-made write."""

import os
import signal
import subprocess
import time

import pytest

from tests.support.plugin import base_env, plugin_command

pytestmark = pytest.mark.e2e


def _interrupt_while_waiting(plugin, api_server, args, kubeconfig, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(base_env(tmp_path), KUBECONFIG=str(kubeconfig), TMPDIR=str(tmpdir))
    api_server.set_fault("hang")
    process = subprocess.Popen(plugin_command(plugin) + args, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, cwd=str(tmp_path))
    deadline = time.monotonic() + 20
    while not any(r.fault == "hang" for r in api_server.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(r.fault == "hang" for r in api_server.requests), "the plugin never reached the server"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    return process.returncode, out, err, tmpdir


def test_ctrl_c_during_a_request_exits_130_and_cleans_up(plugin, api_server, tmp_path):
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), style="cert-data")
    code, out, err, tmpdir = _interrupt_while_waiting(
        plugin, api_server, ["describe", api_server.fixture_name("install")], kubeconfig, tmp_path)
    assert code == 130
    assert err == "error: interrupted\n"
    assert os.listdir(tmpdir) == []  # the private folder for client-key-data is gone


def test_ctrl_c_during_reproduce_writes_nothing(plugin, api_server, tmp_path):
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"))
    code, out, err, _ = _interrupt_while_waiting(
        plugin, api_server, ["reproduce", "--dir", str(tmp_path / "out")], kubeconfig, tmp_path)
    assert code == 130 and err == "error: interrupted\n"
    assert not (tmp_path / "out").exists()


def test_ctrl_c_during_approve_leaves_the_rollout_as_it_was(plugin, api_server, tmp_path):
    name = api_server.fixture_name("awaiting-approval")
    before = api_server.get_object("RuntimeRollout", name)
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"))
    code, out, err, _ = _interrupt_while_waiting(plugin, api_server, ["approve", name, "--reason", "r"],
                                                 kubeconfig, tmp_path)
    assert code == 130 and err == "error: interrupted before the write was sent; nothing was written\n"
    assert api_server.get_object("RuntimeRollout", name) == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_a_command_with_its_clean_up(plugin, api_server, tmp_path, signum):
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), style="cert-data")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(base_env(tmp_path), KUBECONFIG=str(kubeconfig), TMPDIR=str(tmpdir))
    api_server.set_fault("hang")
    process = subprocess.Popen(plugin_command(plugin) + ["reproduce", "--dir", str(tmp_path / "out")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.monotonic() + 20
    while not any(r.fault == "hang" for r in api_server.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signum)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 128 + signum
    assert err == "error: terminated by %s\n" % signal.Signals(signum).name
    assert os.listdir(tmpdir) == [] and not (tmp_path / "out").exists()
