"""In-process unit tests of pure parts, table style (as client-go's ``validation_test.go``): each row an
input built in memory and the outcome expected. The built file's behaviour is the end-to-end tests'."""

import datetime
import json

import pytest

from kubectl_aicr import helpers
from kubectl_aicr.errors import ApiError, AuthError, TransportError
from kubectl_aicr.kube import clientcmd, rest, validation
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
    ("2026-11-30t12:00:00z", False, datetime.datetime(2026, 11, 30, 12, tzinfo=UTC)),
    ("2026-11-30T14:30:00+02:30", False, datetime.datetime(2026, 11, 30, 12, tzinfo=UTC)),
    ("2026-11-30T12:00:00.1234567Z", False, datetime.datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)),
    ("2016-12-31T23:59:60Z", True, datetime.datetime(2016, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ("2016-12-31T23:59:60Z", False, None),       # Go's time.Parse refuses a 60th second
    ("2026-11-30 12:00:00Z", False, None),
    ("2026-11-30T12:00:00", False, None),         # no zone
    ("2026-11-30T12:00:00Z\n", False, None),
    ("2026-02-30T12:00:00Z", False, None),
    ("0001-01-01T00:00:00+01:00", False, None),   # before year 1 in UTC
]


@pytest.mark.parametrize("text, leap, expected", TIME_CASES)
def test_rfc3339(text, leap, expected):
    assert helpers.parse_rfc3339(text, leap_second=leap) == expected


def test_utc_formatting_of_a_datetime_and_of_epoch_seconds():
    moment = datetime.datetime(2026, 11, 30, 14, 30, 5, 999, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert helpers.format_utc(moment) == "2026-11-30T12:30:05Z"
    assert helpers.format_utc(moment.timestamp()) == "2026-11-30T12:30:05Z"
