"""``kubectl aicr approve ROLLOUT --reason TEXT [--expires DURATION] [--expect-digest DIGEST]
[--allow-unverified-report] [--allow-clock-skew] [--dry-run=server|client|none]``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 1.
Sets ``spec.approval`` {user, expires, reason} once: ``user`` is the caller's
username from a SelfSubjectReview; ``expires`` is now + DURATION, or the
rollout's deadline without --expires.

Everything is decided on ONE read of the rollout, before anything is written
(writes.py): refused, saying why, are a rollout that has ended, one already
approved (an expired approval is named as expired), one that needs no approval,
without --expires one whose deadline has passed, one whose target plan is not the
--expect-digest given, and one whose assessment report does not verify against its
recorded digest (missing, unreadable, altered, or a malformed or null digest: exit 3
for content that does not match, else 1) unless --allow-unverified-report is given, and
one whose recorded steps (spec.transitionRecords: not a list, more than objects.MAX_ITEMS,
a step not a mapping, a ``when`` other than PreApply or PostApply, any field of the wrong
type) or steps (spec.steps) cannot be read: approving acknowledges the pre-apply steps.
It refuses too when the API server's clock, from which the expiry is counted, and this
machine's differ by more than writes.CLOCK_SKEW_LIMIT, unless --allow-clock-skew is given
(then it warns). Then the facts it rests on, the pre-apply steps the approval acknowledges and any
warning are shown (stderr), and the approval is written pinned to those facts, the
transition records and the steps as read included (a change in them between the read
and the write refuses it: "changed after it was read").
"""

import datetime

from .. import cli, helpers, output
from ..aicr import objects, reports
from ..kube import clientcmd
from ..errors import RefusedError, VerificationError
from . import writes

# The recorded steps (spec.transitionRecords: the pre-apply steps this approval acknowledges) and the steps
# it lets the operator run (spec.steps) are pinned as read, like the facts it is decided on.
FACTS = writes.COMMON_FACTS + ("approval", "revocation", "approval-required", "deadline", "records", "steps")


def run(invocation):
    reason = cli.checked_reason(invocation.reason)
    lifetime = cli.checked_expires(invocation.expires)
    expected = cli.checked_expected_digest(invocation.expect_digest)
    expected_uid = cli.checked_expected_uid(invocation.expect_uid)
    expected_assessment = cli.checked_expected_assessment(invocation.expect_assessment)
    dry_run = cli.checked_dry_run(invocation.dry_run)
    namespace = cli.operator_namespace(invocation)
    writes.connection = cli.connection_words(invocation, operator_namespace=True)
    with clientcmd.connect(invocation) as client:
        user = writes.who_am_i(client)
        raw, rollout = writes.read_rollout(client, invocation.name)
        now = writes.now_utc(client)
        try:
            expires = _expiry(rollout, lifetime, now)
        except RefusedError as refused:  # it may rest on the API server's clock (a deadline passed, an expiry)
            skew = writes.clock_skew(client)
            if skew is None:
                raise
            raise RefusedError("%s (counted on the API server's clock: %s)" % (refused, skew)) from None
        writes.require_target(rollout, expected)
        writes.require_bound(rollout, expected_uid, expected_assessment)
        skew = _clock_skew(client, rollout, invocation.allow_clock_skew)
        assessment, warnings = _assessment(client, namespace, rollout, invocation.allow_unverified_report)
        warnings += _expiry_warnings(rollout, lifetime, expires, now) + skew
        operations = objects.approval_operations(user, expires, reason)
        decision = writes.Decision(invocation.name, raw, FACTS, operations)
        writes.show("approving rollout %s as %s, on what was read (the write is refused if any of it changes):"
                    % (output.or_none(rollout.name), user),
                    writes.fact_pairs(rollout, ("Assessment", assessment),
                                      ("Deadline", writes.shown_time(rollout.deadline)),
                                      ("Approval", "until %s" % writes.shown_time(expires))),
                    writes.record_step_lines(rollout, "PreApply", "this approval acknowledges the pre-apply steps:"))
        for text in warnings:
            output.warning(text)
        stored = writes.land(client, decision, dry_run)
    value = operations[0]["value"]
    if stored is None:
        return writes.confirm(_result(rollout.name, value) + writes.patch_lines(decision), dry_run, "")
    writes.check_answer(stored, decision, {"/spec/approval": value})
    return writes.confirm(_result(stored["metadata"]["name"], value), dry_run,
                          "the approval of rollout %s by %s until %s" % (rollout.name, user, value["expires"]))


def _result(name, value):
    return ["rollout %s approved by %s until %s" % (output.or_none(name), value["user"], value["expires"]),
            "reason: %s" % value["reason"]]


def _assessment(client, namespace, rollout, allow_unverified):
    """(what to show as the assessment, warnings); refuses a report that does not verify unless allowed."""
    digest = rollout.assessment_digest
    if digest is None:
        return "none (the rollout records no assessment report)", []
    if isinstance(digest, objects.Invalid):
        problem, mismatch = str(digest), True
    else:
        verified = reports.fetch_report(client, namespace, digest)
        if not verified.problem:
            return "%s (report %s verified)" % (digest, verified.configmap), []
        problem, mismatch = verified.problem, not verified.unavailable
    if allow_unverified:
        return "%s (NOT VERIFIED: %s)" % (digest, problem), [
            "approving rollout %s although its assessment report is not verified (%s), as "
            "--allow-unverified-report asks" % (rollout.name, problem)]
    refusal = VerificationError if mismatch else RefusedError
    raise refusal("the assessment report of rollout %s is not verified: %s; nothing was written (%s shows the "
                  "rest; --allow-unverified-report approves it anyway)"
                  % (rollout.name, problem, writes.describe_command(rollout.name)))


def _clock_skew(client, rollout, allowed):
    """[] when the API server's clock and this machine's agree (writes.clock_skew); else, with
    --allow-clock-skew, the warning to show; without it RefusedError: an approval is set once, its expiry is
    counted from the API server's clock, and a server far behind would store one already expired by every
    other clock, which then blocks any other (issue 20)."""
    skew = writes.clock_skew(client)
    if skew is None:
        return []
    if allowed:
        return ["%s; approving on the API server's clock, as --allow-clock-skew asks" % skew]
    raise RefusedError("rollout %s: %s; an approval is set once and cannot be changed, and its expiry is counted "
                       "from the API server's clock; nothing was written (check both clocks; --allow-clock-skew "
                       "approves on the API server's clock anyway)" % (rollout.name, skew))


def _expiry_warnings(rollout, lifetime, expires, now):
    deadline = rollout.deadline
    if not helpers.is_time(deadline) or lifetime is None:
        return []
    if deadline <= now:
        return ["the deadline of rollout %s (%s) has passed; this approval lasts until %s, as --expires asks"
                % (rollout.name, writes.shown_time(deadline), writes.shown_time(expires))]
    if expires > deadline:
        return ["the approval (until %s) outlasts the rollout's deadline %s, as --expires asks"
                % (writes.shown_time(expires), writes.shown_time(deadline))]
    return []


def _expiry(rollout, lifetime, now):
    """Check ``rollout`` can be approved; return the expiry (aware datetime). RefusedError says why not."""
    writes.refuse_invalid(rollout, rollout.uid, rollout.to_digest, rollout.approval, rollout.revocation,
                          rollout.approval_required, rollout.outcome, rollout.phase)
    writes.require_open(rollout, "approved")
    if rollout.to_digest is None:
        raise RefusedError("rollout %s records no target plan (spec.to.desiredStateDigest); refusing to approve "
                           "it" % rollout.name)
    if isinstance(rollout.approval, objects.Approval):
        approval = rollout.approval
        if helpers.is_time(approval.expires) and approval.expires <= now:
            raise RefusedError("rollout %s was approved by %s until %s, and that approval has expired; an approval "
                               "can be neither changed nor extended: the rollout ends Expired, and a new attempt "
                               "of it needs a new approval" % (rollout.name, output.or_none(approval.user),
                                                               writes.shown_time(approval.expires)))
        raise RefusedError("rollout %s is already approved by %s until %s; an approval can be neither changed "
                           "nor extended" % (rollout.name, output.or_none(approval.user),
                                            writes.shown_time(approval.expires)))
    if rollout.approval_required is not True:
        raise RefusedError("rollout %s needs no approval (spec.approvalRequired is %s)"
                           % (rollout.name, "false" if rollout.approval_required is False else "not set"))
    writes.refuse_unreadable(rollout, objects.unreadable_records(rollout), "its recorded steps",
                             "approving acknowledges the pre-apply steps among them")
    writes.refuse_unreadable(rollout, objects.unreadable_steps(rollout), "its steps",
                             "an approval lets the operator run them")
    if lifetime is not None:
        try:
            return now + datetime.timedelta(seconds=lifetime)
        except OverflowError:  # the API server's clock (its Date header) is near the end of year 9999
            raise RefusedError("rollout %s: --expires from the API server's time %s ends past the year 9999; "
                               "check the server's clock" % (rollout.name, writes.shown_time(now))) from None
    writes.refuse_invalid(rollout, rollout.deadline)
    if rollout.deadline is None:
        raise RefusedError("rollout %s has no deadline, so an approval has no default end; give --expires "
                           "DURATION" % rollout.name)
    if rollout.deadline <= now:
        raise RefusedError("rollout %s: its deadline %s has passed, so an approval has no default end; give "
                           "--expires DURATION to approve it for that long" % (rollout.name,
                                                                              writes.shown_time(rollout.deadline)))
    if isinstance(rollout.deadline, helpers.OutOfRange):  # after 9999-12-31T23:59:59Z: no RFC 3339 UTC form
        raise RefusedError("rollout %s: its deadline %s cannot be written as an approval's expiry in UTC; give "
                           "--expires DURATION" % (rollout.name, writes.shown_time(rollout.deadline)))
    return rollout.deadline
