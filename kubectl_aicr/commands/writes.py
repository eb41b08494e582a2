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

from .. import cli, helpers, output
from ..aicr import objects
from ..errors import ApiError, AicrError, RefusedError, TransportError, UnknownOutcome

JSON_PATCH = "application/json-patch+json"
MAX_ATTEMPTS = 4            # sends of one unchanged decision while the server reports conflicts
BACKOFF_SECONDS = 0.1       # the pause before the second send, doubling up to MAX_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 2.0

# What every decision rests on (keys of objects.FACT_POINTERS); each command adds its own.
COMMON_FACTS = ("uid", "target", "assessment", "phase", "outcome", "outcome-label")
EXIT_RECORDED = 0           # the decision was recorded, but its confirmation could not be printed
# The API server's clock and this machine's further apart than this are said before a write (approve refuses).
CLOCK_SKEW_LIMIT = helpers.CLOCK_SKEW_LIMIT


# The flags that chose the cluster and identity of the command running (cli.connection_words), set by approve,
# revoke and acknowledge: every "kubectl aicr describe R" a message offers carries them (describe_command), so
# it looks at the rollout written, not at one of the same name in the shell's own context.
connection = ()


def describe_command(name):
    """``kubectl aicr describe NAME`` and the :data:`connection` flags, one line to paste."""
    words = cli.PROG.split() + ["describe", name] + list(connection)
    try:
        return output.shell_line(words)
    except ValueError:  # a word that cannot be shown as it is: the writer escapes it
        return " ".join(words)


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


# Where describe, which must not load this module (main reads an interrupt after it loaded as one during a write
# command), finds it too.
clock_skew = helpers.clock_skew


def warn_clock_skew(client, recorded):
    """A warning (stderr, before the write) when :func:`clock_skew` finds the clocks apart; ``recorded``: the
    time the write records, counted from the API server's clock."""
    skew = clock_skew(client)
    if skew is not None:
        output.warning("%s; %s is the API server's" % (skew, recorded))


def read_rollout(client, name):
    """GET rollout ``name`` once -> (the object as read, a dict; its :class:`objects.Rollout` view).

    RefusedError when the answer is another rollout (its ``metadata.name`` not ``name``): what is shown and
    decided on would be that one, and the write would go to ``name``."""
    raw = client.get(objects.rollout_path(name))
    rollout = objects.rollout(raw)
    if rollout.name != name:
        raise RefusedError("the API server answered the read of rollout %s with rollout %s; refusing to decide on "
                           "another rollout than the one named; nothing was written"
                           % (name, output.or_none(rollout.name)))
    return raw, rollout


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


# Facts that, once changed, never hold their old value again (docs/operator-api.md, "What the API server
# enforces": rule 1 approval set once, 2 revocation set once, 3 acknowledgements append-only, 4 every other spec
# field and the outcome label immutable; a UID is never reused): a write pinned to the old value can never land.
# The phase, the outcome and the awaited release are the operator's status and may come back.
PERMANENT_FACTS = frozenset(("uid", "target", "assessment", "approval-required", "deadline", "approval",
                             "revocation", "acknowledgements", "outcome-label"))
INTERRUPTED_READ_SECONDS = 5.0  # after an interrupt: the most the one read to learn the write's outcome may take


def land(client, decision, dry_run="none"):
    """Send ``decision``'s patch; return the rollout as the server answered it (dict), or None for
    ``dry_run`` "client" (nothing is sent). "server" sends it with ``dryRun=All``: admission judges it,
    nothing is stored, so only a failed ``test`` or a conflict leads to a new read; any other error is raised as
    it came.

    The outcome of a send is one of three:

    - stored: a 2xx answer (returned), or a read afterwards that shows this very decision recorded (same
      UID, exactly the entry sent: :meth:`Decision.landed`): the read is returned (``decision.confirmed``)
      and a note on stderr says how it was confirmed;
    - not stored: a 4xx answer, which kube-apiserver gives before anything is stored (authentication, RBAC,
      the patch's ``test`` operations, validation and admission; 429 from the max-in-flight filter and
      API Priority and Fairness, which answer it without calling the handler: ``apiserver/pkg/server/
      filters/maxinflight.go``, ``priority-and-fairness.go``): raised as it came (ApiError), except a failed
      ``test`` or a conflict (:func:`failed_precondition`), which leads to one new read: RefusedError naming
      what changed when a pinned fact did; otherwise the same patch again (at most :data:`MAX_ATTEMPTS`
      sends, paced);
    - unknown: a 5xx of any body (a 504 from the timeout filter, whose handler goes on and may store,
      ``filters/timeout.go``; an etcd timeout that may still commit; a proxy's 502 or 503), or a lost answer
      (reset, closed, cut short, the deadline: TransportError; one that failed before its first byte left,
      ``client.sent`` unchanged, is not: nothing was written). The rollout is read again within the same
      deadline (on a new connection after a lost answer): recorded as above; if a pinned fact that never comes back
      (:data:`PERMANENT_FACTS`) changed, RefusedError (it can never land); if no fact changed, the same patch
      is sent again: safe, because its ``test`` operations hold the set-once field absent (or the
      acknowledgements as read), so if the first send lands too, whichever comes second fails its test and
      the next read recognises the decision; it is never a new decision. Otherwise, or when the rollout
      cannot be read again, :class:`UnknownOutcome` (exit 4): the write may have been recorded.

    Ctrl-C, SIGTERM or SIGHUP (:class:`helpers.Terminated`) before the patch's first byte was sent: nothing
    was written, said so (exit 130, or 128 + the signal). During the send or after: one read of at most
    :data:`INTERRUPTED_READ_SECONDS`, never a new send (:func:`_after_interrupt`). :data:`landing` and
    :data:`recorded` tell main what an interrupt that reaches it means.
    """
    if dry_run == "client":
        return None
    global recorded, landing
    landing = decision.name if dry_run == "none" else None
    sends = _Sends()
    try:
        stored = _send(client, decision, dry_run, sends)
    except (KeyboardInterrupt, helpers.Terminated) as exc:
        stop = _stopped(exc)
        if sends.unknown is None and (sends.since is None or client.sent == sends.since):
            raise _interrupted(exc, "%s before the write was sent; nothing was written" % stop) from None
        if dry_run != "none":
            raise _interrupted(exc, "%s; nothing was written (server dry run)" % stop) from None
        stored = _after_interrupt(client, decision, exc)
    if dry_run == "none":
        recorded = decision.name
    return stored


# For main, should an interrupt reach it: the rollout whose decision land() saw stored, and the one whose write
# land() began (set for good: an interrupt escaping land's own handling may follow a send). None: not yet.
recorded = landing = None


class _Sends:
    """What :func:`land` knows of its sends: ``since``, the client's ``sent`` count before the send under way
    (None between sends); ``unknown``, why a send's outcome is unknown (it may still land), or None."""

    def __init__(self):
        self.since, self.unknown = None, None


def _send(client, decision, dry_run, sends):
    """The sends and reads of :func:`land` (interrupts aside), noted in ``sends`` (:class:`_Sends`)."""
    path = objects.rollout_path(decision.name)
    query = dict({"dryRun": "All"} if dry_run == "server" else {}, **WRITE_QUERY)
    for attempt in range(MAX_ATTEMPTS):
        unknown = sends.unknown
        if attempt:
            time.sleep(min(BACKOFF_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS,
                           _remaining_or_unknown(client, decision, unknown)))
        count = sends.since = client.sent
        conflict = None  # a 409 to a real write: it may answer a stored write, until the read again shows it
        try:
            return client.request("PATCH", path, query=query, body=decision.patch, content_type=JSON_PATCH)
        except helpers.Terminated:
            raise
        except ApiError as exc:
            strict = strict_refusal(exc)  # a 422 without details, like a failed test: never sent again
            if strict is not None and unknown is None:
                raise strict from None
            precondition = failed_precondition(exc) and strict is None
            if not precondition and (not_stored(exc) or dry_run != "none"):
                if unknown is not None:
                    raise _unknown(decision, "%s, and the write sent again was refused: %s" % (unknown, exc)) from None
                raise
            if precondition:
                refused, why = exc, "the server refused the write (%s)" % exc
                if exc.code == 409 and dry_run == "none":
                    conflict = "the server answered the write with a conflict (%s)" % exc
            else:
                why = "the server answered the write with HTTP %d (%s)" % (exc.code, exc)
                refused, sends.unknown = _unknown(decision, why), unknown or why
        except TransportError as exc:
            if client.sent == count:  # failed before its first byte was sent
                if unknown is None:
                    raise TransportError("%s; the write was not sent, nothing was written" % exc) from None
                raise _unknown(decision, "%s, and the write could not be sent again: %s" % (unknown, exc)) from None
            if unknown is None and dry_run != "none":
                raise
            why = "the answer to the write was lost (%s)" % exc
            refused, sends.unknown = _unknown(decision, why), unknown or why
        except AicrError as exc:  # credentials (AuthError) for a send again
            if unknown is None:
                raise
            raise _unknown(decision, "%s, and the write could not be sent again: %s" % (unknown, exc)) from None
        # After a 409 the read again is still part of the send: an interrupt during it goes to _after_interrupt
        # and a failure of it is an unknown outcome, never "nothing was written".
        unknown = sends.unknown
        sends.since = count if conflict else None
        now = _read_again(client, decision, unknown, conflict)
        sends.since = None
        if dry_run == "none" and decision.landed(now):
            return _confirmed(decision, why, now)
        changed = decision.changed_facts(now)
        if changed:
            _refuse_changed(decision, now, changed, unknown)
        decision.pin(now)  # the same facts, the same decision: only where the tests look may differ
    if unknown is not None and not isinstance(refused, UnknownOutcome):
        refused = _unknown(decision, "%s, and the write sent again was refused: %s" % (unknown, refused))
    raise refused


def not_stored(exc):
    """True for an answer that says the write was not stored: any 4xx (see :func:`land`); a 5xx, or any other
    status, leaves the outcome unknown."""
    return 400 <= exc.code < 500


def _confirmed(decision, why, now):
    decision.confirmed = True
    _note("%s, but reading rollout %s again shows this decision recorded" % (why, decision.name))
    return now


def _note(message):
    """A warning on stderr that must not fail the command (stderr closed or gone, as after SIGHUP)."""
    try:
        output.warning(message)
    except (AttributeError, OSError, ValueError):
        pass


def _refuse_changed(decision, now, changed, unknown):
    """A pinned fact changed and the decision is not recorded: RefusedError when it can never land (no send's
    outcome is unknown, or a :data:`PERMANENT_FACTS` fact changed); else :class:`UnknownOutcome`."""
    text = changes_text(decision.raw, now, changed)
    if unknown is None:
        raise RefusedError("rollout %s changed after it was read: %s; nothing was written; describe it again"
                           % (decision.name, text))
    if PERMANENT_FACTS.intersection(changed):
        raise RefusedError("%s, and rollout %s changed after it was read: %s; this decision was not recorded and "
                           "cannot be any more; describe it again" % (unknown, decision.name, text))
    raise _unknown(decision, "%s, and rollout %s changed after it was read (%s), but the write on its way may "
                             "still land" % (unknown, decision.name, text))


def _stopped(exc):
    """How the command was stopped: "interrupted" (Ctrl-C) or "terminated by SIGTERM" (helpers.Terminated)."""
    return str(exc) if isinstance(exc, helpers.Terminated) else "interrupted"


def _interrupted(exc, message):
    """An error with ``message`` and the exit status of the interrupt ``exc`` (130, or 128 + the signal)."""
    error = AicrError(message)
    error.exit_code = getattr(exc, "exit_code", helpers.EXIT_INTERRUPTED)
    return error


def _after_interrupt(client, decision, exc):
    """The command was interrupted (``exc``) during or after the send of the write: read the rollout once,
    within :data:`INTERRUPTED_READ_SECONDS` and the deadline, on a new connection, and never send again.
    The read as recognised (:meth:`Decision.landed`); an error with the interrupt's exit status when a
    :data:`PERMANENT_FACTS` fact changed (it can never land); else :class:`UnknownOutcome`, also at once when
    interrupted again."""
    stop, name = _stopped(exc), decision.name
    why = "%s while the write was sent or answered" % stop
    try:
        client.close()  # the connection is in the middle of the exchange
        _note("%s; reading rollout %s again to learn whether it was recorded (at most %d seconds; interrupt "
              "again to stop now)" % (why, name, INTERRUPTED_READ_SECONDS))
        with client.deadline.capped(INTERRUPTED_READ_SECONDS):
            now = client.get(objects.rollout_path(name))
    except (KeyboardInterrupt, helpers.Terminated) as again:
        raise _unknown(decision, "%s, and %s again" % (why, _stopped(again))) from None
    except AicrError as failed:  # an API error, the transport, credentials
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (why, name, failed)) from None
    if decision.landed(now):
        return _confirmed(decision, why, now)
    changed = decision.changed_facts(now)
    if PERMANENT_FACTS.intersection(changed):
        raise _interrupted(exc, "%s; rollout %s changed after it was read: %s; this decision was not recorded and "
                                "cannot be any more" % (why, name, changes_text(decision.raw, now, changed)))
    raise _unknown(decision, "%s; reading rollout %s again shows it not recorded yet, but the write on its way "
                             "may still land" % (why, name))


def _unknown(decision, why):
    """The error for a write whose outcome cannot be known: it may have been recorded (exit 4)."""
    return UnknownOutcome("%s; the write may have been recorded; check with %s"
                          % (why, describe_command(decision.name)))


def _remaining_or_unknown(client, decision, unknown=None):
    try:
        return client.deadline.remaining()
    except TransportError as exc:
        if unknown is None:
            raise TransportError("%s, before the write could be sent again; nothing was written" % exc) from None
        raise _unknown(decision, "%s, and %s, before the write could be sent again" % (unknown, exc)) from None


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


def _read_again(client, decision, lost=None, conflict=None):
    """GET the rollout again (a dict). ``lost``: why the write's outcome is unknown; then a failure to read
    says the write may have been recorded (UnknownOutcome), and a 404 too. ``conflict``: the write was
    answered 409, which may answer a stored write (README, "A write whose outcome is unknown"): a failure to
    read is an unknown outcome too (a 404 says the rollout is gone: nothing it could record is left)."""
    name = decision.name
    try:
        return client.get(objects.rollout_path(name))
    except ApiError as exc:
        if lost is None and exc.code == 404:
            raise RefusedError("rollout %s was deleted after it was read; nothing was written" % name) from None
        if lost is None and conflict is None:
            raise
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (lost or conflict, name, exc)
                       ) from None
    except TransportError as exc:
        why = lost or conflict or "the server refused the write as a conflict"
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (why, name, exc)) from None
    except helpers.Terminated:
        raise
    except AicrError as exc:  # credentials
        if lost is None and conflict is None:
            raise
        raise _unknown(decision, "%s, and reading rollout %s again failed: %s" % (lost or conflict, name, exc)
                       ) from None


def _digests(new, old):
    """Two digests as describe shortens them, in full where the short forms would look alike."""
    short_new, short_old = objects.short_digest(new), objects.short_digest(old)
    pair = (new, old) if short_new == short_old else (short_new, short_old)
    return tuple(output.or_none(digest) for digest in pair)


def changes_text(before, after, changed):
    """One clause per changed fact (``before`` and ``after``: the rollout objects, dicts)."""
    old, new = objects.rollout(before), objects.rollout(after)
    if "uid" in changed:
        return "the rollout was deleted and created again (UID %s, now %s)" % (output.or_none(old.uid),
                                                                             output.or_none(new.uid))
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
        return "the rollout has ended (outcome %s)" % output.or_none(new.outcome) if new.ended else "the rollout's outcome changed"
    if fact == "awaited":
        if not new.awaiting_acknowledgement:
            return "the rollout no longer waits on %s" % output.or_none(old.awaiting_acknowledgement)
        return "the rollout now waits on %s, not %s" % (output.or_none(new.awaiting_acknowledgement),
                                                       old.awaiting_acknowledgement or "any release")
    if fact == "approval":
        if old.approval is None and isinstance(new.approval, objects.Approval):
            return "it is already approved by %s until %s" % (output.or_none(new.approval.user),
                                                              shown_time(new.approval.expires))
        return "its approval changed (now %s)" % output.or_none(new.approval)
    if fact == "revocation":
        if old.revocation is None and isinstance(new.revocation, objects.Revocation):
            return "it was revoked by %s at %s" % (output.or_none(new.revocation.user), shown_time(new.revocation.time))
        return "its revocation changed (now %s)" % output.or_none(new.revocation)
    if fact == "acknowledgements":
        added = new.acknowledgements[len(old.acknowledgements):] \
            if isinstance(new.acknowledgements, list) and isinstance(old.acknowledgements, list) else []
        for ack in added:
            if isinstance(ack, objects.Acknowledgement):
                return "release %s is already acknowledged by %s at %s" % (ack.release, output.or_none(ack.user),
                                                                          shown_time(ack.time))
        return "its acknowledgements changed"
    if fact == "records":
        return "its recorded steps (spec.transitionRecords) are no longer what was shown"
    if fact == "steps":
        return "its steps (spec.steps) are no longer what was shown"
    if fact == "deadline":
        return "its deadline is now %s, not %s" % (shown_time(new.deadline), shown_time(old.deadline))
    if fact == "approval-required":
        return "spec.approvalRequired is now %s, not %s" % (output.or_none(new.approval_required),
                                                              output.or_none(old.approval_required))
    return "%s changed" % objects.FACT_POINTERS[fact]


def check_answer(stored, decision, expected):
    """The rollout the server answered the write with must be the one decided on: its name, and every pinned
    fact the write does not set as read; and hold ``expected`` ({JSON pointer: value}, what was written).
    UnknownOutcome otherwise (exit 4): a 2xx answer says the server stored a write, but not this one as
    sent, so it may have landed; the message says to look."""
    if decision.confirmed:  # read again and recognised by Decision.landed
        return
    written = set(expected)
    kept = [fact for fact in decision.facts if objects.FACT_POINTERS[fact] not in written]
    name = decision.name
    moved = [fact for fact in decision.changed_facts(stored) if fact in kept]
    if objects.pointer_value(stored, "/metadata/name") != name or moved or any(
            not objects.json_equal(objects.pointer_value(stored, pointer), value) for pointer, value in expected.items()):
        raise UnknownOutcome("the API server answered the write of rollout %s with something other than what "
                             "was written; the write may have been recorded; check with %s"
                             % (name, describe_command(name)))


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
                           % (rollout.name, output.or_none(target), expected))


def require_bound(rollout, uid, assessment):
    """--expect-uid and --expect-assessment: refuse unless the rollout (as read) has exactly this UID and an
    assessment digest starting with ``assessment`` (``sha256:<hex>``); None: not asked. Names what differs."""
    differ = []
    if uid is not None and rollout.uid != uid:
        differ.append("its UID is %s, not %s (--expect-uid): it was deleted and created again"
                      % (output.or_none(rollout.uid), uid))
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
                           % (rollout.name, output.or_none(rollout.outcome), action))


def refuse_invalid(rollout, *fields):
    """Refuse to decide on a rollout whose needed fields are malformed (never read as valid)."""
    for value in fields:
        if isinstance(value, objects.Invalid):
            raise RefusedError("rollout %s: %s; refusing to decide on a malformed rollout" % (rollout.name, value))


def refuse_unreadable(rollout, problem, what, why):
    """Refuse a decision on steps that cannot be read: ``problem`` (an :class:`objects.Invalid` from
    objects.unreadable_records or unreadable_steps, or None: nothing to refuse), ``what`` names them, ``why``
    says what the decision would say of them."""
    if problem is not None:
        raise RefusedError("rollout %s: %s cannot be read (%s), and %s; refusing to decide on steps nobody can "
                           "read; nothing was written (%s shows them)"
                           % (rollout.name, what, problem, why, describe_command(rollout.name)))


def shown_time(value):
    """RFC 3339 UTC text for a datetime; None as ``<none>``; anything else (Invalid, OutOfRange) as it is."""
    return objects.format_time(value) if isinstance(value, datetime.datetime) else output.or_none(value)


def record_step_lines(rollout, when, heading, release=None):
    """The transition-record steps of ``when`` (PreApply or PostApply) that a decision covers, under
    ``heading``; no lines when there are none. What cannot be read (the records, a record, its steps, a step
    or its ``when``: :class:`objects.Invalid`) is shown as such, never left out: it may be one of them."""
    records = rollout.transition_records
    lines = ["  %s" % records] if isinstance(records, objects.Invalid) else []
    for record in records if isinstance(records, list) else []:
        if isinstance(record, objects.Invalid):
            lines.append("  %s" % record)
            continue
        if release is not None and isinstance(record.release, str) and record.release != release:
            continue
        if isinstance(record.steps, objects.Invalid):
            lines.append("  %s %s" % (output.or_none(record.release), record.steps))
            continue
        for step in record.steps:
            if isinstance(step, objects.Invalid):
                lines.append("  %s %s" % (output.or_none(record.release), step))
            elif step.when == when or isinstance(step.when, objects.Invalid):
                lines.append("  %s %s: %s%s" % (output.or_none(record.release), output.or_none(step.id),
                                                output.or_none(step.description), "" if step.when == when
                                                else " (%s)" % step.when))
    return [heading] + lines if lines else []
