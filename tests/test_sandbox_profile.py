"""SandboxProfile: the walls a layered policy's folders and rules ask for (no bubblewrap needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ask_permissions import PROTECTED_PATHS, ApprovalQueue, DomainPattern, LayeredPolicy, PermissionSettings
from ask_permissions.sandbox import (
    SECRET_VARIABLES,
    NetworkRules,
    SandboxProfile,
    profile_from_view,
)
from ask_permissions.sandbox._profile import HOME_FILES

from .sandbox_support import Place, place

__all__ = ["place"]  # a fixture, used by name

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent-settings.json"


def _profile(policy: LayeredPolicy, **options: object) -> SandboxProfile:
    return profile_from_view(
        policy.sandbox_view(),
        cwd=policy.cwd,
        secrets=SECRET_VARIABLES,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture
def home(place: Place, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's home directory is the place's (policies read ~ when built)."""
    monkeypatch.setenv("HOME", str(place.home))
    return place.home


class TestWritable:
    """Writable: the working directories and the folders allow rules let editing tools write."""

    def test_the_example_settings(self, place: Place, home: Path) -> None:
        """The example settings: the project and its additional directory are writable, the protected names
        at their tops are blocked, Read(**/.env) cannot be mounted, and no domain is allowed."""
        (place.project / ".agent").mkdir()
        shutil.copy(EXAMPLE, place.project / ".agent" / "settings.json")
        (place.base / "shared").mkdir()
        profile = _profile(place.policy())
        project, shared = str(place.project), str(place.base / "shared")
        assert profile.cwd == project
        assert profile.writable == (project, shared)
        protected = dict(profile.protected)
        for top in (project, shared):
            assert protected[f"{top}/.git"] is True
            assert protected[f"{top}/.agent"] is True
            assert protected[f"{top}/.mcp.json"] is False
            assert f"{top}/.bashrc" not in protected  # only at home
            assert f"{top}/.bashrc" in profile.read_only  # kept read-only where it exists
        assert profile.unreadable == ()
        assert profile.network is None
        assert profile.private == ("/tmp", "/run", "/var/run")

    def test_the_reference_shows_the_example_profile(self, place: Place, home: Path) -> None:
        """The profile printed in the reference page is the one built for the example settings."""
        (place.project / ".agent").mkdir()
        (place.project / ".git").mkdir()
        shutil.copy(EXAMPLE, place.project / ".agent" / "settings.json")
        (place.base / "shared").mkdir()
        page = (
            Path(__file__).resolve().parent.parent / "docs" / "reference" / "sandbox-profile.md"
        ).read_text()
        shown = page.split("## The example settings", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
        built = json.dumps(_profile(place.policy()).to_dict()).replace(str(place.base), "<base>")
        assert json.loads(built) == json.loads(shown)

    def test_allow_rules_of_editing_tools_open_whole_trees_only(self, place: Place, home: Path) -> None:
        """An Edit allow for a whole tree or one existing file opens it; a glob inside, a reading tool, a
        missing folder or the whole file system opens nothing."""
        for name in ("tree", "globbed", "read", "file-folder"):
            (place.outside / name).mkdir()
        (place.outside / "file-folder" / "notes.txt").write_text("", encoding="utf-8")
        outside = place.outside
        policy = place.policy(
            allow=[
                f"Edit(/{outside}/tree/**)",
                f"Edit(/{outside}/globbed/*.txt)",
                f"Read(/{outside}/read/**)",
                f"Write(/{outside}/file-folder/notes.txt)",
                f"Edit(/{outside}/missing/**)",
                "Edit(//**)",
            ]
        )
        profile = _profile(policy)
        assert profile.writable == (
            str(place.project),
            f"{outside}/tree",
            f"{outside}/file-folder/notes.txt",
        )

    def test_more_folders_can_be_given(self, place: Place, home: Path) -> None:
        """``writable=`` adds folders, which get the protected names at their tops too."""
        profile = _profile(place.policy(), writable=[str(place.outside)])
        assert profile.writable == (str(place.project), str(place.outside))
        assert f"{place.outside}/.git" in dict(profile.protected)

    def test_the_working_directory_must_exist(self, place: Place, home: Path) -> None:
        """A working directory that does not exist is a ValueError naming it."""
        with pytest.raises(ValueError, match="cwd"):
            profile_from_view(place.policy().sandbox_view(), cwd=str(place.base / "gone"), secrets=())


class TestProtected:
    """Protected paths and the paths of deny rules stay read-only; reading tools' deny rules hide."""

    def test_home_gets_the_start_up_files_when_writable(self, place: Place, home: Path) -> None:
        """With the home directory inside a writable folder, its start-up files are blocked too."""
        profile = _profile(place.policy(), writable=[str(place.base)])
        protected = dict(profile.protected)
        for name in sorted(HOME_FILES):
            assert f"{home}/{name}" in protected
        assert protected[f"{home}/.agent"] is True

    def test_every_protected_name_is_covered(self, place: Place, home: Path) -> None:
        """Each name of PROTECTED_PATHS is blocked at the project's top or kept read-only there."""
        profile = _profile(place.policy())
        covered = {path.rsplit("/", 1)[1] for path, _ in profile.protected}
        covered |= {path.rsplit("/", 1)[1] for path in profile.read_only}
        assert covered == PROTECTED_PATHS.directories | PROTECTED_PATHS.files

    def test_a_settings_file_inside_is_protected(self, place: Place, home: Path) -> None:
        """A settings file the policy reads from inside the project cannot be edited by a command."""
        cli = place.project / "agent-settings.json"
        cli.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}), encoding="utf-8")
        settings = PermissionSettings.load(project_dir=place.project, user_dir=home / ".agent", cli=cli)
        policy = LayeredPolicy(queue=ApprovalQueue(), settings=settings)
        assert dict(_profile(policy).protected)[str(cli)] is False

    def test_deny_and_ask_rules_of_editing_tools_are_read_only(self, place: Place, home: Path) -> None:
        """Deny and ask rules for one path or a whole tree inside a writable folder keep it read-only; one
        outside (read-only anyway) or with a glob inside adds nothing."""
        policy = place.policy(
            deny=["Edit(./config/**)", "Write(//etc/hosts)", "Edit(./logs/*.log)"],
            ask=["Write(./release.txt)"],
        )
        read_only = _profile(policy).read_only
        assert f"{place.project}/config" in read_only
        assert f"{place.project}/release.txt" in read_only
        assert "/etc/hosts" not in read_only
        assert not any("logs" in path for path in read_only)

    def test_deny_rules_of_reading_tools_hide_paths(self, place: Place, home: Path) -> None:
        """Read deny rules hide the paths they name, unless a writable folder lies inside one."""
        policy = place.policy(deny=["Read(~/.ssh/**)", "Read(./.env)", f"Read(/{place.base}/**)"])
        assert _profile(policy).unreadable == (f"{home}/.ssh", f"{place.project}/.env")


# Hosts that "domain:example.com" must not let through: lookalikes, other hosts behind tricks, and
# spellings URL parsers read differently.
REFUSED_URLS = [
    pytest.param("https://evil.test/", id="another-host"),
    pytest.param("https://example.com.evil.test/", id="suffix"),
    pytest.param("https://evilexample.com/", id="prefix"),
    pytest.param("https://sub.example.com/", id="subdomain"),
    pytest.param("https://example.com@evil.test/", id="userinfo"),
    pytest.param("https://evil.test#@example.com/", id="fragment-at"),
    pytest.param("https://exa%6dple.com/", id="percent-encoded"),
    pytest.param("https://example.com%2eevil.test/", id="encoded-dot"),
    pytest.param("https://ex\u0430mple.com/", id="cyrillic-a"),
    pytest.param("https://example.com\\@evil.test/", id="backslash"),
    pytest.param("https://example.com:443@evil.test:443/", id="ports-and-userinfo"),
    pytest.param("https://[::1]:443/", id="ipv6-loopback"),
    pytest.param("https://127.0.0.1:443/", id="loopback"),
    pytest.param("https:/\texample.com/", id="tab"),
    pytest.param("ftp://example.com/", id="other-scheme"),
    pytest.param("https://example.com\x00.evil.test/", id="nul"),
]


class TestNetworkRules:
    """The domain proxy's rules: deny and ask before allow, hosts read as URL parsers read them."""

    def test_an_allowed_host_with_any_port(self) -> None:
        """``domain:example.com`` lets a tunnel to example.com through, on any port."""
        rules = NetworkRules((DomainPattern("domain:example.com"),))
        assert rules.allows("https://example.com:443/")
        assert rules.allows("https://EXAMPLE.com:8443/")
        assert rules.allows("http://example.com/path?q=1")

    @pytest.mark.parametrize("url", REFUSED_URLS)
    def test_other_hosts_are_refused(self, url: str) -> None:
        """No lookalike or ambiguous spelling gets through an allow of one host."""
        assert not NetworkRules((DomainPattern("domain:example.com"),)).allows(url)

    def test_deny_and_ask_win(self) -> None:
        """A deny or an ask refuses a host an allow (even ``domain:*``) would let through; a rule for a whole
        URL tool refuses every host."""
        everything = (DomainPattern("domain:*"),)
        denied = NetworkRules(everything, (DomainPattern("domain:*.internal.example"),))
        assert denied.allows("https://pypi.org:443/")
        assert not denied.allows("https://db.internal.example:443/")
        assert not NetworkRules(everything, (None,)).allows("https://pypi.org:443/")

    def test_rules_come_from_the_policy(self, place: Place, home: Path) -> None:
        """Allow rules with domain specifiers open the network; deny and ask rules of URL tools refuse."""
        policy = place.policy(
            allow=["WebFetch(domain:pypi.org)", "WebFetch"],
            ask=["WebFetch(domain:files.pythonhosted.org)"],
            deny=["Bash(curl *)"],
        )
        network = _profile(policy).network
        assert network is not None
        assert network.texts == ("WebFetch(domain:pypi.org)",)
        assert network.allows("https://pypi.org:443/")
        assert not network.allows("https://files.pythonhosted.org:443/")
        assert not network.allows("https://example.com:443/")

    def test_a_bare_allow_of_a_url_tool_opens_nothing(self, place: Place, home: Path) -> None:
        """``WebFetch`` alone in allow lets that tool fetch anything, but opens no network for commands."""
        assert _profile(place.policy(allow=["WebFetch"])).network is None


class TestProfileValues:
    """A profile is a checked, frozen value with a JSON form."""

    @pytest.mark.parametrize(
        ("fields", "error", "match"),
        [
            pytest.param({"cwd": "relative", "writable": ("relative",)}, ValueError, "cwd", id="relative"),
            pytest.param({"cwd": "/a", "writable": ("/b",)}, ValueError, "inside a writable", id="outside"),
            pytest.param({"cwd": "/a", "writable": ["/a"]}, TypeError, "writable", id="a-list"),
            pytest.param(
                {"cwd": "/a", "writable": ("/a",), "protected": ("/a/.git",)}, TypeError, "pairs", id="pair"
            ),
            pytest.param(
                {"cwd": "/a", "writable": ("/a",), "read_only": ("x",)}, ValueError, "read_only", id="ro"
            ),
            pytest.param(
                {"cwd": "/a", "writable": ("/a",), "network": "all"}, TypeError, "network", id="network"
            ),
            pytest.param(
                {"cwd": "/a", "writable": ("/a",), "secrets": (1,)}, TypeError, "secrets", id="secrets"
            ),
        ],
    )
    def test_bad_fields_are_refused(
        self, fields: dict[str, object], error: type[Exception], match: str
    ) -> None:
        """Each malformed field is refused, naming it."""
        with pytest.raises(error, match=match):
            SandboxProfile(**fields)  # type: ignore[arg-type]

    def test_to_dict_is_json(self) -> None:
        """The JSON form lists the walls, folders with a trailing slash."""
        profile = SandboxProfile(
            "/a",
            ("/a",),
            (("/a/.git", True), ("/a/.mcp.json", False)),
            network=NetworkRules((DomainPattern("pypi.org"),), texts=("WebFetch(domain:pypi.org)",)),
        )
        data = json.loads(json.dumps(profile.to_dict()))
        assert data["protected"] == ["/a/.git/", "/a/.mcp.json"]
        assert data["network"] == {"allowed": ["WebFetch(domain:pypi.org)"], "refused": 0}
        assert data["private"] == ["/tmp", "/run", "/var/run"]
