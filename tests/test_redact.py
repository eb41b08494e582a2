"""kube/redact.url, the one redactor every URL passes before a message (issue 20, the user's own rules and files 4):
compared with Go's net/url ``URL.Redacted`` on generated URLs (tests/support/go/redacted.go, run with ``go run``;
Go is required, on this machine and in CI), and no message of the plugin shows a password, whatever it holds."""

import json
import os
import random
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_aicr.errors import AicrError
from kubectl_aicr.kube import proxy_rules, redact, rest, validation
from kubectl_aicr.kube.kubeconfig import Cluster
from tests.support.plugin import ROOT

GO_PROGRAM = os.path.join(ROOT, "tests", "support", "go", "redacted.go")


@pytest.mark.parametrize("text, shown", [
    ("https://u:p@host:6443/x", "https://u:xxxxx@host:6443/x"),
    ("http://alice:p@ss@proxy:3128", "http://alice:xxxxx@proxy:3128"),       # "@" in the password: the last "@"
    ("http://alice:pa/ss@proxy:3128", "http://alice:xxxxx@proxy:3128"),      # "/": Go cannot parse it
    ("http://alice:pa#ss@proxy", "http://alice:xxxxx@proxy"),
    ("http://alice:pa?ss@proxy", "http://alice:xxxxx@proxy"),
    ("https://u:1/w@host", "https://u:xxxxx@host"),                          # Go reads host u, port 1: shows it
    ("http://al:ice:p:w@proxy", "http://al:xxxxx@proxy"),                     # the user ends at the first ":"
    ("alice:s3cret@proxy:3128", "alice:xxxxx@proxy:3128"),                    # no scheme (Go: scheme "alice")
    ("https://:pw@h", "https://:xxxxx@h"),
    ("https://token@host", "https://token@host"),                            # a user alone stays, as in Go
    ("https://host:6443/k8s/clusters/c-x", "https://host:6443/k8s/clusters/c-x"),
    ("https://[::1]:6443", "https://[::1]:6443"),
    ("", ""),
])
def test_the_redactor_on_examples(text, shown):
    assert redact.url(text) == shown


def _generated(seed=20, count=3000):
    """(text, expected, password) triples: URLs with a password of any printable characters (the markers
    ``Zq`` and ``qZ`` around it; no other part holds a ``q``), with a user alone, or with no user info."""
    rng = random.Random(seed)
    plain = "abcdefghijklmnoprstuvwxyz0123456789"
    special = "/?#@:%[]!$&'()*+,;=~-._ ^`{}|\"<>\\" + "\u00e9\u4e2d"

    def word(alphabet, low, high):
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))
    cases = []
    for _ in range(count):
        scheme = rng.choice(["https://", "http://", "socks5://", ""])
        host = rng.choice(["h" + word(plain + ".-", 0, 10), "10.0.0.1", "[::1]", "[fe80::1%25eth0]"])
        rest_ = host + rng.choice(["", ":", ":3128", ":6443"]) + rng.choice(["", "/", "/k8s/c-x", "/a%20b"]) + \
            rng.choice(["", "?x=1", "#f"])
        user = word(plain + "-._~", 0, 8)
        kind = rng.random()
        if kind < 0.7:
            password = "Zq" + word(plain + special, 0, 12) + "qZ"
            cases.append((scheme + user + ":" + password + "@" + rest_, scheme + user + ":xxxxx@" + rest_, password))
        elif kind < 0.85:
            cases.append((scheme + (user or "u") + "@" + rest_, None, None))
        else:
            cases.append((scheme + rest_, None, None))
    return cases


def _go_redacted(texts):
    """Go's net/url answers for ``texts`` (see tests/support/go/redacted.go)."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    assert go, "Go is needed for this test (a test-only program, standard library only): install Go 1.26"
    result = subprocess.run([go, "run", GO_PROGRAM], input=json.dumps(texts), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=300,
                            env=dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0"))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_redactor_is_gos_url_redacted_where_go_hides_the_password_and_hides_it_where_go_cannot():
    cases = _generated()
    answers = _go_redacted([text for text, _, _ in cases])
    agreed = stricter = 0
    for (text, expected, password), go in zip(cases, answers):
        ours = redact.url(text)
        if password is None:  # no password: shown as it is, by both
            assert ours == text
            if go["ok"]:
                assert go["redacted"] == text, (text, go)
            continue
        assert ours == expected and "Zq" not in ours and "qZ" not in ours, (text, ours)
        if go["ok"] and go["password"] and "Zq" not in go["redacted"] and "qZ" not in go["redacted"]:
            assert go["redacted"] == ours, (text, go, ours)  # where Go hides the password, as Go shows it
            agreed += 1
        else:  # Go could not parse it, or read no password or only a part of it (its Redacted shows the rest)
            stricter += 1
    assert agreed > 300 and stricter > 300, (agreed, stricter)


# Every message that can carry a URL: the server's checks, the transport's errors naming the server (and the
# proxy), a redirect answer, the proxy-url's and HTTPS_PROXY's checks, kubeconfig validation.
PASSWORDS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).map(lambda s: "Zq" + s + "qZ")
SHAPES = ["https://alice:{}@127.0.0.1:6443", "http://alice:{}@127.0.0.1", "alice:{}@127.0.0.1:6443",
          "https://alice:{}@127.0.0.1:6443/k8s/c-x", "socks5://alice:{}@proxy:1080", "http://alice:{}@proxy:3128",
          "alice:{}@proxy:3128", "https://alice:{}@[::1]:3128", "ftp://alice:{}@proxy"]


def _messages(url):
    """Every text the plugin could show for ``url`` as a server, a proxy-url and HTTPS_PROXY."""
    shown = []

    def attempt(action):
        try:
            return action()
        except AicrError as exc:
            shown.append(str(exc))
    client = attempt(lambda: rest.Client(rest.RESTConfig(host=url, cluster_name="c"), credentials=None))
    if client is not None:
        shown += [str(client._transport_error(error)) for error in
                  (ConnectionRefusedError(), OSError("x"), __import__("ssl").SSLError(1, "bad"))]
        attempt(lambda: rest.decode(client.server, "GET", "/api", 302, "Found", b""))
        attempt(lambda: rest.decode(client.server, "GET", "/api", 500, "Oops", b"<html>"))
    for proxy in (attempt(lambda: proxy_rules.parse_proxy_url(url, "c")),
                  attempt(lambda: proxy_rules.from_environment("10.1.1.1", 443, {"HTTPS_PROXY": url}))):
        if proxy is not None:
            shown += [proxy.display(), repr(proxy)]
    for config, environ in ((rest.RESTConfig(host="https://10.1.1.1", cluster_name="c", proxy_url=url), {}),
                            (rest.RESTConfig(host="https://10.1.1.1", cluster_name="c"), {"HTTPS_PROXY": url})):
        client = attempt(lambda: rest.Client(config, credentials=None, environ=environ))
        if client is not None:
            shown += [str(client._transport_error(error)) for error in (ConnectionRefusedError(), OSError("x"))]
    shown += validation.cluster_problems(Cluster(name="c", server=url, proxy_url=url))
    return shown


@settings(max_examples=300, deadline=None)
@given(password=PASSWORDS, shape=st.sampled_from(SHAPES))
def test_no_message_shows_a_password(password, shape):
    url = shape.format(password)
    for message in _messages(url):
        assert "Zq" not in message and "qZ" not in message, (url, message)


@pytest.mark.e2e
@pytest.mark.parametrize("server, proxy_url", [
    ("http://alice:se/cret9@127.0.0.1:6443", None),     # "is not an https:// URL" showed it whole
    ("alice:se#cret9@127.0.0.1:6443", None),           # "has no https:// scheme ... write it as https://..."
    ("https://alice:se?cret9@127.0.0.1:6443", None),   # "must not have a query or fragment"
    ("https://alice:99/cret9@127.0.0.1:6443", None),   # read as host alice, port 99: every transport error
    (None, "alice:secret9@127.0.0.1:3128"),            # a proxy-url without a scheme
    (None, "http://alice:se/cret9@127.0.0.1:3128"),
])
def test_the_built_plugin_never_prints_the_password_of_a_url(run, api_server, tmp_path, server, proxy_url):
    config = api_server.kubeconfig(users=["alice@example.com"])
    cluster = config["clusters"][0]["cluster"]
    if server:
        cluster["server"] = server
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    result = run("describe", "x", kubeconfig=str(kubeconfig))
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "cret9" not in result.stderr and "secret" not in result.stderr, result.stderr
    assert "alice:xxxxx@" in result.stderr, result.stderr
