"""The test API server: Kubernetes Status error bodies, as the API server writes them (k8s.io/apimachinery pkg/api/errors)."""

import json


def go_quote(s):
    """Go's ``%q`` for the plain strings used here (a JSON string literal)."""
    return json.dumps(s, ensure_ascii=False)


def status(code, reason, message, details=None):
    """A ``metav1.Status`` failure, keys in kube's order; ``details`` omitted when None."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def details(name="", group="", kind="", causes=None):
    """``metav1.StatusDetails`` with its ``omitempty`` fields left out when empty."""
    d = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
    if causes:
        d["causes"] = causes
    return d


class APIError(Exception):
    """An error answered as a Status: ``code`` (int) and ``status`` (dict)."""

    def __init__(self, body):
        super().__init__(body["message"])
        self.status = body
        self.code = body["code"]


def unauthorized():
    """401 as the authentication filter writes it: ``apierrors.NewUnauthorized("Unauthorized")``."""
    return APIError(status(401, "Unauthorized", "Unauthorized"))


def forbidden(res_group, res_plural, name, reason_text):
    """403 ``apierrors.NewForbidden``: ``<resource>.<group> "<name>" is forbidden: <reason>``."""
    gr = "%s.%s" % (res_plural, res_group) if res_group else res_plural
    if not res_plural and not res_group:
        message = "forbidden: %s" % reason_text
    elif not name:
        message = "%s is forbidden: %s" % (gr, reason_text)
    else:
        message = "%s %s is forbidden: %s" % (gr, go_quote(name), reason_text)
    return APIError(status(403, "Forbidden", message, details(name, res_group, res_plural)))


def forbidden_message(username, attrs):
    """``forbiddenMessage`` in responsewriters/errors.go (User "u" cannot VERB resource ...)."""
    if not attrs.resource_request:
        return "User %s cannot %s path %s" % (go_quote(username), attrs.verb, go_quote(attrs.path))
    resource = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
    if attrs.namespace:
        return "User %s cannot %s resource %s in API group %s in the namespace %s" % (
            go_quote(username), attrs.verb, go_quote(resource), go_quote(attrs.api_group),
            go_quote(attrs.namespace))
    return "User %s cannot %s resource %s in API group %s at the cluster scope" % (
        go_quote(username), attrs.verb, go_quote(resource), go_quote(attrs.api_group))


def not_found(res, name):
    """404 ``apierrors.NewNotFound``: ``runtimerollouts.operator.aicr.run "x" not found``."""
    return APIError(status(404, "NotFound", "%s %s not found" % (res.group_resource, go_quote(name)),
                           details(name, res.group, res.plural)))


def path_not_found():
    """404 ``NewGenericServerResponse(404, ...)``: the message for an unknown path in a built-in
    API (``/api/...``, ``/apis/authentication.k8s.io/v1/...``); empty details."""
    return APIError(status(404, "NotFound", "the server could not find the requested resource", {}))


class TextError(Exception):
    """An error answered with a plain-text body, not a Status: ``code`` (int) and ``text``."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code, self.text = code, text


def page_not_found():
    """404 as Go's ``http.NotFound`` writes it (text/plain ``404 page not found``): what
    kube-apiserver answers for a path under ``/apis`` that no API serves: an unknown group or
    version, a resource no CRD defines, a namespaced path to a cluster-scoped custom resource
    (the apiextensions handler delegates them to the not-found handler)."""
    return TextError(404, "404 page not found\n")


def bad_request(message):
    """400 ``apierrors.NewBadRequest(message)``."""
    return APIError(status(400, "BadRequest", message))


def conflict(res, name):
    """409 ``apierrors.NewConflict`` with storage's OptimisticLockErrorMsg."""
    return APIError(status(409, "Conflict", (
        "Operation cannot be fulfilled on %s %s: the object has been modified; please apply "
        "your changes to the latest version and try again") % (res.group_resource, go_quote(name)),
        details(name, res.group, res.plural)))


def patch_failed():
    """422 for a JSON patch that does not apply (failed ``test``, bad path): patch.go wraps the
    json-patch error in ``NewGenericServerResponse(422, ...)``, which keeps only its generic text."""
    return APIError(status(422, "Invalid",
                           "the server rejected our request due to an error in our request", {}))


def unsupported_media_type(accepted):
    """415 ``negotiation.NewUnsupportedMediaTypeError`` (handlers/negotiation/errors.go)."""
    return APIError(status(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: " + ", ".join(accepted)))


def too_large(limit):
    """413 ``NewRequestEntityTooLargeError("limit is N")`` from limitedReadBody (handlers/rest.go)."""
    return APIError(status(413, "RequestEntityTooLarge",
                           "Request entity too large: limit is %d" % limit))


def method_not_supported(res, verb):
    """405 ``apierrors.NewMethodNotSupported``: ``<verb> is not supported on resources of kind "..."``."""
    return APIError(status(405, "MethodNotAllowed", "%s is not supported on resources of kind %s" % (
        verb, go_quote(res.group_resource)), details(group=res.group, kind=res.plural)))


def method_not_allowed():
    """405 from go-restful, for a method the resource has no route for (a create-only resource
    such as selfsubjectreviews): a Status with a generic message and empty details."""
    return APIError(status(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource", {}))


def field_invalid(res, name, field, value, detail):
    """422 ``apierrors.NewInvalid`` with one ``field.Invalid`` error."""
    body = 'Invalid value: %s: %s' % (go_quote(value), detail)
    kind = "%s.%s" % (res.kind, res.group) if res.group else res.kind
    return APIError(status(422, "Invalid", "%s %s is invalid: %s: %s" % (kind, go_quote(name), field, body),
                           details(name, res.group, res.kind, [
                               {"reason": "FieldValueInvalid", "message": body, "field": field}])))


def policy_denied(res, name, policy, binding, message):
    """422 as dispatcher.go answers a ValidatingAdmissionPolicy denial (no reason set): the
    message wrapped by ``admission.NewForbidden``, reason Invalid, and one cause."""
    denial = "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s" % (
        policy, binding, message)
    return APIError(status(422, "Invalid", "%s %s is forbidden: %s" % (
        res.group_resource, go_quote(name), denial),
        details(name, res.group, res.plural, [{"message": denial}])))
