"""Running the built plugin as a user does: its path, the argv that runs it, a clean environment, a runner,
the files a user hands it (:func:`write`) and its most common command (:func:`describe`).

``AICR_TEST_PYTHON`` names the interpreter that runs ``dist/kubectl-aicr`` (``make test-pythons`` sets it
per CPython); without it the file runs through its own ``#!/usr/bin/env python3`` line.
"""

import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
ROOT = os.path.dirname(HERE)
PLUGIN = os.path.join(ROOT, "dist", "kubectl-aicr")
FIXTURES = os.path.join(HERE, "fixtures")
VENV_BIN = os.path.join(ROOT, ".venv", "bin")


def build():
    """Build dist/kubectl-aicr from the current source; its path."""
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


def write(path, data, mode=0o600):
    """Write ``data`` to ``path`` (folders made as needed), permissions ``mode``; its path (str).

    ``data``: text as it is, or a value (a kubeconfig dict) dumped as block YAML in key order, UTF-8 as it
    is (never ``\\u`` escapes).
    """
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    os.chmod(path, mode)
    return path


def describe(run, server, *args, role="install", **kwargs):
    """``kubectl aicr describe`` of the rollout fixture ``role`` on ``server`` (anything with
    ``fixture_name(role)``: the test API server, the real-server tier's cluster), through ``run`` (a
    :class:`Runner`). ``args`` follow the name; ``kwargs`` go to the runner (kubeconfig, env, cwd, stdin,
    timeout). The CompletedProcess.
    """
    return run("describe", server.fixture_name(role), *args, **kwargs)
