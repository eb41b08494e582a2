"""Shared test fixtures: the built plugin file, the test API server, and a runner for the plugin as a process.

The end-to-end tests run ``dist/kubectl-aicr`` exactly as a user does: a child
process, its own environment, a kubeconfig file. ``AICR_TEST_PYTHON`` names the
interpreter that runs it (``make test-pythons`` sets it per CPython); without it
the file runs through its own ``#!/usr/bin/env python3`` line.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.support.apiserver import APIServer  # noqa: E402
from tests.support.plugin import FIXTURES, Runner, build  # noqa: E402


@pytest.fixture(scope="session")
def plugin():
    """The path of dist/kubectl-aicr, built from the current source once per test process."""
    return build()


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
