"""Which proxy a connection to the API server goes through (rules only: parse, environment, NO_PROXY).

The rules are client-go's and Go's:

- A cluster's ``proxy-url`` (``tools/clientcmd/client_config.go`` ``parseProxyURL``:
  scheme http, https or socks5) is used for every request, whatever NO_PROXY says:
  client-go installs it with ``http.ProxyURL``, which ignores the environment.
- Otherwise ``HTTPS_PROXY`` (else ``https_proxy``) and ``NO_PROXY`` (else ``no_proxy``),
  by ``golang.org/x/net/http/httpproxy`` (``proxy.go``): uppercase first; a value
  without a usable scheme is read as ``http://`` + value; ``localhost`` and loopback
  addresses are never proxied; NO_PROXY entries are ``*``, CIDR blocks, IP addresses
  (optionally with a port), and domains (``foo.com`` matches it and its subdomains,
  ``.foo.com`` and ``*.foo.com`` only subdomains), compared in lower case.

Pure functions: no socket is opened here; the tunnels through the chosen proxy are
:mod:`kubectl_aicr.kube.net`'s.

Unlike kubectl, an environment proxy value that cannot be read is an error, where Go
would silently connect directly.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import ipaddress
import re
from urllib.parse import unquote, urlsplit

from .redact import url as redacted_url
from ..errors import ConfigError
from ..records import Record

_SCHEME = r"^([A-Za-z][A-Za-z0-9+.-]*)://"  # compiled on first use
_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}


class Proxy(Record):
    """A proxy to tunnel through: ``origin`` says where it came from (for messages)."""

    _secret = ("password",)

    scheme: str
    host: str
    port: int
    username: Optional[str]
    password: Optional[str]
    origin: str

    def display(self):
        """``scheme://host:port`` (never the user info: it may hold a password)."""
        return "%s://%s:%d" % (self.scheme, "[%s]" % self.host if ":" in self.host else self.host, self.port)


def url_port(netloc):
    """The port of a URL's ``netloc`` (``host:port``, ``[v6]:port``, user info allowed), as Go reads it: None
    when there is none or it is empty (``host:``); else its ASCII digits, leading zeros read as net's
    ``parsePort`` reads them (``0...06443`` of 5,000 digits is 6443, where Python's int() refuses over 4,300
    digits). ValueError when it is not digits (url.Parse: invalid port) or past 65535 (Go: invalid port)."""
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("[") and "]" in hostport:
        rest = hostport[hostport.index("]") + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError("invalid port %r after host" % rest[:20])
        digits = rest[1:]
    else:
        digits = hostport.partition(":")[2]
    if not digits:
        return None
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError("invalid port %r after host" % (":" + digits[:20]))
    value = digits.lstrip("0")
    if len(value) > 5 or int(value or "0") > 65535:
        raise ValueError("port out of range 0-65535")
    return int(value or "0")


def _split(text, origin):
    """Parse ``scheme://[user[:password]@]host[:port][/...]`` into a Proxy; ConfigError if it is not one."""
    try:
        parts = urlsplit(text)
        port = url_port(parts.netloc)  # not parts.port: int() of a 5,000-digit port raises
    except ValueError:
        raise ConfigError("%s: could not parse %s" % (origin, redacted_url(text))) from None
    if not parts.hostname:
        raise ConfigError("%s: %s has no host" % (origin, redacted_url(text)))
    scheme = parts.scheme.lower()
    return Proxy(scheme, parts.hostname, _DEFAULT_PORTS.get(scheme, 80) if port is None else port,
                 unquote(parts.username) if parts.username is not None else None,
                 unquote(parts.password) if parts.password is not None else None, origin)


def parse_proxy_url(text, cluster_name):
    """A cluster's ``proxy-url`` -> Proxy (client-go ``parseProxyURL``); ConfigError naming the cluster."""
    origin = "proxy-url of cluster %r" % cluster_name
    match = re.match(_SCHEME, text)
    if not match:
        raise ConfigError("invalid 'proxy-url' %s for cluster %r: could not parse: %s; write it as "
                          "http://host:port" % (redacted_url(text), cluster_name, redacted_url(text)))
    if match.group(1).lower() not in ("http", "https", "socks5"):
        raise ConfigError("invalid 'proxy-url' %s for cluster %r: unsupported scheme %r, must be http, https, "
                          "or socks5" % (redacted_url(text), cluster_name, match.group(1)))
    return _split(text, origin)


def _environment_proxy(name, value):
    """An HTTPS_PROXY value -> Proxy, read as Go's httpproxy ``parseProxy`` reads it."""
    match = re.match(_SCHEME, value)
    if not match or match.group(1).lower() not in ("http", "https", "socks5", "socks5h"):
        value = "http://" + value
    proxy = _split(value, name)
    if not re.match(_SCHEME, value) or proxy.scheme not in _DEFAULT_PORTS:
        raise ConfigError("%s=%s is not a proxy URL kubectl-aicr can use" % (name, redacted_url(value)))
    return proxy


def _getenv_any(environ, *names):
    """(name, value) of the first of ``names`` set to a non-empty value in ``environ``, or (names[0], "")."""
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return names[0], ""


def from_environment(host, port, environ):
    """The proxy for an https request to ``host``:``port`` under HTTPS_PROXY/NO_PROXY, or None."""
    name, value = _getenv_any(environ, "HTTPS_PROXY", "https_proxy")
    if not value:
        return None
    proxy = _environment_proxy(name, value)
    _, no_proxy = _getenv_any(environ, "NO_PROXY", "no_proxy")
    return proxy if use_proxy(host, port, no_proxy) else None


def choose(proxy_url, cluster_name, host, port, environ):
    """The Proxy for the cluster's server (its ``proxy_url``, else the environment's), or None for a direct
    connection; ``cluster_name`` names the cluster in messages."""
    if proxy_url:
        return parse_proxy_url(proxy_url, cluster_name)
    return from_environment(host, port, environ)


def parse_ip(text):
    """An IP address (IPv4-mapped IPv6 addresses as IPv4, as Go's net.IP compares them), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def use_proxy(host, port, no_proxy):
    """False when a request to ``host``:``port`` must not use the proxy (httpproxy ``config.useProxy``)."""
    host = host.lower().strip()
    if host == "localhost":
        return False
    ip = parse_ip(host)
    if ip is not None and ip.is_loopback:
        return False
    port = str(port)
    for entry in no_proxy.split(","):
        entry = entry.lower().strip()
        if entry and _no_proxy_match(entry, host, port, ip):
            return False
    return True


def _no_proxy_match(entry, host, port, ip):
    if entry == "*":
        return True
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            network = None
        if network is not None:
            return ip is not None and ip.version == network.version and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False
    entry_ip = parse_ip(entry_host)
    if entry_ip is not None:
        return ip is not None and entry_ip == ip and entry_port in ("", port)
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    exact = not entry_host.startswith(".")
    suffix = entry_host if not exact else "." + entry_host
    if host.endswith(suffix) or (exact and host == suffix[1:]):
        return entry_port in ("", port)
    return False


def _split_host_port(entry):
    """Go's net.SplitHostPort where it succeeds (``host:port``, ``[v6]:port``), else (entry, "")."""
    match = re.match(r"^\[([^\]]*)\]:([^:]*)$", entry) or re.match(r"^([^:\[\]]*):([^:]*)$", entry)
    if match:
        return match.group(1), match.group(2)
    return entry, ""
