"""``kubectl aicr acknowledge ROLLOUT [--release NAME] [--expect-digest DIGEST] [--dry-run=server|client|none]``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 3.
For a rollout in phase AwaitingAcknowledgement, appends {release, user, time} to
``spec.acknowledgements`` for the release in ``status.awaitingAcknowledgement``.
Decided on ONE read of the rollout (writes.py): refused, saying what state the
rollout is in, when it is not waiting, when that release already carries an
acknowledgement (it is never recorded twice), when it waits on another release than
--release names, when its target plan is not the --expect-digest given, and when the
recorded steps of that release (spec.transitionRecords) cannot be read. The
awaited release, the acknowledgements, the transition records (its post-apply steps), UID,
target plan, assessment digest and phase are shown and pinned until the write lands: if another approver acknowledges first and
the rollout moves on, nothing is written for the next release. The server's answer is
checked: this rollout, its UID, and exactly the entry written appended.
"""

from .. import cli, output
from ..aicr import objects
from ..kube import clientcmd
from ..errors import RefusedError, UsageError
from . import writes

AWAITING = "AwaitingAcknowledgement"
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
    with clientcmd.connect(invocation) as client:
        user = writes.who_am_i(client)
        raw, rollout = writes.read_rollout(client, invocation.name)
        release = _awaited(rollout, named)
        writes.require_target(rollout, expected)
        writes.require_bound(rollout, expected_uid, expected_assessment)
        operations = objects.acknowledgement_operations(rollout, release, user, writes.now_utc(client))
        decision = writes.Decision(invocation.name, raw, FACTS, operations)
        writes.show("acknowledging release %s of rollout %s as %s, on what was read (the write is refused if any "
                    "of it changes):" % (release, output.or_none(rollout.name), user),
                    writes.fact_pairs(rollout, ("Assessment", rollout.assessment_digest or "none"),
                                      ("Awaiting", "acknowledgement of %s" % release)),
                    writes.record_step_lines(rollout, "PostApply", "this acknowledges the post-apply steps:",
                                             release))
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
                release, rollout.name, ack.user, writes.shown_time(ack.time)))
    writes.refuse_unreadable(rollout, objects.unreadable_records(rollout, release),
                             "the recorded steps of %s" % release,
                             "acknowledging says its post-apply steps are done")
    return release
