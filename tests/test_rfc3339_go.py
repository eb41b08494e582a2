"""RFC 3339 times are read as Go reads them: ``helpers.parse_rfc3339`` against Go's own
``time.Parse(time.RFC3339, s)``, on generated inputs.

A test-only Go program (standard library only, built with ``go run``; nothing built with Go ships) reads
one input a line and prints ``ok <Unix seconds> <nanoseconds>`` or ``error``. The plugin must refuse
exactly what Go refuses, and give the same instant for the rest: a datetime (microseconds, the fraction
truncated) or, for a time Python's datetime cannot hold (year 0000; 9999-12-31 with a negative offset), an
``OutOfRange`` with Go's seconds and nanoseconds. Skipped where no ``go`` is installed.
"""

import datetime
import os
import random
import shutil
import subprocess

import pytest

from kubectl_aicr import helpers

GO_PROGRAM = r'''
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		t, err := time.Parse(time.RFC3339, in.Text())
		if err != nil {
			fmt.Fprintln(out, "error")
			continue
		}
		fmt.Fprintln(out, "ok", t.Unix(), t.Nanosecond())
	}
}
'''

PARTS = {
    "year": ["0000", "0001", "0004", "0100", "0400", "1900", "1969", "1970", "2000", "2024", "2026", "9999",
             "999", "10000", "\u0662\u0660\u0662\u0666"],
    "month": ["01", "02", "03", "11", "12", "00", "13", "1", "\uff11\uff12"],
    "day": ["01", "09", "28", "29", "30", "31", "00", "32", "1"],
    "t": ["T", "t", " ", "_"],
    "hour": ["00", "12", "23", "24", "1"],
    "minute": ["00", "59", "60"],
    "second": ["00", "30", "59", "60", "61"],
    "fraction": ["", ".", ",", ".0", ",5", ".5", ".123", ".999999", ".9999995", ".123456789", ".1234567891",
                 ".12345678912345", ".\u0665", ".1.2"],
    "zone": ["Z", "z", "+00:00", "-00:00", "+01:00", "-01:00", "+05:30", "-09:45", "+14:00", "+23:59", "+24:00",
             "+24:60", "-24:60", "+24:61", "+25:00", "+00:61", "+0530", "+05", "+5:30", "Z ", ""],
}
EDGES = [
    "2026-11-30T12:00:00Z", "0000-01-01T00:00:00Z", "0000-02-29T00:00:00Z", "0000-12-31T23:59:59.999999999Z",
    "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01", "0001-01-01T00:00:00-00:01", "0001-01-01T00:59:59+01:00",
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:00:00-00:59", "9999-12-31T23:00:00-01:00", "9999-12-31T23:59:59.999999-00:00",
    " 2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z\t", "", "2026-11-30", "2026-11-30T12:00Z", "2100-02-29T00:00:00Z",
    "2000-02-29T00:00:00Z", "2026-11-30T12:00:00.+01:00", "2026-11-30T12:00:00.5-01:00",
]


def generated(count=3000, seed=20):
    """``count`` inputs made of the parts above (valid and not), with the edge cases first."""
    rng = random.Random(seed)
    inputs = list(EDGES)
    while len(inputs) < count:
        pick = {key: rng.choice(values) for key, values in PARTS.items()}
        if rng.random() < 0.7:  # mostly well-formed but for one part, so the range checks are reached
            good = {"year": "2026", "month": "11", "day": "30", "t": "T", "hour": "12", "minute": "00",
                    "second": "00", "fraction": "", "zone": "Z"}
            keep = rng.choice(list(PARTS))
            pick = dict(good, **{keep: pick[keep]}) if rng.random() < 0.5 else dict(pick, t="T")
        inputs.append("%(year)s-%(month)s-%(day)sT%(hour)s:%(minute)s:%(second)s%(fraction)s%(zone)s"
                      .replace("T", "%(t)s") % pick)
    return inputs


@pytest.fixture(scope="module")
def go_parse(tmp_path_factory):
    """A function: inputs (list of str) -> Go's answer for each (``("ok", seconds, nanoseconds)`` or None)."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed")
    folder = tmp_path_factory.mktemp("rfc3339-go")
    source = folder / "main.go"
    source.write_text(GO_PROGRAM)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", GO111MODULE="off", CGO_ENABLED="0")
    binary = folder / "rfc3339"
    subprocess.run([go, "build", "-o", str(binary), str(source)], check=True, env=env, cwd=str(folder),
                   timeout=300)

    def parse(inputs):
        assert not any("\n" in text for text in inputs)
        result = subprocess.run([str(binary)], input="".join(text + "\n" for text in inputs).encode("utf-8"),
                                stdout=subprocess.PIPE, check=True, timeout=60)
        answers = []
        for line in result.stdout.decode().splitlines():
            words = line.split()
            answers.append(("ok", int(words[1]), int(words[2])) if words[0] == "ok" else None)
        assert len(answers) == len(inputs)
        return answers
    return parse


def ours(text):
    """parse_rfc3339's answer in Go's terms: ``("ok", seconds, nanoseconds)`` (microseconds for a datetime), or
    None."""
    value = helpers.parse_rfc3339(text)
    if value is None:
        return None
    if isinstance(value, helpers.OutOfRange):
        return ("ok", value.seconds, value.nanoseconds)
    assert value.tzinfo is datetime.timezone.utc
    delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return ("ok", delta.days * 86400 + delta.seconds, delta.microseconds * 1000)


def test_the_plugin_reads_rfc3339_times_as_go_does(go_parse):
    inputs = generated()
    accepted = 0
    differ = []
    for text, theirs in zip(inputs, go_parse(inputs)):
        mine = ours(text)
        if theirs is not None and mine is not None and isinstance(helpers.parse_rfc3339(text), datetime.datetime):
            theirs = ("ok", theirs[1], theirs[2] // 1000 * 1000)  # a datetime holds microseconds
        if mine != theirs:
            differ.append((text, theirs, mine))
        accepted += theirs is not None
    assert not differ, differ[:20]
    assert 300 < accepted < len(inputs) - 300  # both kinds were tried, many of each


def test_times_datetime_cannot_hold_are_times_shown_as_they_are(go_parse):
    late, early = "9999-12-31T23:59:59-01:00", "0000-06-15T12:00:00Z"
    assert go_parse([late, early]) == [("ok", 253402304399, 0), ("ok", -62152833600, 0)]
    far, old = helpers.parse_rfc3339(late), helpers.parse_rfc3339(early)
    assert str(far) == "9999-12-31T23:59:59-01:00 (after 9999-12-31T23:59:59Z)"
    assert str(old) == "0000-06-15T12:00:00Z (before 0001-01-01T00:00:00Z)"
    now = datetime.datetime(2026, 11, 30, 12, tzinfo=datetime.timezone.utc)
    assert old < now < far and far > now and not far <= now and now >= old and helpers.is_time(far)
    assert sorted([far, now, old]) == [old, now, far]
