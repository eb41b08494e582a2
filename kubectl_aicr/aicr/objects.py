"""The AICR operator objects: every field path the plugin reads or writes lives in this module.

Source: docs/operator-api.md (``operator.aicr.run/v1alpha1`` RuntimeRollout and
ClusterRuntime, the plan and assessment-report ConfigMaps) and AICR's upgrade-check
report schema (NVIDIA/aicr ``pkg/upgrade/report.go``).

Objects are read leniently: an unknown field is ignored, an unknown enum value is
kept as it is, a missing optional field is None ("not set"). A field present with the
wrong type or form becomes an :class:`Invalid` value, which the output shows as such
and which no decision ever treats as valid.

The records' annotations say so: ``Union[str, Invalid, None]`` is a string field read leniently (None:
not set; a str is an :class:`~kubectl_aicr.output.ClusterText`, which formats as every view shows cluster
text); a list field is a ``list`` whose non-object items are :class:`Invalid`, or one :class:`Invalid`
for the whole list (not a list, or longer than :data:`MAX_ITEMS`); an absent list is ``[]``. Times are
aware UTC ``datetime`` values, or :class:`~kubectl_aicr.helpers.OutOfRange` for a valid RFC 3339 time
datetime cannot hold (year 0000; 9999-12-31 with a negative offset), shown as written. The annotations are documentation, never evaluated (see
:mod:`kubectl_aicr.records`).
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import json
import sys

from .. import helpers
from ..errors import AicrError
from ..output import ClusterText
from ..records import Record

GROUP = "operator.aicr.run"
VERSION = "v1alpha1"
ROLLOUTS = "runtimerollouts"
RUNTIMES = "clusterruntimes"
RUNTIME_NAME = "cluster"
ROLLOUT_RESOURCE = "%s.%s" % (ROLLOUTS, GROUP)

OUTCOME_LABEL = "operator.aicr.run/outcome"
ROLE_LABEL = "operator.aicr.run/role"
DIGEST_ANNOTATION = "operator.aicr.run/desired-state-digest"
SOURCE_ANNOTATION = "operator.aicr.run/source"
ASSESSMENT_PREFIX = "aicr-assessment-"
PLAN_PREFIX = "aicr-plan-"
REPORT_KEY = "report.json"

PHASES = ("Pending", "AwaitingApproval", "RollingOut", "AwaitingAcknowledgement", "Validating", "Completed")
OUTCOMES = ("Succeeded", "Failed", "Expired", "Revoked")
STEP_STATES = ("Pending", "InFlight", "Ready", "Failed", "Skipped")

_HEX_DIGITS = "0123456789abcdef"


def is_digest(value):
    """True for a desired-state or content digest as AICR writes it: ``sha256:`` and 64 lower-case hex digits
    (string tests, no regular expression to compile at every start)."""
    return isinstance(value, str) and len(value) == 71 and value.startswith("sha256:") \
        and not value[7:].strip(_HEX_DIGITS)


# ---------------------------------------------------------------------------------------------
# Paths on the API server


def rollout_path(name=None):
    """``/apis/operator.aicr.run/v1alpha1/runtimerollouts[/NAME]``."""
    base = "/apis/%s/%s/%s" % (GROUP, VERSION, ROLLOUTS)
    return base if name is None else "%s/%s" % (base, _segment(name))


def runtime_path(name=RUNTIME_NAME):
    """``/apis/operator.aicr.run/v1alpha1/clusterruntimes/NAME``."""
    return "/apis/%s/%s/%s/%s" % (GROUP, VERSION, RUNTIMES, _segment(name))


def configmap_path(namespace, name=None):
    """``/api/v1/namespaces/NS/configmaps[/NAME]``."""
    base = "/api/v1/namespaces/%s/configmaps" % _segment(namespace)
    return base if name is None else "%s/%s" % (base, _segment(name))


SELF_SUBJECT_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _segment(name):
    """A path segment, ``urllib.parse.quote(name, safe="")``; names never hold '/', '?', '#', '%' or control
    characters in Kubernetes, so an object name is returned as it is (no urllib.parse at start-up)."""
    if name and set(name) <= _UNRESERVED:
        return str.__str__(name)  # the text itself, also for a ClusterText (whose str() is as shown)
    from urllib.parse import quote
    return quote(name, safe="")


# ---------------------------------------------------------------------------------------------
# Lenient field access


class Invalid:
    """A field that is present but of the wrong type or form; ``str()`` says so.

    Deliberately not a tuple, so that ``"%s" % value`` formats it like any other value.
    """

    __slots__ = ("path", "found")

    def __init__(self, path, found):
        self.path = path
        self.found = found

    def __str__(self):
        return "<invalid %s: %s>" % (self.path, self.found)

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, Invalid) and (self.path, self.found) == (other.path, other.found)

    def __hash__(self):
        return hash((self.path, self.found))


def _describe(value):
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string %r" % (value[:40],)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null"


def _raw(obj, path):
    """The value at the dotted ``path`` of ``obj``: None where a member on the way is missing or null; an
    :class:`Invalid` naming the first member on the way that is present but not a mapping (``spec.to: "x"``
    is never read as "no target")."""
    value, walked = obj, []
    for key in path.split("."):
        if value is not None and not isinstance(value, dict):
            return Invalid(".".join(walked) or "the object", _describe(value))
        walked.append(key)
        value = value.get(key) if value is not None else None
    return value


def _typed(obj, path, kind, absent=None):
    """The value at ``path`` if it is a ``kind``; ``absent`` when missing or null; else :class:`Invalid` (for
    the value, or for the first member on the way that is not a mapping)."""
    value = _raw(obj, path)
    if value is None:
        return absent
    if isinstance(value, Invalid):
        return value
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        return Invalid(path, _describe(value))
    return ClusterText(value) if kind is str else value


def _text(obj, path):
    return _typed(obj, path, str)


def _bool(obj, path):
    return _typed(obj, path, bool)


def _int(obj, path):
    value = _typed(obj, path, int)
    return Invalid(path, "a negative number") if isinstance(value, int) and value < 0 else value


def _keyed(obj, mapping_path, key):
    """The string under ``key`` of the mapping at ``mapping_path``, for keys that hold dots (labels,
    annotations, ConfigMap data); None when absent; :class:`Invalid` when not a string."""
    mapping = _mapping(obj, mapping_path)
    if not isinstance(mapping, dict):
        return mapping
    value = mapping.get(key)
    if value is None or isinstance(value, str):
        return value if value is None else ClusterText(value)
    return Invalid("%s[%s]" % (mapping_path, key), _describe(value))


def _digest(obj, path):
    value = _text(obj, path)
    if isinstance(value, str) and not is_digest(value):
        return Invalid(path, "not sha256:<64 lowercase hex>")
    return value


def _time(obj, path):
    value = _text(obj, path)
    if isinstance(value, str):
        parsed = parse_time(value)
        return parsed if parsed is not None else Invalid(path, "not an RFC 3339 time %r" % value[:40])
    return value


MAX_ITEMS = 10000  # items of one list the plugin reads (steps, records, components): a bound on its work


def _list(obj, path):
    items = _typed(obj, path, list, absent=[])
    if isinstance(items, list) and len(items) > MAX_ITEMS:
        return Invalid(path, "a list of %d items, more than the %d the plugin reads" % (len(items), MAX_ITEMS))
    return items


def _mapping(obj, path):
    return _typed(obj, path, dict)


def parse_time(text):
    """An RFC 3339 time as Go's ``time.Parse`` reads it (``2026-11-30T12:00:00Z``, offsets and fractions allowed;
    a 60th second reads as the 59th) -> aware UTC datetime, :class:`helpers.OutOfRange`, or None."""
    return helpers.parse_rfc3339(text, leap_second=True)


def format_time(value):
    """An aware datetime -> RFC 3339 UTC with seconds, ``2026-11-30T12:00:00Z``."""
    return helpers.format_utc(value)


def short_digest(digest):
    """``sha256:<64 hex>`` -> ``sha256:<first 16 hex>``; anything else unchanged."""
    if isinstance(digest, str) and is_digest(digest):
        return digest[:len("sha256:") + 16]
    return digest


def sha256_digest(data):
    """``sha256:<64 lowercase hex>`` of ``data`` (bytes). CPython's own SHA-256 (``_sha2`` from 3.12,
    ``_sha256`` before) when built in: ``hashlib`` loads OpenSSL's whole digest table, ~2.4 ms at every
    start (issue 15); a build without it (some FIPS builds) uses hashlib. Same digest either way."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:
        from hashlib import sha256
    return "sha256:" + sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# RuntimeRollout


class Step(Record):
    """``spec.steps[]`` joined with its ``status.steps[]`` entry (state Pending when it has none)."""

    release: Union[str, Invalid, None]
    operation: Union[str, Invalid, None]
    assessment: Union[str, Invalid, None]
    changes_crds: Union[bool, Invalid, None]
    state: Union[str, Invalid]  # status.steps[].state, "Pending" when unset
    message: Union[str, Invalid, None]


class RecordStep(Record):
    """``spec.transitionRecords[].steps[]``: ``when`` is PreApply or PostApply."""

    id: Union[str, Invalid, None]
    description: Union[str, Invalid, None]
    reason: Union[str, Invalid, None]
    when: Union[str, Invalid, None]


class TransitionRecord(Record):
    """``spec.transitionRecords[]``: AICR's record for one release's move."""

    release: Union[str, Invalid, None]
    from_version: Union[str, Invalid, None]
    to_version: Union[str, Invalid, None]
    verdict: Union[str, Invalid, None]
    precondition: Union[str, Invalid, None]
    steps: Union[List[Union[RecordStep, Invalid]], Invalid]


class Approval(Record):
    """``spec.approval``: set once by a person."""

    user: Union[str, Invalid, None]
    expires: Union[datetime, Invalid, None]
    reason: Union[str, Invalid, None]


class Revocation(Record):
    """``spec.revocation``: set once by a person."""

    user: Union[str, Invalid, None]
    time: Union[datetime, Invalid, None]
    reason: Union[str, Invalid, None]


class Acknowledgement(Record):
    """``spec.acknowledgements[]``: append-only."""

    release: Union[str, Invalid, None]
    user: Union[str, Invalid, None]
    time: Union[datetime, Invalid, None]


class Rollout(Record):
    """A RuntimeRollout as the plugin reads it. Each field: its value, None (not set) or :class:`Invalid`."""

    name: Union[str, Invalid, None]
    uid: Union[str, Invalid, None]
    resource_version: Union[str, Invalid, None]
    runtime_name: Union[str, Invalid, None]
    runtime_uid: Union[str, Invalid, None]
    from_digest: Union[str, Invalid, None]  # None: initial install (no spec.from)
    to_digest: Union[str, Invalid, None]
    deadline: Union[datetime, Invalid, None]
    approval_required: Union[bool, Invalid, None]
    inventory_releases: Union[int, Invalid, None]  # a negative number is Invalid
    inventory_digest: Union[str, Invalid, None]
    assessment_digest: Union[str, Invalid, None]  # None: no report was made (no spec.assessment)
    steps: Union[List[Union[Step, Invalid]], Invalid]
    transition_records: Union[List[Union[TransitionRecord, Invalid]], Invalid]
    approval: Union[Approval, Invalid, None]
    revocation: Union[Revocation, Invalid, None]
    acknowledgements: Union[List[Union[Acknowledgement, Invalid]], Invalid]
    phase: Union[str, Invalid, None]
    outcome: Union[str, Invalid, None]  # the label, else status.outcome; None or "" while running
    message: Union[str, Invalid, None]
    awaiting_acknowledgement: Union[str, Invalid, None]  # release name
    created: Union[datetime, Invalid, None] = None  # metadata.creationTimestamp
    awaiting_since: Union[datetime, Invalid, None] = None  # status.awaitingAcknowledgement.since, when recorded

    @property
    def initial_install(self):
        return self.from_digest is None

    @property
    def ended(self):
        """True when the rollout carries an outcome (label or status), per operator-api.md, or its phase is
        Completed (issue 16: either counts as ended)."""
        return bool(self.outcome) or self.phase == "Completed"

    @property
    def awaits_approval(self):
        """Phase AwaitingApproval, not ended, and no approval recorded: what ``approve`` can act on."""
        return self.phase == "AwaitingApproval" and not self.ended and self.approval is None

    @property
    def awaits_acknowledgement(self):
        """Phase AwaitingAcknowledgement and not ended: what ``acknowledge`` can act on."""
        return self.phase == "AwaitingAcknowledgement" and not self.ended

    @property
    def revocable(self):
        """Approved, not revoked, not ended, and not Validating (operator-api.md rule 2): what ``revoke`` can act on."""
        return (isinstance(self.approval, Approval) and self.revocation is None and not self.ended
                and self.phase != "Validating")

    @property
    def needs_person(self):
        """Someone must act for it to move on: an approval or an acknowledgement is awaited."""
        return self.awaits_approval or self.awaits_acknowledgement


def _entries(obj, path, build):
    items = _list(obj, path)
    if isinstance(items, Invalid):
        return items
    result = []
    for index, item in enumerate(items):
        where = "%s[%d]" % (path, index)
        result.append(build(item, where) if isinstance(item, dict) else Invalid(where, _describe(item)))
    return result


RECORD_STEP_TIMES = ("PreApply", "PostApply")  # spec.transitionRecords[].steps[].when


def _record_step(item, where):
    return RecordStep(_text(item, "id"), _text(item, "description"), _text(item, "reason"), _step_time(item))


def _step_time(item):
    """``when``, PreApply or PostApply. Unlike other enum values, another spelling (``preApply``) or none is
    :class:`Invalid`: a decision acknowledges the steps of one side of the apply, so a step of neither side
    is one nobody could say was acknowledged (issue 20)."""
    value = _text(item, "when")
    if value is None:
        return Invalid("when", "missing, not PreApply or PostApply")
    if isinstance(value, str) and value not in RECORD_STEP_TIMES:
        return Invalid("when", "%s, not PreApply or PostApply" % _describe(value))
    return value


def _within(where, invalid):
    """``invalid`` (its path relative to an item) with the item's path ``where`` in front."""
    return Invalid("%s.%s" % (where, invalid.path), invalid.found)


def unreadable_acknowledgement(view):
    """The first ``spec.acknowledgements`` entry (or its release) that cannot be read, an :class:`Invalid`; None
    when every entry reads. Such an entry may already acknowledge the release awaited, so acknowledge refuses
    while there is one (never recording a release twice)."""
    acks = view.acknowledgements
    if isinstance(acks, Invalid):
        return acks
    for ack in acks or ():
        if isinstance(ack, Invalid):
            return ack
        if isinstance(ack.release, Invalid):
            return ack.release
    return None


def unreadable_records(view, release=None):
    """The first :class:`Invalid` in the ``spec.transitionRecords`` a decision on recorded steps reads, its path
    in full (``spec.transitionRecords[1].steps[0].when``); None when all of it reads.

    ``view``: a :class:`Rollout`. ``release``: the release whose steps the decision covers (acknowledge: the
    awaited one's post-apply steps), where a record whose release is missing or unreadable may be that one;
    None: every record (an approval acknowledges every pre-apply step). Source: operator-api.md, "How the
    plugin reads these objects": an Invalid value is shown, never decided on."""
    records = view.transition_records
    if isinstance(records, Invalid):
        return records
    for index, record in enumerate(records):
        if isinstance(record, Invalid):
            return record
        where = "spec.transitionRecords[%d]" % index
        if release is not None and record.release != release:
            if isinstance(record.release, str):
                continue
            if record.release is None:
                return Invalid(where + ".release", "missing, so it may be the record of %s" % release)
        for value in (record.release, record.from_version, record.to_version, record.verdict,
                      record.precondition, record.steps):
            if isinstance(value, Invalid):
                return _within(where, value)
        for number, step in enumerate(record.steps):
            if isinstance(step, Invalid):
                return _within(where, step)
            for value in step._values():
                if isinstance(value, Invalid):
                    return _within("%s.steps[%d]" % (where, number), value)
    return None


def unreadable_steps(view):
    """The first :class:`Invalid` in what ``spec.steps`` says the operator runs (release, operation, assessment,
    changesCRDs; not the status' state and message), its path in full; None when all of it reads."""
    steps = view.steps
    if isinstance(steps, Invalid):
        return steps
    for index, step in enumerate(steps):
        if isinstance(step, Invalid):
            return step
        for value in (step.release, step.operation, step.assessment, step.changes_crds):
            if isinstance(value, Invalid):
                return _within("spec.steps[%d]" % index, value)
    return None


def _transition_record(item, where):
    return TransitionRecord(
        release=_text(item, "release"), from_version=_text(item, "from"), to_version=_text(item, "to"),
        verdict=_text(item, "verdict"), precondition=_text(item, "precondition"),
        steps=_entries(item, "steps", _record_step))


def _acknowledgement(item, where):
    return Acknowledgement(_text(item, "release"), _text(item, "user"), _time(item, "time"))


def _decision(obj, path, kind, time_key):
    body = _mapping(obj, path)
    if body is None or isinstance(body, Invalid):
        return body
    return kind(_text(body, "user"), _time(body, time_key), _text(body, "reason"))


def _outcome(obj):
    label = _keyed(obj, "metadata.labels", OUTCOME_LABEL)
    return label if isinstance(label, Invalid) else label or _text(obj, "status.outcome")


def _steps(obj):
    """``spec.steps`` joined with ``status.steps``: the k-th spec step of a release takes the k-th status
    entry of that release (a release can appear twice, e.g. Upgrade then Verify); none: Pending. A
    ``status.steps`` that is not a list makes every step's state that :class:`Invalid`; a status entry
    that is not an object or names no release follows the steps as its own :class:`Invalid`, never dropped."""
    spec_steps = _list(obj, "spec.steps")
    if isinstance(spec_steps, Invalid):
        return spec_steps
    status_steps = _list(obj, "status.steps")
    states, unmatched = {}, []
    for index, item in enumerate(status_steps if isinstance(status_steps, list) else []):
        where = "status.steps[%d]" % index
        release = _text(item, "release") if isinstance(item, dict) else Invalid(where, _describe(item))
        if isinstance(release, str):
            states.setdefault(release, []).append(item)
        elif isinstance(release, Invalid):
            unmatched.append(Invalid(where + ".release", release.found) if isinstance(item, dict) else release)
        else:
            unmatched.append(Invalid(where + ".release", "missing"))
    seen = {}
    steps = []
    for index, item in enumerate(spec_steps):
        if not isinstance(item, dict):
            steps.append(Invalid("spec.steps[%d]" % index, _describe(item)))
            continue
        release = _text(item, "release")
        status = {}
        if isinstance(release, str):
            occurrence = seen[release] = seen.get(release, -1) + 1
            entries = states.get(release, [])
            status = entries[occurrence] if occurrence < len(entries) else {}
        state = status_steps if isinstance(status_steps, Invalid) else _text(status, "state") or "Pending"
        steps.append(Step(release=release, operation=_text(item, "operation"),
                          assessment=_text(item, "assessment"), changes_crds=_bool(item, "changesCRDs"),
                          state=state, message=_text(status, "message")))
    return steps + unmatched


def _optional_digest(obj, parent, key):
    """``parent.key``, a digest; None only when ``parent`` is absent (``spec.from``: an initial install;
    ``spec.assessment``: no report was made); a present parent without a valid digest is Invalid."""
    body = _mapping(obj, parent)
    if body is None or isinstance(body, Invalid):
        return body
    digest = _digest(body, key)
    if isinstance(digest, Invalid):
        return Invalid("%s.%s" % (parent, key), digest.found)
    return Invalid("%s.%s" % (parent, key), "missing") if digest is None else digest


# When the rollout began to wait on its release: not in the API today (docs/operator-api.md), read when present.
AWAITING_SINCE = "status.awaitingAcknowledgement.since"


def rollout(obj):
    """Read a RuntimeRollout object (the API server's JSON, a dict) into a :class:`Rollout`."""
    return Rollout(
        name=_text(obj, "metadata.name"), uid=_text(obj, "metadata.uid"),
        resource_version=_text(obj, "metadata.resourceVersion"),
        runtime_name=_text(obj, "spec.runtimeRef.name"), runtime_uid=_text(obj, "spec.runtimeRef.uid"),
        from_digest=_optional_digest(obj, "spec.from", "desiredStateDigest"), to_digest=_digest(obj, "spec.to.desiredStateDigest"),
        deadline=_time(obj, "spec.deadline"), approval_required=_bool(obj, "spec.approvalRequired"),
        inventory_releases=_int(obj, "spec.startingInventory.releases"),
        inventory_digest=_digest(obj, "spec.startingInventory.digest"),
        assessment_digest=_optional_digest(obj, "spec.assessment", "digest"),
        steps=_steps(obj), transition_records=_entries(obj, "spec.transitionRecords", _transition_record),
        approval=_decision(obj, "spec.approval", Approval, "expires"),
        revocation=_decision(obj, "spec.revocation", Revocation, "time"),
        acknowledgements=_entries(obj, "spec.acknowledgements", _acknowledgement),
        phase=_text(obj, "status.phase"), outcome=_outcome(obj), message=_text(obj, "status.message"),
        awaiting_acknowledgement=_text(obj, "status.awaitingAcknowledgement.release"),
        created=_time(obj, "metadata.creationTimestamp"),
        awaiting_since=_time(obj, AWAITING_SINCE))



# ---------------------------------------------------------------------------------------------
# Assessment report


def assessment_configmap_name(digest):
    """``aicr-assessment-<first 16 hex of the report digest>``."""
    return ASSESSMENT_PREFIX + digest[len("sha256:"):][:16]


class ReportStep(Record):
    """One step of a report component (``components[].steps[]``)."""

    id: Union[str, Invalid, None]
    description: Union[str, Invalid, None]
    reason: Union[str, Invalid, None]


class ReportComponent(Record):
    """One row of AICR's upgrade-check report (``pkg/upgrade/report.go`` ReportComponent)."""

    component: Union[str, Invalid, None]
    change: Union[str, Invalid, None]
    from_version: Union[str, Invalid, None]
    to_version: Union[str, Invalid, None]
    verdict: Union[str, Invalid, None]
    notes: Union[str, Invalid, None]
    reason: Union[str, Invalid, None]
    explanation: Union[str, Invalid, None]
    breaking: Union[bool, Invalid, None]
    downgrade: Union[bool, Invalid, None]
    fails_run: Union[bool, Invalid, None]
    precondition: Union[str, Invalid, None]
    steps: Union[List[Union[ReportStep, Invalid]], Invalid]


class Finding(Record):
    """One object at risk (``atRisk.findings[]``): its kind, API group, namespace, name and the components
    (a list of str, each item or the whole list :class:`Invalid` when malformed) that put it at risk."""

    kind: Union[str, Invalid, None]
    group: Union[str, Invalid, None]
    namespace: Union[str, Invalid, None]
    name: Union[str, Invalid, None]
    components: Union[List[Union[str, Invalid]], Invalid]


class AtRisk(Record):
    """The report's ``atRisk``: whether the cluster was scanned, and the objects found at risk."""

    scanned: Union[bool, Invalid, None]
    findings: Union[List[Union[Finding, Invalid]], Invalid]


class Report(Record):
    """AICR's upgrade-check report (``Report``)."""

    from_ref: Union[str, Invalid, None]
    to_ref: Union[str, Invalid, None]
    deployer: Union[str, Invalid, None]
    components: Union[List[Union[ReportComponent, Invalid]], Invalid]
    summary_components: Union[int, Invalid, None]
    summary_failing: Union[int, Invalid, None]
    at_risk: Union[AtRisk, Invalid, None]


class VerifiedReport(Record):
    """The outcome of fetching a rollout's report: ``problem`` is None only when the bytes match the digest.

    ``report`` is set only when ``problem`` is None: an unverified report is never returned as content.
    """

    configmap: str
    digest: str
    report: Optional[Report]
    problem: Optional[str]
    unavailable: bool = False  # True: the ConfigMap could not be read at all (not a content mismatch)


def _report_component(item, where):
    return ReportComponent(
        component=_text(item, "component"), change=_text(item, "change"), from_version=_text(item, "from"),
        to_version=_text(item, "to"), verdict=_text(item, "verdict"), notes=_text(item, "notes"),
        reason=_text(item, "reason"), explanation=_text(item, "explanation"), breaking=_bool(item, "breaking"),
        downgrade=_bool(item, "downgrade"), fails_run=_bool(item, "failsRun"),
        precondition=_text(item, "precondition"),
        steps=_entries(item, "steps", lambda s, w: ReportStep(_text(s, "id"), _text(s, "description"),
                                                              _text(s, "reason"))))


def _strings(obj, path):
    """The list of strings at ``path``: each item a str or :class:`Invalid`; the whole list Invalid when it
    is not one; ``[]`` when absent."""
    items = _list(obj, path)
    if isinstance(items, Invalid):
        return items
    return [ClusterText(item) if isinstance(item, str) else Invalid("%s[%d]" % (path, index), _describe(item))
            for index, item in enumerate(items)]


def _finding(item, where):
    return Finding(kind=_text(item, "kind"), group=_text(item, "group"), namespace=_text(item, "namespace"),
                   name=_text(item, "name"), components=_strings(item, "components"))


def _at_risk(obj):
    body = _mapping(obj, "atRisk")
    if body is None or isinstance(body, Invalid):
        return body
    findings = _entries(body, "findings", _finding)
    if isinstance(findings, Invalid):
        findings = Invalid("atRisk." + findings.path, findings.found)
    else:
        findings = [Invalid("atRisk." + f.path, f.found) if isinstance(f, Invalid) else f for f in findings]
    return AtRisk(scanned=_bool(body, "scanned"), findings=findings)


def report(obj):
    """Read an upgrade-check report (decoded JSON dict) into a :class:`Report`."""
    return Report(
        from_ref=_text(obj, "from"), to_ref=_text(obj, "to"), deployer=_text(obj, "deployer"),
        components=_entries(obj, "components", _report_component),
        summary_components=_int(obj, "summary.components"), summary_failing=_int(obj, "summary.failing"),
        at_risk=_at_risk(obj))


def verify_report(configmap, digest, configmap_name):
    """Check a report ConfigMap (dict, or None when absent) against the rollout's recorded ``digest``.

    The sha256 of the exact UTF-8 bytes of ``data["report.json"]`` must equal
    ``digest`` (operator-api.md, "Assessment report ConfigMap"). Returns a
    :class:`VerifiedReport`; its ``problem`` says what is wrong otherwise.
    """
    def refused(problem):
        return VerifiedReport(configmap_name, digest, None, problem)

    if configmap is None:
        return VerifiedReport(configmap_name, digest, None, "report ConfigMap %s was not found" % configmap_name,
                              unavailable=True)
    data = _mapping(configmap, "data")
    text = data.get(REPORT_KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        return refused("report ConfigMap %s has no %s" % (configmap_name, REPORT_KEY))
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate escape (\ud800): no UTF-8 bytes, so nothing the digest covers
        return refused("%s in ConfigMap %s is not text: it holds a lone UTF-16 surrogate, which no bytes "
                       "hashed to the recorded digest can hold" % (REPORT_KEY, configmap_name))
    actual = sha256_digest(encoded)
    if actual != digest:
        return refused("the bytes of %s in ConfigMap %s hash to %s, not to the recorded digest %s"
                       % (REPORT_KEY, configmap_name, actual, digest))
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return refused("report %s matches its digest but is not valid JSON" % configmap_name)
    if not isinstance(decoded, dict):
        return refused("report %s matches its digest but is not a JSON object" % configmap_name)
    return VerifiedReport(configmap_name, digest, report(decoded), None)


# ---------------------------------------------------------------------------------------------
# What people write: JSON patch operations (RFC 6902) on spec.approval, spec.revocation, spec.acknowledgements


def approval_operations(user, expires, reason):
    """Add ``spec.approval`` {user, expires (RFC 3339 UTC), reason}; set once (operator-api.md rule 1)."""
    return [{"op": "add", "path": "/spec/approval",
             "value": {"user": user, "expires": format_time(expires), "reason": reason}}]


def revocation_operations(user, time, reason):
    """Add ``spec.revocation`` {user, time (RFC 3339 UTC), reason}; set once (operator-api.md rule 2)."""
    return [{"op": "add", "path": "/spec/revocation",
             "value": {"user": user, "time": format_time(time), "reason": reason}}]


def acknowledgement_operations(rollout_view, release, user, time):
    """Append {release, user, time} to ``spec.acknowledgements`` (append-only, rule 3); create the list if absent."""
    entry = {"release": release, "user": user, "time": format_time(time)}
    if rollout_view.acknowledgements:
        return [{"op": "add", "path": "/spec/acknowledgements/-", "value": entry}]
    return [{"op": "add", "path": "/spec/acknowledgements", "value": [entry]}]


def self_subject_username(review):
    """``status.userInfo.username`` of a SelfSubjectReview (authentication.k8s.io/v1), or None."""
    value = _text(review, "status.userInfo.username")
    return value if isinstance(value, str) and value else None


# ---------------------------------------------------------------------------------------------
# ClusterRuntime and plans


PLAN_SELECTOR = "%s=plan" % ROLE_LABEL
SOURCE_APPLICATIONS = "applications"
# An OCI reference pinned by digest: ASCII registry/path characters only, never starting with "-" (so it
# can never be read as an option), then @sha256:<64 hex>.
IMAGE_BY_DIGEST = r"\A[A-Za-z0-9][A-Za-z0-9._/:-]*@sha256:[0-9a-f]{64}\Z"  # re.match(IMAGE_BY_DIGEST, text)


class Runtime(Record):
    """ClusterRuntime ``cluster``: the desired-state digests of its active and candidate plans."""

    active_plan: Union[str, Invalid, None]
    candidate_plan: Union[str, Invalid, None]


def runtime(obj):
    """Read the ClusterRuntime object (dict) into a :class:`Runtime`."""
    return Runtime(_digest(obj, "status.activePlan"), _digest(obj, "status.candidatePlan"))


class Plan(Record):
    """A plan ConfigMap: ``recipe`` is the exact text of ``data["recipe.json"]``; ``render_flags`` a list of str."""

    name: Union[str, Invalid, None]
    digest: Union[str, Invalid, None]  # the desired-state digest annotation
    source: Union[str, Invalid, None]  # the source annotation
    recipe: Union[str, Invalid, None]
    recipe_digest: Union[str, Invalid, None]
    render_flags: Union[List[str], Invalid, None]
    aicr_image: Union[str, Invalid, None]
    bundle: Union[str, Invalid, None]


def plan_configmap_name(digest):
    """``aicr-plan-<first 16 hex of the desired-state digest>``."""
    return PLAN_PREFIX + digest[len("sha256:"):][:16]


def _data(obj, key):
    """``data[key]`` of a ConfigMap."""
    return _keyed(obj, "data", key)


def _annotation(obj, key):
    return _keyed(obj, "metadata.annotations", key)


def _render_flags(obj):
    text = _data(obj, "renderFlags")
    if not isinstance(text, str):
        return text
    try:
        flags = json.loads(text)
    except (ValueError, RecursionError):
        return Invalid("data[renderFlags]", "not JSON")
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        return Invalid("data[renderFlags]", "not a JSON array of strings")
    return flags


def plan(obj):
    """Read a plan ConfigMap (dict) into a :class:`Plan`."""
    digest = _annotation(obj, DIGEST_ANNOTATION)
    if isinstance(digest, str) and not is_digest(digest):
        digest = Invalid("metadata.annotations[%s]" % DIGEST_ANNOTATION, "not sha256:<64 lowercase hex>")
    recipe_digest = _data(obj, "recipeDigest")
    if isinstance(recipe_digest, str) and not is_digest(recipe_digest):
        recipe_digest = Invalid("data[recipeDigest]", "not sha256:<64 lowercase hex>")
    return Plan(name=_text(obj, "metadata.name"), digest=digest, source=_annotation(obj, SOURCE_ANNOTATION),
                recipe=_data(obj, "recipe.json"), recipe_digest=recipe_digest, render_flags=_render_flags(obj),
                aicr_image=_data(obj, "aicrImage"), bundle=_data(obj, "bundle"))


def list_items(listed, what="objects"):
    """The ``items`` of a List answer (``what``: the resource listed, for the message) that are objects (dicts).

    An answer that is not a List (no ``items`` array: ``{}``, a single object) raises AicrError, as
    kubectl refuses one (``Object 'Kind' is missing in '{}'``, apimachinery's unstructured decoder):
    a list that could not be read must never read as "nothing there". ``"items": null`` is an empty
    List, as Go decodes it.
    """
    if isinstance(listed, dict) and "items" in listed and listed["items"] is None:
        return []
    items = listed.get("items") if isinstance(listed, dict) else None
    if not isinstance(items, list):
        if not isinstance(listed, dict):
            found = "a JSON %s" % type(listed).__name__.replace("NoneType", "null").replace("str", "string")
        elif not listed.get("kind"):
            found = "an object without kind or items"
        else:
            found = "a %s without an items array" % str(listed.get("kind"))[:60]
        raise AicrError("the API server's answer to the list of %s is not a List (%s); "
                        "refusing to read it as an empty list" % (what, found))
    return [item for item in items if isinstance(item, dict)]


def list_continue(listed):
    """``metadata.continue`` of a List answer (the token for the next page), or None when it is the last page."""
    token = _text(listed, "metadata.continue") if isinstance(listed, dict) else None
    return token.raw if isinstance(token, str) and token else None  # sent as it is, never as shown


# ---------------------------------------------------------------------------------------------
# Pinned facts: what a decision rests on, as JSON pointers (RFC 6901) that a write tests (RFC 6902 ``test``)


FACT_POINTERS = {
    "uid": "/metadata/uid",
    "target": "/spec/to/desiredStateDigest",
    "assessment": "/spec/assessment/digest",
    "approval-required": "/spec/approvalRequired",
    "deadline": "/spec/deadline",
    "approval": "/spec/approval",
    "revocation": "/spec/revocation",
    "acknowledgements": "/spec/acknowledgements",
    "records": "/spec/transitionRecords",  # what approve (PreApply) and acknowledge (PostApply) acknowledge
    "steps": "/spec/steps",                # what an approval lets the operator run
    "phase": "/status/phase",
    "outcome": "/status/outcome",
    "outcome-label": "/metadata/labels/%s" % OUTCOME_LABEL.replace("~", "~0").replace("/", "~1"),
    "awaited": "/status/awaitingAcknowledgement/release",
}


def _pointer_tokens(pointer):
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _pointer(tokens):
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def pin_operation(obj, fact):
    """The JSON-patch ``test`` operation that holds ``fact`` (a key of :data:`FACT_POINTERS`) of ``obj`` (the
    rollout as read, a dict) to the value read.

    Where a parent of the fact's path is absent, the test is on that parent, with value null (an absent
    member tests equal to null in json-patch v4, as kube-apiserver applies it; a test on a path below an
    absent member would always fail); where a parent is not an object, the test is on that parent's value.
    """
    tokens = _pointer_tokens(FACT_POINTERS[fact])
    node = obj
    for depth, token in enumerate(tokens):
        value = node.get(token) if isinstance(node, dict) else None
        if value is None or depth == len(tokens) - 1 or not isinstance(value, dict):
            return {"op": "test", "path": _pointer(tokens[:depth + 1]), "value": value}
        node = value
    raise ValueError(fact)


def pointer_value(obj, pointer):
    """The value at ``pointer`` in ``obj`` (None where any member on the way is absent or not an object)."""
    node = obj
    for token in _pointer_tokens(pointer):
        node = node.get(token) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def fact_value(obj, fact):
    """The value of ``fact`` (a key of :data:`FACT_POINTERS`) in ``obj``: the value at its pointer; None where a
    member on the way is absent; ``("not an object", pointer, value)`` where a member on the way is present but
    not an object (so that two such reads differ exactly when :func:`pin_operation` tests would)."""
    tokens = _pointer_tokens(FACT_POINTERS[fact])
    node = obj
    for depth, token in enumerate(tokens):
        node = node.get(token)
        if node is None or depth == len(tokens) - 1:
            return node
        if not isinstance(node, dict):
            return ("not an object", _pointer(tokens[:depth + 1]), json.dumps(node, sort_keys=True))


def json_equal(a, b):
    """Structural equality of two decoded JSON values, as a JSON-patch ``test`` compares (true is not 1)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, str) and isinstance(b, str):  # ClusterText is its text
        return a == b
    return type(a) is type(b) and a == b

