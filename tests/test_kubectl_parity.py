"""The differential test: the real kubectl and the built plugin on one corpus of kubeconfigs.

For every case of :mod:`tests.support.kubeconfig_corpus`, kubectl runs
``kubectl [flags] get --raw /apis/operator.aicr.run/v1alpha1/runtimerollouts/<name>`` and the
plugin runs ``kubectl-aicr describe <name> [flags]``, each as a process with the same
environment, working folder and stdin (/dev/null), against the HTTPS test API servers.
The servers record what each client presented (path, Authorization, client certificate
subject, SNI, Host, Impersonate-* headers) and the proxies what they were asked to tunnel to;
the test then asserts what the case expects: the same records, both refusing with no
request sent, or the plugin failing clearly (one ``error:`` line, nothing sent) where
kubectl fell back to localhost:8080, plain HTTP or a password prompt. The corpus includes client-go's
own clientcmd test tables (:mod:`tests.support.clientcmd_cases`), so a kubectl release that changes them
shows up here.
"""

import os
import re
import subprocess

import pytest

from tests.support import clientcmd_cases  # noqa: F401 (registers client-go's clientcmd cases in the corpus)
from tests.support import kubeconfig_corpus as corpus
from tests.support.plugin import VENV_BIN, base_env, plugin_command
from tests.support.kubeconfig_corpus import corpus_servers  # noqa: F401 (a fixture)

pytestmark = pytest.mark.e2e

KUBECTL = os.path.join(VENV_BIN, "kubectl")
RAW = "/apis/operator.aicr.run/v1alpha1/runtimerollouts/%s"


def identity(record):
    """What a client presented in one request, in a form both clients can be compared on: the same bytes on
    the wire for the path, the TLS server name (SNI) and the Host header, letter case included."""
    return {"path": record.path, "authorization": record.authorization, "client_cert": record.client_cert,
            "sni": record.sni, "host": [value for name, value in record.headers if name.lower() == "host"],
            "impersonation": {name.lower(): values for name, values in record.impersonation.items()}}


def tunnel(record):
    """What a proxy saw of one tunnel: the target asked for and, for an https proxy, the TLS server name
    and whether a client certificate was shown to it."""
    return record.target, record.sni, record.client_cert


class Observed:
    """One client's run: its result, and what every server and proxy recorded during it."""

    def __init__(self, result, requests, tunnels):
        self.result, self.requests, self.tunnels = result, requests, tunnels

    def sent_nothing(self):
        return not any(self.requests.values()) and not any(self.tunnels.values())


def observe(argv, case, main, servers, home):
    main.clear_requests()
    servers.clear()
    env = base_env(home)
    env.update(case.env)
    if case.path_first:
        python3_folder = env["PATH"].split(os.pathsep)[0]
        rest = [python3_folder] if case.path_only else env["PATH"].split(os.pathsep)
        env["PATH"] = os.pathsep.join([case.path_first] + rest)
    if case.kubeconfig_env is not None:
        env["KUBECONFIG"] = case.kubeconfig_env
    result = subprocess.run(argv, env=env, cwd=case.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    everyone = dict(servers.all(), main=main)
    requests = {name: server.requests for name, server in everyone.items()}
    tunnels = {name: proxy.records for name, proxy in servers.proxies().items()}
    return Observed(result, requests, tunnels)


def assert_one_line_error(observed, pattern):
    """Exit status 1 and one ``error:`` line, the last one (an exec plugin's own stderr may come before it)."""
    stderr = observed.result.stderr
    assert observed.result.returncode == 1, stderr
    lines = stderr.splitlines()
    assert stderr.endswith("\n") and lines[-1].startswith("error: "), stderr
    assert sum(line.startswith("error: ") for line in lines) == 1, stderr
    assert re.search(pattern, lines[-1][len("error: "):]), stderr


@pytest.mark.parametrize("name", corpus.names())
def test_kubectl_and_the_plugin_agree(name, plugin, api_server, corpus_servers, tmp_path):
    case = corpus.build(name, api_server, corpus_servers, tmp_path / "case")
    home = tmp_path / "home"
    home.mkdir()
    rollout = api_server.fixture_name(corpus.ROLE)
    kubectl = observe([KUBECTL] + list(case.args) + ["get", "--raw", RAW % rollout], case, api_server,
                      corpus_servers, home)
    ours = observe(plugin_command(plugin) + ["describe", rollout] + list(case.args), case, api_server,
                   corpus_servers, home)
    if case.expect == corpus.SAME:
        assert_same(case, kubectl, ours)
    elif case.expect == corpus.BOTH_REFUSE:
        assert kubectl.result.returncode != 0 and kubectl.sent_nothing(), kubectl.result.stderr
        assert re.search(case.kubectl_error, kubectl.result.stdout + kubectl.result.stderr), kubectl.result.stderr
        assert ours.sent_nothing(), ours.requests
        assert_one_line_error(ours, case.plugin_error)
    elif case.expect == corpus.FALLBACK:
        assert kubectl.result.returncode != 0 and kubectl.sent_nothing(), kubectl.result.stderr
        assert re.search(case.kubectl_error, kubectl.result.stdout + kubectl.result.stderr), kubectl.result.stderr
        assert ours.sent_nothing(), ours.requests
        assert_one_line_error(ours, case.plugin_error)
    elif case.expect == corpus.PLUGIN_REFUSES:
        assert kubectl.result.returncode == 0, kubectl.result.stderr
        assert [r.user for r in kubectl.requests[case.server]][:1] == [case.kubectl_user]
        assert ours.sent_nothing(), ours.requests
        assert_one_line_error(ours, case.plugin_error)
    else:
        assert case.expect == corpus.ANONYMOUS
        assert re.search(case.kubectl_error, kubectl.result.stdout) and kubectl.sent_nothing()
        first = ours.requests[case.server][0]
        assert first.authorization is None and first.client_cert is None and first.user == "system:anonymous"


def assert_same(case, kubectl, ours):
    theirs_seen, ours_seen = kubectl.requests[case.server], ours.requests[case.server]
    assert theirs_seen, "kubectl sent nothing to %s: %s" % (case.server, kubectl.result.stderr)
    assert ours_seen, "the plugin sent nothing to %s: %s" % (case.server, ours.result.stderr)
    assert identity(ours_seen[0]) == identity(theirs_seen[0])
    assert ours_seen[0].user == theirs_seen[0].user
    for server, seen in ours.requests.items():
        assert server == case.server or not seen, "the plugin also reached %s" % server
    if case.proxy:
        assert [tunnel(r) for r in ours.tunnels[case.proxy]] == [tunnel(r) for r in kubectl.tunnels[case.proxy]]
        assert ours.tunnels[case.proxy], "nothing went through the %s proxy" % case.proxy
    else:
        assert not any(ours.tunnels.values()) and not any(kubectl.tunnels.values())
    if ours_seen[0].status == 200:
        assert ours.result.returncode == 0, ours.result.stderr


def test_the_corpus_is_large_enough():
    assert len(corpus.names()) >= 40
    assert sum(name.startswith("clientcmd-") for name in corpus.names()) >= 60
