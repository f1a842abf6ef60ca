"""The sandbox's walls, with real bubblewrap and real processes (only harmless commands, on temporary
folders): each test asserts what the host's file system, environment or server saw, not only exit codes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ask_permissions import ProtectedPaths, SandboxUnavailableError, ToolCall
from ask_permissions.sandbox import SECRET_VARIABLES, BwrapBackend, Sandbox
from ask_permissions.sandbox._bwrap import runtime_dir

from .sandbox_support import LocalServer, Place, bwrap, place, server

__all__ = ["bwrap", "place", "server"]  # fixtures, used by name

pytestmark = pytest.mark.usefixtures("bwrap")

# A client run inside the sandbox: fetch a URL (through the proxy the environment names, if any).
FETCH = """
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=20) as response:
        print("status", response.status, response.read().decode())
except Exception as error:
    print("failed", type(error).__name__, error)
    sys.exit(3)
"""

# A client run inside the sandbox: ask the proxy for a tunnel, then speak HTTP through it.
TUNNEL = """
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
connection = socket.create_connection((proxy.hostname, proxy.port), timeout=20)
target = sys.argv[1]
connection.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
reply = b""
while b"\\r\\n\\r\\n" not in reply:
    chunk = connection.recv(4096)
    if not chunk:
        break
    reply += chunk
status = reply.split(b"\\r\\n", 1)[0].decode()
print("proxy:", status)
if " 200 " in status + " ":
    connection.sendall(b"GET /through-the-tunnel HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
    answer = b""
    while chunk := connection.recv(4096):
        answer += chunk
    print("server:", answer.split(b"\\r\\n", 1)[0].decode())
"""


# The interpreter a venv links to: a venv of its own may lie under the host's /tmp (CI makes one there),
# which sandboxes never see; the scripts run inside need only the standard library.
PYTHON = os.path.realpath(sys.executable)


def _bwrap_stub(place: Place, *lines: str) -> Path:
    """A stand-in for bubblewrap: a Python script of these lines (``os`` and ``sys`` imported)."""
    stub = place.base / "bwrap"
    stub.write_text("\n".join((f"#!{sys.executable}", "import os, sys", *lines, "")), encoding="utf-8")
    stub.chmod(0o755)
    return stub


def _script(place: Place, name: str, text: str) -> str:
    path = place.project / name
    path.write_text(text, encoding="utf-8")
    return str(path)


class TestFileSystem:
    """Read-only but for the working directory; protected paths read-only even there."""

    def test_a_write_inside_the_working_directory_works(self, place: Place) -> None:
        """A command writes files inside the working directory, and the host sees them."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            result = sandbox.run("mkdir -p build && echo made > build/out.txt")
        assert result.returncode == 0, result.stderr
        assert (place.project / "build" / "out.txt").read_text() == "made\n"

    def test_a_write_outside_fails_and_creates_nothing(self, place: Place) -> None:
        """Writes outside the working directory fail, by every spelling, and nothing appears outside."""
        before = place.listing()
        outside = place.outside
        commands = [
            f"echo x > {outside}/direct.txt",
            "echo x > ../outside/relative.txt",
            f"mkdir {outside}/folder",
            f"touch {place.base}/beside.txt",
            f"cp /etc/hostname {outside}/copied",
            f"echo x > {place.home}/.bashrc",
        ]
        with Sandbox.from_policy(place.policy()) as sandbox:
            results = [sandbox.run(command) for command in commands]
        assert all(result.returncode != 0 for result in results), results
        assert all("Read-only file system" in result.stderr for result in results), results
        assert place.listing() == before

    def test_a_symlink_out_of_the_walls_leads_nowhere(self, place: Place) -> None:
        """A link inside the project to a folder outside it, made by the host or by the command, cannot be
        written through."""
        (place.project / "planted").symlink_to(place.outside)
        with Sandbox.from_policy(place.policy()) as sandbox:
            planted = sandbox.run("echo x > planted/through-planted.txt")
            made = sandbox.run(f"ln -s {place.outside} made && echo x > made/through-made.txt")
        assert planted.returncode != 0
        assert made.returncode != 0
        assert "Read-only file system" in made.stderr
        assert list(place.outside.iterdir()) == []

    @pytest.mark.parametrize(
        "target",
        ["/proc/self/root{outside}/f", "/proc/1/root{outside}/f", "/proc/self/cwd/../outside/f"],
        ids=["self-root", "init-root", "self-cwd"],
    )
    def test_a_proc_path_out_of_the_walls_fails(self, place: Place, target: str) -> None:
        """/proc's views of the root and the working directory are the sandbox's own: read-only outside."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            result = sandbox.run(f"echo x > {target.format(outside=place.outside)}")
        assert result.returncode != 0
        assert list(place.outside.iterdir()) == []

    def test_the_runtime_folder_stays_hidden_in_a_writable_folder(self, place: Place) -> None:
        """Even where a writable folder holds the sandbox's runtime folder (its locks and records), a
        command sees it empty (it only lists it here)."""
        runtime = runtime_dir()
        nothing = ProtectedPaths(frozenset(), frozenset())  # no placeholder in the shared folder above it
        policy = place.policy(protected_paths=nothing)
        with Sandbox.from_policy(policy, writable=[os.path.dirname(runtime)]) as sandbox:
            listed = sandbox.run(["/bin/ls", "-A", runtime])
        assert listed.returncode == 0
        assert listed.stdout == ""
        assert "setup.lock" in os.listdir(runtime)

    def test_tmp_is_private(self, place: Place) -> None:
        """/tmp inside is the sandbox's own: written and read there, never seen by the host."""
        name = f"ask-permissions-private-{os.getpid()}-{threading.get_ident()}"
        with Sandbox.from_policy(place.policy()) as sandbox:
            result = sandbox.run(f"echo inside > /tmp/{name} && cat /tmp/{name}")
        assert result.stdout == "inside\n"
        assert not os.path.exists(f"/tmp/{name}")


class TestProtectedPaths:
    """The safety checks' protected paths stay read-only inside the working directory."""

    def test_existing_protected_paths_cannot_be_changed(self, place: Place) -> None:
        """.git (config and hooks), an existing start-up file and the settings folder stay as they were,
        whatever a command tries: write, remove, rename."""
        hooks = place.project / ".git" / "hooks"
        hooks.mkdir(parents=True)
        (place.project / ".git" / "config").write_text("[core]\n", encoding="utf-8")
        (place.project / ".bashrc").write_text("# mine\n", encoding="utf-8")
        policy = place.policy(allow=["Bash(ls)"])
        settings = (place.project / ".agent" / "settings.json").read_text()
        commands = [
            "echo '[core] fsmonitor = x' >> .git/config",
            "echo x > .git/hooks/pre-commit",
            "echo x >> .bashrc",
            "echo '{}' > .agent/settings.json",
            "rm .git/config",
            "rmdir .git/hooks",
            "mv .git moved",
            "mv .agent moved-agent",
            "echo x > .git/commondir",
        ]
        with Sandbox.from_policy(policy) as sandbox:
            results = [sandbox.run(command) for command in commands]
        assert all(result.returncode != 0 for result in results), results
        assert (place.project / ".git" / "config").read_text() == "[core]\n"
        assert sorted(os.listdir(place.project / ".git")) == ["config", "hooks"]
        assert list(hooks.iterdir()) == []
        assert (place.project / ".bashrc").read_text() == "# mine\n"
        assert (place.project / ".agent" / "settings.json").read_text() == settings
        assert not (place.project / "moved").exists()

    def test_missing_protected_paths_cannot_be_created(self, place: Place) -> None:
        """A protected path that does not exist cannot be made, and the host is left without it (and
        without the placeholder that blocked it) once the run is over."""
        commands = [
            "mkdir -p .agent && echo '{}' > .agent/settings.json",
            "git init -q .",
            "echo '{}' > .mcp.json",
            "mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
        ]
        with Sandbox.from_policy(place.policy()) as sandbox:
            results = [sandbox.run(command) for command in commands]
            after = sandbox.run("echo fine > kept.txt")
        assert all(result.returncode != 0 for result in results), results
        assert after.returncode == 0
        assert sorted(os.listdir(place.project)) == ["kept.txt"]

    def test_a_placeholder_stays_while_another_run_needs_it(self, place: Place) -> None:
        """Two runs over one folder: the first to end leaves the placeholders the other still mounts, so its
        protection holds to its end; the last one removes them."""
        backend = BwrapBackend(linger=0)  # each run removes what no other run holds, as it ends
        with Sandbox.from_policy(place.policy(), backend=backend) as sandbox:
            waiting = subprocess.Popen(
                sandbox.command("echo ready; read line; mkdir -p .agent/x; echo made=$?"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert waiting.stdout is not None
                assert waiting.stdin is not None
                assert waiting.stdout.readline() == "ready\n"
                quick = sandbox.run("true")
                held = sorted(os.listdir(place.project))
                out, _ = waiting.communicate("go\n", timeout=60)
            finally:
                waiting.kill()
                waiting.wait(10)
        assert quick.returncode == 0
        assert ".agent" in held
        assert "made=1" in out
        assert os.listdir(place.project) == []

    def test_runs_with_other_runtime_folders_share_the_placeholders(self, place: Place) -> None:
        """Two runs over one folder whose launchers were given different ``XDG_RUNTIME_DIR``s (so each keeps
        its records in another runtime folder): the first to end still leaves the placeholder the other
        mounts, so the other cannot create the protected folder."""
        if not os.access("/run", os.W_OK):
            pytest.skip("needs a writable /run for a second runtime folder")
        other = tempfile.mkdtemp(prefix="ask-permissions-review-", dir="/run")
        os.chmod(other, 0o700)
        plain = {name: value for name, value in os.environ.items() if name != "XDG_RUNTIME_DIR"}
        elsewhere = {**plain, "XDG_RUNTIME_DIR": other}
        try:
            with Sandbox.from_policy(place.policy(), backend=BwrapBackend(linger=0)) as sandbox:
                first = subprocess.Popen(
                    sandbox.command("echo ready; read line"),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=plain,
                )
                second = subprocess.Popen(
                    sandbox.command("echo ready; read line; mkdir -p .vscode && echo x > .vscode/tasks.json"),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=elsewhere,
                )
                try:
                    assert first.stdout is not None
                    assert second.stdout is not None
                    assert first.stdout.readline() == "ready\n"
                    assert second.stdout.readline() == "ready\n"
                    first.communicate("go\n", timeout=60)
                    second.communicate("go\n", timeout=60)
                finally:
                    for process in (first, second):
                        process.kill()
                        process.wait(10)
        finally:
            shutil.rmtree(other, ignore_errors=True)
        assert second.returncode != 0
        assert not (place.project / ".vscode" / "tasks.json").exists()

    def test_placeholders_linger_between_runs_until_close(self, place: Place) -> None:
        """By default a burst of runs makes the placeholders once: they stay after a run, and ``close``
        removes them; with ``linger=0`` they go as each run ends."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            sandbox.run("true")
            kept = sorted(os.listdir(place.project))
        closed = sorted(os.listdir(place.project))
        with Sandbox.from_policy(place.policy(), backend=BwrapBackend(linger=0)) as sandbox:
            sandbox.run("true")
            at_once = sorted(os.listdir(place.project))
        assert ".agent" in kept
        assert ".mcp.json" in kept
        assert closed == []
        assert at_once == []

    def test_nothing_is_kept_once_the_placeholders_are_gone(self, place: Place) -> None:
        """The sandbox's own records of a project (its lock, its placeholders) go with the placeholders: the
        runtime folder does not grow with every project ever sandboxed."""
        before = set(os.listdir(runtime_dir()))
        with Sandbox.from_policy(place.policy()) as sandbox:
            sandbox.run("true")
            during = set(os.listdir(runtime_dir()))
        assert during > before  # the project's lock and records, while its placeholders stand
        assert set(os.listdir(runtime_dir())) <= before

    def test_a_protected_symlink_refuses_the_walls(self, place: Place) -> None:
        """A protected name that is a symbolic link could be replaced: the run is refused, nothing ran."""
        (place.outside / "agent").mkdir()
        (place.project / ".agent").symlink_to(place.outside / "agent")
        sandbox = Sandbox.from_policy(place.policy())
        with sandbox, pytest.raises(SandboxUnavailableError, match="symbolic link") as raised:
            sandbox.run("echo ran > ran.txt")
        assert raised.value.missing == "a protected path that is not a symbolic link"
        assert not (place.project / "ran.txt").exists()

    def test_a_deny_rule_of_an_editing_tool_is_read_only(self, place: Place) -> None:
        """A folder a deny rule keeps from Edit stays read-only for commands too."""
        (place.project / "config").mkdir()
        (place.project / "config" / "prod.yaml").write_text("safe\n", encoding="utf-8")
        policy = place.policy(deny=["Edit(./config/**)"])
        with Sandbox.from_policy(policy) as sandbox:
            result = sandbox.run("echo changed > config/prod.yaml")
        assert result.returncode != 0
        assert (place.project / "config" / "prod.yaml").read_text() == "safe\n"

    def test_a_deny_rule_of_an_editing_tool_holds_through_a_symlink(self, place: Place) -> None:
        """A folder a deny rule keeps from Edit stays read-only when its name is a symbolic link to a folder
        of the project: what the link leads to cannot be changed through it, nor by its own name."""
        real = place.project / "real-config"
        real.mkdir()
        (real / "prod.yaml").write_text("safe\n", encoding="utf-8")
        (place.project / "config").symlink_to("real-config")
        policy = place.policy(deny=["Edit(./config/**)"])
        with Sandbox.from_policy(policy) as sandbox:
            through_link = sandbox.run("echo changed > config/prod.yaml")
            added = sandbox.run("echo new > config/added.yaml")
            by_target = sandbox.run("echo changed > real-config/prod.yaml")
        assert all(result.returncode != 0 for result in (through_link, added, by_target))
        assert (real / "prod.yaml").read_text() == "safe\n"
        assert sorted(os.listdir(real)) == ["prod.yaml"]

    def test_a_deny_rule_of_a_reading_tool_hides_a_symlinked_folder(self, place: Place) -> None:
        """A folder a deny rule keeps from Read is hidden when its name is a symbolic link too."""
        real = place.project / "real-secrets"
        real.mkdir()
        (real / "key.txt").write_text("secret-value\n", encoding="utf-8")
        (place.project / "secrets").symlink_to("real-secrets")
        with Sandbox.from_policy(place.policy(deny=["Read(./secrets/**)"])) as sandbox:
            result = sandbox.run("cat secrets/key.txt real-secrets/key.txt")
        assert "secret-value" not in result.stdout
        assert (real / "key.txt").read_text() == "secret-value\n"

    def test_a_deny_rule_of_a_reading_tool_hides_the_path(self, place: Place) -> None:
        """A file a deny rule keeps from Read reads as empty inside."""
        (place.project / ".env").write_text("KEY=secret\n", encoding="utf-8")
        with Sandbox.from_policy(place.policy(deny=["Read(./.env)"])) as sandbox:
            result = sandbox.run("cat .env")
        assert "secret" not in result.stdout
        assert (place.project / ".env").read_text() == "KEY=secret\n"

    def test_a_planted_symlink_brings_no_hidden_host_file_in(self, place: Place) -> None:
        """A command plants a start-up file's name (kept read-only where it exists) as a link to a host
        file that sandboxes cannot see (in the host's /tmp): later runs do not bind that file in."""
        secret = Path(tempfile.mkdtemp(prefix="ask-permissions-hidden-", dir="/tmp"))
        try:
            (secret / "note.txt").write_text("host-only-content\n", encoding="utf-8")
            with Sandbox.from_policy(place.policy()) as sandbox:
                planted = sandbox.run(f"ln -s {secret}/note.txt .profile")
                later = sandbox.run(f"cat {secret}/note.txt .profile")
        finally:
            shutil.rmtree(secret, ignore_errors=True)
        assert planted.returncode == 0, planted.stderr
        assert "host-only-content" not in later.stdout

    @pytest.mark.parametrize("shape", ["tree", "file"])
    def test_an_allow_rule_through_a_planted_symlink_opens_nothing_outside(
        self, place: Place, shape: str
    ) -> None:
        """An allow rule of an editing tool for a path inside the project, whose name a command had made a
        link to a folder (or file) outside it, grants nothing outside: the rule names the project's path,
        not wherever a link there leads."""
        target = place.outside / "target"
        target.mkdir()
        (target / "kept.txt").write_text("kept\n", encoding="utf-8")
        with Sandbox.from_policy(place.policy()) as sandbox:
            planted = sandbox.run(f"ln -s {target} out")
        assert planted.returncode == 0, planted.stderr
        rule = "Edit(./out/**)" if shape == "tree" else "Edit(./out/kept.txt)"
        with Sandbox.from_policy(place.policy(allow=[rule])) as sandbox:
            assert str(target) not in sandbox.profile.writable
            through = sandbox.run("echo changed > out/kept.txt")
            direct = sandbox.run(f"echo changed > {target}/kept.txt")
        assert through.returncode != 0
        assert direct.returncode != 0
        assert (target / "kept.txt").read_text() == "kept\n"

    def test_a_writable_folder_turned_into_a_symlink_opens_nothing_outside(self, place: Place) -> None:
        """A folder the profile made writable, replaced by a link to a folder outside after the profile was
        worked out (by a command that ran under older walls): the next run writes nothing outside."""
        target = place.outside / "target"
        target.mkdir()
        (place.project / "out").mkdir()
        with Sandbox.from_policy(place.policy(allow=["Edit(./out/**)"])) as sandbox:
            assert str(place.project / "out") in sandbox.profile.writable
            (place.project / "out").rmdir()
            (place.project / "out").symlink_to(target)
            with pytest.raises(SandboxUnavailableError, match="symbolic link leads there") as raised:
                sandbox.run(f"echo x > {target}/escaped.txt")
        assert raised.value.missing == "a writable folder that no symbolic link leads to"
        assert list(target.iterdir()) == []

    def test_an_allow_rule_of_an_editing_tool_opens_its_folder(self, place: Place) -> None:
        """A folder outside the project that an allow rule lets Edit write is writable; the rest is not."""
        shared = place.outside / "shared"
        shared.mkdir()
        policy = place.policy(allow=[f"Edit(/{shared}/**)"])
        with Sandbox.from_policy(policy) as sandbox:
            inside = sandbox.run(f"echo x > {shared}/ok.txt")
            beside = sandbox.run(f"echo x > {place.outside}/no.txt")
        assert inside.returncode == 0
        assert beside.returncode != 0
        assert sorted(os.listdir(place.outside)) == ["shared"]
        assert os.listdir(shared) == ["ok.txt"]


class TestPolicy:
    """A layered policy with ``sandbox=Sandbox.from_policy``: what it lets through runs inside."""

    def test_an_uncertain_call_runs_inside_the_walls(self, place: Place) -> None:
        """The policy lets an unread call through as sandboxed; run through the sandbox it writes inside
        the project and nowhere else."""
        policy = place.policy(sandbox=Sandbox.from_policy)
        sandbox = policy.sandbox
        assert isinstance(sandbox, Sandbox)
        with sandbox:
            command = f'python3 -c \'open("made.txt", "w").write("x")\'; echo x > {place.outside}/f'
            result = policy.before_tool_call(ToolCall("Bash", {"command": command}, "tc-1"))
            assert result == {"action": "proceed", "sandboxed": True}
            ran = sandbox.run(command)
        assert ran.returncode != 0  # the write outside failed
        assert (place.project / "made.txt").read_text() == "x"
        assert list(place.outside.iterdir()) == []


class TestNetwork:
    """No network without an allowed domain; through the proxy, only allowed hosts."""

    def test_no_network_without_an_allowed_domain(self, place: Place, server: LocalServer) -> None:
        """With no domain allowed, a connection to the host's 127.0.0.1 fails and the server sees nothing."""
        fetch = _script(place, "fetch.py", FETCH)
        policy = place.policy(allow=["Read"], deny=["WebFetch(domain:*.internal.example)"])
        with Sandbox.from_policy(policy) as sandbox:
            assert sandbox.profile.network is None
            result = sandbox.run([PYTHON, fetch, f"http://127.0.0.1:{server.port}/blocked"])
        assert result.returncode == 3, result
        assert server.paths == []
        assert server.connections == 0

    def test_an_allowed_domain_is_reached_through_the_proxy(self, place: Place, server: LocalServer) -> None:
        """With the host allowed, a plain HTTP request reaches the server through the proxy."""
        fetch = _script(place, "fetch.py", FETCH)
        with Sandbox.from_policy(place.policy(allow=["WebFetch(domain:127.0.0.1)"])) as sandbox:
            result = sandbox.run([PYTHON, fetch, f"http://127.0.0.1:{server.port}/allowed?x=1"])
        assert "status 200 hello from the host" in result.stdout, result
        assert server.paths == ["/allowed?x=1"]

    def test_a_tunnel_goes_only_to_an_allowed_connect_host(self, place: Place, server: LocalServer) -> None:
        """CONNECT to the allowed host opens a tunnel; to any other host the proxy answers 403 and
        connects nothing."""
        tunnel = _script(place, "tunnel.py", TUNNEL)
        with Sandbox.from_policy(place.policy(allow=["WebFetch(domain:127.0.0.1)"])) as sandbox:
            allowed = sandbox.run([PYTHON, tunnel, f"127.0.0.1:{server.port}"])
            refused = [
                sandbox.run([PYTHON, tunnel, target])
                for target in (f"localhost:{server.port}", f"127.1:{server.port}", "example.com:443")
            ]
        assert "proxy: HTTP/1.1 200 Connection Established" in allowed.stdout, allowed
        assert "server: HTTP/1.0 200 OK" in allowed.stdout
        assert all("proxy: HTTP/1.1 403 Forbidden" in result.stdout for result in refused), refused
        assert server.paths == ["/through-the-tunnel"]
        assert server.connections == 1

    def test_a_denied_domain_wins_over_an_allowed_one(self, place: Place, server: LocalServer) -> None:
        """A deny rule for the host refuses it even where an allow rule (domain:*) would let it through."""
        fetch = _script(place, "fetch.py", FETCH)
        policy = place.policy(allow=["WebFetch(domain:*)"], deny=["WebFetch(domain:127.0.0.1)"])
        with Sandbox.from_policy(policy) as sandbox:
            result = sandbox.run([PYTHON, fetch, f"http://127.0.0.1:{server.port}/denied"])
        assert result.returncode == 3
        assert "403" in result.stdout
        assert server.paths == []


class TestEnvironment:
    """Declared secrets never reach a command."""

    def test_declared_secrets_are_removed(self, place: Place, monkeypatch: pytest.MonkeyPatch) -> None:
        """Variables matching the secret patterns (the defaults and the host's own) are gone inside; the
        others are there."""
        monkeypatch.setenv("SERVICE_API_KEY", "leak-1")
        monkeypatch.setenv("GITHUB_TOKEN", "leak-2")
        monkeypatch.setenv("DEPLOY_KEY", "leak-3")
        monkeypatch.setenv("PLAIN_SETTING", "visible")
        secrets = (*SECRET_VARIABLES, "DEPLOY_KEY")
        with Sandbox.from_policy(place.policy(), secrets=secrets) as sandbox:
            result = sandbox.run("env")
        assert "leak-" not in result.stdout
        assert "PLAIN_SETTING=visible" in result.stdout

    def test_the_database_clients_passwords_are_secrets(
        self, place: Place, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The passwords the PostgreSQL and MySQL clients read from the environment are removed by default,
        from the command's environment and from the sandbox's first process alike."""
        monkeypatch.setenv("PGPASSWORD", "leak-pg")
        monkeypatch.setenv("MYSQL_PWD", "leak-mysql")
        with Sandbox.from_policy(place.policy()) as sandbox:
            result = sandbox.run("env; tr '\\0' '\\n' < /proc/1/environ")
        assert result.returncode == 0, result.stderr
        assert "PATH=" in result.stdout
        assert "leak-" not in result.stdout

    def test_the_launcher_removes_secrets_from_the_environment_it_is_given(self, place: Place) -> None:
        """A host starting ``command()`` itself, with secrets in the environment it passes, still leaks
        none; the command's exit status comes back as the process's."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            argv = sandbox.command("env; exit 7")
        environment = {**os.environ, "CLOUD_SECRET": "leak", "SHOWN": "yes"}
        finished = subprocess.run(
            argv, env=environment, capture_output=True, text=True, timeout=60, check=False
        )
        assert finished.returncode == 7, finished.stderr
        assert "leak" not in finished.stdout
        assert "SHOWN=yes" in finished.stdout


class TestRunning:
    """Exit statuses, timeouts, and failing closed."""

    def test_a_timeout_kills_the_command(self, place: Place) -> None:
        """Past its timeout the command is killed, with all it started (their output streams close at once):
        the result says so and no later write happens."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            began = time.monotonic()
            result = sandbox.run("echo started; sleep 30; echo late > late.txt", timeout=3.0)
            took = time.monotonic() - began
        assert result.timed_out
        assert took < 25  # the sleep did not outlive the kill
        assert result.stdout == "started\n"
        assert not (place.project / "late.txt").exists()

    def test_a_missing_bwrap_fails_closed(self, place: Place) -> None:
        """Without bubblewrap the sandbox cannot be built; the error names what is missing."""
        backend = BwrapBackend(bwrap=place.base / "no-such-bwrap")
        with pytest.raises(SandboxUnavailableError, match="bubblewrap") as raised:
            Sandbox.from_policy(place.policy(), backend=backend)
        assert raised.value.missing == "bwrap"

    def test_refused_namespaces_fail_closed(self, place: Place) -> None:
        """A bubblewrap that cannot make its namespaces refuses to build the sandbox, naming them."""
        stub = _bwrap_stub(place, "sys.exit('bwrap: No permissions to creating new namespace')")
        with pytest.raises(SandboxUnavailableError, match="namespace") as raised:
            Sandbox.from_policy(place.policy(), backend=BwrapBackend(bwrap=stub))
        assert raised.value.missing == "user namespaces"

    def test_walls_that_fail_at_run_time_run_nothing(self, place: Place) -> None:
        """A bubblewrap that passes the probe but cannot set a command's walls up: ``run`` raises and the
        command never ran; the launcher exits 125 and the command never ran either."""
        stub = _bwrap_stub(
            place,
            "if '--bind' in sys.argv:",
            "    sys.exit('bwrap: Can not mount tmpfs')",
            "os.execv('/usr/bin/bwrap', ['bwrap', *sys.argv[1:]])",
        )
        with Sandbox.from_policy(place.policy(), backend=BwrapBackend(bwrap=stub)) as sandbox:
            with pytest.raises(SandboxUnavailableError, match="Can not mount tmpfs") as raised:
                sandbox.run("echo ran > ran.txt")
            launched = subprocess.run(
                sandbox.command("echo ran > ran.txt"), capture_output=True, text=True, timeout=60, check=False
            )
        assert raised.value.missing == "walls for this command"
        assert launched.returncode == 125
        assert "nothing ran" in launched.stderr
        assert not (place.project / "ran.txt").exists()

    def test_an_older_bubblewrap_gets_the_same_walls(self, place: Place) -> None:
        """Before 0.5 (no --json-status-fd, no --disable-userns) a shell reports the start instead: a command
        runs inside the same walls, and walls that fail still run nothing."""
        stub = _bwrap_stub(
            place,
            "if sys.argv[1:] == ['--version']:",
            "    sys.exit(print('bubblewrap 0.4.1'))",
            "if '--json-status-fd' in sys.argv or '--disable-userns' in sys.argv:",
            "    sys.exit('bwrap: Unknown option')",
            "failing = os.path.exists(os.path.join(os.path.dirname(sys.argv[0]), 'fail'))",
            "if failing and '--bind' in sys.argv:",
            "    sys.exit('bwrap: Can not mount tmpfs')",
            "os.execv('/usr/bin/bwrap', ['bwrap', *sys.argv[1:]])",
        )
        with Sandbox.from_policy(place.policy(), backend=BwrapBackend(bwrap=stub)) as sandbox:
            inside = sandbox.run(f"echo x > made.txt; echo x > {place.outside}/f")
            (place.base / "fail").write_text("", encoding="utf-8")
            with pytest.raises(SandboxUnavailableError, match="Can not mount tmpfs"):
                sandbox.run("echo ran > ran.txt")
        assert inside.returncode != 0
        assert (place.project / "made.txt").exists()
        assert list(place.outside.iterdir()) == []
        assert not (place.project / "ran.txt").exists()

    def test_runs_from_many_threads_share_the_walls(self, place: Place) -> None:
        """Commands run at once from several threads each get the walls: every write inside lands, every
        protected path stays blocked, and nothing is left once the sandbox is closed."""
        results: dict[int, tuple[int, int]] = {}

        def work(number: int) -> None:
            inside = sandbox.run(f"echo {number} > out-{number}.txt")
            blocked = sandbox.run(f"mkdir -p .agent/{number}")
            results[number] = (inside.returncode, blocked.returncode)

        with Sandbox.from_policy(place.policy()) as sandbox:
            threads = [threading.Thread(target=work, args=(number,)) for number in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            assert not any(thread.is_alive() for thread in threads)
        assert all(inside == 0 and blocked != 0 for inside, blocked in results.values()), results
        assert sorted(os.listdir(place.project)) == [f"out-{number}.txt" for number in range(6)]

    @pytest.mark.parametrize("allow", [[], ["WebFetch(domain:pypi.org)"]], ids=["no-network", "bridge"])
    def test_a_missing_program_is_127(self, place: Place, allow: list[str]) -> None:
        """A program that does not exist ends as a shell says, 127, from ``run`` and from the launcher alike:
        it is not walls that failed."""
        with Sandbox.from_policy(place.policy(allow=allow)) as sandbox:
            result = sandbox.run(["no-such-program", "x"])
            launched = subprocess.run(
                sandbox.command([str(place.project / "no-such-program")]),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        assert result.returncode == 127
        assert "no-such-program" in result.stderr
        assert launched.returncode == 127
        assert "no-such-program" in launched.stderr

    def test_an_argument_vector_runs_as_it_is(self, place: Place) -> None:
        """A sequence is the command's argument vector, not shell text: its words reach it unchanged."""
        with Sandbox.from_policy(place.policy()) as sandbox:
            result = sandbox.run(["/bin/echo", "$HOME", "a b", "; true"])
        assert result.stdout == "$HOME a b ; true\n"

    @pytest.mark.parametrize("command", ["", "   ", [], ["/bin/echo", "a\x00b"]], ids=repr)
    def test_an_empty_command_is_refused(self, place: Place, command: object) -> None:
        """No command, or a NUL in one, is a ValueError before anything starts."""
        with Sandbox.from_policy(place.policy()) as sandbox, pytest.raises(ValueError, match="command"):
            sandbox.run(command)  # type: ignore[arg-type]

    def test_the_profile_follows_the_settings(self, place: Place) -> None:
        """A rule added to the policy's settings later (a person's "allow for this session") widens the
        walls at once."""
        shared = place.outside / "later"
        shared.mkdir()
        policy = place.policy()
        with Sandbox.from_policy(policy) as sandbox:
            before = sandbox.run(f"echo x > {shared}/a.txt")
            policy.settings.add_rules("session", allow=[f"Edit(/{shared}/**)"])
            after = sandbox.run(f"echo x > {shared}/b.txt")
        assert before.returncode != 0
        assert after.returncode == 0
        assert os.listdir(shared) == ["b.txt"]
