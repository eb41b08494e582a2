"""``kubectl aicr revoke ROLLOUT --reason TEXT [--expect-digest DIGEST] [--dry-run=server|client|none]``.

Source: README.md ("approve, revoke, acknowledge") and docs/operator-api.md rule 2.
Records ``spec.revocation`` {user, time, reason} once. Decided on ONE read of the
rollout (writes.py): refused before writing are a rollout that is not approved,
already revoked, or has ended, and one whose target plan is not the --expect-digest
given. The approval it revokes, the UID, target plan, assessment digest and phase are
shown and pinned until the write lands. While the rollout is Validating the API
server refuses it; that refusal is shown as it came.
"""

from .. import cli, output
from ..aicr import objects
from ..kube import clientcmd
from ..errors import RefusedError
from . import writes

FACTS = writes.COMMON_FACTS + ("approval", "revocation")


def run(invocation):
    reason = cli.checked_reason(invocation.reason)
    expected = cli.checked_expected_digest(invocation.expect_digest)
    expected_uid = cli.checked_expected_uid(invocation.expect_uid)
    expected_assessment = cli.checked_expected_assessment(invocation.expect_assessment)
    dry_run = cli.checked_dry_run(invocation.dry_run)
    writes.connection = cli.connection_words(invocation, operator_namespace=True)
    with clientcmd.connect(invocation) as client:
        user = writes.who_am_i(client)
        raw, rollout = writes.read_rollout(client, invocation.name)
        _check(rollout)
        writes.require_target(rollout, expected)
        writes.require_bound(rollout, expected_uid, expected_assessment)
        operations = objects.revocation_operations(user, writes.now_utc(client), reason)
        decision = writes.Decision(invocation.name, raw, FACTS, operations)
        approval = rollout.approval
        writes.show("revoking rollout %s as %s, on what was read (the write is refused if any of it changes):"
                    % (output.or_none(rollout.name), user),
                    writes.fact_pairs(rollout, ("Assessment", rollout.assessment_digest or "none"),
                                      ("Approval", "by %s until %s" % (output.or_none(approval.user), output.or_none(
                                          writes.shown_time(approval.expires))))))
        writes.warn_clock_skew(client, "the time of the revocation (%s)" % operations[0]["value"]["time"])
        stored = writes.land(client, decision, dry_run)
    value = operations[0]["value"]
    result = ["rollout %s revoked by %s at %s" % (output.or_none(rollout.name), value["user"], value["time"]),
              "reason: %s" % value["reason"]]
    if stored is None:
        return writes.confirm(result + writes.patch_lines(decision), dry_run, "")
    writes.check_answer(stored, decision, {"/spec/revocation": value})
    return writes.confirm(result, dry_run, "the revocation of rollout %s by %s at %s"
                          % (rollout.name, user, value["time"]))


def _check(rollout):
    writes.refuse_invalid(rollout, rollout.uid, rollout.approval, rollout.revocation, rollout.outcome)
    if isinstance(rollout.revocation, objects.Revocation):
        revocation = rollout.revocation
        raise RefusedError("rollout %s is already revoked by %s at %s" % (
            rollout.name, output.or_none(revocation.user), writes.shown_time(revocation.time)))
    writes.require_open(rollout, "revoked")
    if rollout.approval is None:
        raise RefusedError("rollout %s is not approved; there is nothing to revoke" % rollout.name)
