"""ask_permissions.sandbox: what the rules cannot read, the kernel enforces.

A ``Sandbox`` runs shell commands inside walls made from a layered policy: the file system read-only but for
the working directory and the folders the rules let the agent edit, the protected paths read-only even
there, a private ``/tmp``, no network but the domains the rules allow, and no declared secret in the
environment. On Linux the walls are bubblewrap's (``bwrap``); other systems plug in as a
``SandboxBackend``. Given to a ``LayeredPolicy`` (``sandbox=Sandbox.from_policy``), it lets a shell call
that no rule decided run without a person, inside the walls.
"""

from ask_permissions._errors import SandboxUnavailableError
from ask_permissions.policy._sandbox_view import DomainRuleView, PathRuleView, SandboxView

from ._backend import BwrapBackend, Launch, LaunchPlan, SandboxBackend
from ._profile import SECRET_VARIABLES, NetworkRules, SandboxProfile, profile_from_view
from ._sandbox import Sandbox, SandboxResult

__all__ = [
    "SECRET_VARIABLES",
    "BwrapBackend",
    "DomainRuleView",
    "Launch",
    "LaunchPlan",
    "NetworkRules",
    "PathRuleView",
    "Sandbox",
    "SandboxBackend",
    "SandboxProfile",
    "SandboxResult",
    "SandboxUnavailableError",
    "SandboxView",
    "profile_from_view",
]
