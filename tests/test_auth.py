"""Credentials end to end: tokens, basic auth, client keys, exec credential plugins, auth-providers,
impersonation. The plugin runs as a process against the HTTPS test API server; exec plugins
are small real scripts written into temporary folders."""

import base64
import json
import os
import pty
import sys
import time

import pytest

from kubectl_aicr.kube import exec_credential, kubeconfig, rest
from kubectl_aicr.errors import AuthError, TransportError
from tests.support.kubeconfig_corpus import JURGEN, JURGEN_PASSWORD, corpus_servers, jwt  # noqa: F401 (a fixture)
from tests.support.plugin import describe, write
from tests.support.text import one_error_line

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"
ROLE = "install"
MEMORY_FILES = sys.platform.startswith("linux") and hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


def config_with(api_server, user_entry, user="bob@example.com"):
    config = api_server.kubeconfig(users=[user])
    config["users"][0]["user"] = user_entry
    return config


def exec_script(tmp_path, body, name="plugin"):
    """A python credential plugin: ``body`` runs with ``info`` (KUBERNETES_EXEC_INFO, parsed) and ``emit(status)``."""
    source = ("#!%s\nimport json, os, sys\ninfo = json.loads(os.environ.get('KUBERNETES_EXEC_INFO', '{}'))\n"
              "def emit(status, version=None):\n"
              "    print(json.dumps({'apiVersion': version or info.get('apiVersion'), 'kind': 'ExecCredential',"
              " 'status': status}))\n%s\n" % (sys.executable, body))
    return write(tmp_path / "bin" / name, source, mode=0o755)


def exec_user(command, api_version=V1, mode="Never", **extra):
    spec = {"apiVersion": api_version, "command": command}
    if mode:
        spec["interactiveMode"] = mode
    spec.update(extra)
    return {"exec": spec}


def users_seen(api_server):
    return [r.user for r in api_server.requests]


# ---------------------------------------------------------------------------------------------
# Static credentials


@pytest.mark.e2e
def test_token_file_ending_in_a_newline_sends_the_bare_token(run, api_server, tmp_path):
    token = api_server.token("bob@example.com")
    path = write(tmp_path / "config", config_with(api_server, {"tokenFile": write(tmp_path / "tok", token + "\n")}))
    assert describe(run, api_server, kubeconfig=path).returncode == 0
    assert {r.authorization for r in api_server.requests} == {"Bearer " + token}


@pytest.mark.e2e
def test_basic_auth_sends_base64_of_the_utf8_bytes(run, corpus_servers, tmp_path):
    server = corpus_servers.special
    server.clear_requests()
    config = config_with(server, {"username": JURGEN, "password": JURGEN_PASSWORD})
    result = describe(run, server, kubeconfig=write(tmp_path / "config", config))
    assert result.returncode == 0, result.stderr
    expected = "Basic " + base64.b64encode(("%s:%s" % (JURGEN, JURGEN_PASSWORD)).encode("utf-8")).decode()
    assert {r.authorization for r in server.requests} == {expected}
    assert {r.user for r in server.requests} == {JURGEN}


@pytest.mark.e2e
@pytest.mark.parametrize("key_type, key_format, marker", [
    ("ec", "traditional", b"BEGIN EC PRIVATE KEY"), ("rsa", "pkcs8", b"BEGIN PRIVATE KEY"),
    ("ec", "pkcs8", b"BEGIN PRIVATE KEY"), ("rsa", "traditional", b"BEGIN RSA PRIVATE KEY")])
def test_client_keys_of_every_kind_authenticate(run, api_server, tmp_path, key_type, key_format, marker):
    files = api_server.client_cert_files("alice@example.com", key_type=key_type, key_format=key_format)
    assert marker in open(files.key, "rb").read()
    data = {"client-certificate-data": base64.b64encode(open(files.cert, "rb").read()).decode(),
            "client-key-data": base64.b64encode(open(files.key, "rb").read()).decode()}
    config = config_with(api_server, data, "alice@example.com")
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config), env={"TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert {r.client_cert["cn"] for r in api_server.requests} == {"alice@example.com"}
    assert not [name for name in os.listdir(tmp_path) if name.startswith("kubectl-aicr-")]


@pytest.mark.e2e
@pytest.mark.parametrize("key_format", ["pkcs8", "traditional"])
def test_encrypted_key_fails_at_once_without_prompting(run, api_server, tmp_path, key_format):
    files = api_server.client_cert_files("alice@example.com", key_format=key_format, passphrase="hunter2")
    config = config_with(api_server, {"client-certificate": files.cert, "client-key": files.key}, "alice@example.com")
    parent, child = pty.openpty()  # a terminal: a passphrase prompt would wait on it
    try:
        started = time.monotonic()
        result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config), stdin=child, timeout=20)
    finally:
        os.close(parent)
        os.close(child)
    assert time.monotonic() - started < 10
    one_error_line(result, "is encrypted", "never asks for a passphrase")
    assert api_server.requests == []


@pytest.mark.e2e
def test_impersonation_headers_are_sent_as_kubectl_sends_them(run, api_server, tmp_path):
    user = {"token": api_server.token("admin"), "as": "alice@example.com", "as-uid": "u-1",
            "as-groups": ["aicr-approvers", "team a"], "as-user-extra": {"example.com/scopes": ["view", "approve"]}}
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config_with(api_server, user, "admin")))
    assert result.returncode == 0, result.stderr
    request = api_server.requests[0]
    assert request.user == "alice@example.com"
    assert request.impersonation == {"Impersonate-User": ["alice@example.com"], "Impersonate-Uid": ["u-1"],
                                     "Impersonate-Group": ["aicr-approvers", "team a"],
                                     "Impersonate-Extra-example.com%2Fscopes": ["view", "approve"]}


# ---------------------------------------------------------------------------------------------
# Exec credential plugins


@pytest.mark.e2e
def test_exec_v1alpha1_is_refused_without_running_it(run, api_server, tmp_path):
    marker = tmp_path / "ran"
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\ntouch %s\n" % marker, mode=0o755)
    path = write(tmp_path / "config", config_with(api_server, exec_user(script, "client.authentication.k8s.io/v1alpha1",
                                                                        mode=None)))
    one_error_line(describe(run, api_server, kubeconfig=path),
                   'invalid apiVersion "client.authentication.k8s.io/v1alpha1"')
    assert not marker.exists() and api_server.requests == []


@pytest.mark.e2e
def test_exec_v1_without_interactive_mode_is_refused(run, api_server, tmp_path):
    marker = tmp_path / "ran"
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\ntouch %s\n" % marker, mode=0o755)
    path = write(tmp_path / "config", config_with(api_server, exec_user(script, mode=None)))
    one_error_line(describe(run, api_server, kubeconfig=path), "interactiveMode must be specified for bob")
    assert not marker.exists()


@pytest.mark.e2e
def test_missing_exec_command_shows_the_sanitised_install_hint(run, api_server, tmp_path):
    hint = "Install it:\n  \x1b[1mbrew install aicr-login\x1b[0m\n"
    path = write(tmp_path / "config", config_with(api_server, exec_user("aicr-login-missing", installHint=hint)))
    line = one_error_line(describe(run, api_server, kubeconfig=path), "executable aicr-login-missing not found",
                          "Install it: U+001B[1mbrew install aicr-loginU+001B[0m")
    assert "\x1b" not in line


@pytest.mark.e2e
def test_failing_exec_plugin_reports_its_exit_code_and_its_stderr_reaches_the_user(run, api_server, tmp_path):
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\necho 'session expired: run aicr-login' >&2\nexit 73\n",
                   mode=0o755)
    result = describe(run, api_server,
                      kubeconfig=write(tmp_path / "config", config_with(api_server, exec_user(script))))
    one_error_line(result, "executable %s failed with exit code 73" % script,
                   before=["session expired: run aicr-login"])


@pytest.mark.e2e
@pytest.mark.parametrize("output, words", [
    ('{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": "t"}}',
     "configured to use API version client.authentication.k8s.io/v1, plugin returned version "
     "client.authentication.k8s.io/v1beta1"),
    ('{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}', "didn't return a status field"),
    ('{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {}}',
     "didn't return a token or cert/key pair"),
    ("SECRET-TOKEN-7f2c not json", "not an ExecCredential object")])
def test_exec_plugin_answers_kubectl_refuses_are_refused_in_its_words(run, api_server, tmp_path, output, words):
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % output, mode=0o755)
    result = describe(run, api_server,
                      kubeconfig=write(tmp_path / "config", config_with(api_server, exec_user(script))))
    line = one_error_line(result, words)
    assert "SECRET-TOKEN" not in line and api_server.requests == []


@pytest.mark.e2e
def test_exec_info_carries_the_cluster_and_stdin_is_not_given(run, api_server, tmp_path):
    seen = tmp_path / "seen.json"
    script = exec_script(tmp_path, "json.dump({'info': info, 'tty': os.isatty(0), 'stdin': sys.stdin.read(),"
                                   " 'region': os.environ.get('AWS_REGION')}, open(%r, 'w'))\n"
                                   "emit({'token': %r})" % (str(seen), api_server.token("bob@example.com")))
    user = exec_user(script, V1BETA1, mode="IfAvailable", provideClusterInfo=True,
                     env=[{"name": "AWS_REGION", "value": "us-west-2"}])
    config = config_with(api_server, user)
    config["clusters"][0]["cluster"]["extensions"] = [{"name": "client.authentication.k8s.io/exec",
                                                       "extension": {"audience": "aicr"}}]
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config))
    assert result.returncode == 0, result.stderr
    got = json.load(open(seen))
    ca = base64.b64encode(open(api_server.ca_file, "rb").read()).decode()
    assert got["info"] == {"kind": "ExecCredential", "apiVersion": V1BETA1, "spec": {
        "cluster": {"server": api_server.url, "certificate-authority-data": ca, "config": {"audience": "aicr"}},
        "interactive": False}}
    assert got["tty"] is False and got["stdin"] == "" and got["region"] == "us-west-2"
    assert users_seen(api_server) == ["bob@example.com"]


@pytest.mark.e2e
@pytest.mark.parametrize("mode, interactive", [("IfAvailable", True), ("Always", True), ("Never", False)])
def test_interactive_modes_with_a_terminal(run, api_server, tmp_path, mode, interactive):
    seen = tmp_path / "seen.json"
    script = exec_script(tmp_path, "json.dump({'interactive': info['spec']['interactive'], 'tty': os.isatty(0)},"
                                   " open(%r, 'w'))\nemit({'token': %r})"
                                   % (str(seen), api_server.token("bob@example.com")))
    path = write(tmp_path / "config", config_with(api_server, exec_user(script, mode=mode)))
    parent, child = pty.openpty()
    try:
        result = describe(run, api_server, kubeconfig=path, stdin=child)
    finally:
        os.close(parent)
        os.close(child)
    assert result.returncode == 0, result.stderr
    assert json.load(open(seen)) == {"interactive": interactive, "tty": interactive}


@pytest.mark.e2e
def test_interactive_mode_always_without_a_terminal_is_refused(run, api_server, tmp_path):
    marker = tmp_path / "ran"
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\ntouch %s\n" % marker, mode=0o755)
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config_with(api_server, exec_user(script,
                                                                                                  mode="Always"))))
    one_error_line(result, "exec plugin cannot support interactive mode: standard input is not a terminal")
    assert not marker.exists()


@pytest.mark.e2e
def test_a_401_gets_a_new_credential_and_the_request_is_sent_again(run, api_server, tmp_path):
    count = tmp_path / "count"
    script = exec_script(tmp_path, "n = int(open(%r).read()) if os.path.exists(%r) else 0\n"
                                   "open(%r, 'w').write(str(n + 1))\n"
                                   "emit({'token': 'stale-token' if n == 0 else %r})"
                                   % (str(count), str(count), str(count), api_server.token("bob@example.com")))
    result = describe(run, api_server,
                      kubeconfig=write(tmp_path / "config", config_with(api_server, exec_user(script))))
    assert result.returncode == 0, result.stderr
    assert open(count).read() == "2"
    assert [(r.status, r.user) for r in api_server.requests][:2] == [(401, None), (200, "bob@example.com")]


@pytest.mark.e2e
def test_an_expired_credential_is_obtained_again_before_the_next_request(run, api_server, tmp_path):
    count = tmp_path / "count"
    script = exec_script(tmp_path, "open(%r, 'a').write('x')\n"
                                   "emit({'token': %r, 'expirationTimestamp': '2001-01-01T00:00:00Z'})"
                                   % (str(count), api_server.token("bob@example.com")))
    path = write(tmp_path / "config", config_with(api_server, exec_user(script)))
    result = describe(run, api_server, kubeconfig=path, role="awaiting-approval")
    assert result.returncode == 0, result.stderr
    assert len(api_server.requests) >= 2 and len(open(count).read()) == len(api_server.requests)


@pytest.mark.e2e
def test_no_exec_when_the_user_has_a_static_credential(run, api_server, tmp_path):
    marker = tmp_path / "ran"
    script = write(tmp_path / "bin" / "p", "#!/bin/sh\ntouch %s\nexit 1\n" % marker, mode=0o755)
    user = dict(exec_user(script), token=api_server.token("carol@example.com"))
    assert describe(run, api_server,
                    kubeconfig=write(tmp_path / "config", config_with(api_server, user))).returncode == 0
    assert not marker.exists() and users_seen(api_server) == ["carol@example.com"]


@pytest.mark.e2e
def test_exec_client_certificate_authenticates_and_leaves_no_file(run, api_server, tmp_path):
    files = api_server.client_cert_files("alice@example.com", key_type="ec", key_format="pkcs8")
    script = exec_script(tmp_path, "emit({'clientCertificateData': open(%r).read(), 'clientKeyData': open(%r).read()})"
                         % (files.cert, files.key))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    result = describe(run, api_server,
                      kubeconfig=write(tmp_path / "config", config_with(api_server, exec_user(script))),
                      env={"TMPDIR": str(temporary)})
    assert result.returncode == 0, result.stderr
    assert {r.client_cert["cn"] for r in api_server.requests} == {"alice@example.com"}
    assert os.listdir(temporary) == []


def test_a_hanging_exec_plugin_is_killed_at_the_deadline(tmp_path):
    script = write(tmp_path / "hang", "#!/bin/sh\nexec sleep 30\n", mode=0o755)
    spec = kubeconfig.ExecConfig(command=script, api_version=V1, interactive_mode="Never")
    cluster = kubeconfig.Cluster(name="c", server="https://127.0.0.1:1")
    started = time.monotonic()
    with pytest.raises(TransportError, match="did not finish within"):
        exec_credential.run(spec, cluster, rest.Deadline(0.5))
    assert time.monotonic() - started < 5


def test_exec_output_is_checked_without_ever_being_quoted():
    spec = kubeconfig.ExecConfig(command="p", api_version=V1)
    for output in (b'{"apiVersion": "SECRET\\n", "kind": "ExecCredential"}', b"[1, 2]", b"\xff\xfe",
                   b'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
                   b'"status": {"token": 5}}',
                   b'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
                   b'"status": {"token": "SECRET", "expirationTimestamp": "tomorrow"}}',
                   b'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
                   b'"status": {"clientCertificateData": "SECRET"}}'):
        with pytest.raises(AuthError) as caught:
            exec_credential.parse_output(output, spec)
        assert "SECRET" not in str(caught.value)
    ok = exec_credential.parse_output(b'{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
                                  b'"status": {"token": "t", "expirationTimestamp": "2030-01-02T03:04:05+01:00"}}',
                                  spec)
    assert ok.token == "t" and ok.expires == exec_credential.parse_rfc3339("2030-01-02T02:04:05Z")


def test_exec_output_in_yaml_is_read_as_client_go_reads_it():
    """client-go decodes the output with its universal deserializer: JSON, or else YAML as go-yaml v2 reads it
    (tests/support/kubeconfig_corpus.py runs the same kinds through the real kubectl)."""
    spec = kubeconfig.ExecConfig(command="p", api_version=V1)
    head = b"apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\n"
    ok = exec_credential.parse_output(head + b"status:\n  token: t0k\n  expirationTimestamp: 2030-01-02T02:04:05Z\n", spec)
    assert ok.token == "t0k" and ok.expires == exec_credential.parse_rfc3339("2030-01-02T02:04:05Z")
    assert exec_credential.parse_output(b"---\n" + head + b"status: {token: !!binary dDBr}\n---\n[", spec).token == "t0k"
    assert exec_credential.parse_output(b"  \n" + head.replace(b"\n", b"\r\n") + b"status: {token: '-x'}", spec).token == "-x"
    for output, words in ((head + b"status:\n  token: yes\n", "status.token must be a string"),
                          (head + b"status:\n  token: !!int SECRET\n", "not valid YAML (line 4, column 10)"),
                          (head + b"status:\n  token: SECRET\n bad: 1\n", "not valid YAML (line 5, column 2)"),
                          (b'{"apiVersion": "SECRET"} SECRET', "not valid JSON"),
                          (b'{"status": {"token": NaN}}', "not valid JSON"),
                          (b"", "plugin returned version (none, or not an API version)"),
                          (b"- SECRET\n", "not an ExecCredential object")):
        with pytest.raises(AuthError) as caught:
            exec_credential.parse_output(output, spec)
        assert words in str(caught.value) and "SECRET" not in str(caught.value), output


# ---------------------------------------------------------------------------------------------
# auth-providers


@pytest.mark.e2e
def test_gcp_auth_provider_gives_kubectls_removal_message_and_runs_nothing(run, api_server, tmp_path):
    marker = tmp_path / "ran"
    gcloud = write(tmp_path / "bin" / "gcloud", "#!/bin/sh\ntouch %s\n" % marker, mode=0o755)
    user = {"auth-provider": {"name": "gcp", "config": {"cmd-path": gcloud, "cmd-args": "config config-helper"}}}
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config_with(api_server, user)))
    one_error_line(result, 'The gcp auth plugin has been removed. Please use the "gke-gcloud-auth-plugin" '
                           "kubectl/client-go credential plugin instead.")
    assert not marker.exists() and api_server.requests == []


@pytest.mark.e2e
def test_azure_auth_provider_gives_kubectls_removal_message(run, api_server, tmp_path):
    user = {"auth-provider": {"name": "azure", "config": {"tenant-id": "t"}}}
    one_error_line(describe(run, api_server, kubeconfig=write(tmp_path / "config", config_with(api_server, user))),
                   "The azure auth plugin has been removed. Please use the https://github.com/Azure/kubelogin")


@pytest.mark.e2e
def test_oidc_unexpired_id_token_is_sent_and_an_expired_one_says_how_to_refresh(run, api_server, tmp_path):
    valid = jwt(time.time() + 600)
    config = {"name": "oidc", "config": {"idp-issuer-url": "https://issuer.example.invalid", "client-id": "aicr",
                                         "id-token": valid, "refresh-token": "r"}}
    path = write(tmp_path / "config", config_with(api_server, {"auth-provider": config}))
    describe(run, api_server, kubeconfig=path)
    assert {r.authorization for r in api_server.requests} == {"Bearer " + valid}
    api_server.clear_requests()
    config["config"]["id-token"] = jwt(time.time() - 5)
    path = write(tmp_path / "config", config_with(api_server, {"auth-provider": config}))
    before = open(path).read()
    one_error_line(describe(run, api_server, kubeconfig=path), "oidc id-token of user bob expired at",
                   "never writes your kubeconfig", "kubectl get --raw /version")
    assert open(path).read() == before and api_server.requests == []


@pytest.mark.e2e
def test_sigterm_while_waiting_leaves_nothing_in_tmpdir(plugin, api_server, tmp_path):
    """client-key-data is in a memory file on Linux (TMPDIR never sees it); elsewhere in a private folder
    only while TLS loads it, and the folder goes on SIGTERM too."""
    import signal
    import subprocess
    from tests.support.plugin import base_env, plugin_command
    config = api_server.kubeconfig(users=["alice@example.com"], styles={"alice@example.com": "cert-data"})
    path = write(tmp_path / "config", config)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(base_env(tmp_path), KUBECONFIG=path, TMPDIR=str(temporary))
    api_server.set_fault("hang")
    process = subprocess.Popen(plugin_command(plugin) + ["describe", api_server.fixture_name(ROLE)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    deadline = time.monotonic() + 20
    while not api_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    if MEMORY_FILES:
        assert os.listdir(str(temporary)) == [], "a folder under TMPDIR while waiting"
    else:
        assert [n for n in os.listdir(temporary) if n.startswith("kubectl-aicr-")], "no private folder while waiting"
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 128 + signal.SIGTERM
    assert stderr == "error: terminated by SIGTERM\n"
    assert os.listdir(temporary) == []


@pytest.mark.e2e
def test_an_exec_command_is_never_taken_from_the_current_folder(run, api_server, tmp_path):
    """An empty or "." PATH entry must not run a program found in the current folder (Go's ErrDot)."""
    here = tmp_path / "repo"
    marker = tmp_path / "ran"
    write(here / "aicr-test-auth-plugin", "#!/bin/sh\ntouch %s\nexit 1\n" % marker, mode=0o755)
    config = write(tmp_path / "config", config_with(api_server, exec_user("aicr-test-auth-plugin")))
    for path in ("/usr/bin:/bin:", "/usr/bin::/bin", ".:/usr/bin:/bin"):
        result = describe(run, api_server, kubeconfig=config, cwd=str(here), env={"PATH": path})
        one_error_line(result, "executable aicr-test-auth-plugin not found")
        assert not marker.exists()


@pytest.mark.e2e
def test_a_token_file_that_is_a_pipe_is_refused_at_once(run, api_server, tmp_path):
    fifo = tmp_path / "token"
    os.mkfifo(str(fifo))
    config = write(tmp_path / "config", config_with(api_server, {"tokenFile": str(fifo)}))
    result = describe(run, api_server, kubeconfig=config, timeout=20)
    one_error_line(result, "is a pipe or socket, not a file")


# ---------------------------------------------------------------------------------------------
# Client keys never touch a folder (issue 20): memory files on Linux, a private folder elsewhere


@pytest.mark.e2e
@pytest.mark.skipif(not MEMORY_FILES, reason="memory files (os.memfd_create, /proc) are Linux's")
@pytest.mark.parametrize("source", ["client-key-data", "exec plugin"])
def test_a_client_key_never_enters_any_folder_under_tmpdir(run, api_server, tmp_path, source):
    """No entry is ever made in TMPDIR, not even for a moment: the folder's mtime, set to 1 ns before the
    run, changes with any entry created or removed in it (no inotify, no strace needed)."""
    files = api_server.client_cert_files("alice@example.com", key_type="ec", key_format="pkcs8")
    if source == "exec plugin":
        user = exec_user(exec_script(tmp_path, "emit({'clientCertificateData': open(%r).read(), "
                                               "'clientKeyData': open(%r).read()})" % (files.cert, files.key)))
    else:
        user = {"client-certificate-data": base64.b64encode(open(files.cert, "rb").read()).decode(),
                "client-key-data": base64.b64encode(open(files.key, "rb").read()).decode()}
    config = write(tmp_path / "config", config_with(api_server, user, "alice@example.com"))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    for _ in range(3):
        os.utime(str(temporary), ns=(1, 1))
        result = describe(run, api_server, kubeconfig=config, env={"TMPDIR": str(temporary)})
        assert result.returncode == 0, result.stderr
        assert os.stat(str(temporary)).st_mtime_ns == 1 and os.listdir(str(temporary)) == []
    assert {r.client_cert["cn"] for r in api_server.requests} == {"alice@example.com"}


@pytest.mark.skipif(not MEMORY_FILES, reason="memory files (os.memfd_create, /proc) are Linux's")
def test_secret_files_hand_data_over_through_a_memory_file(tmp_path, monkeypatch):
    from kubectl_aicr.kube import auth

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with auth.SecretFiles() as secrets:
        path = secrets.write("client.key", b"KEY-BYTES")
        assert path.startswith("/proc/self/fd/") and os.readlink(path).startswith("/memfd:kubectl-aicr-client.key")
        with open(path, "rb") as handle:
            assert handle.read() == b"KEY-BYTES"
        descriptor = int(path.rsplit("/", 1)[1])
        secrets.remove(path)
        with pytest.raises(OSError):
            os.fstat(descriptor)
        kept = int(secrets.write("client.crt", b"CERT").rsplit("/", 1)[1])
    with pytest.raises(OSError):  # closed with the SecretFiles
        os.fstat(kept)
    assert secrets.folder is None and os.listdir(str(tmp_path)) == []


def _no_memfd(*args):
    raise OSError(38, "Function not implemented")  # ENOSYS: a kernel older than 3.17, or a sandbox


@pytest.mark.parametrize("why", ["no os.memfd_create", "ENOSYS", "no /proc"])
def test_secret_files_fall_back_to_a_private_folder_without_memory_files(tmp_path, monkeypatch, why):
    import stat
    import tempfile
    from kubectl_aicr.kube import auth

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if why == "no os.memfd_create":
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif why == "ENOSYS":
        monkeypatch.setattr(os, "memfd_create", _no_memfd, raising=False)
    else:
        if not hasattr(os, "memfd_create"):
            pytest.skip("no os.memfd_create here")
        monkeypatch.setattr(auth.SecretFiles, "PROC_FD", str(tmp_path / "no-proc"))
        made = []
        real = os.memfd_create
        monkeypatch.setattr(os, "memfd_create", lambda *a: made.append(real(*a)) or made[-1])
    with auth.SecretFiles() as secrets:
        path = secrets.write("client.key", b"KEY-BYTES")
        assert os.path.dirname(path) == secrets.folder and os.path.dirname(secrets.folder) == str(tmp_path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(secrets.folder).st_mode) == 0o700
        assert open(path, "rb").read() == b"KEY-BYTES"
        secrets.remove(path)
        assert not os.path.exists(path)
    assert os.listdir(str(tmp_path)) == []
    if why == "no /proc":  # the memory file made before /proc was found missing is closed again
        assert made
        with pytest.raises(OSError):
            os.fstat(made[0])
