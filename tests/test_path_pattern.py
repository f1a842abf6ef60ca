"""PathPattern: gitignore-style path specifiers, anchored to the rules' root, fail-closed for deny."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ask_permissions.rules._paths import PathPattern, normalize_path
from ask_permissions.typing import Decision

from .specifier_snapshots import restored_or_rejected
from .strategies import assert_snapshot_error, json_values
from .timing import cpu_bound

ROOT = "/work/proj"
HOME = "/home/user"


def pattern(text: str, **kwargs: Any) -> PathPattern:
    return PathPattern(text, root=ROOT, home=HOME, **kwargs)


# (pattern, path as a call gives it, allow matches, deny matches)
MATCHES = [
    pytest.param("src/**", "src/a.py", True, True, id="double-star-inside"),
    pytest.param("src/**", "src/x/y/z.py", True, True, id="double-star-deep"),
    pytest.param("src/**", "src", False, True, id="double-star-not-the-directory-itself"),
    pytest.param("src/**", "/work/proj/src/a.py", True, True, id="absolute-path-under-root"),
    pytest.param("src/**", "lib/a.py", False, False, id="other-directory"),
    pytest.param("src/*.py", "src/a.py", True, True, id="star-in-segment"),
    pytest.param("src/*.py", "src/x/a.py", False, False, id="star-one-segment-only"),
    pytest.param("src/*.py", "src/x.py/inner", False, True, id="deny-beneath-a-match"),
    pytest.param("src/?.py", "src/a.py", True, True, id="question-mark"),
    pytest.param("src/?.py", "src/ab.py", False, False, id="question-mark-one-character"),
    pytest.param("**/test_*.py", "test_a.py", True, True, id="leading-double-star-top"),
    pytest.param("**/test_*.py", "x/y/test_a.py", True, True, id="leading-double-star-deep"),
    pytest.param("a/**/b", "a/b", True, True, id="middle-double-star-none"),
    pytest.param("a/**/b", "a/x/y/b", True, True, id="middle-double-star-some"),
    pytest.param("*.env", ".env", True, True, id="slashless-top"),
    pytest.param("*.env", "a/b/prod.env", True, True, id="slashless-any-depth"),
    pytest.param("*.env", "/etc/app/.env", False, True, id="slashless-outside-root-deny-only"),
    pytest.param("*.env", "~/.env", False, True, id="slashless-home-deny-only"),
    pytest.param("*.env", "../other/.env", False, True, id="slashless-escaping-deny-only"),
    pytest.param(".git", ".git/config", False, True, id="deny-covers-contents"),
    pytest.param(".git", ".git", True, True, id="the-path-itself"),
    pytest.param("/src/*.py", "src/a.py", True, True, id="slash-is-root"),
    pytest.param("/src/*.py", "/src/a.py", False, False, id="slash-is-not-filesystem-root"),
    pytest.param("./src/*.py", "src/a.py", True, True, id="dot-slash"),
    pytest.param("src/../lib/*", "lib/a", True, True, id="pattern-dotdot-normalized"),
    pytest.param("a/./b", "a/b", True, True, id="pattern-dot-normalized"),
    pytest.param("lib/*", "src/../lib/a", True, True, id="subject-dotdot-normalized"),
    pytest.param("lib/*", "./lib/./a", True, True, id="subject-dot-normalized"),
    pytest.param("lib/*", "lib//a", True, True, id="subject-double-slash"),
    pytest.param("//etc/hosts", "/etc/hosts", True, True, id="absolute"),
    pytest.param("//etc/hosts", "../../etc/hosts", True, True, id="escaping-path-is-absolute"),
    pytest.param("//etc/hosts", "../../../../../../etc/hosts", True, True, id="climbing-stops-at-slash"),
    pytest.param("//etc/hosts", "//etc/hosts", True, True, id="subject-leading-double-slash"),
    pytest.param("//etc/hosts", "/ETC/hosts", False, True, id="deny-case-insensitive"),
    pytest.param("src/**", "../proj/src/a.py", True, True, id="escape-and-return"),
    pytest.param("~/notes/*", "/home/user/notes/a", True, True, id="home"),
    pytest.param("~/notes/*", "~/notes/a", False, True, id="tilde-subject-ambiguous"),
    pytest.param("~", "/home/user", True, True, id="home-itself"),
    pytest.param("/", ".", True, True, id="root-itself"),
    pytest.param("/", "x", False, True, id="root-deny-covers-everything-under"),
    pytest.param("//", "/anything/at/all", False, True, id="filesystem-root-deny-covers-all"),
    pytest.param("secrets", "SECRETS", False, True, id="slashless-case"),
    pytest.param("café", "cafe\u0301", False, True, id="deny-unicode-normalized"),
    pytest.param("src/*", "src/a\nb", False, True, id="newline-name-deny-only"),
    pytest.param(".", ".", True, True, id="dot-is-the-root"),
    pytest.param("src/**", "src/a\x00", False, True, id="control-characters-never-allowed"),
    pytest.param("src/[ab]", "src/a", False, False, id="brackets-literal"),
    pytest.param("src/[ab]", "src/[ab]", True, True, id="brackets-literal-match"),
    pytest.param("src/*", "", False, False, id="empty-path"),
]


class TestMatching:
    """Each pattern matches the paths the rule language says, allow and deny apart."""

    @pytest.mark.parametrize(("text", "path", "allow", "deny"), MATCHES)
    def test_match(self, text: str, path: str, allow: bool, deny: bool) -> None:
        """Allow matches exactly; deny and ask also beneath, anywhere for a slash-less name, by case."""
        compiled = pattern(text)
        assert compiled.matches_path(path, "allow") is allow
        assert compiled.matches_path(path, "deny") is deny
        assert compiled.matches_path(path, "ask") is deny

    @pytest.mark.parametrize(
        ("key", "arguments", "decision", "expected"),
        [
            pytest.param(None, {"file_path": "src/a"}, "allow", True, id="file-path"),
            pytest.param(None, {"path": "src/a"}, "allow", True, id="path"),
            pytest.param(None, {"notebook_path": "src/a"}, "allow", True, id="notebook-path"),
            pytest.param(None, "src/a", "allow", True, id="plain-string"),
            pytest.param(
                None, {"file_path": "src/a", "path": "/etc/passwd"}, "allow", False, id="both-allow"
            ),
            pytest.param(None, {"file_path": "src/a", "path": "/etc/passwd"}, "deny", True, id="both-deny"),
            pytest.param(None, {"file_path": 1}, "allow", False, id="not-a-string"),
            pytest.param(None, {"target": "src/a"}, "allow", False, id="other-key"),
            pytest.param("target", {"target": "src/a"}, "allow", True, id="declared-key"),
            pytest.param("target", {"path": "src/a"}, "deny", False, id="declared-key-only"),
        ],
    )
    def test_subject(self, key: str | None, arguments: object, decision: Decision, expected: bool) -> None:
        """The path is the argument at the key, else the default keys, or a plain string argument."""
        assert pattern("src/*", key=key).matches(arguments, decision) is expected

    def test_a_named_users_home_is_read_as_a_tool_expands_it(self) -> None:
        """ "~root/x" is root's home to os.path.expanduser: a deny of that home meets it, and an allow of the
        working directory no longer does (it is also read as a folder named "~root" there)."""
        root_home = os.path.expanduser("~root")
        if root_home == "~root":
            pytest.skip("no user root on this machine")
        deny = PathPattern(f"/{root_home}/.ssh/**", root=ROOT, home=HOME)
        allow = PathPattern("**", root=ROOT, home=HOME)
        assert deny.matches_path("~root/.ssh/id_rsa", "deny")
        assert not allow.matches_path("~root/.ssh/id_rsa", "allow")
        assert allow.matches_path("src/~notes.txt", "allow")

    def test_symlinks_are_not_resolved(self, tmp_path: Path) -> None:
        """A symlink is matched by the path as written, not by where it points (a documented limit)."""
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "secret").write_text("x")
        (tmp_path / "proj").mkdir()
        os.symlink(tmp_path / "outside", tmp_path / "proj" / "link")
        root = str(tmp_path / "proj")
        allow = PathPattern("link/**", root=root, home=HOME)
        deny = PathPattern(f"/{tmp_path}/outside/**", root=root, home=HOME)
        assert (tmp_path / "proj" / "link" / "secret").read_text() == "x"
        assert allow.matches_path("link/secret", "allow")
        assert not deny.matches_path("link/secret", "deny")

    def test_defaults_are_the_working_and_home_directories(self) -> None:
        """Without root and home, the process's working directory and the user's home are stored."""
        compiled = PathPattern("src/*")
        assert compiled.root == normalize_path(os.getcwd())
        assert compiled.home == normalize_path(os.path.expanduser("~"))
        assert compiled.matches_path(os.path.join(os.getcwd(), "src", "a"), "allow")


_segment_names = st.sampled_from(["a", "b", "src", ".git", "x.env", "*", "**", "?", "*.py", "é"])
_plain_names = st.sampled_from(["a", "b", "src", "lib", "x.py", "y.env", ".hidden"])
_subjects = st.lists(
    st.sampled_from(["a", "b", "src", "..", ".", "x.py", "lib", "y.env", ""]), max_size=6
).map("/".join) | st.sampled_from(["/etc/passwd", "/work/proj/a", "/work", "~/a", "../../a"])


@st.composite
def _texts_with_detours(draw: st.DrawFn) -> tuple[str, str]:
    """A pattern text, and the same text with ``x/..`` detours and ``.`` segments inserted."""
    segments = draw(st.lists(_segment_names, min_size=1, max_size=4))
    detoured: list[str] = []
    for segment in segments:
        detoured.append(segment)
        for _ in range(draw(st.integers(0, 2))):
            detoured.extend(draw(st.sampled_from([["."], [draw(_plain_names), ".."]])))
    anchor = draw(st.sampled_from(["", "/", "./", "//", "~/"]))
    return anchor + "/".join(segments), anchor + "/".join(detoured)


class TestNormalizationProperties:
    """``.`` and ``..`` are resolved before matching, and no pattern climbs out of its base."""

    @given(_texts_with_detours(), _subjects, st.sampled_from(["allow", "deny"]))
    @settings(max_examples=200, deadline=None)
    def test_detours_change_nothing(self, texts: tuple[str, str], subject: str, decision: Decision) -> None:
        """``a/x/../b`` and ``a/./b`` match exactly what ``a/b`` matches."""
        plain, detoured = texts
        try:
            expected = pattern(plain).matches_path(subject, decision)
        except ValueError:
            return  # e.g. a slash-less '**' that the detours give a slash: not the same pattern kind
        if "/" not in plain.rstrip("/"):
            return  # a detour gives a slash-less pattern a slash, which anchors it: a different pattern
        assert pattern(detoured).matches_path(subject, decision) is expected

    @given(st.lists(st.sampled_from(["a", "b", ".", ".."]), max_size=6), st.lists(_plain_names, max_size=3))
    @settings(max_examples=200, deadline=None)
    def test_subject_detours(self, detour: list[str], rest: list[str]) -> None:
        """A path with detours is matched as the path it names."""
        path = "/".join(["src", *detour, *rest])
        named = normalize_path(f"{ROOT}/{path}")
        for text in ("src/**", "**/*.py", "//work/**", "lib/*", "*.env"):
            for decision in ("allow", "deny"):
                assert pattern(text).matches_path(path, decision) is pattern(text).matches_path(
                    named, decision
                )

    @given(
        st.sampled_from(["", "/", "./", "~/", "//"]),
        st.lists(st.sampled_from(["a", "b", "..", ".", "*", "**", "src"]), min_size=1, max_size=6),
        _subjects,
    )
    @settings(max_examples=300, deadline=None)
    def test_no_pattern_escapes_its_root(self, anchor: str, segments: list[str], subject: str) -> None:
        """A pattern with ``..`` is refused or matches, as an allow, only paths under its base."""
        text = anchor + "/".join(segments)
        try:
            compiled = pattern(text)
        except ValueError as error:
            message = str(error)
        else:
            if compiled.matches_path(subject, "allow"):
                base = HOME if anchor == "~/" else "/" if anchor == "//" else ROOT
                named = normalize_path(subject if subject.startswith("/") else f"{ROOT}/{subject}")
                assert base in ("/", named) or named.startswith(base + "/")
            return
        assert "'..'" in message or "names no path" in message or "**" in message

    @given(_texts_with_detours(), _subjects)
    @settings(max_examples=200, deadline=None)
    def test_deny_covers_allow(self, texts: tuple[str, str], subject: str) -> None:
        """Whatever a pattern allows, the same pattern in a deny or ask rule also matches (fail closed)."""
        try:
            compiled = pattern(texts[0])
        except ValueError:
            return
        if compiled.matches_path(subject, "allow"):
            assert compiled.matches_path(subject, "deny")


class TestBoundedTime:
    """Matching long paths stays quick: no pattern makes matching backtrack."""

    @pytest.mark.parametrize(
        ("text", "path"),
        [
            pytest.param("*a*a*a*a*b", "a" * 10_000, id="stars-in-a-long-name"),
            pytest.param("**/x/**/y/**/z", "x/" * 5_000, id="double-stars-over-many-names"),
            pytest.param("?*?*?*?*!", "a" * 10_000, id="question-marks"),
            pytest.param("*.env", "a/" * 5_000, id="slashless-deep"),
        ],
    )
    def test_quick(self, text: str, path: str) -> None:
        """A 10,000-character path is matched in well under a second, for allow and deny."""
        compiled = pattern(text)
        with cpu_bound(1.0):
            for decision in ("allow", "deny"):
                compiled.matches_path(path, decision)


class TestDescription:
    """What a pattern says about itself, for the dangerous-tool guard and for lint."""

    @pytest.mark.parametrize(
        ("text", "unrestricted", "outside"),
        [
            pytest.param("//**", True, True, id="everything"),
            pytest.param("//**/**", True, True, id="everything-twice"),
            pytest.param("//etc/**", False, True, id="absolute"),
            pytest.param("~/x", False, True, id="home"),
            pytest.param("src/**", False, False, id="relative"),
            pytest.param("**", False, False, id="slashless-double-star"),
            pytest.param("*.env", False, False, id="slashless"),
            pytest.param("/", False, False, id="root"),
        ],
    )
    def test_description(self, text: str, unrestricted: bool, outside: bool) -> None:
        """Only ``//**`` matches every path; absolute and home patterns reach outside the root."""
        compiled = pattern(text)
        assert compiled.is_unrestricted is unrestricted
        assert compiled.reaches_outside_root is outside
        assert compiled.kind == "path"

    @pytest.mark.parametrize(
        ("text", "path", "shape"),
        [
            pytest.param("./config/app.yaml", f"{ROOT}/config/app.yaml", "exact", id="one-file"),
            pytest.param("build/**", f"{ROOT}/build", "tree", id="a-tree"),
            pytest.param("//data/out/**", "/data/out", "tree", id="absolute-tree"),
            pytest.param("~/.ssh/**", f"{HOME}/.ssh", "tree", id="home-tree"),
            pytest.param("logs/*.txt", f"{ROOT}/logs", "partial", id="a-glob-inside"),
            pytest.param("a/**/b", f"{ROOT}/a", "partial", id="a-middle-double-star"),
            pytest.param("//**", "/", "tree", id="everything"),
            pytest.param("*.env", ROOT, "anywhere", id="slashless"),
            pytest.param(".env", ROOT, "anywhere", id="slashless-literal"),
            pytest.param("src/../lib/**", f"{ROOT}/lib", "tree", id="normalized"),
        ],
    )
    def test_fixed_part(self, text: str, path: str, shape: str) -> None:
        """The literal path a pattern starts with, and what its wildcards add (what a sandbox can mount)."""
        assert pattern(text).fixed_part == (path, shape)

    def test_home_under_root_stays_inside(self) -> None:
        """A home directory inside the root does not count as outside it."""
        assert not PathPattern("~/x", root="/home", home="/home/user").reaches_outside_root

    def test_value_semantics(self) -> None:
        """Frozen values, equal by text, root, home and key; the root is stored normalized."""
        assert PathPattern("a", root="/r/./x/..", home="/h") == PathPattern("a", root="/r", home="/h")
        changed = dataclasses.replace(pattern("src/*"), root="/elsewhere")
        assert changed.matches_path("/elsewhere/src/a", "allow")
        assert repr(pattern("x")) == f"PathPattern(text='x', root='{ROOT}', home='{HOME}', key=None)"


class TestConstruction:
    """A malformed specifier or directory is refused at construction, naming the text."""

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            pytest.param("", "is empty", id="empty"),
            pytest.param("../x", "climbs above the rules' root", id="dotdot-relative"),
            pytest.param("/..", "climbs above the rules' root", id="dotdot-slash"),
            pytest.param("a/../../b", "climbs above the rules' root", id="dotdot-deep"),
            pytest.param("~/../x", "climbs above the home directory", id="dotdot-home"),
            pytest.param("//..", "climbs above /", id="dotdot-absolute"),
            pytest.param("a/*/../b", "after a wildcard", id="dotdot-after-star"),
            pytest.param("a/**/../b", "after a wildcard", id="dotdot-after-double-star"),
            pytest.param("a**b", "whole path segment", id="double-star-inside-segment"),
            pytest.param("src/\x00", "control character", id="nul"),
            pytest.param("src/\n", "control character", id="newline"),
        ],
    )
    def test_invalid(self, text: str, problem: str) -> None:
        """The ValueError names the specifier and what is wrong with it."""
        with pytest.raises(
            ValueError, match=f"path specifier {re.escape(repr(text))}: .*{re.escape(problem)}"
        ):
            pattern(text)

    @pytest.mark.parametrize(
        ("field", "value", "error"),
        [
            pytest.param("root", "relative/dir", ValueError, id="relative-root"),
            pytest.param("home", "", ValueError, id="empty-home"),
            pytest.param("root", "/a\x00b", ValueError, id="nul-root"),
            pytest.param("root", b"/bytes", TypeError, id="bytes-root"),
            pytest.param("home", 1, TypeError, id="int-home"),
        ],
    )
    def test_bad_directory(self, field: str, value: Any, error: type[Exception]) -> None:
        """Root and home must be absolute str paths."""
        with pytest.raises(error, match=f"PathPattern: {field}: expected"):
            PathPattern("x", **{"root": ROOT, "home": HOME, field: value})

    def test_path_like_directories(self, tmp_path: Path) -> None:
        """Root and home may be given as ``os.PathLike`` values; they are stored as strings."""
        compiled = PathPattern("x", root=tmp_path, home=tmp_path)  # type: ignore[arg-type]
        assert compiled.root == str(tmp_path)

    def test_text_must_be_a_string(self) -> None:
        """The text must be a string."""
        with pytest.raises(TypeError, match="text: expected a string"):
            PathPattern(1)  # type: ignore[arg-type]

    @given(st.text(max_size=30))
    @settings(max_examples=200, deadline=None)
    def test_any_text(self, text: str) -> None:
        """Any text builds a pattern or raises ValueError; a pattern never raises while matching."""
        try:
            compiled = pattern(text)
        except ValueError as error:
            message = str(error)
        else:
            assert compiled.matches_path(text, "deny") in (True, False)
            assert compiled.matches_path(text, "allow") in (True, False)
            return
        assert message.startswith("path specifier ")


class TestSnapshots:
    """Patterns round-trip through snapshots with their root and home; bad snapshots name the path."""

    def test_round_trip(self) -> None:
        """``from_snapshot(to_snapshot())`` is the same pattern, root and home included."""
        for compiled in (pattern("src/**"), pattern("*.env", key="target")):
            assert PathPattern.from_snapshot(compiled.to_snapshot()) == compiled

    def test_format(self) -> None:
        """The snapshot holds the type, the text, the root and the home, and the key when set."""
        assert pattern("src/*").to_snapshot() == {"type": "path", "text": "src/*", "root": ROOT, "home": HOME}

    @pytest.mark.parametrize(
        ("snapshot", "path", "match"),
        [
            pytest.param(
                {"type": "path", "text": "x", "root": ROOT}, "p.home", "required", id="missing-home"
            ),
            pytest.param(
                {"type": "path", "text": "x", "root": "rel", "home": HOME}, "p.root", "absolute", id="rel"
            ),
            pytest.param(
                {"type": "path", "text": "../x", "root": ROOT, "home": HOME}, "p.text", "climbs", id="text"
            ),
            pytest.param(
                {"type": "command", "text": "x", "root": ROOT, "home": HOME}, "p.type", "'path'", id="type"
            ),
            pytest.param(
                {"type": "path", "text": "x", "root": 1, "home": HOME}, "p.root", "a string", id="root-int"
            ),
        ],
    )
    def test_invalid(self, snapshot: Any, path: str, match: str) -> None:
        """Every problem raises InvalidSnapshotError at the path of the bad field."""
        assert_snapshot_error(lambda data: PathPattern.from_snapshot(data, "p"), snapshot, path, match)

    @given(json_values)
    @settings(max_examples=200, deadline=None)
    def test_fuzzed_snapshots(self, snapshot: Any) -> None:
        """Any JSON is restored or refused with InvalidSnapshotError, never another exception."""
        restored = restored_or_rejected(PathPattern.from_snapshot, snapshot)
        assert restored is None or isinstance(restored, PathPattern)
