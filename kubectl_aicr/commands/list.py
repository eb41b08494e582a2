"""``kubectl aicr list [--all]``: the rollouts, those that need a person first.

Source: issue 16 ("kubectl aicr list") and operator-api.md. One LIST of RuntimeRollouts,
read in pages (``limit`` and the ``continue`` token, as ``kubectl get --chunk-size`` does,
k8s.io/apimachinery ``ListOptions``), smaller pages when one is over the bound on one answer (see
:func:`list_rollouts`), all inside the command's 30-second deadline. It only
reads (``list`` on runtimerollouts), so a viewer can run it; it writes nothing.

Columns:

- NAME, PHASE: ``metadata.name``, ``status.phase`` (an unknown phase is shown as it is); an ended
  rollout's outcome follows its phase in parentheses, ``Completed (Succeeded)``, ``Completed (Failed)``,
  ``Completed (Expired)``, ``Completed (Revoked)`` (the outcome label, else ``status.outcome``;
  operator-api.md), as kubectl's STATUS column reads ``Terminating (...)``-style states in one cell.
- APPROVAL: ``pending``, ``not given`` (ended without one), ``not required``,
  ``approved by USER until TIME``, ``expired`` (the approval's expiry has passed),
  ``revoked by USER``.
- WAITING ON: the release awaiting acknowledgement (``status.awaitingAcknowledgement``).
- DEADLINE: time left until ``spec.deadline`` (``in 3h59m``) or since it passed (``2h ago``).
- AGE: since ``metadata.creationTimestamp``; both use kubectl's AGE format
  (k8s.io/apimachinery ``util/duration.HumanDuration``).

Rows that need a person (awaiting an approval or an acknowledgement) come first, soonest
deadline first; then the others by name. A rollout has ended when its phase is Completed
or it carries an outcome; ended rollouts are shown only with ``--all``, but one whose outcome
is malformed (shown as ``<invalid ...>``) is not known to have ended and is always shown.
"""

import datetime

from .. import helpers, output
from ..aicr import objects
from ..kube import clientcmd, rest
from ..errors import AicrError
from ..aicr.objects import Invalid

PAGE_LIMIT = 250        # items per page (kubectl's --chunk-size default is 500)
MAX_ROLLOUTS = objects.MAX_ITEMS
HEADERS = ["NAME", "PHASE", "APPROVAL", "WAITING ON", "DEADLINE", "AGE"]


def run(invocation, now=None):
    """List the rollouts (``invocation.all``: ended ones too); returns 0. Raises ApiError, TransportError."""
    with clientcmd.connect(invocation) as client:
        rollouts = list_rollouts(client)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    shown = [r for r in rollouts if getattr(invocation, "all", False) or not r.ended
             or isinstance(r.outcome, Invalid)]  # a malformed outcome: not known to have ended, so shown
    if not shown:
        output.write_lines(["No rollouts%s." % ("" if getattr(invocation, "all", False)
                                                 else " in progress (--all shows the ended ones too)")])
        return 0
    output.write_lines(render(shown, now))
    return 0


def list_rollouts(client, limit=PAGE_LIMIT):
    """Every RuntimeRollout as a :class:`objects.Rollout`, following ``continue`` tokens page by page.

    Each answer stays within the client's bound on one response (rest.MAX_RESPONSE_BYTES, 16 MiB): a
    page refused for its size is asked for again with half the ``limit`` (the same ``continue`` token),
    down to 1, and the rest of the list is read in pages of that size (kubectl has no such bound: it
    reads 260 rollouts of 70 KB, 18 MB, in one answer). Raises AicrError when one rollout alone is over
    the bound (naming the one it follows), when the server repeats a token, sends more than
    :data:`MAX_ROLLOUTS` items or more pages than those fill (at most MAX_ROLLOUTS // limit + 2 for the
    current limit: bounds on the plugin's work and memory, whatever a server sends: a token is kept only
    as its hash); ApiError as the server answers (410 Gone for an expired token, 403 without ``list``).
    """
    rollouts, token, seen = [], None, set()
    pages_left = MAX_ROLLOUTS // limit + 2
    while pages_left > 0:
        pages_left -= 1
        query = {"limit": str(limit)}
        if token:
            query["continue"] = token
        try:
            listed = client.get(objects.rollout_path(), query=query)
        except rest.ResponseTooLarge:
            if limit == 1:
                raise AicrError(_one_too_large(rollouts)) from None
            limit = limit // 2
            pages_left = (MAX_ROLLOUTS - len(rollouts)) // limit + 2
            continue
        rollouts += [objects.rollout(item) for item in objects.list_items(listed, "RuntimeRollouts")]
        if len(rollouts) > MAX_ROLLOUTS:
            raise AicrError("the API server listed more than %d RuntimeRollouts, more than the plugin reads"
                            % MAX_ROLLOUTS)
        token = objects.list_continue(listed)
        if not token:
            return rollouts
        if hash(token) in seen:  # equal tokens hash alike; a collision only ends the listing early, loudly
            raise AicrError("the API server repeated a continue token while listing RuntimeRollouts")
        seen.add(hash(token))
    raise AicrError("the API server sent more than %d pages of RuntimeRollouts, more than %d rollouts fill"
                    % (MAX_ROLLOUTS // limit + 2, MAX_ROLLOUTS))


def _one_too_large(rollouts):
    """The message for a page of one RuntimeRollout over the bound: its name is unknown (it was not read),
    the one before it is (the list is in name order)."""
    after = rollouts[-1].name if rollouts else None
    where = ("the one after %s in name order" % after if isinstance(after, str)
             else "the first in name order")
    return ("one RuntimeRollout (%s) is larger than the plugin's bound on one API answer (%d bytes); kubectl "
            "has no such bound: read it with kubectl get runtimerollouts" % (where, rest.MAX_RESPONSE_BYTES))


def human_duration(seconds):
    """kubectl's AGE format (``HumanDuration``): ``45s``, ``3m10s``, ``42m``, ``3h59m``, ``12h``, ``3d4h``, ``20d``,
    ``2y30d``, for a non-negative number of seconds."""
    seconds = int(seconds)
    if seconds < 120:
        return "%ds" % seconds
    minutes = seconds // 60
    if minutes < 10:
        return "%dm%ds" % (minutes, seconds % 60) if seconds % 60 else "%dm" % minutes
    if minutes < 180:
        return "%dm" % minutes
    hours = minutes // 60
    if hours < 8:
        return "%dh%dm" % (hours, minutes % 60) if minutes % 60 else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    days = hours // 24
    if hours < 24 * 8:
        return "%dd%dh" % (days, hours % 24) if hours % 24 else "%dd" % days
    if hours < 24 * 365 * 2:
        return "%dd" % days
    years = days // 365
    if hours < 24 * 365 * 8:
        return "%dy%dd" % (years, days % 365) if days % 365 else "%dy" % years
    return "%dy" % years


def _deadline(value, now):
    if not isinstance(value, datetime.datetime):
        return value
    seconds = (value - now).total_seconds()
    return "in %s" % human_duration(seconds) if seconds > 0 else "%s ago" % human_duration(-seconds)


def _age(value, now):
    if not isinstance(value, datetime.datetime):
        return value
    return human_duration(max(0, (now - value).total_seconds()))


def approval_text(rollout, now):
    """The APPROVAL column (see the module docstring); Invalid fields are shown as such."""
    approval, revocation = rollout.approval, rollout.revocation
    if isinstance(revocation, Invalid):
        return revocation
    if isinstance(revocation, objects.Revocation):
        return "revoked by %s" % output.or_none(revocation.user)
    if isinstance(approval, Invalid):
        return approval
    if isinstance(approval, objects.Approval):
        expires = approval.expires
        if helpers.is_time(expires) and expires <= now:
            return "expired"
        if isinstance(expires, datetime.datetime):
            expires = objects.format_time(expires)
        return "approved by %s until %s" % (output.or_none(approval.user), output.or_none(expires))
    if isinstance(rollout.approval_required, Invalid):
        return rollout.approval_required
    if rollout.approval_required is False:
        return "not required"
    if rollout.approval_required is None:
        return "<unknown>"
    return "not given" if rollout.ended else "pending"


def _order(rollout):
    deadline = rollout.deadline if helpers.is_time(rollout.deadline) else None
    name = rollout.name if isinstance(rollout.name, str) else ""
    if rollout.needs_person:
        return (0, deadline is None, deadline or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc), name)
    return (1 if not rollout.ended else 2, False, datetime.datetime.min.replace(tzinfo=datetime.timezone.utc), name)


def phase_text(rollout):
    """The PHASE column: ``status.phase``, then the outcome in parentheses once there is one
    (``Completed (Succeeded)``); an Invalid outcome is shown as such."""
    if not rollout.outcome:
        return rollout.phase
    phase = "<none>" if rollout.phase is None else rollout.phase
    return "%s (%s)" % (phase, rollout.outcome)


def render(rollouts, now):
    """The table's lines, rows in :func:`_order`; every cell escaped by :func:`output.table`."""
    rows = [[r.name, phase_text(r), approval_text(r, now), r.awaiting_acknowledgement, _deadline(r.deadline, now),
             _age(r.created, now)] for r in sorted(rollouts, key=_order)]
    return output.table(HEADERS, rows, indent=0)
