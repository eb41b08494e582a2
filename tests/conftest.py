"""Shared test fixtures: the built plugin file, the test API server, and a runner for the plugin as a process.

The end-to-end tests run ``dist/kubectl-aicr`` exactly as a user does: a child
process, its own environment, a kubeconfig file. ``AICR_TEST_PYTHON`` names the
interpreter that runs it (``make test-pythons`` sets it per CPython); without it
the file runs through its own ``#!/usr/bin/env python3`` line.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.apiserver import APIServer  # noqa: E402

PLUGIN = os.path.join(ROOT, "dist", "kubectl-aicr")
FIXTURES = os.path.join(HERE, "fixtures")
VENV_BIN = os.path.join(ROOT, ".venv", "bin")


@pytest.fixture(scope="session")
def plugin():
    """The path of dist/kubectl-aicr, built from the current source once per test process."""
    subprocess.run([sys.executable, os.path.join(ROOT, "build.py")], check=True, stdout=subprocess.DEVNULL)
    return PLUGIN


def plugin_command(plugin_path):
    """The argv prefix that runs the built file (through AICR_TEST_PYTHON when set)."""
    python = os.environ.get("AICR_TEST_PYTHON")
    return [python, plugin_path] if python else [plugin_path]


def _python3_folder():
    """A folder whose ``python3`` is the real interpreter behind this test run (not a pyenv shim).

    The file still starts through its own ``#!/usr/bin/env python3`` line; this only
    spares every test the shim's half-second start.
    """
    folder = os.path.join(ROOT, ".venv", "python3-bin")
    target = os.path.join(sys.base_prefix, "bin", "python3")
    link = os.path.join(folder, "python3")
    if os.path.realpath(link) != os.path.realpath(target):
        os.makedirs(folder, exist_ok=True)
        temporary = "%s.%d" % (link, os.getpid())
        os.symlink(target, temporary)
        os.replace(temporary, link)
    return folder


def base_env(home):
    """A clean environment for the plugin: no KUBECONFIG, no proxies, HOME pointing at ``home``."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYENV_ROOT", "SYSTEMROOT")}
    keep["PATH"] = _python3_folder() + os.pathsep + keep.get("PATH", "/usr/bin:/bin")
    keep["HOME"] = str(home)
    return keep


class Runner:
    """Runs the plugin file as a process: ``runner(*args, kubeconfig=..., env=..., input=...)``."""

    def __init__(self, plugin_path, home):
        self.plugin = plugin_path
        self.home = home

    def __call__(self, *args, kubeconfig=None, env=None, timeout=60, cwd=None, stdin=subprocess.DEVNULL):
        environment = base_env(self.home)
        if kubeconfig is not None:
            environment["KUBECONFIG"] = str(kubeconfig)
        environment.update(env or {})
        return subprocess.run(plugin_command(self.plugin) + [str(a) for a in args], env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin,
                              timeout=timeout, cwd=cwd, universal_newlines=True)


@pytest.fixture
def run(plugin, tmp_path):
    """A :class:`Runner` with HOME in a fresh temporary folder."""
    home = tmp_path / "home"
    home.mkdir()
    return Runner(plugin, home)


@pytest.fixture(scope="session")
def api_server_session():
    with APIServer(fixtures_dir=FIXTURES) as server:
        yield server


@pytest.fixture
def api_server(api_server_session):
    """The session's test API server, its objects put back as loaded after each test."""
    snapshot = api_server_session.snapshot()
    api_server_session.clear_requests()
    api_server_session.set_fault(None)
    yield api_server_session
    api_server_session.set_fault(None)
    api_server_session.restore(snapshot)


@pytest.fixture
def kubeconfig_for(api_server, tmp_path):
    """``kubeconfig_for(user, style=None, **options)`` writes a one-user kubeconfig and returns its path."""
    counter = [0]

    def make(user="alice@example.com", style=None, **options):
        counter[0] += 1
        return api_server.write_kubeconfig(str(tmp_path / ("kubeconfig-%d" % counter[0])), user=user,
                                           style=style, **options)
    return make


def pytest_collection_modifyitems(items):
    for item in items:
        if "e2e" in item.keywords:
            continue
        if "run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)
