"""The test API server: the operator's admission rules for RuntimeRollout updates (docs/operator-api.md)."""

import datetime
import re

from .patches import json_equal
from .resources import HUMAN_FIELDS, OUTCOME_LABEL
from .status import go_quote


POLICIES = {
    "approval": "aicr-rollout-approval",
    "revocation": "aicr-rollout-revocation",
    "acknowledgements": "aicr-rollout-acknowledgements",
    "immutable": "aicr-rollout-immutable",
}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def is_rfc3339(value):
    """True for an RFC 3339 date-time string with a real date and time."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


class Denied(Exception):
    """An admission denial: ``policy`` key (see :data:`POLICIES`) and message."""

    def __init__(self, policy, message):
        super().__init__(message)
        self.policy = policy
        self.message = message


def _spec(obj):
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _labels(obj):
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _status(obj):
    st = obj.get("status")
    return st if isinstance(st, dict) else {}


def has_ended(obj):
    """A rollout has ended when it carries an outcome (label or status.outcome)."""
    return bool(_labels(obj).get(OUTCOME_LABEL) or _status(obj).get("outcome"))


def check_rollout_update(old, new, username):
    """The operator's admission rules on an update (operator-api.md "What the API server
    enforces", rules 1-4), on the object before and after the patch and the requesting
    user. Raises :class:`Denied` for the first policy that refuses; returns None."""
    old_spec, new_spec = _spec(old), _spec(new)
    quoted = go_quote(username)

    # 1. spec.approval: added once, never changed or removed; user, reason, expires.
    old_a, new_a = old_spec.get("approval"), new_spec.get("approval")
    if old_a is not None and not json_equal(old_a, new_a):
        raise Denied("approval", "spec.approval is set once and cannot be changed or removed")
    if old_a is None and new_a is not None:
        new_a = new_a if isinstance(new_a, dict) else {}
        if new_a.get("user") != username:
            raise Denied("approval", "spec.approval.user must be the requesting user %s" % quoted)
        reason = new_a.get("reason")
        if not isinstance(reason, str) or not 1 <= len(reason) <= 1024:
            raise Denied("approval", "spec.approval.reason must be 1 to 1024 characters")
        if not is_rfc3339(new_a.get("expires")):
            raise Denied("approval", "spec.approval.expires must be an RFC 3339 time")

    # 2. spec.revocation: added once, only where approved, not while Validating or ended.
    old_r, new_r = old_spec.get("revocation"), new_spec.get("revocation")
    if old_r is not None and not json_equal(old_r, new_r):
        raise Denied("revocation", "spec.revocation is set once and cannot be changed or removed")
    if old_r is None and new_r is not None:
        if new_spec.get("approval") is None:
            raise Denied("revocation", "spec.revocation requires spec.approval")
        if _status(old).get("phase") == "Validating":
            raise Denied("revocation", "spec.revocation cannot be set while status.phase is Validating")
        if has_ended(old):
            raise Denied("revocation", "spec.revocation cannot be set after the rollout has ended")
        if not isinstance(new_r, dict) or new_r.get("user") != username:
            raise Denied("revocation", "spec.revocation.user must be the requesting user %s" % quoted)

    # 3. spec.acknowledgements: append-only; new entries name the awaited release and the user.
    old_k = old_spec.get("acknowledgements") or []
    new_k = new_spec.get("acknowledgements") or []
    if not isinstance(new_k, list) or len(new_k) < len(old_k) or not json_equal(new_k[:len(old_k)], old_k):
        raise Denied("acknowledgements", "spec.acknowledgements is append-only")
    awaited = (_status(old).get("awaitingAcknowledgement") or {}).get("release")
    for entry in new_k[len(old_k):]:
        entry = entry if isinstance(entry, dict) else {}
        if not awaited:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry needs a release "
                                             "in status.awaitingAcknowledgement, and there is none")
        if entry.get("release") != awaited:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry must name the "
                                             "release in status.awaitingAcknowledgement (%s)" % go_quote(awaited))
        if entry.get("user") != username:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry must name the "
                                             "requesting user %s" % quoted)

    # 4. Every other spec field and the outcome label are immutable.
    for key in sorted(set(old_spec) | set(new_spec)):
        if key not in HUMAN_FIELDS and not json_equal(old_spec.get(key), new_spec.get(key)):
            raise Denied("immutable", "spec.%s is immutable" % key)
    if _labels(old).get(OUTCOME_LABEL) != _labels(new).get(OUTCOME_LABEL):
        raise Denied("immutable", "the label %s is immutable" % OUTCOME_LABEL)
