"""What approve, revoke and acknowledge share: who the caller is, and the conditional write.

Sources: README.md ("approve, revoke, acknowledge") and docs/operator-api.md ("What the API
server enforces"); Kubernetes API conventions on optimistic concurrency
(resourceVersion) and RFC 6902 (JSON Patch ``test``).

Every write is a JSON patch whose first operation tests ``/metadata/resourceVersion``
against the object the decision was checked on: the server applies it only to
that exact state, never as a blind overwrite. When the server refuses it (409
Conflict, or 422 for a failed ``test``) the rollout is read again and checked
again: a changed rollout is re-decided (a refusal now names, for example, who
approved first), an unchanged one means the refusal was the server's own
(an admission rule) and it is shown as it came. All of this stays inside the
command's 30-second deadline.
"""

import datetime
import time

from .. import objects, output
from ..cli import MAX_REASON_CHARS, parse_duration
from ..errors import ApiError, AicrError, RefusedError, UsageError

JSON_PATCH = "application/json-patch+json"
MAX_ATTEMPTS = 8            # reads and writes of one decision, when others keep changing the rollout
BACKOFF_SECONDS = 0.1       # the pause before the second attempt, doubling up to MAX_BACKOFF_SECONDS
MAX_BACKOFF_SECONDS = 2.0
MIN_EXPIRES_SECONDS = 60


def who_am_i(client):
    """The caller's username, from a SelfSubjectReview (``authentication.k8s.io/v1``, Kubernetes 1.28+).

    Raises AicrError when the server does not offer it or answers without a username:
    nothing is written without knowing who writes it.
    """
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        review = client.request("POST", objects.SELF_SUBJECT_REVIEW_PATH, body=body,
                                 content_type="application/json")
    except ApiError as exc:
        if exc.code in (404, 405):
            raise AicrError("the API server does not offer SelfSubjectReview (authentication.k8s.io/v1, "
                            "Kubernetes 1.28 or newer), so your username cannot be learned; nothing was written"
                            ) from None
        if exc.code == 403:
            raise AicrError("the API server refused the SelfSubjectReview that tells who you are (it needs "
                            "Kubernetes 1.28 or newer, where every user may create one): %s; nothing was written"
                            % exc) from None
        raise
    username = objects.self_subject_username(review)
    if not username:
        raise AicrError("the API server's SelfSubjectReview named no username; nothing was written")
    return username


def now_utc(client=None):
    """The current time, aware UTC, whole seconds: the API server's clock when ``client`` has heard it
    (so a wrong local clock never writes a wrong expiry or time), else this machine's."""
    now = client.server_time() if client is not None else None
    return (now or datetime.datetime.now(datetime.timezone.utc)).replace(microsecond=0)


def conditional_patch(client, name, decide):
    """Read rollout ``name``, let ``decide(rollout)`` check it and return JSON patch operations, apply them
    pinned to the resourceVersion read; on a conflict read, decide and try again until the deadline.

    ``decide`` raises RefusedError to refuse. Returns the rollout object as the server stored it (dict).
    """
    path = objects.rollout_path(name)
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(min(BACKOFF_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS, client.deadline.remaining()))
        current = objects.rollout(client.get(path))
        operations = decide(current)
        version = current.resource_version
        if not isinstance(version, str) or not version:
            raise RefusedError("rollout %s has no resourceVersion; refusing to write without a precondition"
                               % name)
        patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] + operations
        try:
            return client.request("PATCH", path, body=patch, content_type=JSON_PATCH)
        except ApiError as exc:
            if exc.code not in (409, 422):
                raise
            client.deadline.remaining()
            again = objects.rollout(client.get(path))
            if again.resource_version == version:
                raise  # the state is what we checked: this refusal is the server's own rule
            # The rollout changed under us: decide again on the new state (next loop, after a pause).
    raise RefusedError("rollout %s kept changing while this command tried to write (%d attempts); nothing was "
                       "written; try again" % (name, MAX_ATTEMPTS))


def check_stored(stored, sent_to, uid, what, **expected):
    """The rollout the server answered a write with must be the one written (name and UID) and hold
    exactly what was sent (``expected``: field of ``what`` -> value); RefusedError otherwise."""
    record = getattr(stored, what)
    if stored.name != sent_to or (uid and stored.uid != uid) or record is None or isinstance(record, objects.Invalid) \
            or any(getattr(record, key) != value for key, value in expected.items()):
        raise RefusedError("the API server answered the %s of rollout %s with something other than what was "
                           "written; check with kubectl aicr describe %s" % (what, sent_to, sent_to))


def require_open(rollout, action):
    """Refuse when the rollout has ended (it carries an outcome)."""
    if rollout.ended:
        raise RefusedError("rollout %s has ended (outcome %s); it cannot be %s"
                           % (rollout.name, rollout.outcome, action))


def refuse_invalid(rollout, *fields):
    """Refuse to decide on a rollout whose needed fields are malformed (never read as valid)."""
    for value in fields:
        if isinstance(value, objects.Invalid):
            raise RefusedError("rollout %s: %s; refusing to decide on a malformed rollout" % (rollout.name, value))


def shown_time(value):
    """RFC 3339 UTC text for a datetime; anything else (Invalid, None) as it is."""
    return objects.format_time(value) if isinstance(value, datetime.datetime) else value


def checked_reason(reason):
    """--reason: required, 1 to 1024 characters (operator-api.md rule 1), one line of printable text
    (it is stored for good and shown by other tools). UsageError otherwise."""
    if reason is None:
        raise UsageError("--reason TEXT is required")
    if not reason:
        raise UsageError("--reason must not be empty")
    if not reason.strip():
        raise UsageError("--reason must not be blank")
    if len(reason) > MAX_REASON_CHARS:
        raise UsageError("--reason is %d characters; at most %d are allowed" % (len(reason), MAX_REASON_CHARS))
    if output.safe(reason) != reason:
        raise UsageError("--reason must be one line of printable text (it holds %s)" % output.safe(
            next(c for c in reason if output.safe(c) != c)))
    return reason


def checked_expires(expires):
    """--expires: a non-negative Go duration in seconds, or None when not given. UsageError otherwise."""
    if expires is None:
        return None
    seconds = parse_duration(expires)
    if seconds < 0:
        raise UsageError("--expires %s is negative; an approval cannot end in the past" % expires)
    if seconds < MIN_EXPIRES_SECONDS:
        raise UsageError("--expires %s would end the approval almost at once; give at least 1m (an approval "
                         "can be neither changed nor extended)" % expires)
    return seconds


def print_record_steps(rollout, when, heading, release=None):
    """Print the transition-record steps of ``when`` (PreApply or PostApply) that a decision covers."""
    records = rollout.transition_records if isinstance(rollout.transition_records, list) else []
    lines = []
    for record in records:
        if not isinstance(record, objects.TransitionRecord) or (release is not None and record.release != release):
            continue
        for step in record.steps if isinstance(record.steps, list) else []:
            if isinstance(step, objects.RecordStep) and step.when == when:
                lines.append("  %s %s: %s" % (output.safe(record.release), output.safe(step.id),
                                              output.safe(step.description)))
    if lines:
        output.write_lines([heading] + lines)
