"""Small helpers every layer uses, each written once: RFC 3339 and HTTP times, the SIGTERM/SIGHUP ending.

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


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parse_http_date(text):
    """An HTTP date (a ``Date`` header) -> aware UTC datetime, or None when it is not one. The three forms
    RFC 9110 section 5.6.7 asks recipients to read, as Go's ``net/http.ParseTime`` reads them: IMF-fixdate
    ``Sun, 06 Nov 1994 08:49:37 GMT``, RFC 850 ``Sunday, 06-Nov-94 08:49:37 GMT`` (a two-digit year: 69 to
    99 are 19xx, the rest 20xx, as Go's ``06``) and asctime ``Sun Nov  6 08:49:37 1994``. The weekday
    must be a day's name but is not checked against the date (Go does not either)."""
    words = text.split() if isinstance(text, str) else []
    if len(words) == 6 and words[0][:-1] in _DAYS and words[0][-1:] == "," and words[5] == "GMT" \
            and len(words[1]) == 2 and len(words[3]) == 4:
        day, month, year, clock = words[1], words[2], words[3], words[4]
    elif len(words) == 4 and words[0][:-1] in _DAY_NAMES and words[0][-1:] == "," and words[3] == "GMT" \
            and len(words[1]) == 9 and words[1][2] == "-" and words[1][6] == "-":
        day, month, year, clock = words[1][:2], words[1][3:6], words[1][7:], words[2]
        year = ("19" if year.isdigit() and int(year) >= 69 else "20") + year
    elif len(words) == 5 and words[0] in _DAYS and len(words[4]) == 4 and 1 <= len(words[2]) <= 2:
        day, month, year, clock = words[2], words[1], words[4], words[3]
    else:
        return None
    parts = clock.split(":")
    numbers = [day, year] + parts
    if month not in _MONTHS or len(parts) != 3 or any(len(p) != 2 for p in parts) \
            or not all(n.isdigit() and n.isascii() for n in numbers):
        return None
    try:
        return datetime.datetime(int(year), _MONTHS.index(month) + 1, int(day), int(parts[0]), int(parts[1]),
                                 int(parts[2]), tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def format_utc(moment):
    """An aware datetime, or epoch seconds, -> RFC 3339 UTC with whole seconds, ``2026-11-30T12:00:00Z``."""
    if isinstance(moment, datetime.datetime):
        return moment.astimezone(datetime.timezone.utc).strftime(RFC3339_UTC)
    return time.strftime(RFC3339_UTC, time.gmtime(moment))


EXIT_INTERRUPTED = 128 + signal.SIGINT  # Ctrl-C (KeyboardInterrupt): 130, as a shell reports it


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
