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
# time.RFC3339 as Go's time.Parse reads it: ASCII digits only, upper-case T and Z, an hour of one or two
# digits (the layout's "15"), a fraction after the seconds with "." or "," and any number of digits (Go
# reads only the first 9), an offset +hh:mm.
_RFC3339 = re.compile(r"\A([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
                      r"(Z|[+-][0-9]{2}:[0-9]{2})\Z")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class OutOfRange:
    """A valid RFC 3339 time that Python's ``datetime`` cannot hold: its UTC instant is before
    0001-01-01T00:00:00Z (year 0000, or year 0001 with a positive offset) or after 9999-12-31T23:59:59.999999Z
    (9999-12-31 with a negative offset). Go's ``time.Time`` holds it (Go's years run far wider).

    ``text``: the time as read; ``seconds``: Unix seconds (int) and ``nanoseconds`` (0 to 999999999) of its
    instant, as Go's ``Time.Unix`` and ``Time.Nanosecond`` give them. It orders against aware datetimes (before
    or after every one), and ``str()`` is the text as read with where it lies, e.g.
    ``9999-12-31T23:59:59-01:00 (after 9999-12-31T23:59:59Z)``: shown as what it is, never as invalid, and
    never rewritten in UTC (RFC 3339 has no year 10000).
    """

    __slots__ = ("text", "seconds", "nanoseconds")

    def __init__(self, text, seconds, nanoseconds=0):
        self.text, self.seconds, self.nanoseconds = text, seconds, nanoseconds

    @property
    def after(self):
        """True when the instant is after every datetime, False when before every one."""
        return self.seconds > 0

    def timestamp(self):
        """Unix seconds (float), as ``datetime.timestamp``."""
        return self.seconds + self.nanoseconds / 1e9

    def __str__(self):
        return "%s (%s)" % (self.text, "after 9999-12-31T23:59:59Z" if self.after else "before 0001-01-01T00:00:00Z")

    __repr__ = __str__

    def _key(self, other):
        if isinstance(other, OutOfRange):
            return (self.seconds, self.nanoseconds), (other.seconds, other.nanoseconds)
        if isinstance(other, datetime.datetime) and other.tzinfo is not None:
            return (1 if self.after else -1), 0
        return None

    def __eq__(self, other):
        keys = self._key(other)
        return NotImplemented if keys is None else keys[0] == keys[1]

    def __hash__(self):
        return hash((self.seconds, self.nanoseconds))

    def __lt__(self, other):
        keys = self._key(other)
        return NotImplemented if keys is None else keys[0] < keys[1]

    def __le__(self, other):
        keys = self._key(other)
        return NotImplemented if keys is None else keys[0] <= keys[1]

    def __gt__(self, other):
        keys = self._key(other)
        return NotImplemented if keys is None else keys[0] > keys[1]

    def __ge__(self, other):
        keys = self._key(other)
        return NotImplemented if keys is None else keys[0] >= keys[1]


def is_time(value):
    """True for what :func:`parse_rfc3339` returns for a time: an aware datetime or an :class:`OutOfRange`."""
    return isinstance(value, (datetime.datetime, OutOfRange))


def _days_in_month(year, month):
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]


def _days_from_civil(year, month, day):
    """Days from 1970-01-01 to the proleptic Gregorian date (H. Hinnant's ``days_from_civil``; year 0 too)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_rfc3339(text, leap_second=False):
    """An RFC 3339 time, as Go's ``time.Parse(time.RFC3339, text)`` accepts it (``2026-11-30T12:00:00Z``;
    years 0000 to 9999; a fraction of any length after ``.`` or ``,``; offsets ``+hh:mm`` up to 24:60, as
    Go's range checks allow), -> an aware UTC datetime (the fraction truncated to microseconds), an
    :class:`OutOfRange` for a valid time outside datetime's range, or None when Go refuses it (lower-case
    ``t`` or ``z``, a 60th second, Feb 30, hour 24, ``+0530``, non-ASCII digits, spaces).

    ``leap_second``: a second of 60 reads as 59 (the operator's times); else it is not a time, as Go
    refuses it. tests/test_rfc3339_go.py compares this with Go's time.Parse on generated inputs.
    """
    match = _RFC3339.match(text) if isinstance(text, str) else None
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7) or "", match.group(8)
    if leap_second and second == 60:
        second = 59
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and hour <= 23 and minute <= 59
            and second <= 59):
        return None
    offset = 0
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 24 or minutes > 60:  # Go's limits ("time zone offset hour/minute out of range")
            return None
        offset = (1 if zone[0] == "+" else -1) * (hours * 3600 + minutes * 60)
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    nanoseconds = int((fraction + "000000000")[:9])
    try:
        return _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanoseconds // 1000)
    except OverflowError:
        return OutOfRange(text, seconds, nanoseconds)


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
    """An aware datetime, or epoch seconds, -> RFC 3339 UTC with whole seconds, ``2026-11-30T12:00:00Z``.
    (An :class:`OutOfRange` has no such form: callers show it with ``str()``.) The year always has four digits
    (strftime's ``%Y`` writes year 1 as ``1`` on glibc, which is not RFC 3339)."""
    if isinstance(moment, datetime.datetime):
        utc = moment.astimezone(datetime.timezone.utc)
        fields = (utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second)
    else:
        utc = time.gmtime(moment)
        fields = (utc.tm_year, utc.tm_mon, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec)
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % fields


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


def human_duration(seconds):
    """Seconds -> ``2d3h``, ``3h59m``, ``4m10s``, ``42s`` (whole units, truncated)."""
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return "%dd%dh" % (days, hours)
    if hours:
        return "%dh%dm" % (hours, minutes)
    if minutes:
        return "%dm%ds" % (minutes, secs)
    return "%ds" % secs


# The API server's clock and this machine's further apart than this are said before a write (approve refuses, and
# describe offers no approve line).
CLOCK_SKEW_LIMIT = datetime.timedelta(minutes=5)


def clock_skew(client):
    """When the API server's clock (its ``Date`` header, ``client.server_time()``) and this machine's differ by
    more than :data:`CLOCK_SKEW_LIMIT`: one clause naming both clocks and how far apart they are; else None
    (None too before any dated answer: then the times written are this machine's, see commands.writes.now_utc).

    The times a write records (an approval's expiry, a revocation's or an acknowledgement's time) are the API
    server's; a server far behind stores an approval that every other clock already reads as expired."""
    server = client.server_time()
    if server is None:
        return None
    local = datetime.datetime.now(datetime.timezone.utc)
    apart = (server - local).total_seconds()
    if abs(apart) <= CLOCK_SKEW_LIMIT.total_seconds():
        return None
    return ("the API server's clock (its Date header) says %s and this machine's %s: the server is %s %s, more "
            "than %s" % (format_utc(server), format_utc(local), human_duration(apart),
                         "ahead" if apart > 0 else "behind", human_duration(CLOCK_SKEW_LIMIT.total_seconds())))
