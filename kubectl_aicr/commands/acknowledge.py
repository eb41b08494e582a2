"""``kubectl aicr acknowledge ROLLOUT``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 3.
For a rollout in phase AwaitingAcknowledgement, appends {release, user, time} to
``spec.acknowledgements`` for the release in ``status.awaitingAcknowledgement``.
Refused, saying what state the rollout is in, when it is not waiting, and when
that release already carries an acknowledgement (it is never recorded twice).
"""

from .. import objects, output, session
from ..errors import RefusedError
from . import writes

AWAITING = "AwaitingAcknowledgement"


def run(invocation):
    with session.connect(invocation) as client:
        user = writes.who_am_i(client)
        chosen = {}

        def decide(rollout):
            writes.refuse_invalid(rollout, rollout.phase, rollout.awaiting_acknowledgement,
                                  rollout.acknowledgements, rollout.outcome)
            writes.require_open(rollout, "acknowledged")
            release = rollout.awaiting_acknowledgement
            if rollout.phase != AWAITING or not release:
                raise RefusedError("rollout %s is not waiting for an acknowledgement (phase %s)"
                                   % (rollout.name, rollout.phase or "not set"))
            for ack in rollout.acknowledgements:
                if isinstance(ack, objects.Acknowledgement) and ack.release == release:
                    raise RefusedError("release %s of rollout %s is already acknowledged by %s at %s" % (
                        release, rollout.name, ack.user, writes.shown_time(ack.time)))
            chosen["release"] = release
            return objects.acknowledgement_operations(rollout, release, user, writes.now_utc(client))

        stored = objects.rollout(writes.conditional_patch(client, invocation.name, decide))
    recorded = [a for a in stored.acknowledgements if isinstance(a, objects.Acknowledgement)
                and a.release == chosen.get("release") and a.user == user] \
        if isinstance(stored.acknowledgements, list) else []
    if not recorded:
        raise RefusedError("the API server accepted the acknowledgement of %s but did not return it; check with "
                           "kubectl aicr describe %s" % (invocation.name, invocation.name))
    ack = recorded[-1]
    output.say("rollout %s: %s acknowledged by %s at %s" % (
        output.safe(stored.name), output.safe(ack.release), output.safe(ack.user),
        output.safe(writes.shown_time(ack.time))))
    writes.print_record_steps(stored, "PostApply", "this acknowledges the post-apply steps:", ack.release)
    return 0
