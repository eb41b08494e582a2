"""``kubectl aicr describe ROLLOUT``: what an approver decides on, in plain text.

Source: README.md ("describe") and docs/operator-api.md.
Two requests on one connection: the RuntimeRollout, then (when the rollout
records an assessment digest) its report ConfigMap in the operator namespace.
A report whose bytes do not hash to the recorded digest, or that cannot be
read, is never shown as valid: the rest is printed, then the command fails with
:class:`~kubectl_aicr.errors.VerificationError` (exit status 3).

Digests are shown as ``sha256:`` and their first 16 hex digits (as the plan and report ConfigMap
names carry them, and as reproduce accepts them), except on the assessment line, which gives in
full the digest the report was verified against. ``kubectl get runtimerollout NAME -o yaml``
shows every one in full.
"""

import datetime

from .. import cli, helpers, output
from ..aicr import objects, reports
from ..kube import clientcmd
from ..errors import AicrError, VerificationError
from ..aicr.objects import Invalid


def run(invocation, now=None):
    """Describe ``invocation.name``; returns 0, or raises (VerificationError after printing)."""
    namespace = cli.operator_namespace(invocation)
    with clientcmd.connect(invocation) as client:
        rollout = objects.rollout(client.get(objects.rollout_path(invocation.name)))
        verified = reports.fetch_report(client, namespace, rollout.assessment_digest)
        skew = helpers.clock_skew(client)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if skew is not None and rollout.awaits_approval:
        output.warning("%s; approve refuses while they differ (--allow-clock-skew approves on the API server's "
                       "clock anyway), so no approve line is offered" % skew)
    output.write_lines(render(rollout, verified, namespace, now, invocation.name, skew, invocation))
    if verified is not None and verified.problem:
        if verified.unavailable:
            raise AicrError("assessment report not verified: %s" % verified.problem)
        raise VerificationError("assessment report not verified: %s" % verified.problem)
    if isinstance(rollout.assessment_digest, Invalid):
        raise VerificationError("assessment report not verified: %s" % rollout.assessment_digest)
    return 0


# ---------------------------------------------------------------------------------------------
# Rendering


# Kept here by name (describe and tests call it); it lives in helpers so that writes need not import describe.
human_duration = helpers.human_duration


def _when(value, now, future="in %s", past="%s ago"):
    """``2026-11-30T12:00:00Z (in 3h59m)`` for a datetime; Invalid and None shown as they are."""
    if not isinstance(value, datetime.datetime):
        return value
    delta = (value - now).total_seconds()
    relative = future % human_duration(delta) if delta > 0 else past % human_duration(delta)
    return "%s (%s)" % (objects.format_time(value), relative)


def _transition(rollout):
    if rollout.from_digest is None:
        return "none (initial install)"
    return "%s -> %s" % (objects.short_digest(rollout.from_digest),
                         output.or_none(objects.short_digest(rollout.to_digest)))


def _yes_no(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def _approval(rollout, now):
    """(label, value) pairs for the approval and the revocation."""
    approval, revocation = rollout.approval, rollout.revocation
    pairs = []
    if isinstance(rollout.approval_required, Invalid):
        pairs.append(("Approval required", rollout.approval_required))
    if isinstance(approval, objects.Approval):
        until = _when(approval.expires, now, "expires in %s", "expired %s ago")
        pairs.append(("Approval", "approved by %s until %s" % (output.or_none(approval.user), output.or_none(until))))
        pairs.append(("Approval reason", approval.reason))
    elif isinstance(approval, Invalid):
        pairs.append(("Approval", approval))
    elif rollout.approval_required is True:
        pairs.append(("Approval", "required, not given" if rollout.ended else "required, pending"))
    elif rollout.approval_required is False:
        pairs.append(("Approval", "not required"))
    elif rollout.approval_required is None:
        pairs.append(("Approval", "<unknown: spec.approvalRequired is not set>"))
    if isinstance(revocation, objects.Revocation):
        pairs.append(("Revocation", "revoked by %s at %s" % (output.or_none(revocation.user),
                                                            output.or_none(_when(revocation.time, now)))))
        pairs.append(("Revocation reason", revocation.reason))
    elif isinstance(revocation, Invalid):
        pairs.append(("Revocation", revocation))
    return pairs


def _same_invalid(*values):
    """The :class:`Invalid` all ``values`` are (a malformed parent such as ``spec.runtimeRef: "x"`` makes each
    of its fields the same one): shown once. None otherwise."""
    first = values[0]
    return first if isinstance(first, Invalid) and all(value == first for value in values) else None


def _inventory(rollout):
    size = rollout.inventory_releases
    if size is None and rollout.inventory_digest is None:
        return None
    if _same_invalid(size, rollout.inventory_digest):
        return size
    count = "%s release%s" % (size, "" if size == 1 else "s") if isinstance(size, int) else output.or_none(size)
    return "%s, %s" % (count, output.or_none(objects.short_digest(rollout.inventory_digest)))


def summary_lines(rollout, now):
    """The rollout's head section."""
    runtime = rollout.runtime_name
    if rollout.runtime_uid is not None and not _same_invalid(rollout.runtime_name, rollout.runtime_uid):
        runtime = "%s (UID %s)" % (output.or_none(rollout.runtime_name), output.or_none(rollout.runtime_uid))
    pairs = [
        ("Name", rollout.name),
        ("UID", rollout.uid),
        ("Runtime", runtime),
        ("Transition", _transition(rollout)),
        ("Target plan", objects.short_digest(rollout.to_digest)),
        ("Phase", rollout.phase),
        ("Outcome", rollout.outcome),
        ("Deadline", _when(rollout.deadline, now, "in %s", "passed %s ago")),
    ]
    pairs += _approval(rollout, now)
    if rollout.awaiting_acknowledgement is not None:
        pairs.append(("Awaiting", "acknowledgement of %s" % output.or_none(rollout.awaiting_acknowledgement)))
    pairs += [("Message", rollout.message), ("Starting inventory", _inventory(rollout))]
    return output.fields(pairs)


def step_lines(rollout):
    """``Steps:`` and a table of release, operation, assessment, changes CRDs, state."""
    steps = rollout.steps
    if isinstance(steps, Invalid):
        return output.fields([("Steps", steps)])
    if not steps:
        return output.fields([("Steps", None)])
    rows = []
    for step in steps:
        if isinstance(step, Invalid):
            rows.append([step, "", "", "", ""])
            continue
        state = step.state if not step.message else "%s: %s" % (step.state, step.message)
        rows.append([step.release, step.operation, step.assessment, _yes_no(step.changes_crds), state])
    return ["Steps:"] + output.table(["RELEASE", "OPERATION", "ASSESSMENT", "CHANGES CRDS", "STATE"], rows)


def _versions(component):
    if component.from_version is None and component.to_version is None:
        return None
    return "%s -> %s" % (component.from_version or "-", component.to_version or "-")


def report_lines(rollout, verified, namespace):
    """``Assessment:`` with the verified report, ``none``, or why it is not shown."""
    if rollout.assessment_digest is None:
        return ["Assessment: none"]
    if isinstance(rollout.assessment_digest, Invalid):
        return output.fields([("Assessment", "NOT VERIFIED: %s" % rollout.assessment_digest)])
    if verified.problem:
        return output.fields([("Assessment", "NOT VERIFIED, NOT SHOWN: %s" % verified.problem)])
    rep = verified.report
    lines = output.fields([
        ("Assessment", "%s in %s, verified against %s" % (verified.configmap, namespace, verified.digest)),
    ])
    lines += output.fields([("From", rep.from_ref), ("To", rep.to_ref), ("Deployer", rep.deployer),
                            ("Summary", _summary(rep))], indent=2)
    components = rep.components
    if isinstance(components, Invalid) or not components:
        lines += output.fields([("Components", components)], indent=2)
    else:
        rows = []
        for component in components:
            if isinstance(component, Invalid):
                rows.append([component, "", "", "", ""])
            else:
                rows.append([component.component, component.change, _versions(component), component.verdict,
                             component.notes])
        lines += output.table(["COMPONENT", "CHANGE", "VERSIONS", "VERDICT", "NOTES"], rows, indent=2)
        lines += _component_details(components)
    if rep.at_risk is not None:
        lines += _at_risk(rep.at_risk)
    return lines


def _summary(rep):
    count, failing = rep.summary_components, rep.summary_failing
    if count is None and failing is None:
        return None
    if _same_invalid(count, failing):
        return count
    return "%s components, %s failing" % (output.or_none(count), output.or_none(failing))


def _component_details(components):
    """For each component with an explanation, precondition or steps: an indented block."""
    lines = []
    for component in components:
        if isinstance(component, Invalid):
            continue
        pairs = []
        if component.explanation:
            pairs.append(("explanation", component.explanation))
        if component.precondition:
            pairs.append(("before", component.precondition))
        if pairs or component.steps:
            lines.append("  %s:" % output.or_none(component.component))
            lines += output.fields(pairs, indent=4)
            lines += _report_steps(component.steps)
    return lines


def _report_steps(steps):
    if isinstance(steps, Invalid):
        return output.fields([("steps", steps)], indent=4)
    lines = []
    for step in steps:
        if isinstance(step, Invalid):
            lines.append("    - %s" % step)
            continue
        lines.append("    - %s: %s" % (output.or_none(step.id), output.or_none(step.description)))
        if step.reason:
            lines.append("      why: %s" % step.reason)
    return lines


def _at_risk(at_risk):
    """``At risk:``: the objects the report found at risk, as a table; ``no objects found`` only for a
    scan that found none; a malformed ``atRisk``, ``findings``, finding or ``scanned`` shown as such."""
    if isinstance(at_risk, Invalid):
        return output.fields([("At risk", at_risk)], indent=2)
    findings, scanned = at_risk.findings, at_risk.scanned
    lines = output.fields([("At risk scanned", scanned)], indent=2) if isinstance(scanned, Invalid) else []
    if isinstance(findings, Invalid) or not findings:
        found = findings or ({True: "no objects found", False: "not scanned"}.get(scanned)
                             if isinstance(scanned, bool) else None)
        return output.fields([("At risk", found)], indent=2) + lines
    rows = []
    for item in findings:
        if isinstance(item, Invalid):
            rows.append([item, "", ""])
            continue
        kind = "%s.%s" % (output.or_none(item.kind), item.group) if item.group else item.kind
        where = "%s/%s" % (item.namespace, output.or_none(item.name)) if item.namespace else item.name
        components = item.components
        rows.append([kind, where, ", ".join(str(c) for c in components) if isinstance(components, list)
                     else components])
    return ["  At risk:"] + output.table(["KIND", "OBJECT", "COMPONENTS"], rows, indent=4) + lines


def recorded_lines(rollout):
    """``Recorded steps:``: each transition record, its precondition (``before:``) and steps."""
    records = rollout.transition_records
    if isinstance(records, Invalid):
        return output.fields([("Recorded steps", records)])
    if not records:
        return output.fields([("Recorded steps", None)])
    lines = ["Recorded steps:"]
    for record in records:
        if isinstance(record, Invalid):
            lines.append("  %s" % record)
            continue
        lines.append("  %s %s -> %s (%s)" % (output.or_none(record.release), output.or_none(record.from_version),
                                             output.or_none(record.to_version), output.or_none(record.verdict)))
        if record.precondition:
            lines.append("    before: %s" % record.precondition)
        steps = record.steps
        if isinstance(steps, Invalid):
            lines.append("    %s" % steps)
            continue
        rows = []
        for step in steps:
            if isinstance(step, Invalid):
                rows.append([step, "", ""])
            else:
                text = step.description if not step.reason else "%s (why: %s)" % (
                    output.or_none(step.description), step.reason)
                rows.append([step.when, step.id, text])
        if rows:
            lines += output.table(["WHEN", "STEP", "WHAT"], rows, indent=4)
    return lines


def acknowledgement_lines(rollout):
    """``Acknowledged: <release> by <user> at <time>`` for each acknowledgement."""
    acks = rollout.acknowledgements
    if isinstance(acks, Invalid):
        return output.fields([("Acknowledged", acks)])
    lines = []
    for ack in acks:
        if isinstance(ack, Invalid):
            lines.append("Acknowledged: %s" % ack)
            continue
        at = objects.format_time(ack.time) if isinstance(ack.time, datetime.datetime) else ack.time
        lines.append("Acknowledged: %s by %s at %s" % (output.or_none(ack.release), output.or_none(ack.user),
                                                       output.or_none(at)))
    return lines


def render(rollout, verified, namespace, now, name=None, skew=None, invocation=None):
    """All of describe's lines, in the order an approver reads them (``name``: the rollout asked for; the
    decision line is offered only for it; ``skew``, ``invocation``: as in :func:`binding_lines`)."""
    return (summary_lines(rollout, now) + step_lines(rollout) + report_lines(rollout, verified, namespace)
            + recorded_lines(rollout) + acknowledgement_lines(rollout)
            + binding_lines(rollout, verified, name, now, skew, invocation))


def binding_lines(rollout, verified=None, name=None, now=None, skew=None, invocation=None):
    """The decision this rollout waits on, bound to what was shown: its UID, target plan and assessment
    digest as --expect-uid, --expect-digest and --expect-assessment (the write commands refuse when any of
    them differs), as one command line that pastes into a shell as it reads. Every value is written
    ``--flag=value`` and quoted for the shell (output.shell_line), so a release holding ``;`` or
    ``$(...)`` stays one argument and no value can read as a flag. approve and revoke end with ``--reason``
    and no value: the approver types why; pasted as it is, the command refuses (pflag's "flag needs an
    argument") and writes nothing. ``invocation``: describe's own; the line keeps the flags that chose its
    cluster and identity (cli.connection_words), so pasted in another shell it acts on the rollout described.

    Offered only where the command would act: acknowledge for a rollout awaiting an acknowledgement of a named
    release, approve for one awaiting a required approval whose assessment report verified (``verified``: the
    :class:`objects.VerifiedReport` shown; approve refuses an unverified one) or that records none, and whose
    deadline is still ahead of ``now`` (else approve needs --expires), revoke for a revocable one (not while
    Validating). No approve line while ``skew`` (helpers.clock_skew: the API server's clock and this machine's
    too far apart) is set: approve refuses then. No approve line for a malformed revocation (approve refuses
    it). No acknowledge line for an empty release or one the rollout already records an acknowledgement of
    (acknowledge refuses it as already acknowledged, as before the operator moves on). Neither approve nor
    acknowledge while the recorded steps they acknowledge (or, for approve, the steps) cannot be read
    (objects.unreadable_records, unreadable_steps: the commands refuse them). No line when the rollout has
    ended, its facts are malformed, its name is not a Kubernetes object name or not ``name`` (the one asked
    for), or a word cannot be shown as it is."""
    if rollout.ended or not isinstance(rollout.uid, str) or not isinstance(rollout.name, str) or not \
            cli.is_object_name(rollout.name) or (name is not None and rollout.name != name) or not \
            objects.is_digest(rollout.to_digest if isinstance(rollout.to_digest, str) else ""):
        return []
    report_ok = rollout.assessment_digest is None or (verified is not None and not verified.problem)
    if rollout.awaits_acknowledgement and isinstance(rollout.awaiting_acknowledgement, str):
        release = rollout.awaiting_acknowledgement
        if not release or objects.unreadable_records(rollout, release) is not None or \
                objects.unreadable_acknowledgement(rollout) is not None or any(
                    isinstance(ack, objects.Acknowledgement) and ack.release == release
                    for ack in rollout.acknowledgements):
            return []
        words, last = ["acknowledge", rollout.name, "--release=" + rollout.awaiting_acknowledgement], []
        connection = cli.connection_words(invocation) if invocation is not None else []
    elif rollout.awaits_approval and rollout.approval_required is True and report_ok and skew is None and \
            not isinstance(rollout.revocation, Invalid) and (
            now is None or (isinstance(rollout.deadline, datetime.datetime) and rollout.deadline > now)):
        if objects.unreadable_records(rollout) is not None or objects.unreadable_steps(rollout) is not None:
            return []
        words, last = ["approve", rollout.name], ["--reason"]
        connection = cli.connection_words(invocation, operator_namespace=True) if invocation is not None else []
    elif rollout.revocable:
        words, last = ["revoke", rollout.name], ["--reason"]
        connection = cli.connection_words(invocation) if invocation is not None else []
    else:
        return []
    words += connection + ["--expect-uid=" + rollout.uid, "--expect-digest=" + objects.short_digest(rollout.to_digest)]
    digest = rollout.assessment_digest
    if isinstance(digest, str) and objects.is_digest(digest):
        words.append("--expect-assessment=" + objects.short_digest(digest))
    words += last
    if not all(word and output.printable(word) for word in words):
        return []
    return ["", "Decide on exactly this: " + output.shell_line(cli.PROG.split() + words)]
