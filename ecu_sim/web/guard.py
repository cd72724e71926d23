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
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

#: routes that change the node: they need the token on a non-loopback address
CONTROL_ROUTES = frozenset({"/api/control"})
#: the one route that upgrades to a WebSocket
SOCKET_ROUTE = "/api/ws"
#: methods a browser lets any site send without asking the server first; none of them changes the node
_SAFE_METHODS = frozenset({"GET", "HEAD"})
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

    def origin_refusal(self, method: str, path: str, origin: str | None, host: str) -> str | None:
        """Why a browser's request from ``origin`` may not do this, or None: a WebSocket or a
        request that is not a read must come from the node's own page."""
        if origin is None or (method in _SAFE_METHODS and path != SOCKET_ROUTE):
            return None
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower():
            return None
        return f"requests from another site's page are refused (Origin {origin}, Host {host})"

    def token_allows(self, path: str, given: str) -> bool:
        """Whether ``given`` (the empty string for none) is enough for this request."""
        if self.token is None:
            return True
        reading = path not in CONTROL_ROUTES
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
