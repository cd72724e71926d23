"""Who may reach the page, and from which site: the token, the ``Host`` a request names, its ``Origin``.

Two browser attacks need no password. A page of another site can make a browser request the
node, whose address it learned or guessed: a cross-site POST or WebSocket carries that site's
``Origin``, so a WebSocket or a request that changes something must come from the node's own
page (``Origin`` the same as ``Host``), as Tornado and Jupyter's server check it. By DNS
rebinding, a name of the attacker's site resolves to the node's address after the page loaded,
so the browser takes the node for that site and lets its script read the answers: every request
must name the node by an address or a name it is known by (loopback names and addresses on
loopback, this host's addresses and names elsewhere, and the names of ``[run] web_allowed_hosts``),
as Jupyter's ``check_host`` does. A client that is not a browser sends no ``Origin``; it still
needs the token where one is set.

The recording is a read that costs: each download makes it in a process of its own. A GET is
what another site's ``<img>`` or a ``no-cors`` fetch sends, with no ``Origin`` and the node's own
``Host``, so the download needs the token wherever the controls do, and a browser must say it
comes from the node's own page by what it sends with every request: ``Sec-Fetch-Site`` (Fetch
Metadata; browsers send it to loopback and HTTPS addresses), else the ``Referer`` it names.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

#: the one route that upgrades to a WebSocket
SOCKET_ROUTE = "/api/ws"
#: the latest recording, made for each download
RECORDING_ROUTE = "/api/recording"
#: routes that change the node or load it: they need the token wherever one is set (off loopback)
GUARDED_ROUTES = frozenset({"/api/control", RECORDING_ROUTE})
#: routes a browser may ask for only from the node's own page, whatever the method: the live
#: stream, which another site's script could read, and the recording, which loads the node
OWN_PAGE_ROUTES = frozenset({SOCKET_ROUTE, RECORDING_ROUTE})
#: methods a browser lets any site send without asking the server first; none of them changes the node
_SAFE_METHODS = frozenset({"GET", "HEAD"})
#: the ``Sec-Fetch-Site`` of a request from the node's own page, or one a person made (the address
#: typed, a bookmark); ``same-site`` is another port or name of the same host: another page
_OWN_SITES = frozenset({"same-origin", "none"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


@dataclass(frozen=True)
class Access:
    """Who may do what: ``token`` None means anyone who passes the Host and Origin checks
    (loopback); ``read_needs_token`` the setting; ``names`` the names and addresses the node
    answers to, lower case; ``addresses`` which other address literals name it too: ``any`` (a
    wildcard bind), ``loopback`` (a loopback bind) or ``none``."""

    token: str | None
    read_needs_token: bool = False
    names: frozenset[str] = frozenset()
    addresses: Literal["any", "loopback", "none"] = "none"

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request that names ``host`` (its ``Host`` header) is not for this node, or None."""
        if not host:
            return "a request must name the node in its Host header"
        name = _name_of(host)
        if name is None:
            return f"the Host header {host!r} is not HOST or HOST:PORT"
        if name in self.names or self._takes_address(name):
            return None
        return (f"the node is not served as {name!r} (Host header): open it by its address, or add "
                f"the name to [run] web_allowed_hosts")

    def _takes_address(self, name: str) -> bool:
        if self.addresses == "any":
            return _is_address(name)
        return self.addresses == "loopback" and is_loopback(name)

    def origin_refusal(self, method: str, path: str, headers: Mapping[str, str], host: str) -> str | None:
        """Why a browser's request may not do this, or None: one of :data:`OWN_PAGE_ROUTES`, or
        one that is not a read, must come from the node's own page as far as the browser says
        (``Sec-Fetch-Site``, ``Origin``, ``Referer``); a client that says nothing is let through."""
        if method in _SAFE_METHODS and path not in OWN_PAGE_ROUTES:
            return None
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site.lower() not in _OWN_SITES:
            return f"requests from another site's page are refused (Sec-Fetch-Site {site}, Host {host})"
        for name in ("Origin", "Referer"):
            sent = headers.get(name)
            if sent is not None and not _same_origin(sent, host):
                return f"requests from another site's page are refused ({name} {sent}, Host {host})"
        return None

    def token_allows(self, path: str, given: str) -> bool:
        """Whether ``given`` (the empty string for none) is enough for this request."""
        if self.token is None:
            return True
        reading = path not in GUARDED_ROUTES
        if reading and not (self.read_needs_token and path.startswith("/api/")):
            return True  # the page's own files hold nothing of the node: only the API is guarded
        return hmac.compare_digest(given.encode(), self.token.encode())


def access_for(bind: str, token: str | None, read_needs_token: bool, allowed: Iterable[str]) -> Access:
    """The Host names a node bound to ``bind`` answers to: on loopback ``localhost`` and loopback
    addresses; elsewhere the address bound (any address for ``0.0.0.0`` or ``::``) and this host's
    own name (with ``.local``, the name mDNS gives it); always the allow-list's names."""
    names = {name.strip().lower().strip("[]") for name in allowed if name.strip()}
    if is_loopback(bind):
        return Access(token, read_needs_token, frozenset(names | {"localhost"}), addresses="loopback")
    here = socket.gethostname().lower()
    names |= {bind.lower(), here, here.split(".")[0] + ".local"}
    if bind in _WILDCARDS:
        return Access(token, read_needs_token, frozenset(names | {"localhost"}), addresses="any")
    return Access(token, read_needs_token, frozenset(names))


def _same_origin(url: str, host: str) -> bool:
    """Whether ``url`` (an ``Origin`` or a ``Referer``) is of a page the node served as ``host``."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


def _name_of(host: str) -> str | None:
    """The name or address in a ``Host`` header (``[::1]:8080`` -> ``::1``), lower case."""
    try:
        parts = urlsplit("//" + host)
        parts.port  # noqa: B018  # raises ValueError for a port that is not one
    except ValueError:
        return None
    return parts.hostname


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this host alone: ``localhost`` or a loopback address; a name other
    than ``localhost`` may resolve to any address, so it is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
