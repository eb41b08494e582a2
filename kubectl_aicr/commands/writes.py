"""What approve, revoke and acknowledge share: who the caller is, the facts a decision is pinned to, and
the write that carries them.

Sources: README.md ("approve, revoke, acknowledge") and docs/operator-api.md ("What the API
server enforces"); RFC 6902 (JSON Patch ``test``) as kube-apiserver applies it
(``handlers/patch.go``, json-patch v4); kubectl's ``--dry-run`` (``cmd/util``
GetDryRunStrategy) and the API's ``dryRun=All`` (Kubernetes API concepts, "Dry-run").

One rule for every write command: the rollout is read ONCE; the command decides on
that read (refusing with the reason) and shows what the decision rests on before
writing. The write is a JSON patch whose first operations ``test`` those facts
(:data:`COMMON_FACTS` and the command's own: UID, target plan, assessment digest,
phase, outcome, and e.g. the release awaited), so the API server itself refuses it if
any of them changed in between. Unrelated changes (status messages, step states) do
not stop it: no resourceVersion is tested. When a ``test`` fails (422 with no details,
or a 409 conflict) the rollout is read again: if a pinned fact changed, nothing is
written and the command fails naming what changed; if none did, the same patch (the
same decision, never a new one) is sent again, a bounded number of times. Every other
refusal of the server (an admission rule, RBAC) is shown as it came.
"""

import datetime
import json
import time

from .. import output
from ..aicr import objects
from ..errors import ApiError, AicrError, RefusedError, TransportError

JSON_PATCH = "application/json-patch+json"
MAX_ATTEMPTS = 4            # sends of one unchanged decision while the server reports conflicts
BACKOFF_SECONDS = 0.1       # the pause before the second send, doubling up to MAX_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 2.0

# What every decision rests on (keys of objects.FACT_POINTERS); each command adds its own.
COMMON_FACTS = ("uid", "target", "assessment", "phase", "outcome", "outcome-label")
EXIT_RECORDED = 0           # the decision was recorded, but its confirmation could not be printed


def who_am_i(client):
    """The caller's username, from a SelfSubjectReview (``authentication.k8s.io/v1``, Kubernetes 1.28+).

    Raises AicrError when the server does not offer it or answers without a username:
    nothing is written without knowing who writes it.
    """
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        review = client.request("POST", objects.SELF_SUBJECT_REVIEW_PATH, body=body,
                                 content_type="application/json")
    except ApiError as exc:
        if exc.code in (404, 405):
            raise AicrError("the API server does not offer SelfSubjectReview (authentication.k8s.io/v1, "
                            "Kubernetes 1.28 or newer), so your username cannot be learned; nothing was written"
                            ) from None
        if exc.code == 403:
            raise AicrError("the API server refused the SelfSubjectReview that tells who you are (it needs "
                            "Kubernetes 1.28 or newer, where every user may create one): %s; nothing was written"
                            % exc) from None
        raise
    username = objects.self_subject_username(review)
    if not username:
        raise AicrError("the API server's SelfSubjectReview named no username; nothing was written")
    return username


def now_utc(client=None):
    """The current time, aware UTC, whole seconds: the API server's clock when ``client`` has heard it
    (so a wrong local clock never writes a wrong expiry or time), else this machine's."""
    now = client.server_time() if client is not None else None
    return (now or datetime.datetime.now(datetime.timezone.utc)).replace(microsecond=0)


def read_rollout(client, name):
    """GET rollout ``name`` once -> (the object as read, a dict; its :class:`objects.Rollout` view)."""
    raw = client.get(objects.rollout_path(name))
    return raw, objects.rollout(raw)


class Decision:
    """A write decided on one read of a rollout: ``raw`` (the object as read), ``facts`` (keys of
    :data:`objects.FACT_POINTERS` it rests on) and ``operations`` (the JSON patch operations that record it).

    ``pins`` are the ``(fact, test operation)`` pairs, one per tested path; ``patch`` is what is sent:
    the tests first, then the operations.
    """

    def __init__(self, name, raw, facts, operations):
        self.name, self.raw, self.facts, self.operations = name, raw, tuple(facts), list(operations)
        self.confirmed = False  # True once a read after a lost answer or a conflict showed it recorded
        self.pin(raw)

    def landed(self, obj):
        """True when ``obj`` (the rollout read again, a dict) is the rollout decided on (name and UID) and holds
        exactly what this decision writes: the approval or revocation sent (user, expiry or time, reason), or
        the acknowledgement entry sent among the acknowledgements."""
        if objects.pointer_value(obj, "/metadata/name") != self.name or not objects.json_equal(
                objects.fact_value(obj, "uid"), objects.fact_value(self.raw, "uid")):
            return False
        for operation in self.operations:
            path, value = operation["path"], operation["value"]
            if path.endswith("/-"):
                path, value = path[:-2], [value]
            found = objects.pointer_value(obj, path)
            if isinstance(value, list):
                if not isinstance(found, list) or not all(
                        any(objects.json_equal(entry, have) for have in found) for entry in value):
                    return False
            elif not objects.json_equal(found, value):
                return False
        return True

    def pin(self, obj):
        """Make the tests from ``obj``: the read decided on, or a later read whose facts are all the same
        (the same values, tested where that read has them: a parent that was absent may have appeared)."""
        self.pins, paths = [], set()
        for fact in self.facts:
            test = objects.pin_operation(obj, fact)
            if test["path"] not in paths:
                paths.add(test["path"])
                self.pins.append((fact, test))

    @property
    def patch(self):
        return [test for _, test in self.pins] + self.operations

    def changed_facts(self, now):
        """The facts whose value in ``now`` (the rollout read again, a dict) differs from the read decided on."""
        return [fact for fact in self.facts
                if not objects.json_equal(objects.fact_value(self.raw, fact), objects.fact_value(now, fact))]


def land(client, decision, dry_run="none"):
    """Send ``decision``'s patch; return the rollout as the server answered it (dict), or None for
    ``dry_run`` "client" (nothing is sent). "server" sends it with ``dryRun=All``: admission judges it,
    nothing is stored.

    A failed ``test`` (or a conflict) leads to one new read: RefusedError naming what changed when a pinned
    fact did; otherwise the same patch again (at most :data:`MAX_ATTEMPTS` sends, paced), then the server's
    error as it came. Any other error of the server is raised as it came (ApiError).

    A lost answer (the connection reset or closed, the answer cut short, no answer within the deadline:
    TransportError) may hide a write that landed: the rollout is read again within the same deadline, on a
    new connection. When that read, or the one after a conflict, shows this very decision recorded (same UID,
    exactly the entry sent: :meth:`Decision.landed`), the write succeeded: the read is returned and a note
    on stderr says how it was confirmed. When it cannot be read, TransportError says the write may have been
    recorded and how to look.
    """
    if dry_run == "client":
        return None
    path = objects.rollout_path(decision.name)
    query = dict({"dryRun": "All"} if dry_run == "server" else {}, **WRITE_QUERY)
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(min(BACKOFF_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS,
                           _remaining_or_unknown(client, decision)))
        try:
            return client.request("PATCH", path, query=query, body=decision.patch, content_type=JSON_PATCH)
        except ApiError as exc:
            if strict_refusal(exc) is not None:  # before failed_precondition: it is a 422 without details
                raise strict_refusal(exc) from None
            if not failed_precondition(exc):
                raise
            refused, why = exc, "the server refused the write (%s)" % exc
        except TransportError as exc:
            refused = _unknown(decision, "%s" % exc)
            why = "the answer to the write was lost (%s)" % exc
        now = _read_again(client, decision, why if isinstance(refused, TransportError) else None)
        if dry_run == "none" and decision.landed(now):
            decision.confirmed = True
            output.warning("%s, but reading rollout %s again shows this decision recorded"
                           % (why, decision.name))
            return now
        changed = decision.changed_facts(now)
        if changed:
            raise RefusedError("rollout %s changed after it was read: %s; nothing was written; describe it again"
                               % (decision.name, changes_text(decision.raw, now, changed)))
        decision.pin(now)  # the same facts, the same decision: only where the tests look may differ
    raise refused


def _unknown(decision, why):
    """The error for a write whose outcome cannot be known: it may have been recorded."""
    return TransportError("%s; the write may have been recorded; check with kubectl aicr describe %s"
                          % (why, decision.name))


def _remaining_or_unknown(client, decision):
    try:
        return client.deadline.remaining()
    except TransportError as exc:
        raise _unknown(decision, "%s, before the write could be sent again" % exc) from None


#: Every write names its tool in managedFields (as kubectl's ``kubectl-patch``) and is decoded strictly: a field
#: the CRD's structural schema does not declare is refused, never silently dropped (Kubernetes API concepts,
#: "Field validation"; k8s.io/apiserver ``pkg/endpoints/handlers/patch.go``).
WRITE_QUERY = {"fieldManager": "kubectl-aicr", "fieldValidation": "Strict"}


def strict_refusal(exc):
    """A RefusedError advising the operator's release when the server refused a write under
    ``fieldValidation=Strict`` (a 422 ``"" is invalid: patch: Invalid value: "<the whole object>": strict decoding
    error: unknown field "spec.approval.expires"``; the object is left out), else None."""
    marker = "strict decoding error: "
    if marker not in str(exc):
        return None
    return RefusedError("the server refused the write: %s%s; nothing was written: the cluster's RuntimeRollout "
                        "schema does not declare a field this kubectl-aicr writes; use the kubectl-aicr of the "
                        "operator's release" % (marker, str(exc).rsplit(marker, 1)[1][:500]))


def failed_precondition(exc):
    """True for the server's refusal of a precondition: a failed JSON-patch ``test`` (422 whose Status has no
    details: patch.go keeps only a generic text) or a 409 Conflict. An admission denial or a schema error
    (422 with details naming the object) is not one."""
    return exc.code == 409 or (exc.code == 422 and not (exc.status or {}).get("details"))


def _read_again(client, decision, lost=None):
    """GET the rollout again (a dict). ``lost``: why the write's answer was lost; then a failure to read
    says the write may have been recorded (TransportError), and a 404 too."""
    name = decision.name
    try:
        return client.get(objects.rollout_path(name))
    except ApiError as exc:
        if lost is None and exc.code == 404:
            raise RefusedError("rollout %s was deleted after it was read; nothing was written" % name) from None
        if lost is None:
            raise
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (lost, name, exc)) from None
    except TransportError as exc:
        why = lost or "the server refused the write as a conflict"
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (why, name, exc)) from None


def _digests(new, old):
    """Two digests as describe shortens them, in full where the short forms would look alike."""
    short_new, short_old = objects.short_digest(new), objects.short_digest(old)
    return (new, old) if short_new == short_old else (short_new, short_old)


def changes_text(before, after, changed):
    """One clause per changed fact (``before`` and ``after``: the rollout objects, dicts)."""
    old, new = objects.rollout(before), objects.rollout(after)
    if "uid" in changed:
        return "the rollout was deleted and created again (UID %s, now %s)" % (old.uid, new.uid)
    clauses = []
    for fact in changed:
        text = _change_text(fact, old, new)
        if text not in clauses:
            clauses.append(text)
    return "; ".join(clauses)


def _change_text(fact, old, new):
    if fact == "target":
        return "the rollout now targets %s, not %s" % _digests(new.to_digest, old.to_digest)
    if fact == "assessment":
        return "the rollout's assessment is now %s, not %s" % _digests(new.assessment_digest or "none",
                                                                      old.assessment_digest or "none")
    if fact == "phase":
        return "the rollout is now in phase %s, not %s" % (new.phase or "<none>", old.phase or "<none>")
    if fact in ("outcome", "outcome-label"):
        return "the rollout has ended (outcome %s)" % new.outcome if new.ended else "the rollout's outcome changed"
    if fact == "awaited":
        if not new.awaiting_acknowledgement:
            return "the rollout no longer waits on %s" % old.awaiting_acknowledgement
        return "the rollout now waits on %s, not %s" % (new.awaiting_acknowledgement,
                                                       old.awaiting_acknowledgement or "any release")
    if fact == "approval":
        if old.approval is None and isinstance(new.approval, objects.Approval):
            return "it is already approved by %s until %s" % (new.approval.user, shown_time(new.approval.expires))
        return "its approval changed (now %s)" % (new.approval,)
    if fact == "revocation":
        if old.revocation is None and isinstance(new.revocation, objects.Revocation):
            return "it was revoked by %s at %s" % (new.revocation.user, shown_time(new.revocation.time))
        return "its revocation changed (now %s)" % (new.revocation,)
    if fact == "acknowledgements":
        added = new.acknowledgements[len(old.acknowledgements):] \
            if isinstance(new.acknowledgements, list) and isinstance(old.acknowledgements, list) else []
        for ack in added:
            if isinstance(ack, objects.Acknowledgement):
                return "release %s is already acknowledged by %s at %s" % (ack.release, ack.user,
                                                                          shown_time(ack.time))
        return "its acknowledgements changed"
    if fact == "deadline":
        return "its deadline is now %s, not %s" % (shown_time(new.deadline), shown_time(old.deadline))
    if fact == "approval-required":
        return "spec.approvalRequired is now %s, not %s" % (new.approval_required, old.approval_required)
    return "%s changed" % objects.FACT_POINTERS[fact]


def check_answer(stored, decision, expected):
    """The rollout the server answered the write with must be the one decided on: its name, and every pinned
    fact the write does not set as read; and hold ``expected`` ({JSON pointer: value}, what was written).
    RefusedError otherwise (the write may have landed: the message says to look)."""
    if decision.confirmed:  # read again and recognised by Decision.landed
        return
    written = set(expected)
    kept = [fact for fact in decision.facts if objects.FACT_POINTERS[fact] not in written]
    name = decision.name
    moved = [fact for fact in decision.changed_facts(stored) if fact in kept]
    if objects.pointer_value(stored, "/metadata/name") != name or moved or any(
            not objects.json_equal(objects.pointer_value(stored, pointer), value) for pointer, value in expected.items()):
        raise RefusedError("the API server answered the write of rollout %s with something other than what was "
                           "written; check with kubectl aicr describe %s" % (name, name))


def show(heading, pairs, more=()):
    """Show, on stderr and before anything is written, what the decision rests on: ``heading``, the
    ``pairs`` (label, value) and ``more`` lines (escaped by the writer). AicrError when they cannot be shown."""
    output.inform([heading] + output.fields(pairs, indent=2) + list(more))


def fact_pairs(rollout, *extra):
    """(label, value) pairs of the facts every decision rests on, as describe prints them (the outcome is
    pinned too, but a decision is only ever made on a rollout without one)."""
    return [("UID", rollout.uid), ("Target plan", rollout.to_digest), ("Phase", rollout.phase)] + list(extra)


def confirm(lines, dry_run, recorded):
    """Print the result ``lines`` on stdout (escaped by the writer) and return the exit status.

    After a real write, a failure to print (stdout closed, full or a closed pipe) cannot undo the decision:
    one line on stderr says ``recorded`` (what was recorded) and the status is :data:`EXIT_RECORDED`.
    """
    suffix = {"server": " (server dry run)", "client": " (dry run)"}.get(dry_run, "")
    lines = [lines[0] + suffix] + list(lines[1:])
    try:
        output.write_lines(lines)
    except (AicrError, OSError) as exc:
        if dry_run != "none":
            raise
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).replace(
            "cannot write the output: ", "")
        try:
            output.warning("%s was recorded, but its confirmation could not be written to standard output (%s)"
                           % (recorded, why))
        except (AttributeError, OSError, ValueError):
            pass
        return EXIT_RECORDED
    return 0


def patch_lines(decision):
    """``--dry-run=client``: the request that would be sent, one line of JSON (ASCII, escaped)."""
    return ["would send: PATCH %s (%s) %s" % (objects.rollout_path(decision.name), JSON_PATCH,
                                             json.dumps(decision.patch, sort_keys=True))]


def require_target(rollout, expected):
    """--expect-digest: refuse unless the rollout's target plan (as read) starts with ``expected``."""
    if expected is None:
        return
    target = rollout.to_digest
    if not isinstance(target, str) or not target.startswith(expected):
        raise RefusedError("rollout %s targets %s, not %s (--expect-digest); nothing was written; describe it again"
                           % (rollout.name, target, expected))


def require_bound(rollout, uid, assessment):
    """--expect-uid and --expect-assessment: refuse unless the rollout (as read) has exactly this UID and an
    assessment digest starting with ``assessment`` (``sha256:<hex>``); None: not asked. Names what differs."""
    differ = []
    if uid is not None and rollout.uid != uid:
        differ.append("its UID is %s, not %s (--expect-uid): it was deleted and created again"
                      % (rollout.uid, uid))
    digest = rollout.assessment_digest
    if assessment is not None and not (isinstance(digest, str) and digest.startswith(assessment)):
        differ.append("its assessment report is %s, not %s (--expect-assessment)"
                      % (digest if isinstance(digest, str) else "none", assessment))
    if differ:
        raise RefusedError("rollout %s is not what was described: %s; nothing was written; describe it again"
                           % (rollout.name, "; ".join(differ)))


def require_open(rollout, action):
    """Refuse when the rollout has ended (it carries an outcome)."""
    if rollout.ended:
        raise RefusedError("rollout %s has ended (outcome %s); it cannot be %s"
                           % (rollout.name, rollout.outcome, action))


def refuse_invalid(rollout, *fields):
    """Refuse to decide on a rollout whose needed fields are malformed (never read as valid)."""
    for value in fields:
        if isinstance(value, objects.Invalid):
            raise RefusedError("rollout %s: %s; refusing to decide on a malformed rollout" % (rollout.name, value))


def shown_time(value):
    """RFC 3339 UTC text for a datetime; anything else (Invalid, None) as it is."""
    return objects.format_time(value) if isinstance(value, datetime.datetime) else value


def record_step_lines(rollout, when, heading, release=None):
    """The transition-record steps of ``when`` (PreApply or PostApply) that a decision covers, under
    ``heading``; no lines when there are none."""
    records = rollout.transition_records if isinstance(rollout.transition_records, list) else []
    lines = []
    for record in records:
        if not isinstance(record, objects.TransitionRecord) or (release is not None and record.release != release):
            continue
        for step in record.steps if isinstance(record.steps, list) else []:
            if isinstance(step, objects.RecordStep) and step.when == when:
                lines.append("  %s %s: %s" % (output.or_none(record.release), output.or_none(step.id),
                                              output.or_none(step.description)))
    return [heading] + lines if lines else []
