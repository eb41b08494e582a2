"""A NUL (or an ``=`` in an env name) in a kubeconfig's paths and exec settings: one error line, as kubectl.

Python refuses a NUL in a path, an argument or an environment entry with ValueError ("embedded null byte"),
which ended these runs as internal errors (exit 70). Go's open and fork/exec fail with EINVAL instead, and
kubectl says so; os/exec refuses a NUL in the environment with its own words. Each row runs the real kubectl
and the built plugin on the same kubeconfig (kubeconfigs are JSON here, which can hold ``\\u0000``).
"""

import json
import os
import subprocess

import pytest

from tests.support.plugin import VENV_BIN, base_env, plugin_command, write

pytestmark = pytest.mark.e2e

KUBECTL = os.path.join(VENV_BIN, "kubectl")
EXEC = {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true", "interactiveMode": "Never"}

# (id, where, field, value, what both say (None: both succeed))
ROWS = [
    ("certificate-authority", "cluster", "certificate-authority", "a\0b", "a\\x00b: invalid argument"),
    ("client-certificate", "user", "client-certificate", "a\0b", "a\\x00b: invalid argument"),
    ("client-key", "user", "client-key", "a\0b", "a\\x00b: invalid argument"),
    ("tokenFile (unreadable: the token is used)", "user", "tokenFile", "a\0b", None),
    ("exec command found on PATH", "exec", "command", "tr\0ue", "not found"),
    ("exec argument", "exec", "args", ["\0"], "getting credentials: exec: fork/exec /bin/true: invalid argument"),
    ("exec env value", "exec", "env", [{"name": "A", "value": "\0"}], "environment variable contains NUL"),
    ("exec env name", "exec", "env", [{"name": "A\0B", "value": "x"}], "environment variable contains NUL"),
]
# Where Python cannot do what Go does: kubectl starts the plugin; the plugin refuses in one line, saying why.
OURS_ONLY = [
    ("exec env name starting with =", "exec", "env", [{"name": "=A", "value": "x"}],
     "env variable \"=A\" starts with '=', which kubectl-aicr cannot pass to a program"),
]


def _kubeconfig(api_server, tmp_path, where, field, value):
    config = api_server.kubeconfig(users=["bob@example.com"])
    user = config["users"][0]["user"]
    if where == "cluster":
        config["clusters"][0]["cluster"][field] = value
    elif where == "user":
        user[field] = value
        if field in ("client-certificate", "client-key"):
            user["client-key" if field == "client-certificate" else "client-certificate"] = str(tmp_path / "config")
    else:
        config["users"][0]["user"] = {"exec": dict(EXEC, **{field: value})}
    return write(tmp_path / "config", json.dumps(config))


def _both(plugin, api_server, tmp_path, kubeconfig):
    env = dict(base_env(tmp_path), KUBECONFIG=kubeconfig)
    return [subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           universal_newlines=True, timeout=60)
            for argv in ([KUBECTL, "get", "--raw", "/version"],
                         plugin_command(plugin) + ["describe", api_server.fixture_name("install")])]


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_a_nul_is_one_error_line_as_kubectl_says_it(plugin, api_server, tmp_path, row):
    name, where, field, value, says = row
    theirs, ours = _both(plugin, api_server, tmp_path, _kubeconfig(api_server, tmp_path, where, field, value))
    if says is None:
        assert theirs.returncode == 0, theirs.stderr
        assert ours.returncode == 0, ours.stderr
        return
    assert theirs.returncode == 1 and says.replace("\\x00", "\x00") in theirs.stderr, theirs.stderr
    assert ours.returncode == 1, ours.stderr
    assert ours.stderr.startswith("error: ") and ours.stderr.count("\n") == 1, ours.stderr
    assert says in ours.stderr and "internal error" not in ours.stderr, ours.stderr


def test_an_exec_env_name_holding_equals_reaches_the_plugin_as_go_passes_it(plugin, api_server, tmp_path):
    """Go passes env name ``A=B`` with value ``x`` on as the text ``A=B=x``: the plugin sees A="B=x". Python's
    subprocess refused the name (exit 70); now the same bytes are passed, and both clients start the plugin."""
    token = api_server.token("bob@example.com")
    script = write(tmp_path / "bin" / "show-env", '#!/bin/sh\nprintf "%%s\\n" "$A" >> "%s"\nprintf \'{"apiVersion":'
                   '"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\'\n'
                   % (tmp_path / "seen", token), mode=0o755)
    kubeconfig = _kubeconfig(api_server, tmp_path, "exec", "env", [{"name": "A=B", "value": "x"}])
    config = json.loads(open(kubeconfig).read())
    config["users"][0]["user"]["exec"]["command"] = script
    write(tmp_path / "config", json.dumps(config))
    theirs, ours = _both(plugin, api_server, tmp_path, kubeconfig)
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert (tmp_path / "seen").read_text() == "B=x\nB=x\n"


@pytest.mark.parametrize("row", OURS_ONLY, ids=[row[0] for row in OURS_ONLY])
def test_what_python_cannot_pass_on_is_one_error_line(plugin, api_server, tmp_path, row):
    name, where, field, value, says = row
    _, ours = _both(plugin, api_server, tmp_path, _kubeconfig(api_server, tmp_path, where, field, value))
    assert ours.returncode == 1 and ours.stderr.startswith("error: ") and ours.stderr.count("\n") == 1, ours.stderr
    assert says in ours.stderr, ours.stderr
