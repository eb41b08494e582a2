"""Another client's write landing between a write command's read and its write: the catalogue of changes.

Test-only data, independent of any server: each change is a plain function of the
rollout object (a dict as the API server returns it, and the operator namespace) that
returns the ACTIONS another client performs, or None where the change does not apply
to that rollout. tests/support/apiserver/ applies them server-side
(``APIServer.interpose``); a real kube-apiserver tier applies the same actions as
requests (a JSON patch to the object or its ``status`` subresource, a delete and a
create).

An action is a dict:

- ``{"action": "patch", "kind": K, "name": N, "namespace": NS or None, "subresource": "" or "status",
  "user": U, "patch": [RFC 6902 operations]}``: a JSON patch (``application/json-patch+json``),
  sent by ``user`` (the operator for status; an approver for spec.approval, spec.revocation,
  spec.acknowledgements; an administrator for what the admission rules forbid everyone else);
- ``{"action": "recreate", "kind": K, "name": N, "namespace": NS or None, "object": {...}}``: the
  object deleted and created again under the same name (a new UID); ``object`` carries no uid,
  resourceVersion or creationTimestamp.

:data:`CHANGES` maps a change's name to a :class:`Change`: ``make(rollout, namespace)`` -> actions
or None; ``refuses``: {command: words} for the commands the change must stop, with words the
one-line refusal must contain (commands not named must still succeed: the change does not touch
what their decision rests on); ``refuses_after_read``: the same for a change landing right after
the command's read of the rollout (before approve fetches the report), where it differs.

Which rollout each command runs on (:data:`TARGETS`, fixture roles of tests/fixtures) and the
other approver who makes the change (:data:`OTHER`) are fixed here too.
"""

import contextlib
import copy
import hashlib
import json
import threading
import time
from typing import Callable, Dict, NamedTuple, Optional

OTHER = "bob@example.com"          # the other approver; the command runs as alice@example.com
OPERATOR = "system:serviceaccount:aicr-system:aicr-operator"
ADMIN = "admin"
TIME = "2026-11-30T10:45:00Z"
TARGETS = {"approve": "awaiting-approval", "revoke": "approved-rolling-out",
           "acknowledge": "awaiting-acknowledgement"}
COMMANDS = tuple(TARGETS)
NEXT_PHASE = {"Pending": "AwaitingApproval", "AwaitingApproval": "RollingOut",
              "RollingOut": "AwaitingAcknowledgement", "AwaitingAcknowledgement": "RollingOut",
              "Validating": "Completed"}


class Change(NamedTuple):
    make: Callable
    refuses: Dict[str, str]
    refuses_after_read: Optional[Dict[str, str]] = None


def digest_of(word):
    """``sha256:<64 hex>`` of a word: a made-up digest, as the fixtures' ``@digest:WORD``."""
    return "sha256:" + hashlib.sha256(word.encode("utf-8")).hexdigest()


def _patch(rollout, operations, subresource="", user=ADMIN):
    return {"action": "patch", "kind": "RuntimeRollout", "name": rollout["metadata"]["name"], "namespace": None,
            "subresource": subresource, "user": user, "patch": operations}


def _status_patch(rollout, operations):
    return _patch(rollout, operations, "status", OPERATOR)


def recreated(rollout, namespace):
    """Deleted and created again under the same name: a new UID, a Remove step added (the operator's new
    attempt differs from what was read), the human fields and status kept."""
    obj = copy.deepcopy(rollout)
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        obj["metadata"].pop(key, None)
    obj["spec"]["steps"] = list(obj["spec"].get("steps") or []) + [
        {"release": "legacy-exporter", "operation": "Remove", "assessment": "manual", "changesCRDs": False}]
    return [{"action": "recreate", "kind": "RuntimeRollout", "name": rollout["metadata"]["name"], "namespace": None,
             "object": obj}]


def new_target_digest(rollout, namespace):
    return [_patch(rollout, [{"op": "replace", "path": "/spec/to/desiredStateDigest",
                              "value": digest_of("plan-interposed")}])]


def new_assessment_digest(rollout, namespace):
    if not isinstance((rollout.get("spec") or {}).get("assessment"), dict):
        return None
    return [_patch(rollout, [{"op": "replace", "path": "/spec/assessment/digest",
                              "value": digest_of("report-interposed")}])]


def report_swapped(rollout, namespace):
    """The report ConfigMap of the recorded digest recreated with other bytes (a verdict edited)."""
    digest = ((rollout.get("spec") or {}).get("assessment") or {}).get("digest")
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        return None
    name = "aicr-assessment-" + digest[len("sha256:"):][:16]
    report = json.dumps({"from": "cluster", "to": "swapped", "deployer": "argocd",
                         "components": [{"component": "gpu-operator", "change": "version", "verdict": "safe",
                                         "notes": "edited to read safe"}],
                         "summary": {"components": 1, "failing": 0}})
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": name, "namespace": namespace,
                              "labels": {"operator.aicr.run/role": "assessment"}},
                 "immutable": True, "data": {"report.json": report}}
    return [{"action": "recreate", "kind": "ConfigMap", "name": name, "namespace": namespace, "object": configmap}]


def awaited_release_moved(rollout, namespace):
    """The operator moves on to wait for another release (as after someone else acknowledged the first)."""
    status = rollout.get("status") or {}
    current = (status.get("awaitingAcknowledgement") or {}).get("release")
    releases = [s.get("release") for s in (rollout.get("spec") or {}).get("steps") or [] if isinstance(s, dict)]
    other = next((r for r in releases if isinstance(r, str) and r != current), "interposed-release")
    return [_status_patch(rollout, [{"op": "add", "path": "/status/awaitingAcknowledgement",
                                     "value": {"release": other}}])]


def phase_moved(rollout, namespace):
    phase = (rollout.get("status") or {}).get("phase")
    return [_status_patch(rollout, [{"op": "add", "path": "/status/phase",
                                     "value": NEXT_PHASE.get(phase, "RollingOut")}])]


def approved_by_another(rollout, namespace):
    if (rollout.get("spec") or {}).get("approval") is not None:
        return None
    return [_patch(rollout, [{"op": "add", "path": "/spec/approval",
                              "value": {"user": OTHER, "expires": "2099-01-01T00:00:00Z", "reason": "mine"}}],
                   user=OTHER)]


def revoked_by_another(rollout, namespace):
    spec = rollout.get("spec") or {}
    if spec.get("approval") is None or spec.get("revocation") is not None:
        return None
    return [_patch(rollout, [{"op": "add", "path": "/spec/revocation",
                              "value": {"user": OTHER, "time": TIME, "reason": "stop"}}], user=OTHER)]


def acknowledged_by_another(rollout, namespace):
    release = ((rollout.get("status") or {}).get("awaitingAcknowledgement") or {}).get("release")
    if not release:
        return None
    entry = {"release": release, "user": OTHER, "time": TIME}
    if (rollout.get("spec") or {}).get("acknowledgements"):
        operation = {"op": "add", "path": "/spec/acknowledgements/-", "value": entry}
    else:
        operation = {"op": "add", "path": "/spec/acknowledgements", "value": [entry]}
    return [_patch(rollout, [operation], user=OTHER)]


def records_changed(rollout, namespace):
    """A step added to the recorded steps (spec.transitionRecords) of the release awaited (else the first step's):
    a pre-apply and a post-apply step nobody was shown. An administrator's write: rule 4 forbids it to others."""
    spec = rollout.get("spec") or {}
    release = ((rollout.get("status") or {}).get("awaitingAcknowledgement") or {}).get("release") or next(
        (s.get("release") for s in spec.get("steps") or [] if isinstance(s, dict)), "gpu-operator")
    record = {"release": release, "from": "1", "to": "2", "verdict": "manual",
              "steps": [{"id": "interposed-pre", "description": "Drain every node.", "when": "PreApply"},
                        {"id": "interposed-post", "description": "Uncordon every node.", "when": "PostApply"}]}
    if isinstance(spec.get("transitionRecords"), list):
        return [_patch(rollout, [{"op": "add", "path": "/spec/transitionRecords/-", "value": record}])]
    return [_patch(rollout, [{"op": "add", "path": "/spec/transitionRecords", "value": [record]}])]


def steps_changed(rollout, namespace):
    """A step added to what the operator runs (spec.steps); an administrator's write."""
    step = {"release": "legacy-exporter", "operation": "Remove", "assessment": "manual", "changesCRDs": False}
    if isinstance((rollout.get("spec") or {}).get("steps"), list):
        return [_patch(rollout, [{"op": "add", "path": "/spec/steps/-", "value": step}])]
    return [_patch(rollout, [{"op": "add", "path": "/spec/steps", "value": [step]}])]


def unrelated_status_churn(rollout, namespace):
    """What a busy operator writes all the time: the message and a step's message."""
    operations = [{"op": "add", "path": "/status/message", "value": "still busy (interposed)"}]
    steps = (rollout.get("status") or {}).get("steps")
    if isinstance(steps, list) and steps and isinstance(steps[0], dict):
        operations.append({"op": "add", "path": "/status/steps/0/message", "value": "progress 42%"})
    return [_status_patch(rollout, operations)]


def unrelated_label_added(rollout, namespace):
    """A label someone adds for their own bookkeeping (not the outcome label)."""
    labels = (rollout.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        return [_patch(rollout, [{"op": "add", "path": "/metadata/labels/team", "value": "gpu"}])]
    return [_patch(rollout, [{"op": "add", "path": "/metadata/labels", "value": {"team": "gpu"}}])]


CHANGES = {
    "recreated": Change(recreated, {c: "was deleted and created again" for c in COMMANDS}),
    "new-target-digest": Change(new_target_digest, {c: "now targets" for c in COMMANDS}),
    "new-assessment-digest": Change(new_assessment_digest, {c: "assessment is now" for c in COMMANDS}),
    # The digest names the bytes the approver saw; a swap after approve verified them changes nothing it
    # rests on. Landing before approve fetches the report, it is caught there (exit 3).
    "report-swapped": Change(report_swapped, {}, {"approve": "is not verified"}),
    "awaited-release-moved": Change(awaited_release_moved, {"acknowledge": "now waits on"}),
    "phase-moved": Change(phase_moved, {c: "is now in phase" for c in COMMANDS}),
    "approved-by-another": Change(approved_by_another, {"approve": "is already approved by " + OTHER}),
    "revoked-by-another": Change(revoked_by_another, {"revoke": "was revoked by " + OTHER}),
    "acknowledged-by-another": Change(acknowledged_by_another, {"acknowledge": "is already acknowledged by " + OTHER}),
    # What approve and acknowledge acknowledge is pinned as read (issue 20); revoke does not rest on it.
    "records-changed": Change(records_changed, {c: "its recorded steps (spec.transitionRecords) are no longer "
                                                   "what was shown" for c in ("approve", "acknowledge")}),
    "steps-changed": Change(steps_changed, {"approve": "its steps (spec.steps) are no longer what was shown"}),
    "unrelated-status-churn": Change(unrelated_status_churn, {}),
    "unrelated-label-added": Change(unrelated_label_added, {}),
}


def refusal_words(change, command, after_read=False):
    """The words ``command``'s refusal must hold when ``change`` lands, or None when it must succeed."""
    entry = CHANGES[change]
    table = entry.refuses_after_read if after_read and entry.refuses_after_read is not None else entry.refuses
    return table.get(command)


@contextlib.contextmanager
def busy_operator(api_server, name):
    """While the block runs, the rollout's status.message is rewritten all the time (a new resourceVersion
    every millisecond), as a busy operator does."""
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            obj = api_server.get_object("RuntimeRollout", name)
            obj["status"]["message"] = "busy %f" % time.monotonic()
            api_server.put_object(obj)
            time.sleep(0.001)
    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(5)
