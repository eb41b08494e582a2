"""Secrets never leak: no token, password or private key in any output, error or leftover file,
on success or failure, for every command."""

import base64
import os
import socket

import pytest
import yaml

pytestmark = pytest.mark.e2e

MARK = "s3cr3t-MARK-7f2c"


def _key_fragments(path):
    """Distinctive pieces of a PEM private key: its base64 body lines."""
    lines = [line for line in open(path).read().splitlines() if line and not line.startswith("-----")]
    return [line for line in lines if len(line) >= 40][:3]


def _scan(result, secrets, folders):
    text = result.stdout + result.stderr
    for secret in secrets:
        assert secret not in text, "secret leaked in output: %r" % result
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            for name in files:
                data = open(os.path.join(dirpath, name), "rb").read().decode("utf-8", "replace")
                for secret in secrets:
                    assert secret not in data, "secret left in %s" % os.path.join(dirpath, name)


def _kubeconfig(api_server, path, user, **overrides):
    config = api_server.kubeconfig(users=[user])
    config["users"][0]["user"].update(overrides)
    path.write_text(yaml.safe_dump(config))
    return str(path)


COMMANDS = [["describe", "{install}"], ["describe", "nope"], ["approve", "{upgrade}", "--reason", "r"],
            ["revoke", "{upgrade}", "--reason", "r"], ["acknowledge", "{upgrade}"], ["reproduce", "--dir", "{dir}"]]


def _args(command, api_server, tmp_path):
    names = {"install": api_server.fixture_name("install"), "upgrade": api_server.fixture_name("awaiting-approval"),
             "dir": str(tmp_path / "out")}
    return [part.format(**names) for part in command]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:1] + c[1:2]) for c in COMMANDS])
def test_real_token_and_client_key_never_appear(run, api_server, kubeconfig_for, tmp_path, command):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    token_config = kubeconfig_for("bob@example.com", style="token")
    cert_config = kubeconfig_for("alice@example.com", style="cert-data")
    key = api_server.client_cert_files("alice@example.com").key
    secrets = [api_server.token("bob@example.com")] + _key_fragments(key)
    for kubeconfig in (token_config, cert_config):
        result = run(*_args(command, api_server, tmp_path), kubeconfig=kubeconfig, env={"TMPDIR": str(tmpdir)})
        _scan(result, secrets, [tmpdir, tmp_path / "home", tmp_path / "out"])
        assert os.listdir(tmpdir) == []


@pytest.mark.parametrize("failure", ["bad-token", "basic-refused", "refused-port", "untrusted", "token-file-missing",
                                     "yaml-error"])
def test_failure_paths_never_print_the_secret(run, api_server, tmp_path, failure):
    path = tmp_path / "kc"
    secrets = [MARK, base64.b64encode(("bob:" + MARK).encode()).decode()]
    if failure == "bad-token":
        kubeconfig = _kubeconfig(api_server, path, "bob@example.com", token=MARK)
    elif failure == "basic-refused":
        kubeconfig = _kubeconfig(api_server, path, "bob@example.com", token=None, username="bob", password=MARK)
    elif failure == "refused-port":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = api_server.kubeconfig(users=["bob@example.com"], server="https://127.0.0.1:%d" % port)
        config["users"][0]["user"]["token"] = MARK
        path.write_text(yaml.safe_dump(config))
        kubeconfig = str(path)
    elif failure == "untrusted":
        config = api_server.kubeconfig(users=["bob@example.com"], ca=None)
        config["users"][0]["user"]["token"] = MARK
        path.write_text(yaml.safe_dump(config))
        kubeconfig = str(path)
    elif failure == "token-file-missing":
        kubeconfig = _kubeconfig(api_server, path, "bob@example.com", token=MARK, tokenFile=str(tmp_path / "gone"))
    else:
        path.write_text('users:\n- name: bob\n  user:\n    token: "%s\n' % MARK)
        kubeconfig = str(path)
    for command in COMMANDS:
        result = run(*_args(command, api_server, tmp_path), kubeconfig=kubeconfig,
                     env={"SSL_CERT_FILE": "/nonexistent"})
        assert result.returncode != 0
        assert result.stderr.startswith("error: ") or result.stderr.startswith("usage")
        _scan(result, secrets, [tmp_path / "home"])


def _exec_plugin(tmp_path, token, exit_code=0, expiry=None):
    script = tmp_path / "bin" / "get-token"
    script.parent.mkdir(exist_ok=True)
    status = {"token": token}
    if expiry:
        status["expirationTimestamp"] = expiry
    import sys
    script.write_text("#!%s\nimport json, sys\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',"
                      " 'kind': 'ExecCredential', 'status': %r}))\nsys.exit(%d)\n" % (sys.executable, status, exit_code))
    script.chmod(0o755)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script),
                     "interactiveMode": "Never"}}


@pytest.mark.parametrize("case", ["exec-real-token", "exec-rejected-token", "exec-exit-1", "oidc-rejected",
                                  "oidc-expired"])
def test_exec_and_oidc_credentials_never_appear(run, api_server, tmp_path, case):
    config = api_server.kubeconfig(users=["bob@example.com"])
    secrets = [MARK]
    if case == "exec-real-token":
        secrets = [api_server.token("bob@example.com")]
        config["users"][0]["user"] = _exec_plugin(tmp_path, api_server.token("bob@example.com"))
    elif case == "exec-rejected-token":
        config["users"][0]["user"] = _exec_plugin(tmp_path, MARK)
    elif case == "exec-exit-1":
        config["users"][0]["user"] = _exec_plugin(tmp_path, MARK, exit_code=1)
    else:
        def jwt(exp):
            def part(obj):
                import json
                return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
            return "%s.%s.%s" % (part({"alg": "RS256"}), part({"exp": exp, "sub": MARK}), MARK)
        token = jwt(4102444800 if case == "oidc-rejected" else 1000000000)
        secrets = [MARK, token]
        config["users"][0]["user"] = {"auth-provider": {"name": "oidc", "config": {
            "id-token": token, "refresh-token": MARK + "-refresh", "client-secret": MARK + "-client",
            "idp-issuer-url": "https://issuer.invalid", "client-id": "kubectl"}}}
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump(config))
    for command in COMMANDS:
        result = run(*_args(command, api_server, tmp_path), kubeconfig=str(path))
        _scan(result, secrets, [tmp_path / "home"])
        if case != "exec-real-token":
            assert result.returncode != 0
