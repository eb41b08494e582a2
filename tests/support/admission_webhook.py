"""The operator's admission rules as a validating admission webhook, for the real-server tier (test-only).

kube-apiserver v1.20 has no ValidatingAdmissionPolicy and no CEL rules, so the rules of
operator-api.md "What the API server enforces" (1-4) are served to it by this HTTPS
webhook (``admissionregistration.k8s.io/v1``). The rules themselves are not written
here: every review is judged by :func:`tests.support.apiserver.check_rollout_update`, the one
implementation the test API server uses too, so the two servers cannot drift apart. One
user is not judged, :data:`EXEMPT_USER` (see there).

Registration (:func:`webhook_configuration`): one webhook per policy of
:data:`tests.support.apiserver.POLICIES`, named ``<policy>.operator.aicr.run`` (for example
``aicr-rollout-revocation.operator.aicr.run``), on UPDATE of ``runtimerollouts`` (not
the ``status`` subresource, which the operator writes), ``sideEffects: None`` so that
``dryRun=All`` requests reach it too, ``failurePolicy: Fail``. A webhook denies only when
its own policy is the first one :func:`check_rollout_update` refuses, so exactly one
webhook denies a bad update, whichever order the server calls them in.

A denial is answered as ``AdmissionResponse.status`` = a Status with code 422, reason
``Invalid`` and the rule's message; kube-apiserver (``webhook/errors/statuserror.go``,
``ToStatusErr``) keeps code, reason and details and prefixes the message with
``admission webhook "<name>" denied the request: ``. That is the Status the plugin sees.

Use::

    with AdmissionWebhook(ca, folder) as hook:     # ca: trustme CA the server trusts
        server.load_objects([webhook_configuration(hook.url, ca_pem)])
        hook.reviews                               # [Review(policy, name, user, dry_run, allowed)]
"""

import base64
import collections
import http.server
import json
import ssl
import threading

try:
    from . import apiserver, certs, identity_front
except ImportError:  # tests/ itself on sys.path
    import apiserver
    import certs
    import identity_front

WEBHOOK_SUFFIX = ".operator.aicr.run"
#: The one identity the rules do not judge: the real tier's stand-in for a cluster administrator who
#: changes what the rules forbid everyone else (tests/support/interpositions.py, a new target digest in place), so
#: the plugin's own pins can be tested on the real server. No test acts as this user otherwise.
EXEMPT_USER = "aicr-rules-exempt-admin"
CONFIGURATION_NAME = "aicr-operator-rules"
MAX_REVIEW_BYTES = 8 * 1024 * 1024
TIMEOUT_SECONDS = 10

#: One AdmissionReview the webhook judged: policy key, rollout name, requesting user, dryRun, allowed, message.
Review = collections.namedtuple("Review", "policy name user dry_run allowed message")


#: The policy keys, one webhook each (tests/support/apiserver/ POLICIES).
POLICIES_JUDGED = tuple(apiserver.POLICIES)


def webhook_name(policy):
    """``aicr-rollout-approval.operator.aicr.run`` for policy key ``approval``."""
    return apiserver.POLICIES[policy] + WEBHOOK_SUFFIX


def webhook_configuration(url, ca_pem):
    """The ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1) that sends every UPDATE of a
    RuntimeRollout to ``url``/``<policy>``; ``ca_pem`` (bytes) verifies the webhook's certificate."""
    hooks = []
    for policy in apiserver.POLICIES:
        hooks.append({
            "name": webhook_name(policy),
            "clientConfig": {"url": "%s/%s" % (url, policy), "caBundle": base64.b64encode(ca_pem).decode("ascii")},
            "rules": [{"apiGroups": [apiserver.GROUP], "apiVersions": [apiserver.VERSION], "operations": ["UPDATE"],
                       "resources": ["runtimerollouts"], "scope": "Cluster"}],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": TIMEOUT_SECONDS,
        })
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": CONFIGURATION_NAME}, "webhooks": hooks}


def judge(policy, request):
    """The AdmissionResponse (dict) for one AdmissionRequest (dict) as webhook ``policy`` answers it."""
    response = {"uid": request.get("uid", ""), "allowed": True}
    if request.get("operation") != "UPDATE" or request.get("subResource"):
        return response, None
    username = (request.get("userInfo") or {}).get("username", "")
    if username == EXEMPT_USER:
        return response, None
    try:
        apiserver.check_rollout_update(request.get("oldObject") or {}, request.get("object") or {}, username)
    except apiserver.Denied as denied:
        if denied.policy != policy:
            return response, None  # another webhook (the first policy that refuses) denies it
        res = apiserver.RESOURCES["runtimerollouts"]
        name = request.get("name", "")
        response["allowed"] = False
        response["status"] = {"code": 422, "reason": "Invalid", "message": denied.message,
                              "details": apiserver.details(name, res.group, res.plural, [{"message": denied.message}])}
        return response, denied.message
    return response, None


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        hook = self.server.owner
        policy = self.path.split("?")[0].strip("/")  # kube-apiserver adds ?timeout=10s
        length = int(self.headers.get("Content-Length") or 0)
        if policy not in apiserver.POLICIES or not 0 < length <= MAX_REVIEW_BYTES:
            self.close_connection = True
            return self._answer(400, {"error": "unknown webhook path or bad length"})
        try:
            review = json.loads(self.rfile.read(length).decode("utf-8"))
            request = review["request"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return self._answer(400, {"error": "not an AdmissionReview"})
        response, message = judge(policy, request)
        with hook.lock:
            hook.reviews.append(Review(policy, request.get("name"), (request.get("userInfo") or {}).get("username"),
                                       bool(request.get("dryRun")), response["allowed"], message))
        self._answer(200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    def _answer(self, code, body):
        data = json.dumps(body).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class AdmissionWebhook:
    """The webhook's HTTPS server on 127.0.0.1 (a free port), its certificate issued by ``ca``
    (trustme) into ``folder``. Attributes: ``url``, ``reviews`` (list of :class:`Review`, oldest
    first; :meth:`clear` empties it), ``lock``."""

    def __init__(self, ca, folder):
        serving = certs.write_server_cert(ca, folder, stem="webhook")
        self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ssl_context.load_cert_chain(serving.cert, serving.key)
        self.lock = threading.Lock()
        self.reviews = []
        self.url = None
        self._httpd = None

    def start(self):
        self._httpd = identity_front.TLSServer(self, _Handler, TIMEOUT_SECONDS)
        self.url = self._httpd.start("aicr-admission-webhook")
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.stop()
            self._httpd = None

    def clear(self):
        with self.lock:
            self.reviews.clear()

    def seen(self):
        """A copy of :attr:`reviews`."""
        with self.lock:
            return list(self.reviews)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
