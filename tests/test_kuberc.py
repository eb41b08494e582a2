"""The user's kuberc credential plugin policy (issue 20), decided as the real kubectl 1.37 decides it.

Each row is one kuberc (or none, or a folder, or an environment that turns kuberc off) and one way the
kubeconfig names its exec plugin (an absolute path, a bare name found on PATH, a path relative to the
kubeconfig's folder). The real kubectl (``kubectl get --raw /version``) and the built plugin
(``kubectl-aicr describe``) run with the same environment; the exec plugin writes a marker file when
it starts, so each row checks whether each client started it, and that a refusal says what kubectl says.
Rows marked STRICTER are the documented cases in which the plugin refuses where kubectl runs the plugin:
a kuberc its YAML reader cannot read as kubectl reads it.
"""

import os
import subprocess

import pytest

from tests.support.plugin import VENV_BIN, base_env, plugin_command, write

pytestmark = pytest.mark.e2e

KUBECTL = os.path.join(VENV_BIN, "kubectl")
NAME = "aicr-kuberc-plugin"
V1BETA1 = "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n"
DENY = V1BETA1 + "credentialPluginPolicy: DenyAll\n"
RUNS, REFUSED, STRICTER = "runs", "refused", "stricter"


def _allow(*entries):
    return V1BETA1 + "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n" + "".join(
        "- %s\n" % entry for entry in entries)


# (id, kuberc text (None: no file; "<dir>": a folder), command form, environment, outcome, what both say)
# In texts: {abs} the plugin's absolute path, {bin} its folder, {other} a folder holding another plugin
# of the same name. Command forms: "abs", "bare" (found on PATH), "rel" (bin/NAME beside the kubeconfig).
ROWS = [
    ("no kuberc", None, "abs", {}, RUNS, None),
    ("empty kuberc", "", "abs", {}, RUNS, None),
    ("comments only", "# nothing\n", "abs", {}, RUNS, None),
    ("AllowAll", V1BETA1 + "credentialPluginPolicy: AllowAll\n", "abs", {}, RUNS, None),
    ("empty policy", V1BETA1 + 'credentialPluginPolicy: ""\n', "bare", {}, RUNS, None),
    ("DenyAll abs", DENY, "abs", {}, REFUSED, 'plugin "{abs}" not allowed: policy set to "DenyAll"'),
    ("DenyAll bare", DENY, "bare", {}, REFUSED, 'plugin "%s" not allowed: policy set to "DenyAll"' % NAME),
    ("DenyAll rel", DENY, "rel", {}, REFUSED, 'plugin "{abs}" not allowed: policy set to "DenyAll"'),
    ("DenyAll, a name Go quotes", DENY, "odd", {}, REFUSED,
     'plugin "{bin}/odd \\"plug\\" \\u200b\u00e9" not allowed: policy set to "DenyAll"'),
    ("allowlist abs, abs", _allow("command: {abs}"), "abs", {}, RUNS, None),
    ("allowlist abs, bare", _allow("command: {abs}"), "bare", {}, RUNS, None),
    ("allowlist abs, rel", _allow("command: {abs}"), "rel", {}, RUNS, None),
    ("allowlist bare, abs", _allow("command: " + NAME), "abs", {}, RUNS, None),
    ("allowlist bare, bare", _allow("command: " + NAME), "bare", {}, RUNS, None),
    ("allowlist deprecated name", _allow("name: {abs}"), "abs", {}, RUNS, None),
    ("allowlist name = command", _allow("name: {abs}\n  command: {abs}"), "abs", {}, RUNS, None),
    ("allowlist other command", _allow("command: /bin/true"), "abs", {}, REFUSED,
     'plugin path "{abs}" is not permitted by the credential plugin allowlist'),
    ("allowlist same name elsewhere", _allow("command: {other}/" + NAME), "abs", {}, REFUSED,
     'plugin path "{abs}" is not permitted by the credential plugin allowlist'),
    ("allowlist abs, bare found elsewhere first", _allow("command: {abs}"), "bare",
     {"PATH": "{other}:{bin}:/usr/bin:/bin"}, REFUSED,
     'plugin path "{other}/%s" is not permitted by the credential plugin allowlist' % NAME),
    ("allowlist relative entry", _allow("command: bin/" + NAME), "abs", {}, REFUSED,
     'plugin path "{abs}" is not permitted by the credential plugin allowlist'),
    ("allowlist through a symlink", _allow("command: {abs}"), "link", {}, REFUSED,
     'plugin path "{bin}/link/%s" is not permitted by the credential plugin allowlist' % NAME),
    # kubectl cleans a command with a slash (absolute too) before it checks and runs it: bin/sub/.. is bin/
    # (sub a symbolic link to other/d), never other/, so the program checked is the program run.
    ("no kuberc, .. after a symlinked folder", None, "dotdot", {}, RUNS, None),
    ("no kuberc, relative, .. after a symlinked folder", None, "rel-dotdot", {}, RUNS, None),
    ("no kuberc, a trailing slash", None, "slash-end", {}, RUNS, None),
    ("allowlist abs, a ./ inside", _allow("command: {abs}"), "dot", {}, RUNS, None),
    ("allowlist abs, .. after a symlinked folder", _allow("command: {abs}"), "dotdot", {}, RUNS, None),
    ("allowlist bare, .. after a symlinked folder", _allow("command: " + NAME), "dotdot", {}, RUNS, None),
    ("allowlist the other, .. after a symlinked folder", _allow("command: {other}/" + NAME), "dotdot", {}, REFUSED,
     'plugin path "{abs}" is not permitted by the credential plugin allowlist'),
    ("DenyAll, .. after a symlinked folder", DENY, "dotdot", {}, REFUSED,
     'plugin "{abs}" not allowed: policy set to "DenyAll"'),
    ("allowlist, command missing, listed", _allow("command: missing-plugin"), "missing", {}, REFUSED,
     "executable missing-plugin not found"),
    ("allowlist, command missing, not listed", _allow("command: {abs}"), "missing", {}, REFUSED,
     'plugin path "missing-plugin" cannot be resolved for credential plugin allowlist check: '
     'exec: "missing-plugin": executable file not found in $PATH'),
    ("DenyAll, command missing", DENY, "missing", {}, REFUSED,
     'plugin "missing-plugin" not allowed: policy set to "DenyAll"'),
    ("AllowAll, found through a relative PATH entry", V1BETA1 + "credentialPluginPolicy: AllowAll\n", "bare",
     {"PATH": "bin:/usr/bin:/bin"}, REFUSED, None),
    ("allowlist, found through a relative PATH entry", _allow("command: {abs}"), "bare",
     {"PATH": "bin:/usr/bin:/bin"}, REFUSED,
     'plugin path "bin/%s" cannot be resolved for credential plugin allowlist check: exec: "%s": cannot run '
     'executable found relative to current directory' % (NAME, NAME)),
    ("allowlist lists the relative find", _allow("command: bin/" + NAME), "bare", {"PATH": "bin:/usr/bin:/bin"},
     REFUSED, None),
    ("allowlist empty", V1BETA1 + "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: []\n", "abs", {},
     REFUSED, 'credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead'),
    ("allowlist unspecified", V1BETA1 + "credentialPluginPolicy: Allowlist\n", "abs", {}, REFUSED,
     'credential plugin policy set to "Allowlist", but allowlist is unspecified'),
    ("allowlist null", V1BETA1 + "credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist: null\n", "abs", {},
     REFUSED, 'credential plugin policy set to "Allowlist", but allowlist is unspecified'),
    ("AllowAll with a list", V1BETA1 + "credentialPluginPolicy: AllowAll\ncredentialPluginAllowlist:\n"
     "- command: {abs}\n", "abs", {}, REFUSED,
     'misconfigured credential plugin allowlist: plugin policy is "AllowAll" but allowlist is non-nil'),
    ("no policy with a list", V1BETA1 + "credentialPluginAllowlist:\n- command: {abs}\n", "abs", {}, REFUSED,
     'misconfigured credential plugin allowlist: plugin policy is "" but allowlist is non-nil'),
    ("DenyAll with an empty list", DENY + "credentialPluginAllowlist: []\n", "abs", {}, REFUSED,
     'misconfigured credential plugin allowlist: plugin policy is "DenyAll" but allowlist is non-nil'),
    ("unknown policy", V1BETA1 + "credentialPluginPolicy: denyall\n", "abs", {}, REFUSED,
     'unknown plugin policy: "denyall"'),
    ("empty entry", _allow("{{}}"), "abs", {}, REFUSED, "misconfigured credential plugin allowlist: empty allowlist entry #1"),
    ("null entry", _allow("command: {abs}", "null"), "abs", {}, REFUSED,
     "misconfigured credential plugin allowlist: empty allowlist entry #2"),
    ("unknown entry field", _allow("path: {abs}"), "abs", {}, REFUSED,
     "misconfigured credential plugin allowlist: empty allowlist entry #1"),
    ("non-normalized entry", _allow("command: ./" + NAME), "abs", {}, REFUSED,
     'non-normalized file path: "./%s" vs "%s"' % (NAME, NAME)),
    ("non-normalized abs entry", _allow("command: {bin}/../bin/" + NAME), "abs", {}, REFUSED,
     'non-normalized file path: "{bin}/../bin/%s" vs "{abs}"' % NAME),
    # kubectl passes over a document it cannot use, and then has no policy: every plugin runs.
    ("name and command differ", _allow("name: {abs}\n  command: /bin/true"), "abs", {}, RUNS, None),
    ("v1alpha1 has no policy", DENY.replace("v1beta1", "v1alpha1"), "abs", {}, RUNS, None),
    ("unknown version", DENY.replace("v1beta1", "v2"), "abs", {}, RUNS, None),
    ("wrong kind", DENY.replace("Preference", "Preferences"), "abs", {}, RUNS, None),
    ("no apiVersion", "kind: Preference\ncredentialPluginPolicy: DenyAll\n", "abs", {}, RUNS, None),
    ("field name in the wrong case", V1BETA1 + "CredentialPluginPolicy: DenyAll\n", "abs", {}, RUNS, None),
    ("a type error elsewhere", DENY + "aliases: 5\n", "abs", {}, RUNS, None),
    ("a YAML 1.1 boolean policy", V1BETA1 + "credentialPluginPolicy: yes\n", "abs", {}, RUNS, None),
    ("a number policy", V1BETA1 + "credentialPluginPolicy: 1\n", "abs", {}, RUNS, None),
    ("a separator with text ends the file", "kind: Other\n--- x\n" + DENY, "abs", {}, RUNS, None),
    ("a four-dash line ends the file", "kind: Other\n----\n" + DENY, "abs", {}, RUNS, None),
    ("a bad separator even after the policy", DENY + "--- x\n", "abs", {}, RUNS, None),  # read with its document
    ("a folder at the default path", "<dir>", "abs", {}, RUNS, None),
    ("JSON: kind twice, the written last is not Preference", '{{"apiVersion": "kubectl.config.k8s.io/v1beta1", '
     '"kind": "Preference", "KIND": "Other", "credentialPluginPolicy": "DenyAll"}}', "abs", {}, RUNS, None),
    # ... and reads these as kubectl does.
    ("apiVersion and kind in another case", "APIVERSION: kubectl.config.k8s.io/v1beta1\nKind: Preference\n"
     "credentialPluginPolicy: DenyAll\n", "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    # kubectl reads the document as JSON made from the YAML (sigs.k8s.io/yaml: its keys sorted), so of
    # two keys that differ only in case the one sorted last gives apiVersion or kind, not the one written last.
    ("kind twice in two cases, the sorted last is Preference", V1BETA1 + "KIND: Other\n"
     "credentialPluginPolicy: DenyAll\n", "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("kind twice in two cases, written first is Preference", "apiVersion: kubectl.config.k8s.io/v1beta1\n"
     "KIND: Other\nkind: Preference\ncredentialPluginPolicy: DenyAll\n", "abs", {}, REFUSED,
     'policy set to "DenyAll"'),
    ("apiVersion twice in two cases", V1BETA1 + "APIVERSION: v1\ncredentialPluginPolicy: DenyAll\n", "abs", {},
     REFUSED, 'policy set to "DenyAll"'),
    ("kind twice, written last is not Preference", "apiVersion: kubectl.config.k8s.io/v1beta1\n"
     "kind: Preference\nkinD: Other\ncredentialPluginPolicy: DenyAll\n", "abs", {}, REFUSED,
     'policy set to "DenyAll"'),
    ("JSON: kind twice, the written last is Preference", '{{"apiVersion": "kubectl.config.k8s.io/v1beta1", '
     '"KIND": "Other", "kind": "Preference", "credentialPluginPolicy": "DenyAll"}}', "abs", {}, REFUSED,
     'policy set to "DenyAll"'),
    ("the internal version", "apiVersion: kubectl.config.k8s.io/__internal\nkind: Preference\n"
     "CredentialPluginPolicy: DenyAll\n", "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("JSON", '{{"apiVersion": "kubectl.config.k8s.io/v1beta1", "kind": "Preference", '
     '"credentialPluginPolicy": "DenyAll"}}', "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("CRLF line ends", DENY.replace("\n", "\r\n"), "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("a leading separator", "---\n" + DENY, "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("a tagged policy", V1BETA1 + "credentialPluginPolicy: !mine DenyAll\n", "abs", {}, REFUSED,
     'policy set to "DenyAll"'),
    ("the second document", "kind: Other\n---\n" + DENY, "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("the first usable document wins", DENY + "--- # next\n" + V1BETA1 + "credentialPluginPolicy: AllowAll\n",
     "abs", {}, REFUSED, 'policy set to "DenyAll"'),
    ("a merge key", "base: &b {{credentialPluginPolicy: DenyAll}}\n" + V1BETA1 + "<<: *b\n", "abs", {}, REFUSED,
     'policy set to "DenyAll"'),
    # Turning kuberc off, or naming it.
    ("KUBERC=off", DENY, "abs", {"KUBERC": "off"}, RUNS, None),
    ("KUBECTL_KUBERC=false", DENY, "abs", {"KUBECTL_KUBERC": "false"}, RUNS, None),
    ("KUBECTL_KUBERC=FALSE", DENY, "abs", {"KUBECTL_KUBERC": "FALSE"}, RUNS, None),
    ("KUBECTL_KUBERC=true", DENY, "abs", {"KUBECTL_KUBERC": "true"}, REFUSED, 'policy set to "DenyAll"'),
    ("KUBERC names the file", None, "abs", {"KUBERC": "{tmp}/elsewhere"}, REFUSED, 'policy set to "DenyAll"'),
    ("KUBERC names a missing file", DENY, "abs", {"KUBERC": "{tmp}/missing"}, REFUSED,
     "kuberc: open {tmp}/missing: no such file or directory"),
    ("KUBERC names a folder", None, "abs", {"KUBERC": "{bin}"}, REFUSED, "kuberc: read {bin}: is a directory"),
    ("KUBERC names a file without a Preference", None, "abs", {"KUBERC": "{tmp}/no-preference"}, REFUSED,
     "kuberc: no valid preferences found in {tmp}/no-preference"),
    ("KUBERC names a file with a bad separator", None, "abs", {"KUBERC": "{tmp}/bad-separator"}, REFUSED,
     "kuberc: invalid Yaml document separator: x"),
    ("an empty KUBERC is the default file", DENY, "abs", {"KUBERC": ""}, REFUSED, 'policy set to "DenyAll"'),
    ("an empty HOME: ./.kube/kuberc", None, "abs", {"HOME": ""}, REFUSED, 'policy set to "DenyAll"'),
    ("an unset HOME: ./.kube/kuberc", None, "abs", {"HOME": None}, REFUSED, 'policy set to "DenyAll"'),
    # STRICTER: what the reader cannot read as kubectl does stops the plugin.
    ("a repeated key (kubectl: the last wins)", DENY + "credentialPluginPolicy: AllowAll\n", "abs", {}, STRICTER,
     "duplicate key"),
    ("a repeated key, DenyAll last", V1BETA1 + "credentialPluginPolicy: AllowAll\ncredentialPluginPolicy: DenyAll\n",
     "abs", {}, REFUSED, None),
    ("broken YAML (kubectl: skipped)", "a: [\n", "abs", {}, STRICTER, "cannot read the credential plugin policy"),
    ("broken YAML before the policy", "a: [\n---\n" + DENY, "abs", {}, REFUSED, None),
    ("a flow mapping (kubectl: not JSON, passed over)", "{{apiVersion: kubectl.config.k8s.io/v1beta1, kind: Preference, "
     "credentialPluginPolicy: DenyAll}}\n", "abs", {}, STRICTER, 'policy set to "DenyAll"'),
]


@pytest.fixture
def setting(tmp_path, api_server):
    """The files of one row: the plugin (in bin/, and a decoy of the same name in other/), a symlink
    folder, and a function that runs a client and says whether the plugin started."""
    token = api_server.token("bob@example.com")
    body = ('#!/bin/sh\necho "$0" >> "$AICR_TEST_MARKER"\nprintf \'{"apiVersion":"client.authentication.k8s.io/v1",'
            '"kind":"ExecCredential","status":{"token":"%s"}}\'\n' % token)
    plugin = write(tmp_path / "bin" / NAME, body, mode=0o755)
    write(tmp_path / "other" / NAME, body, mode=0o755)
    write(tmp_path / "bin" / 'odd "plug" \u200b\u00e9', body, mode=0o755)
    os.symlink(str(tmp_path / "bin"), str(tmp_path / "bin" / "link"))
    os.makedirs(str(tmp_path / "other" / "d"))  # bin/sub/.. is other/ to the kernel, bin/ to the eye
    os.symlink(str(tmp_path / "other" / "d"), str(tmp_path / "bin" / "sub"))
    write(tmp_path / "elsewhere", DENY)
    write(tmp_path / ".kube" / "kuberc", DENY)  # read with an empty HOME (the current folder is tmp_path)
    write(tmp_path / "no-preference", "kind: Other\n")
    write(tmp_path / "bad-separator", "kind: Other\n--- x\n")
    values = {"abs": plugin, "bin": str(tmp_path / "bin"), "other": str(tmp_path / "other"), "tmp": str(tmp_path)}
    return tmp_path, values


def _files(tmp_path, values, text, form, api_server):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True, exist_ok=True)
    if text == "<dir>":
        (home / ".kube" / "kuberc").mkdir()
    elif text is not None:
        write(home / ".kube" / "kuberc", text.format(**values))
    command = {"abs": values["abs"], "bare": NAME, "rel": "bin/" + NAME, "link": values["bin"] + "/link/" + NAME,
               "missing": "missing-plugin",
               "dotdot": values["bin"] + "/sub/../" + NAME, "slash-end": values["abs"] + "/", "dot": values["bin"] + "/./" + NAME, "rel-dotdot": "bin/sub/../" + NAME,
               "odd": values["bin"] + '/odd "plug" \u200b\u00e9'}[form]
    config = api_server.kubeconfig(users=["bob@example.com"])
    config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                                           "interactiveMode": "Never"}}
    return home, write(tmp_path / "config", config)


def _run(argv, tmp_path, home, kubeconfig, values, extra, marker):
    env = base_env(home)
    env["PATH"] = values["bin"] + os.pathsep + env["PATH"]
    env.update({key: value.format(**values) for key, value in extra.items() if value is not None})
    for key in [key for key, value in extra.items() if value is None]:  # None: unset
        env.pop(key, None)
    env.update(KUBECONFIG=kubeconfig, AICR_TEST_MARKER=str(marker))
    if os.path.exists(str(marker)):
        os.unlink(str(marker))
    result = subprocess.run(argv, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60)
    if not os.path.exists(str(marker)):
        return result, None
    with open(str(marker)) as handle:
        return result, handle.read()  # the paths the exec plugin was started as ($0), one a line


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_the_plugin_runs_an_exec_plugin_exactly_when_kubectl_does(setting, plugin, api_server, row):
    name, text, form, extra, outcome, says = row
    tmp_path, values = setting
    home, kubeconfig = _files(tmp_path, values, text, form, api_server)
    theirs, kubectl_ran = _run([KUBECTL, "get", "--raw", "/version"], tmp_path, home, kubeconfig, values, extra,
                               tmp_path / "kubectl-ran")
    ours, plugin_ran = _run(plugin_command(plugin) + ["describe", api_server.fixture_name("install")], tmp_path,
                            home, kubeconfig, values, extra, tmp_path / "plugin-ran")
    said = (says or "").format(**values)
    if outcome == RUNS:
        assert kubectl_ran, theirs.stderr
        assert plugin_ran and ours.returncode == 0, ours.stderr
        assert plugin_ran == kubectl_ran  # the same program, as the same path
    elif outcome == REFUSED:
        assert not kubectl_ran, theirs.stderr
        assert not plugin_ran and ours.returncode == 1, ours.stderr
        assert said in theirs.stderr, theirs.stderr
        assert ours.stderr.startswith("error: ") and ours.stderr.count("\n") == 1, ours.stderr
        assert said in ours.stderr, ours.stderr
    else:  # STRICTER: kubectl runs it; the plugin refuses and says why
        assert kubectl_ran, theirs.stderr
        assert not plugin_ran and ours.returncode == 1, ours.stderr
        assert said in ours.stderr, ours.stderr
        assert "runs no exec plugin" in ours.stderr or "policy set to" in said, ours.stderr  # or the policy applied


def test_through_kubectl_the_plugin_honours_the_kuberc_kubectl_passes_it(setting, plugin, api_server):
    """Run as ``kubectl aicr``: kubectl has read and validated the kuberc itself (a broken policy stops it
    before the plugin starts), passes its environment (KUBERC, HOME) but not a policy; the plugin reads the
    same file again and refuses the exec plugin a DenyAll forbids. A ``--kuberc`` after ``aicr`` reaches
    the plugin as an argument, which refuses it as an unknown flag."""
    import shutil

    tmp_path, values = setting
    home, kubeconfig = _files(tmp_path, values, DENY, "abs", api_server)
    shutil.copy2(plugin, values["bin"] + "/kubectl-aicr")
    marker = tmp_path / "ran"
    argv = [KUBECTL, "aicr", "describe", api_server.fixture_name("install")]
    result, ran = _run(argv, tmp_path, home, kubeconfig, values, {}, marker)
    assert not ran and result.returncode == 1
    assert result.stderr.startswith('error: getting credentials: plugin "%s" not allowed: policy set to "DenyAll"'
                                    % values["abs"]), result.stderr
    result, ran = _run(argv, tmp_path, home, kubeconfig, values, {"KUBERC": "off"}, marker)
    assert ran and result.returncode == 0, result.stderr
    write(home / ".kube" / "kuberc", V1BETA1 + "credentialPluginPolicy: Allowlist\n")
    result, ran = _run(argv, tmp_path, home, kubeconfig, values, {}, marker)
    assert not ran and result.returncode == 1
    assert "error occurred while applying preferences credential plugin policy set to" in result.stderr  # kubectl's
    result, ran = _run(argv + ["--kuberc", str(tmp_path / "elsewhere")], tmp_path, home, kubeconfig, values, {},
                       marker)  # kubectl reads that file (a valid one) instead, then starts the plugin
    assert not ran and "unknown flag: --kuberc" in result.stderr


def test_go_path_and_quote_rules():
    from kubectl_aicr.kube import kuberc

    assert [kuberc.go_clean(p) for p in ("", "//a", "///a//b/", "./x", "a/../..", "/..")] == [
        ".", "/a", "/a/b", "x", "..", "/"]
    assert [kuberc.go_base(p) for p in ("", "/", "a/b/", "/a")] == [".", "/", "b", "a"]
    assert kuberc.go_join("", ".kube", "kuberc") == ".kube/kuberc" and kuberc.go_join("/h/", "x") == "/h/x"
    assert kuberc.go_quote('a"\\\x01\t\u200b\U0001F600é') == '"a\\"\\\\\\x01\\t\\u200b\U0001F600é"'


@pytest.mark.parametrize("case", ["pipe", "not UTF-8", "too large", "repeated key"])
def test_a_kuberc_it_cannot_read_as_kubectl_does_stops_the_exec_plugin(tmp_path, case):
    """Where kubectl would wait (a pipe), or might read a policy this reader cannot: ConfigError, no plugin."""
    from kubectl_aicr.errors import ConfigError
    from kubectl_aicr.kube import kuberc

    path = tmp_path / "kuberc"
    if case == "pipe":
        os.mkfifo(str(path))
    elif case == "not UTF-8":
        path.write_bytes(DENY.encode() + b"# \xff\n")
    elif case == "too large":
        path.write_bytes(DENY.encode() + b"#" * kuberc.MAX_KUBERC_BYTES + b"\n")
    else:
        path.write_text(DENY + "credentialPluginPolicy: AllowAll\n")
    for environ in ({"HOME": str(tmp_path / "nowhere"), "KUBERC": str(path)},
                    {"HOME": str(tmp_path / "h")}):  # the default file: a link to it
        if "KUBERC" not in environ:
            os.makedirs(environ["HOME"] + "/.kube", exist_ok=True)
            target = environ["HOME"] + "/.kube/kuberc"
            if not os.path.lexists(target):
                os.symlink(str(path), target)
        with pytest.raises(ConfigError, match="runs no exec plugin"):
            kuberc.load(environ)


def test_a_missing_or_unset_home_kuberc_is_no_policy(tmp_path):
    from kubectl_aicr.kube import kuberc

    assert kuberc.load({"HOME": str(tmp_path)}) is kuberc.NO_POLICY
    assert kuberc.load({"KUBECTL_KUBERC": "False", "KUBERC": str(tmp_path / "missing")}) is kuberc.NO_POLICY
