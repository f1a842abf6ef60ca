"""DomainPattern: URL host specifiers; an allow needs a host every parser agrees on, a deny any reading."""

from __future__ import annotations

import dataclasses
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.rules._domains import DomainPattern, read_host
from ask_permissions.typing import Decision

from .specifier_snapshots import restored_or_rejected
from .strategies import assert_snapshot_error, json_values
from .timing import cpu_bound

EXACT = DomainPattern("domain:example.com")
FULLWIDTH_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"
SUBDOMAINS = DomainPattern("domain:*.example.com")

# (url, allow by example.com, deny by example.com, deny by *.example.com)
URLS = [
    pytest.param("https://example.com/", True, True, False, id="plain"),
    pytest.param("http://example.com", True, True, False, id="http-no-path"),
    pytest.param("HTTPS://EXAMPLE.COM/x", True, True, False, id="case-insensitive"),
    pytest.param("https://example.com./", True, True, False, id="trailing-dot"),
    pytest.param("https://example.com:8443/x", True, True, False, id="port"),
    pytest.param("https://user:secret@example.com/", True, True, False, id="userinfo"),
    pytest.param("https://example.com/?next=https://evil.test", True, True, False, id="url-in-query"),
    pytest.param("https://example.com#@evil.test", True, True, False, id="at-in-fragment"),
    pytest.param("https://example.com@evil.test/", False, False, False, id="userinfo-is-not-the-host"),
    pytest.param("https://example.com:443@evil.test/", False, False, False, id="userinfo-with-port"),
    pytest.param("https://example.com.evil.test/", False, False, False, id="prefix-of-other-host"),
    pytest.param("https://evil-example.com/", False, False, False, id="suffix-without-dot"),
    pytest.param("https://api.example.com/", False, False, True, id="subdomain"),
    pytest.param("https://a.b.example.com/", False, False, True, id="deep-subdomain"),
    pytest.param("https://evil.test\\@example.com/", False, True, False, id="backslash"),
    pytest.param("https:\\\\example.com/", False, True, False, id="backslash-authority"),
    pytest.param("https://exa\tmple.com/", False, True, False, id="tab-in-host"),
    pytest.param("https://example.com\n/", False, True, False, id="newline"),
    pytest.param(" https://example.com/", False, True, False, id="leading-space"),
    pytest.param("https://%65xample.com/", False, True, False, id="percent-encoded"),
    pytest.param(f"https://{FULLWIDTH_EXAMPLE}.com/", False, True, False, id="fullwidth"),
    pytest.param("https://example\u3002com/", False, True, False, id="ideographic-full-stop"),
    pytest.param("https://a@b@example.com/", False, True, False, id="two-at-signs"),
    pytest.param("https://example.com:abc/", False, True, False, id="odd-port"),
    pytest.param("https://example.com../", False, True, False, id="two-trailing-dots"),
    pytest.param("https:example.com", False, True, False, id="no-slashes"),
    pytest.param("https:/example.com", False, True, False, id="one-slash"),
    pytest.param("example.com/x", False, True, False, id="no-scheme"),
    pytest.param("//example.com/x", False, True, False, id="scheme-relative"),
    pytest.param("ftp://example.com/", False, True, False, id="other-scheme"),
    pytest.param("file://example.com/etc/passwd", False, True, False, id="file-scheme"),
    pytest.param("https://[::1/", False, False, False, id="broken-ipv6"),
    pytest.param("", False, False, False, id="empty"),
    pytest.param("not a url", False, False, False, id="text"),
]


class TestMatching:
    """Hosts are compared after parsing; disagreement between parsers never makes an allow match."""

    @pytest.mark.parametrize(("url", "allow", "deny", "deny_subdomains"), URLS)
    def test_url(self, url: str, allow: bool, deny: bool, deny_subdomains: bool) -> None:
        """Each URL meets the two specifiers as documented."""
        assert EXACT.matches_url(url, "allow") is allow
        assert EXACT.matches_url(url, "deny") is deny
        assert EXACT.matches_url(url, "ask") is deny
        assert SUBDOMAINS.matches_url(url, "deny") is deny_subdomains

    @pytest.mark.parametrize(
        ("text", "url", "expected"),
        [
            pytest.param("domain:*", "https://anything.test/", True, id="any-host"),
            pytest.param("domain:*", "https://a\\@b/", False, id="any-host-still-needs-agreement"),
            pytest.param("domain:bücher.de", "https://xn--bcher-kva.de/", True, id="idna-pattern"),
            pytest.param("domain:127.0.0.1", "http://127.0.0.1:8080/", True, id="ipv4"),
            pytest.param("domain:[::1]", "http://[::1]:80/", True, id="ipv6"),
            pytest.param("domain:[::1]", "http://[0:0::1]/", False, id="ipv6-uncompressed-deny-only"),
            pytest.param("domain:*.example.com", "https://api.example.com/", True, id="subdomain"),
            pytest.param("domain:*.example.com", "https://example.com/", False, id="subdomains-only"),
        ],
    )
    def test_allow(self, text: str, url: str, expected: bool) -> None:
        """Allow specifiers in their other forms."""
        assert DomainPattern(text).matches_url(url, "allow") is expected

    @pytest.mark.parametrize(
        ("text", "url"),
        [
            pytest.param("domain:127.0.0.1", "http://2130706433/", id="decimal-ipv4"),
            pytest.param("domain:127.0.0.1", "http://0x7f.1/", id="hex-ipv4"),
            pytest.param("domain:127.0.0.1", "http://127.1/", id="short-ipv4"),
            pytest.param("domain:127.0.0.1", "http://0177.0.0.1/", id="octal-ipv4"),
            pytest.param("domain:[::1]", "http://[0:0::1]/", id="ipv6-spelling"),
            pytest.param("domain:169.254.169.254", "http://[::ffff:169.254.169.254]/", id="ipv4-mapped"),
            pytest.param("domain:169.254.169.254", "http://[::ffff:a9fe:a9fe]/latest/", id="ipv4-mapped-hex"),
            pytest.param("domain:bücher.de", "https://bücher.de/", id="unicode-host"),
            pytest.param("domain:example.com", "https://EXAMPLE.com\u3002/", id="ideographic-trailing-dot"),
        ],
    )
    def test_deny_reads_every_spelling(self, text: str, url: str) -> None:
        """A deny fires on other spellings of its host, which an allow never accepts."""
        pattern = DomainPattern(text)
        assert pattern.matches_url(url, "deny")
        assert not pattern.matches_url(url, "allow")

    @pytest.mark.parametrize(
        ("key", "arguments", "decision", "expected"),
        [
            pytest.param(None, {"url": "https://example.com"}, "allow", True, id="url-key"),
            pytest.param(None, "https://example.com", "allow", True, id="plain-string"),
            pytest.param(None, {"href": "https://example.com"}, "allow", False, id="other-key"),
            pytest.param("href", {"href": "https://example.com"}, "allow", True, id="declared-key"),
            pytest.param(None, {"url": None}, "deny", False, id="not-a-string"),
            pytest.param(None, {}, "allow", False, id="missing"),
        ],
    )
    def test_subject(self, key: str | None, arguments: object, decision: Decision, expected: bool) -> None:
        """The URL is the argument at the key, else ``url``, or a plain string argument."""
        assert DomainPattern("domain:example.com", key=key).matches(arguments, decision) is expected


_hosts = st.sampled_from(
    ["example.com", "api.example.com", "evil.test", "EXAMPLE.COM", "example.com.", "127.0.0.1"]
)
_tricks = st.sampled_from(
    ["", "\\", "@", "%2e", "\t", " ", "#", "?", ":", "/", "..", "\uff45", "\u3002", "@evil.test"]
)


@st.composite
def _urls(draw: st.DrawFn) -> str:
    """URLs built from parts, with tricks spliced in anywhere."""
    scheme = draw(st.sampled_from(["https://", "http://", "HTTPS://", "ftp://", "", "//", "https:"]))
    userinfo = draw(st.sampled_from(["", "user@", "example.com@", "a:b@", "evil.test@"]))
    port = draw(st.sampled_from(["", ":443", ":8080", ":", ":x"]))
    path = draw(st.sampled_from(["", "/", "/x?y=1", "/#frag", "/@evil.test"]))
    url = scheme + userinfo + draw(_hosts) + port + path
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(url)))
        url = url[:at] + draw(_tricks) + url[at:]
    return url


class TestProperties:
    """Properties over generated URLs and any text."""

    @given(_urls())
    @settings(max_examples=300, deadline=None)
    def test_allow_implies_deny(self, url: str) -> None:
        """Whatever a specifier allows, the same specifier as a deny also matches (fail closed)."""
        for pattern in (EXACT, SUBDOMAINS, DomainPattern("domain:evil.test")):
            if pattern.matches_url(url, "allow"):
                assert pattern.matches_url(url, "deny")

    @given(_urls())
    @settings(max_examples=300, deadline=None)
    def test_clear_reading_is_what_urllib_reads(self, url: str) -> None:
        """A URL read clearly has one host, the one ``urllib`` finds, normalized."""
        reading = read_host(url)
        if reading.clear:
            hostname = urlsplit(url).hostname
            assert hostname is not None
            assert reading.hosts == {hostname.rstrip(".")}

    @given(_urls())
    @settings(max_examples=300, deadline=None)
    def test_deny_sees_urllib_host(self, url: str) -> None:
        """Whatever host ``urllib`` reads in a URL, a deny for that host fires on it."""
        try:
            hostname = urlsplit(url).hostname
        except ValueError:
            return
        if hostname in ("example.com", "evil.test", "api.example.com"):
            assert DomainPattern(hostname).matches_url(url, "deny")

    @given(st.text(max_size=60))
    @settings(max_examples=300, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Any string is read without raising, and only an agreed, single host is clear."""
        reading = read_host(text)
        assert not reading.clear or len(reading.hosts) == 1
        assert EXACT.matches_url(text, "allow") in (True, False)


class TestBoundedTime:
    """Reading the host of a long URL stays quick."""

    @pytest.mark.parametrize(
        "url",
        [
            pytest.param("https://" + "a." * 4_990 + "!", id="many-labels"),
            pytest.param("https://" + "a-" * 4_990 + "a", id="hyphens"),
            pytest.param("https://" + "@" * 9_990, id="at-signs"),
            pytest.param("https://[" + ":" * 9_990, id="open-bracket"),
            pytest.param("https://" + "%41" * 3_300, id="percent"),
            pytest.param("http://" + "0x1." * 2_490 + "1", id="ipv4-parts"),
            pytest.param("a" * 10_000 + "!", id="no-scheme"),
        ],
    )
    def test_quick(self, url: str) -> None:
        """A 10,000-character URL is read in well under a second."""
        with cpu_bound(1.0):
            SUBDOMAINS.matches_url(url, "deny")
            EXACT.matches_url(url, "allow")


class TestDescription:
    """What a pattern says about itself."""

    def test_description(self) -> None:
        """``domain:*`` is unrestricted; the text is stored with its prefix; the host normalized."""
        assert DomainPattern("domain:*").is_unrestricted
        assert not EXACT.is_unrestricted
        assert DomainPattern("Example.COM.").text == "domain:Example.COM."
        assert DomainPattern("Example.COM.").host == "example.com"
        assert SUBDOMAINS.host == "example.com"
        assert DomainPattern("*").host == "*"
        assert EXACT.kind == "url"

    def test_value_semantics(self) -> None:
        """Frozen values compared by text and key."""
        assert DomainPattern("example.com") == DomainPattern("domain:example.com")
        changed = dataclasses.replace(EXACT, key="href")
        assert changed.matches({"href": "https://example.com"}, "allow")
        assert repr(EXACT) == "DomainPattern(text='domain:example.com', key=None)"


class TestConstruction:
    """A specifier that is not a host is refused at construction, naming the text."""

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            pytest.param("domain:", "names no host", id="empty"),
            pytest.param("domain:*.", "names no host", id="star-dot"),
            pytest.param("domain:a*.com", "'*' only", id="star-inside"),
            pytest.param("domain:*example.com", "'*' only", id="star-without-dot"),
            pytest.param("domain:example.com:443", "port", id="port"),
            pytest.param("domain:https://example.com", "port or a scheme", id="url"),
            pytest.param("domain:example.com/path", "not a host name", id="path"),
            pytest.param("domain:user@example.com", "not a host name", id="userinfo"),
            pytest.param("domain:exa mple.com", "not a host name", id="space"),
            pytest.param("domain:%65xample.com", "not a host name", id="percent"),
            pytest.param("domain:a..b", "not a host name", id="empty-label"),
            pytest.param("domain:-a.com", "not a host name", id="leading-hyphen"),
            pytest.param("domain:127.1", "dotted decimal", id="short-ipv4"),
            pytest.param("domain:[zz]", "not an IPv6 address", id="bad-ipv6"),
        ],
    )
    def test_invalid(self, text: str, problem: str) -> None:
        """The ValueError names the specifier and what is wrong with it."""
        with pytest.raises(
            ValueError, match=f"domain specifier {re.escape(repr(text))}: .*{re.escape(problem)}"
        ):
            DomainPattern(text)

    def test_text_must_be_a_string(self) -> None:
        """The text must be a string."""
        with pytest.raises(TypeError, match="text: expected a string"):
            DomainPattern(None)  # type: ignore[arg-type]

    @given(st.text(max_size=30))
    @settings(max_examples=300, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Any text builds a pattern or raises ValueError."""
        try:
            pattern = DomainPattern(text)
        except ValueError as error:
            message = str(error)
        else:
            assert pattern.text.startswith("domain:")
            return
        assert message.startswith("domain specifier ")


class TestSnapshots:
    """Patterns round-trip through snapshots; bad snapshots name the path."""

    def test_round_trip(self) -> None:
        """``from_snapshot(to_snapshot())`` is the same pattern."""
        for pattern in (EXACT, SUBDOMAINS, DomainPattern("*", key="href")):
            assert DomainPattern.from_snapshot(pattern.to_snapshot()) == pattern
        assert EXACT.to_snapshot() == {"type": "domain", "text": "domain:example.com"}

    @pytest.mark.parametrize(
        ("snapshot", "path", "match"),
        [
            pytest.param(
                {"type": "domain", "text": "example.com"}, "p.text", "starting with", id="no-prefix"
            ),
            pytest.param({"type": "domain", "text": "domain:a b"}, "p.text", "not a host", id="invalid"),
            pytest.param({"type": "domain"}, "p.text", "required", id="missing"),
            pytest.param({"type": "command", "text": "domain:x"}, "p.type", "'domain'", id="type"),
        ],
    )
    def test_invalid(self, snapshot: Any, path: str, match: str) -> None:
        """Every problem raises InvalidSnapshotError at the path of the bad field."""
        assert_snapshot_error(lambda data: DomainPattern.from_snapshot(data, "p"), snapshot, path, match)

    @given(json_values)
    @settings(max_examples=200, deadline=None)
    def test_fuzzed_snapshots(self, snapshot: Any) -> None:
        """Any JSON is restored or refused with InvalidSnapshotError, never another exception."""
        restored = restored_or_rejected(DomainPattern.from_snapshot, snapshot)
        assert restored is None or isinstance(restored, DomainPattern)
