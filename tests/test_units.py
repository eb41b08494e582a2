"""In-process unit tests of pure parts, table style (as client-go's ``validation_test.go``): each row an
input built in memory and the outcome expected. The built file's behaviour is the end-to-end tests'."""

import os
import sys
import datetime
import json

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_aicr import helpers
from kubectl_aicr.errors import ApiError, AuthError, TransportError
from kubectl_aicr.kube import clientcmd, net, rest, validation
from kubectl_aicr.kube.kubeconfig import AuthInfo, Cluster

SERVER = "https://127.0.0.1:6443"

# ---------------------------------------------------------------------------------------------
# kubeconfig validation (client-go tools/clientcmd/validation.go, validation_test.go)

CLUSTER_CASES = [
    ("a server", Cluster(name="c", server=SERVER), []),
    ("no server", Cluster(name="c", server=""), ['no server found for cluster "c"']),
    ("insecure with CA data", Cluster(name="c", server=SERVER, certificate_authority_data=b"x",
                                      insecure_skip_tls_verify=True),
     ["specifying a root certificates file with the insecure flag is not allowed"]),
    ("insecure without CA", Cluster(name="c", server=SERVER, insecure_skip_tls_verify=True), []),
    ("CA file and data", Cluster(name="c", server=SERVER, certificate_authority="/nonexistent/ca.crt",
                                 certificate_authority_data=b"x"),
     ["certificate-authority-data and certificate-authority are both specified for c",
      "unable to read certificate-authority /nonexistent/ca.crt for c due to open /nonexistent/ca.crt: no such file"]),
    ("bad proxy scheme", Cluster(name="c", server=SERVER, proxy_url="ftp://proxy:21"), ["ftp"]),
    ("socks5 proxy", Cluster(name="c", server=SERVER, proxy_url="socks5://127.0.0.1:1080"), []),
]


USER_CASES = [
    ("a token", AuthInfo(name="u", token="t"), []),
    ("token and basic auth", AuthInfo(name="u", token="t", username="a", password="b"),
     ["more than one authentication method found for u; found [token basicAuth]"]),
    ("groups without a user", AuthInfo(name="u", token="t", impersonate_groups=("g",)),
     ["requesting uid, groups or user-extra for u without impersonating a user"]),
    ("only a password", AuthInfo(name="u", password="p"), ['user "u" has no credentials (only a password']),
    ("nothing", AuthInfo(name="u"), ['user "u" has no credentials (nothing']),
    ("only impersonation", AuthInfo(name="u", impersonate="someone"), ["only impersonation settings"]),
]


VALIDATION_CASES = [(validation.cluster_problems,) + c for c in CLUSTER_CASES] + \
    [(validation.user_problems,) + c for c in USER_CASES]


@pytest.mark.parametrize("problems_of, entry, expected", [(c[0],) + c[2:] for c in VALIDATION_CASES],
                         ids=[c[1] for c in VALIDATION_CASES])
def test_kubeconfig_validation(problems_of, entry, expected):
    """Each expected message (a substring) in order, and no other."""
    problems = problems_of(entry)
    assert len(problems) == len(expected), problems
    for problem, substring in zip(problems, expected):
        assert substring in problem


# ---------------------------------------------------------------------------------------------
# The REST-config seam (client-go DirectClientConfig.ClientConfig -> rest.Config)


def test_rest_config_carries_what_the_transport_reads():
    cluster = Cluster(name="c", server=SERVER, certificate_authority="/ca.crt", tls_server_name="api",
                      proxy_url="http://proxy:3128")
    user = AuthInfo(name="u", token="t", impersonate="alice", impersonate_groups=("g1", "g2"), impersonate_uid="42",
                impersonate_extra=(("scopes", ("a", "b")),))
    config = clientcmd.rest_config(cluster, user)
    assert config == rest.RESTConfig(host=SERVER, cluster_name="c", insecure=False, ca_file="/ca.crt", ca_data=None,
                                     server_name="api", proxy_url="http://proxy:3128",
                                     impersonate=rest.Impersonation("alice", "42", ("g1", "g2"),
                                                                    (("scopes", ("a", "b")),)))
    assert rest.impersonation_headers(config.impersonate) == (
        ("Impersonate-User", "alice"), ("Impersonate-Uid", "42"), ("Impersonate-Group", "g1"),
        ("Impersonate-Group", "g2"), ("Impersonate-Extra-scopes", "a"), ("Impersonate-Extra-scopes", "b"))
    assert clientcmd.rest_config(cluster, None).impersonate == rest.Impersonation()
    assert rest.impersonation_headers(rest.Impersonation()) == ()


def test_an_impersonation_value_that_cannot_be_a_header_is_refused_before_anything_is_sent():
    with pytest.raises(AuthError, match="the Impersonate-User of user u contains a control character"):
        clientcmd.rest_config(Cluster(name="c", server=SERVER), AuthInfo(name="u", token="t", impersonate="a\nb"))


# ---------------------------------------------------------------------------------------------
# The transport's answer decoding (k8s.io/apimachinery pkg/api/errors)


def _status(message, reason="", code=403):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                       "reason": reason, "code": code}).encode()


DECODE_CASES = [
    ("200 object", 200, b'{"kind": "RuntimeRollout"}', {"kind": "RuntimeRollout"}),
    ("200 not an object", 200, b"[1]", (TransportError, "something other than a JSON object")),
    ("200 not JSON", 200, b"<html>", (TransportError, "something other than a JSON object")),
    ("redirect", 302, b"", (TransportError, r"redirect \(HTTP 302\); redirects are not followed")),
    ("403 Status", 403, _status('rollouts "r" is forbidden', "Forbidden"),
     (ApiError, '^rollouts "r" is forbidden$', 403, "Forbidden")),
    ("409 Status", 409, _status("the object has been modified", "Conflict", 409),
     (ApiError, "^the object has been modified$", 409, "Conflict")),
    ("401 Status", 401, _status("Unauthorized", "Unauthorized", 401),
     (ApiError, r"^You must be logged in to the server \(Unauthorized\)$", 401, "Unauthorized")),
    ("401 no body", 401, b"", (ApiError, r"^You must be logged in to the server \(Unauthorized\)$", 401,
                               "Unauthorized")),
    ("Status without message", 500, _status("", "InternalError", 500),
     (ApiError, "answered GET /p with HTTP 500 InternalError", 500, "InternalError")),
    ("500 not a Status", 500, b"oops", (ApiError, r"HTTP 500 Internal Server Error \(not a Kubernetes Status\)",
                                        500, "")),
]


@pytest.mark.parametrize("status, body, expected", [c[1:] for c in DECODE_CASES], ids=[c[0] for c in DECODE_CASES])
def test_answer_decoding(status, body, expected):
    reason = {200: "OK", 302: "Found", 401: "Unauthorized", 403: "Forbidden", 409: "Conflict"}.get(
        status, "Internal Server Error")
    if isinstance(expected, dict):
        assert rest.decode(SERVER, "GET", "/p", status, reason, body) == expected
        return
    with pytest.raises(expected[0], match=expected[1]) as raised:
        rest.decode(SERVER, "GET", "/p", status, reason, body)
    if expected[0] is ApiError:
        assert (raised.value.code, raised.value.reason) == expected[2:]


# ---------------------------------------------------------------------------------------------
# RFC 3339 (one parser for the operator's times and exec credentials' expiry)

UTC = datetime.timezone.utc
TIME_CASES = [
    ("2026-11-30T12:00:00Z", False, datetime.datetime(2026, 11, 30, 12, tzinfo=UTC)),
    ("2026-11-30t12:00:00z", False, None),         # Go's time.Parse wants T and Z
    ("2026-11-30T9:00:00,5Z", False, datetime.datetime(2026, 11, 30, 9, 0, 0, 500000, tzinfo=UTC)),
    ("2026-11-30T14:30:00+02:30", False, datetime.datetime(2026, 11, 30, 12, tzinfo=UTC)),
    ("2026-11-30T12:00:00.1234567Z", False, datetime.datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)),
    ("2016-12-31T23:59:60Z", True, datetime.datetime(2016, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ("2016-12-31T23:59:60Z", False, None),       # Go's time.Parse refuses a 60th second
    ("2026-11-30 12:00:00Z", False, None),
    ("2026-11-30T12:00:00", False, None),         # no zone
    ("2026-11-30T12:00:00Z\n", False, None),
    ("2026-02-30T12:00:00Z", False, None),
    ("0001-01-01T00:00:00+01:00", False, helpers.OutOfRange("0001-01-01T00:00:00+01:00", -62135600400)),
    ("2026-11-30T12:00:00+24:00", False, datetime.datetime(2026, 11, 29, 12, tzinfo=UTC)),  # Go allows 24
]


@pytest.mark.parametrize("text, leap, expected", TIME_CASES)
def test_rfc3339(text, leap, expected):
    assert helpers.parse_rfc3339(text, leap_second=leap) == expected


def test_utc_formatting_of_a_datetime_and_of_epoch_seconds():
    moment = datetime.datetime(2026, 11, 30, 14, 30, 5, 999, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert helpers.format_utc(moment) == "2026-11-30T12:30:05Z"
    assert helpers.format_utc(moment.timestamp()) == "2026-11-30T12:30:05Z"


def test_only_a_customize_module_from_outside_the_standard_library_is_a_reason_to_start_again(monkeypatch):
    """start.environment_reasons: Debian's own sitecustomize.py (beside os.py) is the interpreter's; one in
    site-packages or on PYTHONPATH is the user's environment."""
    import types
    from kubectl_aicr import start
    for name in list(os.environ):
        if name.startswith("PYTHON"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(start, "_code_running_pth", lambda site: None)  # this run's venv has one
    stdlib = os.path.dirname(os.__file__)
    for where, reason in ((os.path.join(stdlib, "sitecustomize.py"), []),
                          (os.path.join(stdlib, "site-packages", "sitecustomize.py"), ["sitecustomize"]),
                          ("/tmp/somewhere/sitecustomize.py", ["sitecustomize"])):
        module = types.ModuleType("sitecustomize")
        module.__file__ = where
        monkeypatch.setitem(sys.modules, "sitecustomize", module)
        assert [r for r in start.environment_reasons() if r != "user site-packages"] == reason, where


@pytest.mark.parametrize("size", [0, 1, 55, 56, 63, 64, 65, 1000, 1 << 17])
def test_the_digest_is_sha256_whichever_implementation_runs(size):
    """objects.sha256_digest uses CPython's built-in SHA-256 when present (start-up time), hashlib otherwise."""
    import hashlib
    from kubectl_aicr.aicr import objects
    data = bytes((i * 7 + size) % 256 for i in range(size))
    assert objects.sha256_digest(data) == "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("text,digest", [("sha256:" + "0" * 64, True), ("sha256:" + "a1" * 32, True),
                                         ("sha256:" + "A" * 64, False), ("sha256:" + "0" * 63, False),
                                         ("sha256:" + "0" * 65, False), ("sha512:" + "0" * 64, False),
                                         ("sha256:" + "0" * 63 + "\n", False), ("sha256:" + "g" * 64, False),
                                         (None, False), (7, False), ("", False)])
def test_a_digest_is_sha256_and_64_lower_case_hex_digits(text, digest):
    from kubectl_aicr.aicr import objects
    assert objects.is_digest(text) is digest


@pytest.mark.parametrize("text", ["plain ascii", "tab\there", "esc\x1b[31m", "del\x7f", "caf\u00e9", "\u202eevil",
                                  "zero\u200bwidth", "", " ~!", "nbsp\u00a0x"])
def test_the_writer_escapes_the_same_with_and_without_its_ascii_shortcut(text):
    """output.shown skips the escape pattern for printable ASCII: the result is what the pattern gives."""
    from kubectl_aicr import output
    expected = output._unsafe().sub(output._escape, text)
    assert output.shown(text) == expected
    assert output.shown(text, "ascii") == output.shown(expected, "ascii")


_URL_PIECES = ["https://", "http://", "HTTPS://", "h", "H", "127.0.0.1", "[::1]", "a.b-c", ":", ":443", ":0",
               ":65535", ":65536", ":00443", ":x", "/", "/k8s/clusters/c-x", "_", "~", "?", "#", "@", "%25",
               " ", "\t", "é", ".", "-", "//", "8"]


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_URL_PIECES), max_size=6))
def test_server_urls_split_as_urllib_splits_them(pieces):
    """rest.split_url reads plain https URLs itself (start-up time) and hands the rest to urlsplit: the
    parts, and any error, are urlsplit's."""
    from urllib.parse import urlsplit
    text = "".join(pieces)

    def parts(split):
        try:
            port = split.port
        except ValueError as exc:
            port = ("error", str(exc))
        return (split.scheme, split.netloc, split.path, split.query, split.fragment, split.hostname, port)

    def outcome(function):
        try:
            return parts(function(text))
        except ValueError as exc:
            return ("error", str(exc))
    assert outcome(rest.split_url) == outcome(urlsplit)


def _response(raw, limit=1 << 20, method="GET"):
    import io
    from kubectl_aicr.kube import http1
    return http1.read_response(io.BufferedReader(io.BytesIO(raw)), limit, method)


@pytest.mark.parametrize("raw,status,body,keep_alive", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nhi", 200, b"hi", True),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", 200, b"hi", True),
    (b"HTTP/1.1 200 OK\r\n\r\nto the close", 200, b"to the close", False),
    (b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 200, b"", True),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", True),
    (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", 304, b"", True),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", 201, b"x", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\nhi\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n", 200,
     b"hi!", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Length: 99\r\n\r\n0\r\n\r\n", 200, b"", True),
    (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", 200, b"hi", True),
])
def test_http1_reads_each_framing_rfc_9112_allows(raw, status, body, keep_alive):
    response = _response(raw)
    assert (response.status, response.body, response.keep_alive) == (status, body, keep_alive)


def test_http1_never_keeps_a_connection_that_switched_protocols():
    assert _response(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n").keep_alive is False


def test_http1_reads_a_header_folded_many_times():
    """Each folded piece is kept and joined once at the end (linear: a megabyte of obs-fold lines took
    seconds when each was appended to a growing string), empty pieces adding nothing."""
    lines = b"X-A: start\r\n" + b" piece\r\n" * 60000 + b" \r\n"
    response = _response(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 0\r\n\r\n")
    assert response.header("x-a") == "start" + " piece" * 60000


def test_http1_joins_a_folded_header_and_repeated_fields():
    response = _response(b"HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nWarning: a\r\nwarning: b\r\n"
                         b"Content-Length: 0\r\n\r\n")
    assert response.header("x-a") == "one two" and response.header("Warning") == "a, b"


@pytest.mark.parametrize("raw,error,words", [
    (b"", "ConnectionClosed", "without a response"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhi", "IncompleteResponse", "2 bytes into a 5-byte body"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "IncompleteResponse", "inside the response's headers"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhi", "IncompleteResponse", "body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "IncompleteResponse", "chunked body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "ProtocolError", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "ProtocolError", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX", "ProtocolError", "not followed by CRLF"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "ProtocolError", "unsupported Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "ProtocolError", "unsupported Transfer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx", "ProtocolError", "different Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nx", "ProtocolError", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nx", "ProtocolError", "invalid Content-Length"),
    (b"HTTP/2 200\r\n\r\n", "ProtocolError", "not an HTTP/1.1 status line"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", "ProtocolError", "not an HTTP/1.1 status line"),
    (b"SSH-2.0-OpenSSH_9.6\r\n", "ProtocolError", "not an HTTP/1.1 status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "ProtocolError", "malformed header line"),
    (b"HTTP/1.1 200 OK\r\nName : v\r\n\r\n", "ProtocolError", "malformed header line"),
    (b"HTTP/1.1 200 OK\r\n" + b"A: b\r\n" * 101 + b"\r\n", "ProtocolError", "more than 100 header fields"),
    (b"HTTP/1.1 200 OK\r\nA: " + b"b" * 70000 + b"\r\n\r\n", "ProtocolError", "longer than 65536 bytes"),
    (b"HTTP/1.1 103 Early\r\n\r\n" * 6 + b"HTTP/1.1 200 OK\r\n\r\n", "ProtocolError", "interim (1xx)"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", "BodyTooLarge", "11 bytes, over the 10"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n", "BodyTooLarge",
     "over the 10-byte limit"),
    (b"HTTP/1.1 200 OK\r\n\r\nhello world", "BodyTooLarge", "over the 10-byte limit"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nhi\r\n0\r\n\r\n", "ProtocolError",
     "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nhi\r\n0\r\n\r\n", "ProtocolError",
     "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2", "IncompleteResponse", "chunked body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi", "IncompleteResponse", "chunked body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r", "IncompleteResponse", "chunked body"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"x" * 5000 + b"\r\n", "ProtocolError",
     "chunk-size line longer than 4096"),
    (b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "ProtocolError", "holding CR or NUL"),
    (b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n", "ProtocolError", "holding CR or NUL"),
])
def test_http1_refuses_what_rfc_9112_does_not_allow_and_bounds_what_it_reads(raw, error, words):
    with pytest.raises(Exception) as caught:
        _response(raw, limit=10)
    assert type(caught.value).__name__ == error and words in str(caught.value), caught.value


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00", "a\x0bb", "a\x7f", "a\x1b[2J"])
def test_http1_never_sends_a_header_value_that_would_end_its_line(value):
    from kubectl_aicr.kube import http1
    with pytest.raises(http1.ProtocolError):
        http1.request_bytes("GET", "/", [("Authorization", value)])


def test_http1_sends_a_tab_in_a_value_as_go_does():
    from kubectl_aicr.kube import http1
    assert b"X-A: a\tb\r\n" in http1.request_bytes("GET", "/", [("X-A", "a\tb")])


def test_http1_sends_utf_8_values_and_a_lone_surrogate_as_u_fffd():
    from kubectl_aicr.kube import http1
    data = http1.request_bytes("PATCH", "/x", [("Impersonate-User", "j\u00f6rg\ud800"), ("Impersonate-Group", "a"),
                                               ("Impersonate-Group", "b")], b"{}")
    assert data == (b"PATCH /x HTTP/1.1\r\nImpersonate-User: j\xc3\xb6rg\xef\xbf\xbd\r\nImpersonate-Group: a\r\n"
                    b"Impersonate-Group: b\r\nContent-Length: 2\r\n\r\n{}")


def test_a_code_running_pth_file_in_a_virtual_environment_is_a_reason_to_start_again(tmp_path, monkeypatch):
    """start._code_running_pth: in a virtual environment, a site-packages .pth with an import line ran code
    at start-up (a reason to start again isolated); a .pth that only adds folders, or none, is not; outside
    a virtual environment the interpreter's own site-packages are part of it."""
    import types
    from kubectl_aicr import start
    venv = tmp_path / "venv"
    packages = venv / "lib" / "site-packages"
    packages.mkdir(parents=True)
    site = types.SimpleNamespace(getsitepackages=lambda: [str(packages)])
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "path", sys.path + [str(packages)])
    assert start._code_running_pth(site) is None  # a clean virtual environment
    (packages / "paths.pth").write_text("/opt/somewhere\n# import nothing\n")
    assert start._code_running_pth(site) is None
    (packages / "spy.pth").write_text("import spy; spy.install()\n")
    assert start._code_running_pth(site) == str(packages / "spy.pth")
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    assert start._code_running_pth(site) is None  # the interpreter as installed


def test_a_pth_hides_no_code_behind_a_bom_or_a_megabyte_of_comments(tmp_path, monkeypatch):
    """site.py reads every line of a .pth (decoding utf-8-sig on 3.13): so does start._code_running_pth."""
    import types
    from kubectl_aicr import start
    packages = tmp_path / "venv" / "lib" / "site-packages"
    packages.mkdir(parents=True)
    site = types.SimpleNamespace(getsitepackages=lambda: [str(packages)])
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "path", sys.path + [str(packages)])
    (packages / "bom.pth").write_bytes(b"\xef\xbb\xbfimport spy\n")
    assert start._code_running_pth(site) == str(packages / "bom.pth")
    (packages / "bom.pth").unlink()
    (packages / "long.pth").write_bytes(b"# padding\n" * 200000 + b"import spy\n")
    assert start._code_running_pth(site) == str(packages / "long.pth")


def test_a_sitecustomize_claiming_to_be_the_standard_librarys_is_looked_up_where_it_is(tmp_path, monkeypatch):
    """A loaded sitecustomize whose __file__ says it sits beside os.py, found on sys.path elsewhere: a reason."""
    import importlib
    import types
    from kubectl_aicr import start
    (tmp_path / "sitecustomize.py").write_text("pass\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    importlib.invalidate_caches()
    spoof = types.ModuleType("sitecustomize")
    spoof.__file__ = os.path.join(os.path.dirname(os.__file__), "sitecustomize.py")
    monkeypatch.setitem(sys.modules, "sitecustomize", spoof)
    assert start._customized("sitecustomize") is True


@pytest.mark.parametrize("name,sni,checked", [
    ("api.example", b"api.example", b"api.example"), ("API.Example", b"API.Example", b"API.Example"),
    ("localhost.", b"localhost", b"localhost"),      # Go: SNI without the dot; matchHostnames drops one
    ("localhost..", b"localhost", None),             # not a valid host name: matched only exactly
    ("127.0.0.1", None, b"127.0.0.1"), ("[::1]", None, b"::1"), ("::1", None, b"::1"),
    ("fe80::1%eth0", None, None),                    # no SNI for an IP (zone aside); not an IP to verify
    (".", None, None), ("..", None, None), ("\0", None, None), ("\u3002", None, None), ("\u200b", None, None),
    (".x", None, None), ("b\u00fccher.example", None, None), ("a_b", b"a_b", b"a_b"), ("-a", b"-a", None),
    ("*.x", b"*.x", None), ("a b", b"a b", None), ("1.2.3.4.", None, None), ("a" * 256, None, None)])
def test_a_tls_server_name_is_sent_and_checked_as_go_does(name, sni, checked):
    """crypto/tls hostnameInSNI and crypto/x509 validHostname (Go 1.26 source): what is sent as SNI
    (what Python's ssl can send of it) and which names OpenSSL may check; the others Go matches exactly."""
    tls_name = net.TLSName(name)
    assert (tls_name.sni, tls_name.checked) == (sni, checked)


@pytest.mark.parametrize("host,ascii_form", [
    ("api.example", "api.example"), ("API.example", "API.example"), ("b\u00fccher.example", "xn--bcher-kva.example"),
    ("host\u3002", "host."), ("\u3002", None), ("\u200b", None), ("..", "..")])
def test_a_url_host_goes_out_in_its_idna_form(host, ascii_form):
    assert net.idna_ascii(host) == ascii_form


@pytest.mark.parametrize("netloc,port", [
    ("h", None), ("h:", None), ("h:443", 443), ("h:0", 0), ("h:00443", 443), ("h:" + "0" * 5000 + "6443", 6443),
    ("[::1]:6443", 6443), ("[::1]", None), ("u:p@h:8080", 8080), ("h:65535", 65535)])
def test_a_url_port_is_read_as_go_reads_it(netloc, port):
    from kubectl_aicr.kube import proxy_rules
    assert proxy_rules.url_port(netloc) == port


@pytest.mark.parametrize("netloc", ["h:65536", "h:" + "1" * 5000, "h:x", "h:1_0", "h:+1", "[::1]x", "h:\u0661"])
def test_a_url_port_go_refuses_is_refused(netloc):
    from kubectl_aicr.kube import proxy_rules
    with pytest.raises(ValueError):
        proxy_rules.url_port(netloc)
