"""kube/warning_headers.py: the API server's Warning headers read as client-go reads them (k8s.io/apimachinery
pkg/util/net/http.go ParseWarningHeader, its http_test.go cases) and handed on as kubectl's WarningWriter
does (code 299 only, a non-empty text, each text once)."""

import pytest

from kubectl_aicr.kube import warning_headers


@pytest.mark.parametrize("header,expected", [
    ('299 - "deprecated"', [(299, "-", "deprecated")]),
    ('299 - "a", 299 - "b"', [(299, "-", "a"), (299, "-", "b")]),                 # repeated headers, joined
    ('299 kube-apiserver "with \\"quotes\\" and \\\\"', [(299, "kube-apiserver", 'with "quotes" and \\')]),
    ('299 - "dated" "Mon, 01 Jan 2026 00:00:00 GMT", 199 - "next"', [(299, "-", "dated"), (199, "-", "next")]),
    ('299 - "ok", garbage', [(299, "-", "ok")]),                                   # the rest is dropped
    ('299 - "ok" junk', []),                                                       # unexpected token: an error
    ('99 - "short code"', []),
    ('299 -', []),
    ('299 - "unterminated', []),
    ('299 - "control \x01 char"', []),
    ('299 - ""', [(299, "-", "")]),
    ("", []),
])
def test_parse_as_client_go(header, expected):
    assert warning_headers.parse(header) == expected


def test_handle_passes_each_299_text_once(monkeypatch):
    seen = []
    monkeypatch.setattr(warning_headers, "handler", seen.append)
    monkeypatch.setattr(warning_headers, "_seen", set())
    warning_headers.handle('299 - "one", 199 - "not 299", 299 - ""')
    warning_headers.handle('299 - "one", 299 - "two"')
    warning_headers.handle(None)
    assert seen == ["one", "two"]


def test_no_handler_drops_them(monkeypatch):
    monkeypatch.setattr(warning_headers, "handler", None)
    warning_headers.handle('299 - "dropped"')  # no error, nothing kept


@pytest.mark.e2e
def test_the_test_servers_warnings_are_shown_once_each_escaped_on_every_command(run, api_server, kubeconfig_for):
    # a text with a control character is dropped, as client-go drops it (and kube-apiserver never sends one)
    api_server.warnings = ['v1alpha1 is "deprecated"', "second one", "colour \x1b[31m here", 'v1alpha1 is "deprecated"']
    try:
        for args in (["describe", api_server.fixture_name("awaiting-approval")],
                     ["approve", api_server.fixture_name("awaiting-approval"), "--reason", "r"]):
            result = run(*args, kubeconfig=kubeconfig_for())
            assert result.returncode == 0, result.stderr
            lines = result.stderr.splitlines()
            assert lines.count('Warning: v1alpha1 is "deprecated"') == 1, result.stderr
            assert lines.count("Warning: second one") == 1, result.stderr
            assert "colour" not in result.stderr
    finally:
        api_server.warnings = []
