"""TLS verification, server URLs and proxies, end to end against the HTTPS test API servers and
the test proxies (tests/support/proxy.py); the NO_PROXY rules also as a table against Go's semantics."""

import base64
import socket
import ssl
import threading
import time
import warnings

import pytest
import yaml

from kubectl_aicr.kube import kubeconfig, net, proxy_rules, rest
from kubectl_aicr.errors import ConfigError, TransportError
from tests.support import certs
from tests.support.kubeconfig_corpus import NAMED_HOST, PREFIX, SNI_NAME, corpus_servers  # noqa: F401 (a fixture)
from tests.support.plugin import describe
from tests.support.proxy import TunnelProxy
from tests.support.text import one_error_line


def write_config(tmp_path, target, user="bob@example.com", name="config", **cluster):
    """A one-user token kubeconfig for ``target`` (an APIServer); ``cluster`` fields override (None: remove)."""
    config = target.kubeconfig(users=[user], styles={user: "token"})
    body = config["clusters"][0]["cluster"]
    for key, value in cluster.items():
        key = key.replace("_", "-")
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def servers(corpus_servers):
    corpus_servers.clear()
    return corpus_servers


# ---------------------------------------------------------------------------------------------
# TLS


@pytest.mark.e2e
def test_tls_server_name_is_used_for_sni_and_for_verification(run, servers, tmp_path):
    sni = servers.sni
    ok = describe(run, sni, kubeconfig=write_config(tmp_path, sni, tls_server_name=SNI_NAME))
    assert ok.returncode == 0, ok.stderr
    assert {r.sni for r in sni.requests} == {SNI_NAME}
    refused = describe(run, sni, kubeconfig=write_config(tmp_path, sni, name="without"))
    one_error_line(refused, "is not trusted", "never only its CN")


@pytest.mark.e2e
def test_ipv4_and_ipv6_address_sans_verify(run, api_server, servers, tmp_path):
    for server in (api_server, servers.v6):
        result = describe(run, server, kubeconfig=write_config(tmp_path, server, name=str(server.port)))
        assert result.returncode == 0, result.stderr
        assert server.requests and all(r.sni is None for r in server.requests)  # no SNI for an address
    assert servers.v6.url.startswith("https://[::1]:")


@pytest.mark.e2e
def test_a_certificate_whose_name_is_only_in_its_cn_is_rejected(run, servers, tmp_path):
    result = describe(run, servers.cn, kubeconfig=write_config(tmp_path, servers.cn))
    one_error_line(result, "is not trusted", "subject alternative names")
    assert servers.cn.requests == []


@pytest.mark.e2e
def test_a_given_ca_bundle_is_the_only_trust_and_the_systems_is_used_otherwise(run, api_server, tmp_path):
    other = certs.make_ca().cert_pem.bytes()
    bundle = other + open(api_server.ca_file, "rb").read() + other
    with_bundle = write_config(tmp_path, api_server, name="bundle", certificate_authority=None,
                               certificate_authority_data=base64.b64encode(bundle).decode())
    assert describe(run, api_server, kubeconfig=with_bundle).returncode == 0
    system_ca = {"SSL_CERT_FILE": api_server.ca_file}  # what "the system's" CAs are for this process
    only_other = write_config(tmp_path, api_server, name="other", certificate_authority=None,
                              certificate_authority_data=base64.b64encode(other).decode())
    one_error_line(describe(run, api_server, kubeconfig=only_other, env=system_ca), "is not trusted")
    no_ca = write_config(tmp_path, api_server, name="none", certificate_authority=None)
    assert describe(run, api_server, kubeconfig=no_ca, env=system_ca).returncode == 0
    one_error_line(describe(run, api_server, kubeconfig=no_ca, env={"SSL_CERT_FILE": "/nonexistent"}), "is not trusted")


@pytest.mark.e2e
def test_insecure_skip_tls_verify_with_a_ca_is_refused_as_kubectl_refuses_it(run, api_server, tmp_path):
    path = write_config(tmp_path, api_server, insecure_skip_tls_verify=True, certificate_authority=None,
                        certificate_authority_data=base64.b64encode(open(api_server.ca_file, "rb").read()).decode())
    one_error_line(describe(run, api_server, kubeconfig=path),
                   "specifying a root certificates file with the insecure flag is not allowed")
    assert api_server.requests == []
    insecure = write_config(tmp_path, api_server, name="insecure", insecure_skip_tls_verify=True,
                            certificate_authority=None)
    assert describe(run, api_server, kubeconfig=insecure).returncode == 0


@pytest.mark.e2e
def test_tls_below_1_2_is_never_spoken(run, api_server, tmp_path):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(api_server.server_cert.cert, api_server.server_cert.key)
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    handshakes = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                handshakes.append(tls.version())
        except (ssl.SSLError, OSError):
            pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    path = write_config(tmp_path, api_server, server="https://127.0.0.1:%d" % listener.getsockname()[1])
    result = describe(run, api_server, kubeconfig=path)
    thread.join(10)
    listener.close()
    one_error_line(result, "TLS handshake with server")
    assert handshakes == []
    assert rest.tls_context(transport_cluster(), transport_credentials()).minimum_version == \
        ssl.TLSVersion.TLSv1_2


def transport_cluster():
    return rest.RESTConfig(host="https://127.0.0.1:1", cluster_name="c")


def transport_credentials():
    from kubectl_aicr.kube.auth import Credentials
    return Credentials()


# ---------------------------------------------------------------------------------------------
# Server URLs


@pytest.mark.e2e
def test_a_path_prefix_is_kept_in_front_of_every_request(run, servers, tmp_path):
    special = servers.special
    path = write_config(tmp_path, special, server=special.url + PREFIX)
    result = describe(run, special, kubeconfig=path)
    assert result.returncode == 0, result.stderr
    assert special.requests and all(r.path.startswith(PREFIX + "/apis/") for r in special.requests)


@pytest.mark.e2e
def test_an_unbracketed_ipv6_server_is_an_error(run, servers, tmp_path):
    path = write_config(tmp_path, servers.v6, server="https://::1:%d" % servers.v6.port)
    one_error_line(describe(run, servers.v6, kubeconfig=path), "host must be a URL or a host:port pair", "in brackets")
    assert servers.v6.requests == []


@pytest.mark.parametrize("text, words", [
    ("http://127.0.0.1:6443", "is not an https:// URL"), ("127.0.0.1:6443", "has no https:// scheme"),
    ("https://user:pw@h:1", "must not carry a user name"), ("https://h:1/?a=b", "query or fragment"),
    ("https://[::1:6443", "not a valid URL"), ("https://h:99999", "not a valid URL")])
def test_server_urls_kubectl_would_misuse_are_refused(text, words):
    with pytest.raises(ConfigError, match=words.replace("?", r"\?")):
        rest.ServerURL(text)


def test_server_url_parts():
    url = rest.ServerURL("https://[fd00::1]:6443/k8s/clusters/c-x//")
    assert (url.host, url.port, url.prefix) == ("fd00::1", 6443, "/k8s/clusters/c-x")
    assert rest.ServerURL("https://h/").prefix == "" and rest.ServerURL("https://h").port == 443


@pytest.mark.parametrize("text, host, host_header", [
    ("https://ABCDEF0123.GR7.us-west-2.eks.amazonaws.com", "ABCDEF0123.GR7.us-west-2.eks.amazonaws.com",
     "ABCDEF0123.GR7.us-west-2.eks.amazonaws.com"),
    ("https://Api.Example.com:443/k8s", "Api.Example.com", "Api.Example.com:443"),  # Go keeps a written :443
    ("https://[FD00::AB]:6443", "FD00::AB", "[FD00::AB]:6443"), ("https://h:6443", "h", "h:6443")])
def test_the_host_is_sent_as_written(text, host, host_header):
    """Go's url.Parse keeps the host's letters and net/http sends URL.Host as the Host header: so does the plugin
    (the end-to-end comparison with kubectl is the upper-case cases of tests/support/kubeconfig_corpus.py)."""
    url = rest.ServerURL(text)
    assert (url.host, url.host_header) == (host, host_header)


# ---------------------------------------------------------------------------------------------
# Proxies, end to end


@pytest.mark.e2e
def test_proxy_url_is_used_even_when_no_proxy_names_the_server(run, api_server, servers, tmp_path):
    path = write_config(tmp_path, api_server, proxy_url=servers.http_proxy.url)
    result = describe(run, api_server, kubeconfig=path, env={"NO_PROXY": "127.0.0.1", "no_proxy": "*"})
    assert result.returncode == 0, result.stderr
    assert [r.target for r in servers.http_proxy.records] == ["127.0.0.1:%d" % api_server.port]


@pytest.mark.e2e
def test_proxy_credentials_from_the_url_and_a_refusal_without_the_password(run, api_server, tmp_path):
    with TunnelProxy("http", credentials=("approver", "pr0xy-pässword")) as guarded:
        good = "http://approver:pr0xy-p%C3%A4ssword@127.0.0.1:" + str(guarded.port)
        assert describe(run, api_server, kubeconfig=write_config(tmp_path, api_server, proxy_url=good)).returncode == 0
        expected = "Basic " + base64.b64encode("approver:pr0xy-pässword".encode()).decode()
        assert guarded.records[0].proxy_authorization == expected
        bad = "http://approver:wr0ng-secret@127.0.0.1:%d" % guarded.port
        result = describe(run, api_server, kubeconfig=write_config(tmp_path, api_server, name="bad", proxy_url=bad))
        one_error_line(result, "refused to tunnel", "HTTP 407")
        assert "wr0ng-secret" not in result.stderr


@pytest.mark.e2e
def test_socks5_proxy_url_works_with_and_without_credentials(run, api_server, servers, tmp_path):
    path = write_config(tmp_path, api_server, proxy_url=servers.socks_proxy.url)
    assert describe(run, api_server, kubeconfig=path).returncode == 0
    assert [r.target for r in servers.socks_proxy.records] == ["127.0.0.1:%d" % api_server.port]
    with TunnelProxy("socks5", credentials=("u", "p")) as guarded:
        url = "socks5://u:p@127.0.0.1:%d" % guarded.port
        assert describe(run, api_server,
                        kubeconfig=write_config(tmp_path, api_server, name="auth", proxy_url=url)).returncode == 0
        assert guarded.records[0].user == "u"


@pytest.mark.e2e
def test_an_https_proxy_carries_every_request_of_the_command_in_one_tunnel(run, api_server, servers, tmp_path):
    """TLS to the proxy, CONNECT, then the API server's TLS inside: the proxy is verified with the kubeconfig's CA
    (here a bundle of the proxy's CA and the server's), and the one tunnel carries all of the command's requests."""
    bundle = (open(servers.proxy_ca_file, "rb").read() + open(api_server.ca_file, "rb").read())
    path = write_config(tmp_path, api_server, proxy_url=servers.https_proxy.url_for("localhost"),
                        certificate_authority=None, certificate_authority_data=base64.b64encode(bundle).decode())
    result = run("describe", api_server.fixture_name("awaiting-approval"), kubeconfig=path)  # reads its report too
    assert result.returncode == 0, result.stderr
    assert [(r.kind, r.target, r.sni) for r in servers.https_proxy.records] == [
        ("https", "127.0.0.1:%d" % api_server.port, "localhost")]
    assert len(api_server.requests) >= 2 and len({r.connection_id for r in api_server.requests}) == 1
    untrusted = write_config(tmp_path, api_server, name="untrusted", proxy_url=servers.https_proxy.url)
    one_error_line(describe(run, api_server, kubeconfig=untrusted), "TLS: the certificate of proxy https://127.0.0.1:",
                   "is not trusted")


@pytest.mark.e2e
def test_https_proxy_from_the_environment_uppercase_first(run, servers, tmp_path):
    special = servers.special
    path = write_config(tmp_path, special, server="https://%s:%d" % (NAMED_HOST, special.port))
    result = describe(run, special, kubeconfig=path, env={"HTTPS_PROXY": servers.http_proxy.url.replace("http://", ""),
                                               "https_proxy": "http://127.0.0.1:1", "NO_PROXY": "10.0.0.0/8,.svc"})
    assert result.returncode == 0, result.stderr
    assert [r.target for r in servers.http_proxy.records][:1] == ["%s:%d" % (NAMED_HOST, special.port)]


@pytest.mark.e2e
def test_no_proxy_match_connects_directly_and_loopback_is_never_proxied(run, api_server, servers, tmp_path):
    special = servers.special
    named = write_config(tmp_path, special, server="https://%s:%d" % (NAMED_HOST, special.port))
    result = describe(run, special,
                      kubeconfig=named, env={"HTTPS_PROXY": servers.http_proxy.url, "NO_PROXY": "example.invalid"})
    one_error_line(result, "cannot resolve the host of server https://" + NAMED_HOST)
    loopback = write_config(tmp_path, api_server, name="loopback")
    assert describe(run, api_server, kubeconfig=loopback, env={"HTTPS_PROXY": servers.http_proxy.url}).returncode == 0
    assert servers.http_proxy.records == []


@pytest.mark.e2e
def test_proxy_url_with_an_unsupported_scheme_is_kubectls_error(run, api_server, tmp_path):
    path = write_config(tmp_path, api_server, proxy_url="ftp://127.0.0.1:21")
    one_error_line(describe(run, api_server, kubeconfig=path),
                   "unsupported scheme 'ftp', must be http, https, or socks5")
    assert api_server.requests == []


# ---------------------------------------------------------------------------------------------
# NO_PROXY rules, as golang.org/x/net/http/httpproxy has them


@pytest.mark.parametrize("host, port, no_proxy, proxied", [
    ("api.example.com", 443, "", True),
    ("localhost", 443, "", False),
    ("127.0.0.1", 443, "", False),
    ("127.1.2.3", 6443, "", False),
    ("::1", 6443, "", False),
    ("::ffff:127.0.0.1", 6443, "", False),
    ("10.1.2.3", 6443, "10.0.0.0/8", False),
    ("10.1.2.3", 6443, "192.168.0.0/16, 10.0.0.0/8", False),
    ("11.1.2.3", 6443, "10.0.0.0/8", True),
    ("fd00::5", 6443, "fd00::/64", False),
    ("10.1.2.3", 6443, "10.1.2.3", False),
    ("10.1.2.3", 6443, "10.1.2.3:443", True),
    ("10.1.2.3", 443, "10.1.2.3:443", False),
    ("fd00::5", 443, "[fd00::5]:443", False),
    ("api.example.com", 443, "example.com", False),
    ("example.com", 443, "example.com", False),
    ("notexample.com", 443, "example.com", True),
    ("api.example.com", 443, ".example.com", False),
    ("example.com", 443, ".example.com", True),
    ("api.example.com", 443, "*.example.com", False),
    ("API.Example.COM", 443, "example.com", False),
    ("api.example.com", 6443, "example.com:443", True),
    ("api.example.com", 443, "*", False),
    ("api.example.com", 443, " , ,example.org", True),
])
def test_no_proxy_rules(host, port, no_proxy, proxied):
    assert proxy_rules.use_proxy(host, port, no_proxy) is proxied


def test_environment_proxy_values_are_read_as_go_reads_them():
    def pick(environ, host="api.example.com", port=443):
        chosen = proxy_rules.from_environment(host, port, environ)
        return chosen and (chosen.scheme, chosen.host, chosen.port, chosen.username, chosen.password)
    assert pick({"HTTPS_PROXY": "proxy.corp:3128"}) == ("http", "proxy.corp", 3128, None, None)
    assert pick({"HTTPS_PROXY": "http://u:p%40ss@proxy.corp"}) == ("http", "proxy.corp", 80, "u", "p@ss")
    assert pick({"https_proxy": "socks5://s:1080"}) == ("socks5", "s", 1080, None, None)
    assert pick({"HTTPS_PROXY": "", "https_proxy": "http://lower:1"})[1] == "lower"
    assert pick({"HTTP_PROXY": "http://only-for-http:1"}) is None
    assert pick({"HTTPS_PROXY": "http://p:1", "no_proxy": "example.com"}) is None
    assert pick({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.com", "no_proxy": "example.com"})[1] == "p"
    assert pick({"HTTPS_PROXY": "ftp://x:1"}) == ("http", "ftp", 80, None, None)  # Go: http:// + the value
    with pytest.raises(ConfigError, match="could not parse"):
        pick({"HTTPS_PROXY": "http://[::1"})
    assert "secret" not in proxy_rules.Proxy("http", "h", 1, "u", "secret", "x").display()


def test_kubeconfig_proxy_url_is_checked_as_client_go_checks_it():
    assert proxy_rules.parse_proxy_url("socks5://127.0.0.1:1080", "c").scheme == "socks5"
    with pytest.raises(ConfigError, match="could not parse"):
        proxy_rules.parse_proxy_url("127.0.0.1:3128", "c")
    with pytest.raises(ConfigError) as caught:
        proxy_rules.parse_proxy_url("ftp://u:hunter2@h:1", "c")
    assert "hunter2" not in str(caught.value)


def test_an_https_proxy_that_trickles_its_connect_answer_is_cut_at_the_deadline(tmp_path):
    """The watchdog of the tunnel's set-up shuts the TLS socket to the proxy (not the plain one it wrapped)."""
    ca = certs.make_ca()
    files = certs.write_server_cert(ca, str(tmp_path), ("127.0.0.1",))
    listener = socket.create_server(("127.0.0.1", 0))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(files.cert, files.key)

    def trickle():
        conn, _ = listener.accept()
        with server_context.wrap_socket(conn, server_side=True) as tls:
            tls.recv(4096)
            try:
                while True:
                    tls.sendall(b"H")
                    time.sleep(0.2)
            except OSError:
                return

    threading.Thread(target=trickle, daemon=True).start()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cadata=ca.cert_pem.bytes().decode())
    slow = proxy_rules.Proxy("https", "127.0.0.1", listener.getsockname()[1], None, None, "a test")
    started = time.monotonic()
    with pytest.raises(TransportError, match="proxy https://127.0.0.1:"):
        net.connect_via_proxy(slow, "api.example.invalid", 443, 1.5, context)
    assert time.monotonic() - started < 4
    listener.close()


def _cluster_with_ca_data(text):
    return rest.RESTConfig(host="https://127.0.0.1:1", cluster_name="c", ca_data=text.encode())


def test_ca_data_is_read_as_gos_append_certs_from_pem():
    """Each CERTIFICATE block without headers that parses is trusted; others are skipped; an error only when
    none is left, saying what was found (crypto/x509 CertPool.AppendCertsFromPEM, client-go rootCertPool)."""
    ca = certs.make_ca().cert_pem.bytes().decode()
    with_headers = ca.replace("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1)
    context = rest.tls_context(_cluster_with_ca_data("junk\n" + with_headers + ca), rest.auth.Credentials())
    assert len(context.get_ca_certs()) == 1 and context.verify_flags & rest.VERIFY_X509_PARTIAL_CHAIN
    broken = "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n"
    for text, words in ((with_headers, "holds no usable PEM CERTIFICATE block"), ("", None),
                        (broken, "holds a CERTIFICATE block that is not"), ("just text", "holds no PEM block")):
        if words is None:  # empty data: no CA at all, the system's trust
            assert rest.tls_context(_cluster_with_ca_data(text), rest.auth.Credentials())
            continue
        with pytest.raises(ConfigError, match="certificate-authority-data of cluster c " + words):
            rest.tls_context(_cluster_with_ca_data(text), rest.auth.Credentials())


def test_a_trickling_tunnel_through_a_proxy_is_cut_at_the_deadline(tmp_path):
    """A proxy answers CONNECT late, then relays the API server's TLS handshake one byte at a time. The
    request's watchdog shuts the TLS socket in its handshake at the deadline (before, it could only shut a
    socket whose handshake had finished, and the handshake's own timeout, counted from its start, ran past
    the deadline: 54 s for a 30 s deadline)."""
    ca = certs.make_ca()
    files = certs.write_server_cert(ca, str(tmp_path), ("127.0.0.1",))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(files.cert, files.key)
    api, proxy_listener = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def api_server():
        conn, _ = api.accept()
        try:
            server_context.wrap_socket(conn, server_side=True).close()
        except (OSError, ssl.SSLError):
            conn.close()

    def copy(source, target, delay):
        try:
            while not stop.is_set():
                data = source.recv(1 if delay else 65536)
                if not data:
                    return
                target.sendall(data)
                time.sleep(delay)
        except OSError:
            return

    def trickling_proxy():
        conn, _ = proxy_listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            time.sleep(2.5)  # most of the deadline goes by before the tunnel opens
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            upstream = socket.create_connection(api.getsockname())
            threading.Thread(target=copy, args=(conn, upstream, 0), daemon=True).start()
            copy(upstream, conn, 0.1)

    for target in (api_server, trickling_proxy):
        threading.Thread(target=target, daemon=True).start()
    config = rest.RESTConfig(host="https://api.example.invalid:6443", cluster_name="c", server_name="127.0.0.1",
                             ca_data=ca.cert_pem.bytes())  # a name: Go's rules never proxy a loopback address
    anonymous = rest.auth.Authenticator(kubeconfig.AuthInfo(name="anonymous"))
    client = rest.Client(config, anonymous, deadline=rest.Deadline(3),
                         environ={"HTTPS_PROXY": "http://127.0.0.1:%d" % proxy_listener.getsockname()[1]})
    started = time.monotonic()
    try:
        with pytest.raises(TransportError, match="within the 3-second deadline"):
            client.get("/version")
    finally:
        stop.set()
        client.close()
        api.close()
        proxy_listener.close()
    assert time.monotonic() - started < 4.5  # the handshake's own timeout alone would end it at 5.5 s
