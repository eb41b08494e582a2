"""A Kubernetes-shaped HTTPS API server for kubectl-aicr's tests (test-only code).

It serves the objects of docs/operator-api.md from YAML fixtures and
answers the way kube-apiserver answers: the same URLs, the same authentication
order, RBAC-like permissions, RFC 6902 / RFC 7386 patches with the semantics of the
libraries kube-apiserver uses, the operator's admission rules answered as a
ValidatingAdmissionPolicy denial, and ``Status`` bodies whose messages are copied
from the Kubernetes sources cited next to each one.

In-process (pytest)::

    with APIServer(fixtures_dir="tests/fixtures") as server:
        server.url, server.ca_file, server.token("bob@example.com")
        server.write_kubeconfig(path, user="alice@example.com")
        server.requests          # what the client sent, one record per request

As a program (``make demo``), run from the repository root::

    python -m tests.support.apiserver --fixtures tests/fixtures --dir OUTDIR

prints the URL on its first line and ``export KUBECONFIG=OUTDIR/kubeconfig`` on the
second, and serves until SIGTERM or SIGINT (exit status 0).

Sources (kubernetes/kubernetes unless named otherwise):

- Status errors: ``staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go``
- 403 text: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go``
- request parsing: ``staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``
- patch: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``,
  ``vendor/gopkg.in/evanphx/json-patch.v4/patch.go`` and ``merge.go``
- CR patch types: ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go``
- admission: ``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go``,
  ``staging/src/k8s.io/apiserver/pkg/admission/errors.go``
- selectors: ``staging/src/k8s.io/apimachinery/pkg/labels/selector.go``, ``pkg/fields/selector.go``,
  ``pkg/util/validation/validation.go`` (texts as kube-apiserver v1.20 answers them)

tests/test_contract.py runs the same requests against this server and a real kube-apiserver
(tests/support/real_apiserver.py) and asserts the same answers.
"""

# One module per concern; every name is also here, as callers used it when this was one module.
from .resources import (  # noqa: F401
    ADMIN_USER, ANONYMOUS, APPLY_PATCH, APPROVERS, AUTHENTICATED, CREATE_TYPES,
    CR_PATCH_TYPES, FAULTS, FIXTURE_ANNOTATION, GROUP, HUMAN_FIELDS, JSON_PATCH,
    MASTERS, MAX_BODY, MERGE_PATCH, OUTCOME_LABEL, READERS, RESOURCES,
    Resource, SERVED_GROUP_VERSIONS, SERVED_PATCH_TYPES, STRATEGIC_PATCH, UNAUTHENTICATED, VERSION,
    resource_for)
from .status import (  # noqa: F401
    APIError, TextError, bad_request, conflict, details, field_invalid,
    forbidden, forbidden_message, go_quote, method_not_allowed, method_not_supported, not_found,
    page_not_found, patch_failed, path_not_found, policy_denied, status, too_large,
    unauthorized, unsupported_media_type)
from .rbac import (  # noqa: F401
    Attributes, Grant, User, UserInfo, default_grants, default_users,
    request_info)
from .fixtures import (  # noqa: F401
    _FixtureLoader, _NOW, format_time, load_fixtures, resolve, resolve_placeholder,
    sha256_digest, utc_now)
from .selectors import (  # noqa: F401
    _DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_FMT, _DNS1123_SUBDOMAIN_MSG, _LABEL_VALUE, _LABEL_VALUE_FMT, _LABEL_VALUE_MSG,
    _LS_SPECIAL, _LS_TOKENS, _LS_WHITESPACE, _LabelSelectorParser, _QNAME, _QNAME_FMT,
    _QNAME_MSG, _SelectorError, _go_int64, _label_value_errors, _lex_label_selector, _qualified_name_errors,
    _regex_error, _split_field_terms, _unescape_field_value, labels_match, parse_field_selector, parse_label_selector)
from .patches import (  # noqa: F401
    PatchError, _add, _find_container, _get, _index, _pointer_tokens,
    _prune_nulls, _remove, apply_json_patch, apply_merge_patch, json_equal)
from .admission import (  # noqa: F401
    Denied, POLICIES, _RFC3339, _labels, _spec, _status,
    check_rollout_update, has_ended, is_rfc3339)
from .store import (  # noqa: F401
    Store)
from .handler import (  # noqa: F401
    Connection, Request, RequestRecord, _GO_JSON_ESCAPES, _HTTPServer, _Handler,
    _encode_payload, _impersonation_headers, _page, _sni_callback, _tls_local)
from .server import (  # noqa: F401
    APIServer, _b64_file, _json_type, _resource_list, _write_yaml)
from .program import (  # noqa: F401
    main)
