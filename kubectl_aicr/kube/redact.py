"""The one place a URL is made fit for a message: :func:`url`. Every message of the plugin that can carry a
server URL or a proxy URL (a kubeconfig's ``server`` and ``proxy-url``, ``HTTPS_PROXY``) shows it through it.
"""


def url(text):
    """``text`` (a str, meant as a URL) with the password of its user info shown as ``xxxxx``, as Go's
    ``net/url`` ``URL.Redacted`` shows it: ``https://user:xxxxx@host:3128/path``; a user name without a
    password stays, as in Go; text without an ``@`` after the scheme is returned as it is.

    Stricter than Go where Go's ``url.Parse`` would not find the user info (its password holds ``/``, ``?``
    or ``#``, which end Go's authority, or the text has no ``scheme://``, as ``user:pw@host:3128``): every
    character up to the LAST ``@`` after ``scheme://`` (or from the start) is user info, its password the
    part after the first ``:``; so a password is never shown, whatever it holds, at the price of masking
    ``host:port/path`` before an ``@`` in a path that follows no user info (``https://h:1/a@b`` shows
    ``https://h:xxxxx@b``). tests/test_redact.py compares it with Go's ``Redacted`` on generated URLs.
    """
    scheme_end = text.find("://")
    start = scheme_end + 3 if scheme_end > 0 and _is_scheme(text[:scheme_end]) else 0
    at = text.rfind("@", start)
    colon = text.find(":", start, at)
    if at < 0 or colon < 0:
        return text
    return "%s:xxxxx%s" % (text[:colon], text[at:])


def _is_scheme(text):
    """Go's ``getScheme``: a letter, then letters, digits, ``+``, ``-`` or ``.``."""
    return text[:1].isascii() and text[:1].isalpha() and all(
        c.isascii() and (c.isalnum() or c in "+-.") for c in text)
