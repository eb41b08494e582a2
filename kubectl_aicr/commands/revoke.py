"""``kubectl aicr revoke ROLLOUT --reason TEXT``.

Source: ../shared/spec/kubectl-aicr-seed.txt ("revoke") and operator-api.md rule 2.
Records ``spec.revocation`` {user, time, reason} once. Refused before writing:
a rollout that is not approved, already revoked, or has ended. While the
rollout is Validating the API server refuses it; that refusal is shown as it came.
"""

from .. import objects, output, session
from ..errors import RefusedError
from . import writes


def run(invocation):
    reason = writes.checked_reason(invocation.reason)
    with session.connect(invocation) as client:
        user = writes.who_am_i(client)

        def decide(rollout):
            writes.refuse_invalid(rollout, rollout.approval, rollout.revocation, rollout.outcome)
            if isinstance(rollout.revocation, objects.Revocation):
                revocation = rollout.revocation
                raise RefusedError("rollout %s is already revoked by %s at %s" % (
                    rollout.name, revocation.user, writes.shown_time(revocation.time)))
            writes.require_open(rollout, "revoked")
            if rollout.approval is None:
                raise RefusedError("rollout %s is not approved; there is nothing to revoke" % rollout.name)
            return objects.revocation_operations(user, writes.now_utc(client), reason)

        stored = objects.rollout(writes.conditional_patch(client, invocation.name, decide))
    revocation = stored.revocation
    if not isinstance(revocation, objects.Revocation):
        raise RefusedError("the API server accepted the revocation of %s but did not return it; check with "
                           "kubectl aicr describe %s" % (invocation.name, invocation.name))
    output.say("rollout %s revoked by %s at %s" % (output.safe(stored.name), output.safe(revocation.user),
                                                 output.safe(writes.shown_time(revocation.time))))
    output.say("reason: %s" % output.safe(revocation.reason))
    return 0
