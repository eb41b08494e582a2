"""Small helpers every layer uses, each written once: RFC 3339 times and the SIGTERM/SIGHUP ending.

A leaf: it imports only :mod:`kubectl_aicr.errors` (the socket watchdog is the network leaf's,
:func:`kubectl_aicr.kube.net.watchdog`).
"""

import datetime
import re
import signal
import threading
import time

from .errors import AicrError

RFC3339_UTC = "%Y-%m-%dT%H:%M:%SZ"
_RFC3339 = re.compile(r"\A(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")


def parse_rfc3339(text, leap_second=False):
    """An RFC 3339 time (``2026-11-30T12:00:00Z``, offsets and fractions allowed) -> aware UTC datetime
    (microseconds), or None when it is not one. ``leap_second``: a second of 60 reads as 59 (the operator's
    times); else it is not a time, as Go's ``time.Parse`` refuses it."""
    match = _RFC3339.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    try:
        micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
        tz = datetime.timezone.utc
        if zone not in ("Z", "z"):
            sign = 1 if zone[0] == "+" else -1
            tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        if leap_second:
            second = min(second, 59)
        value = datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        return value.astimezone(datetime.timezone.utc)
    except (ValueError, OverflowError):
        return None


def format_utc(moment):
    """An aware datetime, or epoch seconds, -> RFC 3339 UTC with whole seconds, ``2026-11-30T12:00:00Z``."""
    if isinstance(moment, datetime.datetime):
        return moment.astimezone(datetime.timezone.utc).strftime(RFC3339_UTC)
    return time.strftime(RFC3339_UTC, time.gmtime(moment))


class Terminated(AicrError):
    """The command received SIGTERM or SIGHUP (exit status 128 + the signal, as a shell reports it)."""


def _on_termination(signum, frame):
    terminated = Terminated("terminated by %s" % signal.Signals(signum).name)
    terminated.exit_code = 128 + signum
    raise terminated


def end_on_termination():
    """From now on SIGTERM and SIGHUP raise :class:`Terminated`, so every clean-up (temporary files, the
    private credential folder) runs. Returns {signal: previous handler} for :func:`restore_signals`; {}
    outside the main thread (only it may set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signum = getattr(signal, name)
            previous[signum] = signal.signal(signum, _on_termination)
    return previous


def restore_signals(previous):
    """Put back the handlers :func:`end_on_termination` replaced."""
    for signum, handler in previous.items():
        signal.signal(signum, handler)
