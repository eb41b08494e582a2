"""The test API server: constants of the served API and its resources (group, version, kinds, patch types)."""

import dataclasses


GROUP = "operator.aicr.run"
VERSION = "v1alpha1"
APPROVERS = "aicr-approvers"
READERS = "aicr-readers"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
OUTCOME_LABEL = "operator.aicr.run/outcome"
FIXTURE_ANNOTATION = "test.aicr.run/fixture"
HUMAN_FIELDS = ("approval", "revocation", "acknowledgements")
ADMIN_USER = "admin"

# kube-apiserver's default --max-request-body-bytes (3 MiB), options/server_run_options.go.
MAX_BODY = 3 * 1024 * 1024

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
# What customresource_handler.go passes to PatchResource for a CR (ServerSideApply is GA).
CR_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
# What this server implements; it answers apply-patch like a server without ServerSideApply.
SERVED_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH)

# The body types a built-in create accepts (the API group's serializers).
CREATE_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")

FAULTS = ("hang", "trickle", "reset", "close-mid-body", "html-500", "redirect", "huge",
          # the request is carried out (a PATCH stored), then its answer is lost: closed with no answer,
          # a TCP RST, or held for fault_hang_seconds and closed
          "store-close", "store-reset", "store-hang", "store-conflict",  # store-conflict: then a 409
          "reset-store-later",  # a TCP RST, and the request carried out fault_delay seconds later all the same
          # an error answer, the request not carried out (too-many-429 as the max-in-flight filter sends it) ...
          "etcd-500", "timeout-504", "bad-gateway-502", "unavailable-503", "too-many-429",
          # ... or carried out (the PATCH stored) and then answered so: a 500 etcd timeout (Status), a 504 from
          # the timeout filter (Status), a proxy's HTML 502 or 500, an empty 503
          "store-etcd-500", "store-timeout-504", "store-bad-gateway-502", "store-unavailable-503", "store-html-500",
          # the real answer in another framing HTTP/1.1 allows (RFC 9112), or framed wrongly
          "chunked", "interim", "http10-close", "folded-header", "bad-chunk", "two-lengths",
          # the real answer, kept alive by its headers, then the connection closed (an idle timeout)
          "idle-close",
          # a list answered forever with empty pages, each with a new 8 KiB continue token
          "endless-pages",
          # the real answer with an unasked 408 glued to it in the same write, the connection left open
          "glued-408")


def conflict_status_for_fault():
    """The 409 Status of the "store-conflict" fault (the write was stored all the same)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict",
            "message": "Operation cannot be fulfilled: the object has been modified", "code": 409}


@dataclasses.dataclass(frozen=True)
class Resource:
    """One served resource: plural, kind, API group and version, scope, short names."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    singular: str
    short_names: tuple = ()
    typed: bool = False  # a built-in type (list items carry no kind/apiVersion)

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def group_resource(self):
        """``schema.GroupResource.String()``: ``plural.group``, or ``plural`` for the core group."""
        return "%s.%s" % (self.plural, self.group) if self.group else self.plural


RESOURCES = {
    "runtimerollouts": Resource("runtimerollouts", "RuntimeRollout", GROUP, VERSION, False,
                                "runtimerollout", ("aicrro",)),
    "clusterruntimes": Resource("clusterruntimes", "ClusterRuntime", GROUP, VERSION, False,
                                "clusterruntime", ("aicrrt",)),
    "configmaps": Resource("configmaps", "ConfigMap", "", "v1", True, "configmap", ("cm",), True),
}
SERVED_GROUP_VERSIONS = {("", "v1"), (GROUP, VERSION), ("authentication.k8s.io", "v1")}


def resource_for(kind):
    """Return the :class:`Resource` for a kind or plural (``"RuntimeRollout"``, ``"configmaps"``)."""
    for r in RESOURCES.values():
        if kind.lower() in (r.plural, r.kind.lower(), r.singular) or kind in r.short_names:
            return r
    raise KeyError("unknown kind %r" % kind)
