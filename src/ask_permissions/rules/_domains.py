"""DomainPattern: a URL host specifier (``WebFetch(domain:example.com)``), read as URL parsers read hosts."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, final
from urllib.parse import unquote, urlsplit

from ask_permissions._errors import preview
from ask_permissions._strict import child, fail
from ask_permissions._vocabulary import Decision

from ._specifier_base import check_key, read_specifier_snapshot, subject_values

__all__ = ["URL_KEYS", "DomainPattern", "HostReading", "read_host"]

URL_KEYS: Final = ("url",)
"""The arguments a domain specifier reads when it names no key."""

PREFIX: Final = "domain:"

_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_LABELS: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_UNSAFE: Final = re.compile(r"[\x00-\x20\x7f]")
_IPV4_PART: Final = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")
_WEB_SCHEMES: Final = frozenset({"http", "https"})


@final
@dataclass(frozen=True, slots=True)
class HostReading:
    """The host names a URL may be read as, and whether every reasonable parser reads the same one.

    Attributes:
        hosts: each host a parser may see, lower-case, without a trailing dot, IDNA-encoded.
        clear: an ``http``/``https`` URL whose host every reading agrees on, with nothing a parser may
            strip, decode or map differently (whitespace, control characters, backslashes, ``%``,
            non-ASCII, several ``@``, odd ports or IPv4 spellings).
    """

    hosts: frozenset[str]
    clear: bool


def _host_forms(host: str) -> tuple[set[str], bool]:
    """The forms one host text is compared in, and whether it needed no decoding, mapping or fixing.

    Lower-case, one trailing dot dropped, percent-decoded, IDNA-encoded; an IPv6 literal compressed; a
    WHATWG IPv4 spelling (``127.1``, ``0x7f.0.0.1``) also as its dotted address.
    """
    if host.startswith("[") and host.endswith("]"):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return {host.lower()}, False
        compressed = address.compressed
        mapped = address.ipv4_mapped
        if mapped is not None:
            # [::ffff:169.254.169.254] reaches 169.254.169.254 through a dual-stack socket.
            return {f"[{compressed}]", str(mapped)}, False
        return {f"[{compressed}]"}, host[1:-1] == compressed
    clear = True
    if "%" in host:
        clear = False
        host = unquote(host, errors="replace")
    if not host.isascii():
        clear = False
        try:
            host = host.encode("idna").decode("ascii")  # also maps fullwidth letters and dots
        except UnicodeError:
            return {host.lower()}, False
    host = host.lower()
    forms: set[str] = set()
    if host.endswith(".."):
        clear = False
        forms.add(host.rstrip("."))  # a resolver may drop every trailing dot
    host = host.removesuffix(".")
    if not host:
        return forms, False
    forms.add(host)
    if not _LABELS.fullmatch(host):
        clear = False
    ipv4 = _ipv4(host)
    if ipv4 is not None and ipv4 != host:
        forms.add(ipv4)  # 127.1, 0x7f.0.0.1 and 2130706433 are 127.0.0.1 to browsers
        clear = False
    return forms, clear


def _ipv4(host: str) -> str | None:
    """The dotted form of a host that a WHATWG URL parser reads as an IPv4 address, else ``None``."""
    parts = host.split(".")
    if parts[-1] == "":
        parts.pop()
    if not parts or len(parts) > 4 or not _IPV4_PART.fullmatch(parts[-1]):
        return None
    numbers: list[int] = []
    for part in parts:
        if not _IPV4_PART.fullmatch(part):
            return None
        if part[:2].lower() == "0x":
            numbers.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            numbers.append(int(part, 8) if set(part) <= set("01234567") else -1)
        else:
            numbers.append(int(part))
    if any(number < 0 for number in numbers) or any(number > 255 for number in numbers[:-1]):
        return None
    last = numbers[-1]
    if last >= 256 ** (5 - len(numbers)):
        return None
    value = sum(number << (8 * (3 - index)) for index, number in enumerate(numbers[:-1])) + last
    return str(ipaddress.IPv4Address(value))


_C0_AND_SPACE: Final = "".join(chr(code) for code in range(0x21))


def _authority_hosts(url: str, *, whatwg: bool) -> tuple[list[str], bool]:
    """The host texts one reading of ``url`` finds in its authority, and whether it met no oddity."""
    clear = True
    if whatwg:
        # What browsers do first: strip surrounding C0 controls and blanks, drop tabs and newlines.
        url = re.sub(r"[\t\n\r]", "", url.strip(_C0_AND_SPACE))
    scheme = _SCHEME.match(url)
    if scheme is None or scheme.group(1).lower() not in _WEB_SCHEMES:
        clear = False
        if scheme is None or not url[scheme.end() :].startswith(("//", "\\\\")):
            url = "https://" + url.lstrip("/\\")  # how a tool that adds a missing scheme would read it
            scheme = _SCHEME.match(url)
            assert scheme is not None
    rest = url[scheme.end() :]
    if whatwg:
        rest = rest.replace("\\", "/")
    if not rest.startswith("//") or rest.startswith("///"):
        clear = False  # https:example.com, https:/example.com and https:///example.com, to browsers
    rest = rest.lstrip("/")
    end = re.search(r"[/?#]", rest)
    authority = rest if end is None else rest[: end.start()]
    if authority.count("@") > 1:
        clear = False
    hostports = [authority.rpartition("@")[2]]
    if "@" in authority:
        hostports.append(authority.partition("@")[2])  # as a parser that stops at the first '@' would
    hosts: list[str] = []
    for hostport in hostports:
        if hostport.startswith("[") and "]" in hostport:
            host, _, port = hostport.partition("]")
            host += "]"
            port = port.removeprefix(":")
        elif ":" in hostport:
            host, _, port = hostport.rpartition(":")
            hosts.append(hostport.partition(":")[0])
        else:
            host, port = hostport, ""
        if port and not (port.isdigit() and port.isascii()):
            clear = False
        hosts.append(host)
    return hosts, clear


def read_host(url: str) -> HostReading:
    """Every host that a reasonable URL parser may find in ``url``; never raises for a string."""
    clear = not _UNSAFE.search(url) and "\\" not in url
    texts: list[str] = []
    for whatwg in (False, True):
        found, reading_clear = _authority_hosts(url, whatwg=whatwg)
        texts.extend(found)
        clear = clear and reading_clear
    try:
        parsed = urlsplit(url).hostname
    except ValueError:
        clear = False
    else:
        if parsed is None:
            clear = False
        else:
            texts.append(f"[{parsed}]" if ":" in parsed else parsed)
    hosts: set[str] = set()
    for text in texts:
        forms, text_clear = _host_forms(text)
        hosts |= forms
        clear = clear and text_clear
    return HostReading(frozenset(hosts), clear and len(hosts) == 1)


def _pattern_host(text: str) -> tuple[str, str]:
    """The normalized host of a domain specifier and its form: ``"exact"``, ``"subdomains"`` or ``"any"``.

    Raises:
        ValueError: empty, a scheme, port, path or other character no host has, or a misplaced ``*``.
    """
    host = text.removeprefix(PREFIX)
    if host == "*":
        return "", "any"
    form = "exact"
    if host.startswith("*."):
        form, host = "subdomains", host[2:]
    if not host:
        raise ValueError("it names no host")
    if "*" in host:
        raise ValueError("'*' only as the whole host or as its first label (*.example.com)")
    if ":" in host and not host.startswith("["):
        raise ValueError("it has a port or a scheme; domain: specifiers match the host only")
    if "%" in host or "@" in host or "/" in host or "\\" in host or _UNSAFE.search(host):
        raise ValueError("it is not a host name (write the host only, as in domain:example.com)")
    forms, _ = _host_forms(host)
    if len(forms) != 1:
        raise ValueError("write an IPv4 address in dotted decimal (127.0.0.1)")
    (value,) = forms
    if value.startswith("["):
        try:
            ipaddress.IPv6Address(value[1:-1])
        except ValueError:
            raise ValueError("it is not an IPv6 address") from None
    elif not _LABELS.fullmatch(value):
        raise ValueError("it is not a host name")
    return value, form


@final
@dataclass(frozen=True, slots=True)
class DomainPattern:
    """A URL host specifier, as in ``WebFetch(domain:example.com)``; an argument pattern like the gem's.

    ``domain:example.com`` matches the host ``example.com``; ``domain:*.example.com`` its subdomains only
    (not ``example.com`` itself); ``domain:*`` every host. The host is read from the URL the way URL parsers
    read it: case-insensitively, after the userinfo (``https://example.com@evil.test/`` is ``evil.test``),
    without the port or a trailing dot. Where parsers may disagree about the host — backslashes,
    whitespace or control characters, percent-encoding, non-ASCII, several ``@``, non-decimal IPv4
    spellings, a scheme other than ``http``/``https`` or none — an allow does not match (fail closed) and
    a deny or ask matches when any of the readings matches.

    The subject is the call's argument at ``key``, else ``url``, or a plain string argument itself.

    Args:
        text: ``domain:<host>`` (the prefix may be left out); stored with it.
        key: the argument holding the URL, when it is not ``url``.

    Raises:
        ValueError: not a host, a port, a path, or ``*`` anywhere but alone or as the first label.
    """

    text: str
    key: str | None = field(default=None, kw_only=True)
    _host: str = field(init=False, repr=False, compare=False)
    _form: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"DomainPattern: text: expected a string; got {preview(self.text)}")
        text = str.__str__(self.text)
        object.__setattr__(self, "key", check_key(self.key, "DomainPattern"))
        try:
            host, form = _pattern_host(text)
        except ValueError as error:
            raise ValueError(f"domain specifier {preview(text)}: {error}") from None
        object.__setattr__(self, "text", text if text.startswith(PREFIX) else PREFIX + text)
        object.__setattr__(self, "_host", host)
        object.__setattr__(self, "_form", form)

    @property
    def kind(self) -> str:
        """``"url"``."""
        return "url"

    @property
    def host(self) -> str:
        """The host it names, normalized (``*.`` left out for subdomains; ``"*"`` for every host)."""
        return "*" if self._form == "any" else self._host

    @property
    def is_unrestricted(self) -> bool:
        """Whether it matches every host (``domain:*``)."""
        return self._form == "any"

    def matches(self, arguments: object, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches a call with these arguments."""
        values = subject_values(arguments, self.key, URL_KEYS)
        if decision == "allow":
            return bool(values) and all(
                isinstance(value, str) and self.matches_url(value, "allow") for value in values
            )
        return any(isinstance(value, str) and self.matches_url(value, decision) for value in values)

    def matches_url(self, url: str, decision: Decision) -> bool:
        """Whether the specifier, in a rule of ``decision``, matches one URL."""
        reading = read_host(url)
        if decision == "allow":
            return reading.clear and all(self._matches_host(host) for host in reading.hosts)
        return any(self._matches_host(host) for host in reading.hosts)

    def _matches_host(self, host: str) -> bool:
        if self._form == "any":
            return True
        if self._form == "exact":
            return host == self._host
        return host.endswith("." + self._host)

    def to_snapshot(self) -> dict[str, object]:
        """The pattern in snapshot form: ``{"type": "domain", "text": "domain:..."}`` and ``key`` when set."""
        data: dict[str, object] = {"type": "domain", "text": self.text}
        if self.key is not None:
            data["key"] = self.key
        return data

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any], path: str = "") -> DomainPattern:
        """The pattern from ``to_snapshot()`` data; strict.

        Raises:
            InvalidSnapshotError: anything unknown, missing, mistyped or invalid, naming its path.
        """
        text, key = read_specifier_snapshot(data, path, "domain")
        if not text.startswith(PREFIX):
            fail(child(path, "text"), f"a specifier starting with {PREFIX!r}", text)
        try:
            return cls(text, key=key)
        except ValueError as error:
            fail(child(path, "text"), f"a valid domain specifier ({error})", text)
