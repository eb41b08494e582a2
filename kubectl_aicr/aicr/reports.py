"""Reading a rollout's assessment report from the API server, verified against its recorded digest.

Shared by describe (shows it) and approve (decides on it); the field paths and the verification are
:mod:`kubectl_aicr.aicr.objects`' (docs/operator-api.md).
"""

from ..errors import ApiError
from . import objects


def fetch_report(client, namespace, digest):
    """The :class:`objects.VerifiedReport` for ``digest``, or None when the rollout records no report."""
    if not isinstance(digest, str):
        return None
    name = objects.assessment_configmap_name(digest)
    try:
        configmap = client.get(objects.configmap_path(namespace, name))
    except ApiError as exc:
        if exc.code == 404:
            return objects.verify_report(None, digest, name)
        return objects.VerifiedReport(name, digest, None, "cannot read report ConfigMap %s: %s" % (name, exc),
                                      unavailable=True)
    return objects.verify_report(configmap, digest, name)
