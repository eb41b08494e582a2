"""``kubectl aicr acknowledge ROLLOUT [--release NAME] [--expect-digest DIGEST] [--dry-run=server|client|none]``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 3.
For a rollout in phase AwaitingAcknowledgement, appends {release, user, time} to
``spec.acknowledgements`` for the release in ``status.awaitingAcknowledgement``.
Decided on ONE read of the rollout (writes.py): refused, saying what state the
rollout is in, when it is not waiting, when that release already carries an
acknowledgement (it is never recorded twice), when it waits on another release than
--release names, when its target plan is not the --expect-digest given, and when the
recorded steps of that release (spec.transitionRecords) cannot be read. Without --release,
also while the rollout may have moved on to that release within :data:`RECENT_MOVE` by the API
server's clock (:func:`_refuse_recent_move`): the release is the subject of an
acknowledgement, and only the person knows whose steps they did (issue 20). The
awaited release, the acknowledgements, the transition records (its post-apply steps), UID,
target plan, assessment digest and phase are shown and pinned until the write lands: if
another approver acknowledges first and the rollout moves on, nothing is written for the
next release. The server's answer is
checked: this rollout, its UID, and exactly the entry written appended.
"""

import datetime

from .. import cli, output
from ..aicr import objects
from ..kube import clientcmd
from ..errors import RefusedError, UsageError
from . import writes

AWAITING = "AwaitingAcknowledgement"
# How long after the rollout moved on to the release it waits on acknowledge without --release refuses: the
# release a person did the steps of may be the one before (issue 20).
RECENT_MOVE = datetime.timedelta(minutes=10)
# spec.transitionRecords (the post-apply steps this acknowledges) is pinned as read too.
FACTS = writes.COMMON_FACTS + ("awaited", "acknowledgements", "records")


def run(invocation):
    expected = cli.checked_expected_digest(invocation.expect_digest)
    expected_uid = cli.checked_expected_uid(invocation.expect_uid)
    expected_assessment = cli.checked_expected_assessment(invocation.expect_assessment)
    dry_run = cli.checked_dry_run(invocation.dry_run)
    named = invocation.release
    if named is not None and not (named and output.printable(named)):
        raise UsageError("--release must be one line of printable text")
    writes.connection = cli.connection_words(invocation, operator_namespace=True)
    with clientcmd.connect(invocation) as client:
        user = writes.who_am_i(client)
        raw, rollout = writes.read_rollout(client, invocation.name)
        now = writes.now_utc(client)
        release = _awaited(rollout, named)
        writes.require_target(rollout, expected)
        writes.require_bound(rollout, expected_uid, expected_assessment)
        if named is None:
            _refuse_recent_move(rollout, release, user, now, cli.connection_words(invocation))
        operations = objects.acknowledgement_operations(rollout, release, user, now)
        decision = writes.Decision(invocation.name, raw, FACTS, operations)
        writes.show("acknowledging release %s of rollout %s as %s, on what was read (the write is refused if any "
                    "of it changes):" % (release, output.or_none(rollout.name), user),
                    writes.fact_pairs(rollout, ("Assessment", rollout.assessment_digest or "none"),
                                      ("Awaiting", "acknowledgement of %s" % release)),
                    writes.record_step_lines(rollout, "PostApply", "this acknowledges the post-apply steps:",
                                             release))
        writes.warn_clock_skew(client, "the time of the acknowledgement (%s)" % objects.format_time(now))
        stored = writes.land(client, decision, dry_run)
    entry = operations[0]["value"]
    entry = entry[0] if isinstance(entry, list) else entry
    result = ["rollout %s: %s acknowledged by %s at %s" % (output.or_none(rollout.name), entry["release"],
                                                          entry["user"], entry["time"])]
    if stored is None:
        return writes.confirm(result + writes.patch_lines(decision), dry_run, "")
    before = objects.pointer_value(raw, objects.FACT_POINTERS["acknowledgements"]) or []
    writes.check_answer(stored, decision, {objects.FACT_POINTERS["acknowledgements"]: list(before) + [entry]})
    return writes.confirm(result, dry_run, "the acknowledgement of %s on rollout %s by %s at %s"
                          % (release, rollout.name, user, entry["time"]))


def _awaited(rollout, named):
    """The release the rollout waits on, checked; RefusedError says why it cannot be acknowledged."""
    writes.refuse_invalid(rollout, rollout.uid, rollout.phase, rollout.awaiting_acknowledgement,
                          rollout.acknowledgements, rollout.outcome)
    writes.require_open(rollout, "acknowledged")
    release = rollout.awaiting_acknowledgement
    if rollout.phase != AWAITING or not release:
        raise RefusedError("rollout %s is not waiting for an acknowledgement (phase %s)"
                           % (rollout.name, rollout.phase or "not set"))
    if named is not None and named != release:
        raise RefusedError("rollout %s waits on %s, not %s (--release); nothing was written; describe it again"
                           % (rollout.name, release, named))
    for ack in rollout.acknowledgements:
        if isinstance(ack, objects.Acknowledgement) and ack.release == release:
            raise RefusedError("release %s of rollout %s is already acknowledged by %s at %s" % (
                release, rollout.name, output.or_none(ack.user), writes.shown_time(ack.time)))
    unread = objects.unreadable_acknowledgement(rollout)  # it may already acknowledge this release
    if unread is not None:
        raise RefusedError("rollout %s: an acknowledgement it records cannot be read (%s), so whether %s is "
                           "already acknowledged cannot be told; refusing to decide on a malformed rollout"
                           % (rollout.name, unread, release))
    writes.refuse_unreadable(rollout, objects.unreadable_records(rollout, release),
                             "the recorded steps of %s" % release,
                             "acknowledging says its post-apply steps are done")
    return release


def _refuse_recent_move(rollout, release, user, now, connection=()):
    """acknowledge without --release: refuse while the rollout may have moved on to ``release`` only a short
    while ago (within :data:`RECENT_MOVE` of ``now``, the API server's clock): an acknowledgement the caller
    meant for the release it waited on before would otherwise be recorded for this one.

    The evidence, as read: an acknowledgement of another release recorded within the window (the caller's
    own included: a retry, the shell's history), and ``status.awaitingAcknowledgement.since`` when the rollout
    records one. A time that cannot be read (missing, malformed) or that is later than ``now``, and an entry
    that cannot be read, count as recent: refusing without --release is the safe side."""
    why = _recent_move(rollout, release, user, now)
    if why is None:
        return
    # Bound to this rollout as describe's line is (--expect-uid, --expect-digest, --expect-assessment): pasted in
    # another context or after the rollout was created again, it refuses rather than acknowledge another one.
    words = cli.PROG.split() + ["acknowledge", rollout.name] + list(connection) + ["--release=" + release]
    if isinstance(rollout.uid, str) and rollout.uid:
        words.append("--expect-uid=" + rollout.uid)
    if isinstance(rollout.to_digest, str) and objects.is_digest(rollout.to_digest):
        words.append("--expect-digest=" + objects.short_digest(rollout.to_digest))
    if isinstance(rollout.assessment_digest, str) and objects.is_digest(rollout.assessment_digest):
        words.append("--expect-assessment=" + objects.short_digest(rollout.assessment_digest))
    try:
        command = output.shell_line(words)
    except ValueError:  # a release that cannot be shown as it is: no line to paste
        command = " ".join(words)
    raise RefusedError("rollout %s now waits on %s, and %s; without --release, acknowledge refuses for %s after "
                       "the rollout moves on, since the steps you did may be those of the release before; "
                       "nothing was written; if you did the post-apply steps of %s: %s"
                       % (rollout.name, release, why, _minutes(RECENT_MOVE), release, command))


def _recent_move(rollout, release, user, now):
    """The clause saying who moved the rollout on to ``release`` and when, if that may be within
    :data:`RECENT_MOVE` of ``now``; None when it was longer ago (or nothing says it moved on)."""
    try:
        since = now - RECENT_MOVE
    except OverflowError:  # the API server's clock (its Date header) in the first minutes of year 1
        since = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    for ack in reversed(rollout.acknowledgements):  # the latest first
        if isinstance(ack, objects.Invalid):
            return "an acknowledgement it records cannot be read (%s), so when it moved on is unknown" % ack
        if ack.release == release:
            continue
        who = "you (%s)" % user if ack.user == user else output.or_none(ack.user)
        if not isinstance(ack.time, datetime.datetime):
            return ("%s acknowledged %s at a time that cannot be read (%s), so when it moved on is unknown"
                    % (who, output.or_none(ack.release), output.or_none(ack.time)))
        if ack.time > since:
            return "%s acknowledged %s at %s (%s), which moved it on" % (
                who, output.or_none(ack.release), objects.format_time(ack.time), _ago(ack.time, now))
        break  # the list is append-only (operator-api.md rule 3): every entry before this one is older
    began = rollout.awaiting_since
    if isinstance(began, objects.Invalid):
        return "when it began to wait cannot be read (%s)" % began
    if isinstance(began, datetime.datetime) and began > since:
        return "it has waited on %s since %s (%s, %s)" % (release, objects.format_time(began), _ago(began, now),
                                                        objects.AWAITING_SINCE)
    return None


def _ago(when, now):
    """``4m10s ago`` by the API server's clock ``now``; a time after it says so."""
    seconds = int((now - when).total_seconds())
    if seconds < 0:
        return "later than the API server's clock, %s" % objects.format_time(now)
    return "%s ago" % _minutes(datetime.timedelta(seconds=seconds))


def _minutes(delta):
    """``10m``, ``4m10s``, ``42s``."""
    minutes, seconds = divmod(int(delta.total_seconds()), 60)
    return "%dm%s" % (minutes, "%ds" % seconds if seconds else "") if minutes else "%ds" % seconds
