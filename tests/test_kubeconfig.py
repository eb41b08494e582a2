"""Kubeconfig loading rules, merging, context choice and in-cluster configuration.

End-to-end tests run dist/kubectl-aicr against the HTTPS test API server; the unit tests
call kubectl_aicr.kube.kubeconfig directly for rules that need no server.
"""

import base64
import os
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_aicr.kube import kubeconfig
from kubectl_aicr.kube.yaml import block as blockyaml, reader as yamlreader
from kubectl_aicr.errors import ConfigError, YAMLError
from tests.support.plugin import base_env, describe, write
from tests.support.text import one_error_line

ROLLOUT_ROLE = "install"


def one(api_server, user="bob@example.com", **user_fields):
    """A kubeconfig dict for one token user of the test server (context = the user's short name)."""
    config = api_server.kubeconfig(users=[user])
    config["users"][0]["user"].update(user_fields)
    return config


def rollout_requests(api_server):
    return [r for r in api_server.requests if r.path.startswith("/apis/operator.aicr.run")]


# ---------------------------------------------------------------------------------------------
# The cases of the issue, end to end


@pytest.mark.e2e
def test_kubeconfig_env_with_empty_and_repeated_entries_loads_the_file(run, api_server, tmp_path):
    write(tmp_path / "a.yaml", one(api_server))
    result = describe(run, api_server, env={"KUBECONFIG": ":a.yaml::a.yaml:"}, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert {r.user for r in rollout_requests(api_server)} == {"bob@example.com"}


@pytest.mark.e2e
def test_kubeconfig_env_naming_a_folder_fails_naming_it(run, api_server, tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    result = describe(run, api_server, env={"KUBECONFIG": str(folder)})
    one_error_line(result, str(folder), "is a folder")
    assert api_server.requests == []


@pytest.mark.e2e
def test_empty_file_first_contributes_nothing(run, api_server, tmp_path):
    empty = write(tmp_path / "empty", "")
    real = write(tmp_path / "real", one(api_server, "carol@example.com"))
    result = describe(run, api_server, env={"KUBECONFIG": empty + os.pathsep + real})
    assert result.returncode == 0, result.stderr
    assert {r.user for r in rollout_requests(api_server)} == {"carol@example.com"}


@pytest.mark.e2e
def test_empty_current_context_works_with_context_flag_and_is_an_error_without(run, api_server, tmp_path):
    config = one(api_server)
    config["contexts"][0]["name"] = "c1"
    config["current-context"] = ""
    path = write(tmp_path / "config", config)
    without = describe(run, api_server, kubeconfig=path)
    one_error_line(without, "no context chosen", "--context", "c1")
    assert api_server.requests == []
    with_flag = describe(run, api_server, "--context", "c1", kubeconfig=path)
    assert with_flag.returncode == 0, with_flag.stderr
    assert rollout_requests(api_server)


@pytest.mark.e2e
@pytest.mark.parametrize("field, missing", [("cluster", "no-such-cluster"), ("user", "no-such-user")])
def test_context_naming_an_undefined_entry_names_context_and_entry(run, api_server, tmp_path, field, missing):
    config = one(api_server)
    config["contexts"][0]["context"][field] = missing
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config))
    one_error_line(result, 'context "bob"', '%s "%s"' % (field, missing), "not defined")
    assert api_server.requests == []


@pytest.mark.e2e
def test_context_without_user_loads_and_sends_no_credentials(run, api_server, tmp_path):
    config = one(api_server)
    del config["contexts"][0]["context"]["user"]
    config["users"] = None
    result = describe(run, api_server, kubeconfig=write(tmp_path / "config", config))
    assert "forbidden" in result.stderr and 'User "system:anonymous"' in result.stderr
    (request,) = api_server.requests
    assert request.authorization is None and request.client_cert is None and request.user == "system:anonymous"


@pytest.mark.e2e
def test_null_where_a_list_or_string_belongs_means_absent(run, api_server, tmp_path):
    script = write(tmp_path / "bin" / "get-token", "#!/bin/sh\nprintf '%%s' '%s'\n" % (
        '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}'
        % api_server.token("carol@example.com")))
    os.chmod(script, 0o755)
    config = one(api_server, token=None, username=None, password=None,
                 exec={"apiVersion": "client.authentication.k8s.io/v1", "command": script, "args": None,
                       "env": None, "interactiveMode": "Never"})
    config["users"].append({"name": "nobody", "user": None})
    extra = write(tmp_path / "extra", {"users": None, "clusters": None, "contexts": None})
    path = write(tmp_path / "config", config)
    result = describe(run, api_server, env={"KUBECONFIG": extra + os.pathsep + path})
    assert result.returncode == 0, result.stderr
    assert {r.user for r in rollout_requests(api_server)} == {"carol@example.com"}


@pytest.mark.e2e
def test_ca_data_as_a_block_wrapped_at_64_columns_verifies_and_raw_pem_is_refused(run, api_server, tmp_path):
    data = open(api_server.ca_file, "rb").read()
    encoded = __import__("base64").b64encode(data).decode()
    wrapped = "\n".join("      " + encoded[i:i + 64] for i in range(0, len(encoded), 64))
    text = ("clusters:\n- name: c\n  cluster:\n    server: %s\n    certificate-authority-data: |\n%s\n"
            "users:\n- name: u\n  user:\n    token: %s\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
            "current-context: x\n" % (api_server.url, wrapped, api_server.token("bob@example.com")))
    assert describe(run, api_server, kubeconfig=write(tmp_path / "wrapped", text)).returncode == 0
    pem = one(api_server)
    del pem["clusters"][0]["cluster"]["certificate-authority"]
    pem["clusters"][0]["cluster"]["certificate-authority-data"] = data.decode()
    api_server.clear_requests()
    result = describe(run, api_server, kubeconfig=write(tmp_path / "pem", pem))
    one_error_line(result, "certificate-authority-data holds PEM text", "base64")
    assert api_server.requests == []


@pytest.mark.e2e
def test_relative_paths_resolve_against_the_kubeconfig_folder_when_run_from_root(run, api_server, tmp_path):
    team = tmp_path / "team"
    write(team / "certs" / "ca.crt", open(api_server.ca_file).read())
    write(tmp_path / "tok", api_server.token("bob@example.com") + "\n")
    script = write(team / "bin" / "get-token", "#!/bin/sh\nprintf '%%s' '%s'\n" % (
        '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}'
        % api_server.token("carol@example.com")))
    os.chmod(script, 0o755)
    cluster = {"server": api_server.url, "certificate-authority": "certs/ca.crt"}
    config = {"clusters": [{"name": "c", "cluster": cluster}],
              "users": [{"name": "file", "user": {"tokenFile": "../tok"}},
                        {"name": "exec", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                           "command": "./bin/get-token", "interactiveMode": "Never"}}}],
              "contexts": [{"name": "file", "context": {"cluster": "c", "user": "file"}},
                           {"name": "exec", "context": {"cluster": "c", "user": "exec"}}],
              "current-context": "file"}
    path = write(team / "config", config)
    assert describe(run, api_server, kubeconfig=path, cwd="/").returncode == 0
    assert describe(run, api_server, "--context", "exec", kubeconfig=path, cwd="/").returncode == 0
    assert [r.user for r in rollout_requests(api_server)] == ["bob@example.com", "carol@example.com"]


@pytest.mark.e2e
def test_in_cluster_configuration_when_no_kubeconfig_exists(plugin, api_server, tmp_path):
    """The service account folder is fixed in kubectl; here it is pointed elsewhere by setting the module
    constant before running the built file's main (the zipapp is importable)."""
    folder = tmp_path / "serviceaccount"
    write(folder / "token", api_server.token("carol@example.com") + "\n")
    write(folder / "ca.crt", open(api_server.ca_file).read())
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from kubectl_aicr import main; from kubectl_aicr.kube import kubeconfig; "
            "kubeconfig.SERVICE_ACCOUNT_DIR = sys.argv[2]; sys.exit(main.main(sys.argv[3:]))")
    env = base_env(tmp_path)
    env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(api_server.port))
    result = subprocess.run([sys.executable, "-c", code, plugin, str(folder), "describe",
                             api_server.fixture_name(ROLLOUT_ROLE)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert {r.user for r in rollout_requests(api_server)} == {"carol@example.com"}


# ---------------------------------------------------------------------------------------------
# Unit tests of the rules


def load(tmp_path, *configs, **kwargs):
    paths = [write(tmp_path / ("k%d" % i), c) for i, c in enumerate(configs)]
    return kubeconfig.load(environ={"KUBECONFIG": os.pathsep.join(paths)}, **kwargs), paths


def entry(name, body, section):
    return {"name": name, section: body}


def test_merge_first_file_wins_whole_entries_and_first_non_empty_current_context(tmp_path):
    first = {"users": [entry("u", {"token": "first"}, "user")], "current-context": ""}
    second = {"users": [entry("u", {"token": "second", "username": "x"}, "user"), entry("v", {"token": "v"}, "user")],
              "clusters": [entry("c", {"server": "https://b:1"}, "cluster")],
              "contexts": [entry("x", {"cluster": "c", "user": "u"}, "context")], "current-context": "x"}
    third = {"current-context": "z", "clusters": [entry("c", {"server": "https://c:1"}, "cluster")]}
    config, paths = load(tmp_path, first, second, third)
    assert config.auth_infos["u"].token == "first" and config.auth_infos["u"].username is None
    assert config.auth_infos["v"].token == "v"
    assert config.clusters["c"].server == "https://b:1" and config.clusters["c"].location_of_origin == paths[1]
    assert config.current_context == "x"
    assert config.files == paths


def test_relative_paths_resolve_per_defining_file_and_tilde_is_not_expanded(tmp_path):
    os.makedirs(tmp_path / "other")
    other = write(tmp_path / "other" / "config", {
        "clusters": [entry("c", {"server": "https://x", "certificate-authority": "ca.crt"}, "cluster")],
        "users": [entry("u", {"client-certificate": "../c.crt", "client-key": "/abs/k.key", "tokenFile": "~/t",
                              "exec": {"command": "./bin/x", "apiVersion": "v"}}, "user"),
                  entry("p", {"exec": {"command": "on-path", "apiVersion": "v"}}, "user")]})
    config = kubeconfig.load(environ={"KUBECONFIG": other})
    folder = str(tmp_path / "other")
    assert config.clusters["c"].certificate_authority == os.path.join(folder, "ca.crt")
    user = config.auth_infos["u"]
    assert user.client_certificate == str(tmp_path / "c.crt") and user.client_key == "/abs/k.key"
    assert user.token_file == os.path.join(folder, "~", "t")
    assert user.exec.command == os.path.join(folder, "bin", "x")
    assert config.auth_infos["p"].exec.command == "on-path"


@pytest.mark.parametrize("text, words", [
    ("users: [{name: u, user: {token: 12}}]", "token must be a string, not a number"),
    ("clusters: [{name: c, cluster: {insecure-skip-tls-verify: 'true'}}]", "must be true or false"),
    ("users: [{name: u, user: {as-groups: a}}]", "as-groups must be a list"),
    ("users: [{name: u}, {name: u}]", 'duplicate name "u" in users'),
    ("users: {u: {}}", "users must be a list"),
    ("apiVersion: v2\nkind: Config", "is not a kubeconfig"),
    ("kind: Pod", "is not a kubeconfig"),
    ("[]", "must be a mapping"),
    ("clusters: [{name: c, cluster: {certificate-authority-data: 'not base64!'}}]", "not valid base64"),
    ("clusters: [{name: c, cluster: {certificate-authority-data: 'QUJD REVG'}}]", "at input byte 4"),
    # YAML 1.1 values kubectl refuses (issue 13): refused naming the field, never the value
    ("clusters: [{name: c, cluster: {server: yes}}]", "cluster: server must be a string, not a boolean"),
    ("users: [{name: u, user: {token: on}}]", "user: token must be a string, not a boolean"),
    ("contexts: [{name: c, context: {namespace: n}}]", "namespace must be a string, not a boolean"),
    ("current-context: y", "current-context must be a string, not a boolean"),
    ("users: [{name: u, user: {as-groups: [a, off]}}]", "as-groups[] must be a string, not a boolean"),
    ("clusters: [{name: c, cluster: {insecure-skip-tls-verify: oN}}]", "must be true or false, not a string"),
    ("clusters: [{name: c, cluster: {server: 017}}]", "server must be a string, not a number"),
    ("clusters: [{name: c, cluster: {certificate-authority-data: !!binary LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==}}]",
     "certificate-authority-data holds PEM text"),
    ("users: [{name: u, user: {token: !!int abc}}]", "invalid !!int value (...)"),
    ("users: [{name: u, user: {token: .nan}}]", "NaN has no JSON form"),
    # fields kubectl decodes and the plugin does not use are typed all the same, in every entry
    ('preferences: {colors: "yes"}', "preferences: colors must be true or false, not a string"),
    ("clusters: [{name: c, cluster: {disable-compression: 'on'}}]", "disable-compression must be true or false"),
    ("extensions: {a: 1}", "extensions must be a list, not a mapping"),
    ("users: [{name: u, user: {extensions: [{name: on}]}}]", "user: extensions[0]: name must be a string"),
    ("contexts: [{name: c, context: {extensions: [{name: a, extension: 1}, {name: a}]}}]",
     'context: duplicate name "a" in extensions'),
])
def test_malformed_kubeconfigs_are_refused_naming_the_file(tmp_path, text, words):
    path = write(tmp_path / "config", text)
    with pytest.raises(ConfigError) as caught:
        kubeconfig.load(path)
    message = str(caught.value)
    assert words in message and path in message
    for value in ("yes", "on", "n", "y", "off", "oN", "017", "abc", "LS0t"):   # the value is never shown
        assert not re.search(r"\b%s\b" % value, message.replace(path, "")), message


# ---------------------------------------------------------------------------------------------
# YAML as kubectl's go-yaml v2 reads it (issue 13); tests/test_kubectl_yaml_parity.py checks the kind
# against the real kubectl.


@pytest.mark.e2e
def test_insecure_skip_tls_verify_yes_is_true_as_kubectl_reads_it(run, api_server, tmp_path):
    config = one(api_server)
    cluster = config["clusters"][0]["cluster"]
    cluster.pop("certificate-authority", None), cluster.pop("certificate-authority-data", None)
    cluster["insecure-skip-tls-verify"] = "PLACEHOLDER"
    path = write(tmp_path / "config", yaml.safe_dump(config, sort_keys=False).replace("PLACEHOLDER", "yes"))
    assert kubeconfig.load(path).clusters[config["clusters"][0]["name"]].insecure_skip_tls_verify is True
    result = describe(run, api_server, "--kubeconfig", path)
    assert result.returncode == 0, result.stderr
    assert {r.user for r in rollout_requests(api_server)} == {"bob@example.com"}


@pytest.mark.e2e
def test_binary_certificate_authority_data_is_decoded_twice_as_kubectl_does(run, api_server, tmp_path):
    """`certificate-authority-data: !!binary |` holding base64 of the base64 text: kubectl stores the PEM."""
    config = one(api_server)
    cluster = config["clusters"][0]["cluster"]
    cluster.pop("certificate-authority", None)
    pem = open(api_server.ca_file, "rb").read()
    twice = base64.b64encode(base64.b64encode(pem)).decode()
    cluster["certificate-authority-data"] = "PLACEHOLDER"
    lines = "\n".join("      " + twice[i:i + 76] for i in range(0, len(twice), 76))
    text = yaml.safe_dump(config, sort_keys=False).replace("PLACEHOLDER", "!!binary |\n" + lines)
    path = write(tmp_path / "config", text)
    assert kubeconfig.load(path).clusters[config["clusters"][0]["name"]].certificate_authority_data == pem
    result = describe(run, api_server, "--kubeconfig", path)
    assert result.returncode == 0, result.stderr


def test_extension_names_repeat_only_as_kubectl_allows(tmp_path):
    text = ("extensions: [{name: a}, {name: a}, {name: b, extension: null}, {name: b, extension: {x: 1}}]\n"
            "preferences: {colors: yes, extensions: [{name: a, extension: 1}]}\n")
    assert kubeconfig.load(write(tmp_path / "config", text)).clusters == {}


def test_cluster_extensions_are_read_by_name_as_kubectl_converts_them(tmp_path):
    # clientcmd/api/v1 conversion.go: a name first given with a null extension takes a later one's value
    # (kubectl config view shows it so); that value is what an exec plugin receives as spec.cluster.config.
    exec_name = "client.authentication.k8s.io/exec"
    text = ("clusters:\n- name: c\n  cluster:\n    server: https://a\n    extensions:\n"
            "    - {name: %s}\n    - {name: %s, extension: {audience: x}}\n    - {name: b, extension: null}\n"
            "    - {name: d, extension: [1]}\n- name: e\n  cluster: {server: https://e}\n") % (exec_name, exec_name)
    clusters = kubeconfig.load(write(tmp_path / "config", text)).clusters
    assert clusters["c"].extensions == {exec_name: {"audience": "x"}, "d": [1]}
    assert clusters["c"].exec_extension() == {"audience": "x"}
    assert clusters["e"].extensions is None and clusters["e"].exec_extension() is None
    assert clusters["c"].location_of_origin == str(tmp_path / "config")


def test_yaml_1_1_values_kubectl_accepts_are_read_with_its_values(tmp_path):
    text = ("clusters:\n- name: c\n  cluster: &base\n    server: https://a\n    insecure-skip-tls-verify: On\n"
            "- name: d\n  cluster:\n    <<: *base\n    server: !!str https://d\n"
            "users:\n- name: u\n  user:\n    token: !!binary c2VjcmV0\n    as-groups: [!!str yes, 'no', !custom x]\n"
            "    exec: {command: c, apiVersion: v, provideClusterInfo: Y, args: [-v, --x]}\n")
    config = kubeconfig.load(write(tmp_path / "config", text))
    assert config.clusters["c"].insecure_skip_tls_verify is True
    assert config.clusters["d"].server == "https://d" and config.clusters["d"].insecure_skip_tls_verify is True
    user = config.auth_infos["u"]
    assert user.token == "secret" and user.impersonate_groups == ("yes", "no", "x")
    assert user.exec.provide_cluster_info is True and user.exec.args == ("-v", "--x")


def test_comment_only_and_empty_files_are_empty_configs(tmp_path):
    config, _ = load(tmp_path, "# nothing here\n", "", "---\n")
    assert (config.clusters, config.auth_infos, config.contexts, config.current_context) == ({}, {}, {}, "")


def test_base64_data_may_wrap_over_lines_but_not_contain_spaces(tmp_path):
    config, _ = load(tmp_path, {"clusters": [entry("c", {"server": "https://x",
                                                          "certificate-authority-data": "QUJD\nREVG\r\n"}, "cluster")]})
    assert config.clusters["c"].certificate_authority_data == b"ABCDEF"


def test_explicit_missing_file_is_an_error_but_missing_env_entries_are_skipped(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        kubeconfig.load(str(tmp_path / "nope"))
    config = kubeconfig.load(environ={"KUBECONFIG": str(tmp_path / "nope")})
    assert config.files == []


def test_exec_interactive_mode_defaults_to_if_available_for_v1beta1_only(tmp_path):
    config, _ = load(tmp_path, {"users": [
        entry("beta", {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1beta1"}}, "user"),
        entry("v1", {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1"}}, "user")]})
    assert config.auth_infos["beta"].exec.interactive_mode == "IfAvailable"
    assert config.auth_infos["v1"].exec.interactive_mode == ""


def test_in_cluster_selection(tmp_path):
    folder = tmp_path / "sa"
    write(folder / "token", "t")
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    selection = kubeconfig.in_cluster(environ, str(folder))
    assert selection.cluster.server == "https://[fd00::1]:443"
    assert selection.cluster.certificate_authority is None  # no ca.crt: the system's CAs
    assert selection.auth_info.token_file == str(folder / "token")
    assert kubeconfig.in_cluster({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, str(folder)) is None
    assert kubeconfig.in_cluster(environ, str(tmp_path / "missing")) is None
    empty = kubeconfig.Config({}, {}, {}, "", [])
    assert kubeconfig.select(empty, environ=environ, service_account_dir=str(folder)).cluster.name == "in-cluster"
    with pytest.raises(ConfigError, match="no configuration has been provided"):
        kubeconfig.select(empty, environ={}, service_account_dir=str(folder))


def test_a_context_flag_never_falls_back_to_in_cluster(tmp_path):
    folder = tmp_path / "sa"
    write(folder / "token", "t")
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match='context "x" does not exist'):
        kubeconfig.select(kubeconfig.Config({}, {}, {}, "", []), "x", environ, str(folder))


# ---------------------------------------------------------------------------------------------
# The fast reader for kubectl-style block YAML: the full reader's value, or None (never another value)

# The YAML test suite's data, from the folder beside the checkout (where CI lays it out, as
# tests/test_yaml_suite.py reads it); not part of the repository.
SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "yaml-test-suite")


def _full(text, schema=yamlreader.CORE):
    try:
        return ("value", yamlreader.load(text, schema=schema))
    except YAMLError:
        return ("refused", None)


def _suite_inputs():
    """(case, path of in.yaml) for every case of the suite, numbered sub-cases included."""
    found = []
    for folder, subfolders, files in os.walk(SUITE):
        subfolders.sort()
        if "in.yaml" in files:
            found.append((os.path.relpath(folder, SUITE), os.path.join(folder, "in.yaml")))
    return found


def test_fast_reader_agrees_with_the_full_reader_on_the_yaml_test_suite():
    assert os.path.isdir(SUITE), "no YAML test suite at %s: lay out ../shared/yaml-test-suite beside the checkout" % (
        os.path.normpath(SUITE))
    inputs = _suite_inputs()
    assert len(inputs) > 300, "the YAML test suite at %s has only %d cases" % (os.path.normpath(SUITE), len(inputs))
    accepted = 0
    for case, path in inputs:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        fast = blockyaml.load(text)
        if fast is not None:
            accepted += 1
            assert _full(text) == ("value", fast), case
    assert accepted > 5


def test_fast_reader_reads_generator_style_kubeconfigs_and_leaves_the_rest(tmp_path):
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": "",
              "clusters": [{"name": "arn:aws:eks:us-west-2:1:cluster/x", "cluster": {
                  "server": "https://[fd00::1]:6443/k8s/clusters/c-x", "certificate-authority-data": "LS0t" * 40,
                  "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"a": None}}]}}],
              "users": [{"name": "u", "user": {"token": "0123", "as-groups": ["a", "b c"], "exec": {
                  "args": ["--region", "us-west-2", "yes", "null", "1.5", "#x", "a: b", "-v"], "env": None,
                  "command": "aws", "installHint": "Install it by following https://example.com/x#install " * 3}}}],
              "contexts": [{"name": "c", "context": {"cluster": "x", "user": "u", "namespace": "007"}}]}
    for style in ({"sort_keys": True}, {"sort_keys": False}, {"sort_keys": True, "width": 1 << 20},
                  {"sort_keys": True, "indent": 4}):
        text = yaml.safe_dump(config, default_flow_style=False, **style)
        expected = _full(text)
        assert expected == ("value", config)
        fast = blockyaml.load(text)
        assert fast is None or fast == config
    plain = yaml.safe_dump({k: v for k, v in config.items() if k != "users"}, default_flow_style=False)
    assert blockyaml.load(plain) is not None  # the style kubectl writes takes the fast path
    for text in ("a: 1\na: 2\n", "a: &x 1\nb: *x\n", "a: |\n  x\n", "a: [1]\n", "a: b # c\n", "- - a\n",
                 "a:\n  b\n", "a: b\n  c\n", "'a': 1\n", "a: 0x1F\n", "a:\tb\n", "--- a\n", "a: 1e3\n",
                 "a: \"\\x41\"\n", "a: 'unterminated\n", "\ufeffa: 1\n", "a: b\r\n", "true: 1\n"):
        assert blockyaml.load(text) is None, text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 6, 10 ** 6)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    | st.sampled_from(["", "null", "~", "yes", "0755", "0x1F", "1e3", ".5", "-a", "a: b", "a #b", "#", "'q'",
                       '"d"', "- x", "[]", "{}", "a:b", "arn:aws:x", "https://h:1/p", " pad ", "x\ny"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.from_regex(r"[a-z][a-z0-9.-]{0,8}(/[a-z]{1,4})?", fullmatch=True), children, max_size=4),
    max_leaves=20), st.booleans(), st.sampled_from([40, 80, 1 << 20]))
def test_fast_reader_never_gives_another_value_than_the_full_reader(value, sort_keys, width):
    document = {"data": value}
    text = yaml.safe_dump(document, default_flow_style=False, sort_keys=sort_keys, width=width, allow_unicode=True)
    for schema in (blockyaml.CORE, blockyaml.GO_YAML):
        fast = blockyaml.load(text, schema)
        if fast is not None:
            assert _full(text, schema) == ("value", fast)


PLAIN_VALUES = st.one_of(
    st.from_regex(r"[-?:]?[A-Za-z0-9+/=_.:~-]{1,20}", fullmatch=True),
    st.sampled_from(["y", "Y", "yes", "No", "ON", "off", "oN", "017", "-017", "0o17", "0x_1F", "-0b11", "1_000",
                     "08", "1e3", "-1", "+1", ".5", "-.5", "-.inf", ".NaN", "1e999", "2001-01-01", "-", "--", "---",
                     "-x", "--token", "-Kx9/=", "?x", ":x", "~", "null", "NULL", "nULL", "0xFFFFFFFFFFFFFFFFFF"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["token", "server", "a.b/c", "x-y"]), PLAIN_VALUES), min_size=1,
                max_size=6), st.booleans())
def test_fast_reader_agrees_with_the_full_reader_on_plain_values_in_both_schemas(entries, in_sequence):
    """Plain values as kubectl writes them (random tokens starting with '-' included), in a mapping or a list."""
    lines = ["k%d: %s" % (i, v) if not in_sequence else "- %s" % v for i, (_, v) in enumerate(entries)]
    text = "data:\n" + "".join("  %s\n" % line for line in lines)
    for schema in (blockyaml.CORE, blockyaml.GO_YAML):
        fast = blockyaml.load(text, schema)
        if fast is not None:
            assert _full(text, schema) == ("value", fast), text


def test_fast_reader_takes_tokens_starting_with_a_dash():
    """A random token may start with '-' (1 in 64 base64url tokens): it must not cost the full reader."""
    for text in ("token: -Kx9_a-b\n", "args:\n- -v\n- --region\n- ?x\n", "a: :b\n", "a: ---\n"):
        for schema in (blockyaml.CORE, blockyaml.GO_YAML):
            fast = blockyaml.load(text, schema)
            assert fast is not None and _full(text, schema) == ("value", fast), text
    for text in ("a: -\n", "a: - x\n", "a: -5\n"):
        fast = blockyaml.load(text)
        assert fast is None or _full(text) == ("value", fast), text
    assert blockyaml.load("a: yes\nb: 017\n", blockyaml.GO_YAML) == {"a": True, "b": 15}
    assert blockyaml.load("a: 1e3\n", blockyaml.GO_YAML) is None   # floats leave the subset
