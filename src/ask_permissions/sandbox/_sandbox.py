"""Sandbox: shell commands run inside walls made from a layered policy's own folders and rules."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Final, final

from ask_permissions._errors import SandboxUnavailableError, preview
from ask_permissions._timeouts import check_timeout

from ._backend import BwrapBackend, LaunchPlan, SandboxBackend
from ._bwrap import PRIVATE_FOLDERS, filtered_environment, is_under
from ._profile import SECRET_VARIABLES, NetworkRules, SandboxProfile, profile_from_view
from ._proxy import DomainProxy

if TYPE_CHECKING:
    from ask_permissions.policy._layered import LayeredPolicy

__all__ = ["Sandbox", "SandboxResult"]

_KILL_WAIT: Final = 10.0


@final
@dataclass(frozen=True, slots=True)
class SandboxResult:
    """How a sandboxed command ended: its exit status and its output (UTF-8, undecodable bytes replaced).

    ``returncode`` is the command's status (``128 + N`` when a signal ``N`` ended it); with ``timed_out`` it
    was killed at the deadline and the output is what it wrote until then.
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False


@final
class Sandbox:
    """Walls around shell commands: a read-only file system but for the working directory and the folders
    the policy lets the agent edit, the protected paths read-only even there, a private ``/tmp``, no network
    but the domains the policy allows (through a small local proxy), and no declared secret in the
    environment. See ``SandboxProfile`` for the walls, and the how-to for what they do not cover.

    It fails closed: where the walls cannot be built (no bubblewrap, no user namespaces), building the
    sandbox raises ``SandboxUnavailableError``; where they cannot be set up for one command, running it
    raises it. Nothing ever runs unsandboxed in its place.

    Thread-safe: a private lock guards the profile (rebuilt when the policy's settings change) and the
    domain proxy; each command runs on its own.

    Args:
        profile: the walls.
        backend: the system that builds them (default: ``BwrapBackend()``, bubblewrap on Linux).
        shell: the shell a command string runs in (default: ``/bin/bash``, else ``/bin/sh``).

    Raises:
        SandboxUnavailableError: the backend cannot build walls here.
        TypeError: a profile, backend or shell of the wrong type.
    """

    __slots__ = (
        "_backend",
        "_closed",
        "_lock",
        "_policy",
        "_profile",
        "_proxy",
        "_shell",
        "_version",
        "_writable",
    )

    def __init__(
        self,
        profile: SandboxProfile,
        *,
        backend: SandboxBackend | None = None,
        shell: str | None = None,
    ) -> None:
        if not isinstance(profile, SandboxProfile):
            raise TypeError(f"Sandbox: profile: expected a SandboxProfile; got {preview(profile)}")
        chosen = BwrapBackend() if backend is None else backend
        for method in ("check", "launch", "command", "close"):
            if not callable(getattr(chosen, method, None)):
                raise TypeError(f"Sandbox: backend: expected a SandboxBackend; got {preview(backend)}")
        given: object = shell
        if given is not None and not (isinstance(given, str) and given.startswith("/")):
            raise TypeError(f"Sandbox: shell: expected an absolute path; got {preview(given)}")
        chosen.check()
        self._backend: Final = chosen
        self._shell: Final = shell or ("/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh")
        self._lock: Final = threading.Lock()
        self._profile = profile
        self._policy: LayeredPolicy | None = None
        self._version = -1
        self._writable: tuple[str, ...] = ()
        self._proxy: DomainProxy | None = None
        self._closed = False

    @classmethod
    def from_policy(
        cls,
        policy: LayeredPolicy,
        *,
        cwd: str | os.PathLike[str] | None = None,
        secrets: Iterable[str] = SECRET_VARIABLES,
        writable: Iterable[str | os.PathLike[str]] = (),
        backend: SandboxBackend | None = None,
        shell: str | None = None,
    ) -> Sandbox:
        """The sandbox a layered policy's folders and rules ask for (``profile_from_view``); it follows the
        policy's settings as they change (a rule a person adds for the session widens it at once).

        Args:
            policy: the ``LayeredPolicy`` whose working directories, protected paths and path and domain
                rules make the walls.
            cwd: where commands run (default: the policy's working directory).
            secrets: the environment variables commands never see (glob patterns; ``SECRET_VARIABLES``).
            writable: more folders commands may write.
            backend: as for ``Sandbox``.
            shell: as for ``Sandbox``.

        Raises:
            SandboxUnavailableError: the backend cannot build walls here.
            TypeError: not a ``LayeredPolicy``; a secret pattern that is not a string.
            ValueError: a working directory that does not exist.
        """
        if not callable(getattr(policy, "sandbox_view", None)):
            raise TypeError(f"Sandbox.from_policy: policy: expected a LayeredPolicy; got {preview(policy)}")
        if isinstance(secrets, str):
            raise TypeError(
                f"Sandbox.from_policy: secrets: expected patterns, not one string; got {secrets!r}"
            )
        patterns = tuple(secrets)
        extra = tuple(os.fspath(path) for path in writable)
        view = policy.sandbox_view()
        working = os.fspath(cwd) if cwd is not None else view.cwd
        profile = profile_from_view(view, cwd=working, secrets=patterns, writable=extra)
        sandbox = cls(profile, backend=backend, shell=shell)
        sandbox._policy = policy
        sandbox._version = view.version
        sandbox._writable = extra
        return sandbox

    # -- readers ------------------------------------------------------------------------------------------

    @property
    def profile(self) -> SandboxProfile:
        """The walls, as they stand now (rebuilt when the policy's settings changed)."""
        policy = self._policy
        with self._lock:
            if policy is not None and policy.settings.version != self._version:
                view = policy.sandbox_view()
                current = self._profile
                self._profile = profile_from_view(
                    view, cwd=current.cwd, secrets=current.secrets, writable=self._writable
                )
                self._version = view.version
            return self._profile

    @property
    def cwd(self) -> str:
        """Where commands start (a real path)."""
        return self._profile.cwd

    @property
    def backend(self) -> SandboxBackend:
        """The system that builds the walls."""
        return self._backend

    def __repr__(self) -> str:
        profile = self.profile
        network = "none" if profile.network is None else "domains"
        return f"<Sandbox cwd={profile.cwd!r} writable={len(profile.writable)} network={network}>"

    def environment(self, environment: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a command gets: ``environment`` (default: this process's) without the secrets."""
        return filtered_environment(os.environ if environment is None else environment, self.profile.secrets)

    # -- running ------------------------------------------------------------------------------------------

    def command(self, command: str | Sequence[str]) -> list[str]:
        """The argument vector that runs a command inside the walls, for a host that starts processes itself.

        It starts a small launcher (this interpreter) that sets the walls up, runs the command with the
        standard streams it is given, removes what it set up and exits with the command's status, or with
        125 and a line on standard error when the walls could not be set up (nothing ran). Start it with
        any environment: the launcher removes the secrets itself. With a network, the domain proxy runs in
        this process until ``close``.

        Raises:
            TypeError, ValueError: not a command (a non-empty string, or a non-empty sequence of strings).
            SandboxUnavailableError: the walls cannot be built.
        """
        return self._backend.command(self._plan(self._argv(command)))

    def run(
        self, command: str | Sequence[str], *, timeout: float | None = None, input: str | None = None
    ) -> SandboxResult:
        """Run a command inside the walls and wait for it.

        A string runs in the sandbox's shell (``bash -c``); a sequence is the argument vector itself. The
        command's standard input is ``input`` (default: empty).

        Raises:
            SandboxUnavailableError: the walls could not be set up, so the command did not run.
            TypeError, ValueError: not a command; a negative or non-numeric ``timeout``.
        """
        argv = self._argv(command)
        check_timeout(timeout, "Sandbox.run: timeout")
        if input is not None and not isinstance(input, str):
            raise TypeError(f"Sandbox.run: input: expected a string or None; got {preview(input)}")
        plan = self._plan(argv)
        environment = self.environment()
        timed_out = False
        with self._backend.launch(plan) as launch:
            process = subprocess.Popen(
                launch.argv,
                stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environment,
                pass_fds=launch.pass_fds,
                start_new_session=True,
                cwd="/",
            )
            launch.spawned()
            try:
                out, err = process.communicate(None if input is None else input.encode(), timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill(process)
                out, err = process.communicate(timeout=_KILL_WAIT)
            except BaseException:
                _kill(process)
                process.wait(_KILL_WAIT)
                raise
            started = launch.started()
        stderr = err.decode("utf-8", "replace")
        if not started and not timed_out:
            detail = stderr.strip()
            raise SandboxUnavailableError(
                f"The sandbox could not set up its walls for this command, so it did not run: {detail}",
                missing="walls for this command",
                detail=detail,
            )
        return SandboxResult(_status(process.returncode), out.decode("utf-8", "replace"), stderr, timed_out)

    def close(self) -> None:
        """Stop the domain proxy, if one runs, and remove the placeholders the backend keeps (idempotent);
        no command starts after. Argument vectors from ``command`` still running lose the network."""
        with self._lock:
            proxy, self._proxy = self._proxy, None
            self._closed = True
        if proxy is not None:
            proxy.close()
        self._backend.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------------------------

    def _argv(self, command: object) -> tuple[str, ...]:
        """The argument vector inside: a string through the shell, a sequence as it is."""
        if isinstance(command, str):
            words: tuple[object, ...] = (self._shell, "-c", command)
            empty = not command.strip()
        elif isinstance(command, Sequence) and not isinstance(command, bytes | bytearray):
            words = tuple(command)
            empty = not words
        else:
            raise TypeError(
                f"Sandbox: command: expected a string or a sequence of strings; got {preview(command)}"
            )
        if not all(isinstance(word, str) for word in words):
            raise TypeError(f"Sandbox: command: expected a sequence of strings; got {preview(command)}")
        if empty or any("\x00" in word for word in words):  # type: ignore[operator]  # strings, checked above
            raise ValueError(
                f"Sandbox: command: expected a non-empty command without NUL; got {preview(command)}"
            )
        program: str = words[0]  # type: ignore[assignment]  # strings, checked above
        visible = not any(is_under(program, folder) for folder in PRIVATE_FOLDERS)
        if not (program.startswith("/") and visible and os.access(program, os.X_OK)):
            # A program that may not be there is started by the shell, which says 127 when it is not, as
            # for a command string; bubblewrap's own failure to start it would read as walls that failed.
            words = (self._shell, "-c", 'exec "$@"', "ask-permissions-sandbox", *words)
        return words  # type: ignore[return-value]  # strings, checked above

    def _plan(self, argv: tuple[str, ...]) -> LaunchPlan:
        profile = self.profile
        with self._lock:
            if self._closed:
                raise ValueError("Sandbox: closed: no command can start in it any more")
            if profile.network is None:
                return LaunchPlan(profile, argv)
            if self._proxy is None:
                self._proxy = DomainProxy(self._network)
            folder = self._proxy.folder
        return LaunchPlan(profile, argv, folder)

    def _network(self) -> NetworkRules | None:
        return self.profile.network


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _status(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode
