"""The version has one source of truth, and the changelog agrees with it."""

from __future__ import annotations

import re
from pathlib import Path

import ask_permissions

ROOT = Path(__file__).resolve().parent.parent


def test_newest_changelog_release_is_the_package_version() -> None:
    """The newest release heading in CHANGELOG.md names __version__."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, flags=re.MULTILINE)
    assert releases, "CHANGELOG.md has no release heading"
    assert releases[0] == ask_permissions.__version__


def test_changelog_keeps_an_unreleased_section_first() -> None:
    """Changes land under [Unreleased], which stays above every release."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"


def test_version_digits_follow_versioning_md() -> None:
    """Each part of the version is one step on a 0-9 patch (and minor) dial."""
    major, minor, patch = (int(part) for part in ask_permissions.__version__.split("."))
    assert 0 <= patch <= 9
    assert 0 <= minor <= 9
    assert major >= 0
