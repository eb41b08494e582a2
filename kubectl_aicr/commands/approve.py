"""``kubectl aicr approve ROLLOUT --reason TEXT [--expires DURATION]``.

Source: ../shared/spec/kubectl-aicr-seed.txt ("approve") and operator-api.md rule 1.
Sets ``spec.approval`` {user, expires, reason} once: ``user`` is the caller's
username from a SelfSubjectReview; ``expires`` is now + DURATION, or the
rollout's deadline without --expires. Refused, before anything is written and
saying why: a rollout that has ended, one already approved (naming by whom and
until when), one that needs no approval, without --expires one whose deadline
has passed; a negative or malformed --expires; a missing, empty or too long --reason.
"""

import datetime

from .. import objects, output, session
from ..cli import DEFAULT_OPERATOR_NAMESPACE
from ..errors import RefusedError
from . import writes
from .describe import fetch_report


def run(invocation):
    reason = writes.checked_reason(invocation.reason)
    lifetime = writes.checked_expires(invocation.expires)
    namespace = invocation.operator_namespace or DEFAULT_OPERATOR_NAMESPACE
    warned = []
    with session.connect(invocation) as client:
        user = writes.who_am_i(client)

        sent = {}

        def decide(rollout):
            expires = _expiry(rollout, lifetime, writes.now_utc(client))
            sent.update(uid=rollout.uid, expires=expires)
            if not warned:
                warned.append(True)
                _warn_before_approving(client, namespace, rollout, expires)
            return objects.approval_operations(user, expires, reason)

        stored = objects.rollout(writes.conditional_patch(client, invocation.name, decide))
    writes.check_stored(stored, invocation.name, sent["uid"], "approval", user=user, reason=reason,
                        expires=sent["expires"])
    approval = stored.approval
    output.say("rollout %s approved by %s until %s" % (
        output.safe(stored.name), output.safe(approval.user), output.safe(_time(approval.expires))))
    output.say("reason: %s" % output.safe(approval.reason))
    writes.print_record_steps(stored, "PreApply", "this approval acknowledges the pre-apply steps:")
    return 0


def _time(value):
    return objects.format_time(value) if isinstance(value, datetime.datetime) else value


def _warn_before_approving(client, namespace, rollout, expires):
    """Warn (stderr) when the assessment report does not verify or the approval outlasts the deadline."""
    verified = fetch_report(client, namespace, rollout.assessment_digest)
    if verified is not None and verified.problem:
        output.warning("the assessment report of %s is not verified (%s); run kubectl aicr describe %s before "
                       "relying on this approval" % (rollout.name, verified.problem, rollout.name))
    deadline = rollout.deadline
    if isinstance(deadline, datetime.datetime) and expires > deadline:
        output.warning("the approval (until %s) outlasts the rollout's deadline %s, when the rollout ends anyway"
                       % (_time(expires), _time(deadline)))


def _expiry(rollout, lifetime, now):
    """Check ``rollout`` can be approved; return the expiry (aware datetime). RefusedError says why not."""
    writes.refuse_invalid(rollout, rollout.approval, rollout.approval_required, rollout.outcome)
    writes.require_open(rollout, "approved")
    if isinstance(rollout.approval, objects.Approval):
        approval = rollout.approval
        raise RefusedError("rollout %s is already approved by %s until %s; an approval can be neither changed "
                           "nor extended" % (rollout.name, approval.user, _time(approval.expires)))
    if rollout.approval_required is not True:
        raise RefusedError("rollout %s needs no approval (spec.approvalRequired is %s)"
                           % (rollout.name, "false" if rollout.approval_required is False else "not set"))
    if lifetime is not None:
        try:
            return now + datetime.timedelta(seconds=lifetime)
        except OverflowError:  # the API server's clock (its Date header) is near the end of year 9999
            raise RefusedError("rollout %s: --expires from the API server's time %s ends past the year 9999; "
                               "check the server's clock" % (rollout.name, _time(now))) from None
    writes.refuse_invalid(rollout, rollout.deadline)
    if rollout.deadline is None:
        raise RefusedError("rollout %s has no deadline; give --expires DURATION" % rollout.name)
    if rollout.deadline <= now:
        raise RefusedError("rollout %s: its deadline %s has passed; give --expires DURATION to approve it"
                           % (rollout.name, _time(rollout.deadline)))
    return rollout.deadline
