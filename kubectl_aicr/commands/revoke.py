"""``kubectl aicr revoke ROLLOUT --reason TEXT``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 2.
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

        sent = {}

        def decide(rollout):
            writes.refuse_invalid(rollout, rollout.approval, rollout.revocation, rollout.outcome)
            if isinstance(rollout.revocation, objects.Revocation):
                revocation = rollout.revocation
                raise RefusedError("rollout %s is already revoked by %s at %s" % (
                    rollout.name, revocation.user, writes.shown_time(revocation.time)))
            writes.require_open(rollout, "revoked")
            if rollout.approval is None:
                raise RefusedError("rollout %s is not approved; there is nothing to revoke" % rollout.name)
            sent.update(uid=rollout.uid, time=writes.now_utc(client))
            return objects.revocation_operations(user, sent["time"], reason)

        stored = objects.rollout(writes.conditional_patch(client, invocation.name, decide))
    writes.check_stored(stored, invocation.name, sent["uid"], "revocation", user=user, reason=reason,
                        time=sent["time"])
    revocation = stored.revocation
    output.say("rollout %s revoked by %s at %s" % (output.safe(stored.name), output.safe(revocation.user),
                                                 output.safe(writes.shown_time(revocation.time))))
    output.say("reason: %s" % output.safe(revocation.reason))
    return 0
