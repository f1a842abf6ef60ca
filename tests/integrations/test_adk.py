"""PermissionPlugin: real Google ADK agents on a Runner, with a scripted offline BaseLlm, no network."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncGenerator, Callable
from typing import Any

import pytest

# ADK 1.x warns on import (a deprecated Vertex AI module) and on tool confirmation (experimental), and
# early 1.x releases warn that plugins are deprecated even when they come in an App.
pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning"),
]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("google.adk")  # a guard only: the test extra installs ADK, so CI runs these
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.genai import types

    from ask_permissions import Action
    from ask_permissions.integrations.adk import PermissionPlugin, confirmation_decision

    from .scenarios import PLAN, Plan, Recorder, host_policy

CONFIRMATION = "adk_request_confirmation"  # the function ADK calls to ask the client for a confirmation


class ScriptedLlm(BaseLlm):
    """A model that follows PLAN and records every tool response it is shown."""

    model: str = "scripted"
    plan: Plan
    seen: list[tuple[str, dict[str, Any]]] = []  # noqa: RUF012  # pydantic copies field defaults per instance

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = llm_request.contents[-1].parts or []
        responses = [part.function_response for part in parts if part.function_response is not None]
        if responses:
            answers = [(str(response.name), dict(response.response or {})) for response in responses]
            self.seen.extend(answers)
            text = " | ".join(f"{name}: {json.dumps(answer)}" for name, answer in answers)
            reply = [types.Part(text=text)]
        else:
            prompt = str(parts[-1].text)
            reply = [
                types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"{prompt}-{number}"))
                for number, (name, args) in enumerate(self.plan[prompt], start=1)
            ]
        yield LlmResponse(content=types.Content(role="model", parts=reply))


class Tools(Recorder):
    """The agent's tools (ADK wraps plain functions itself); each records the calls that really ran."""

    def __init__(self) -> None:
        super().__init__()
        self.all: list[Callable[..., Any] | BaseTool | BaseToolset] = [*self.functions]


class Host:
    """One process of a host application: its own queue, grants, policy, plugin, model and runner.

    ``restart()`` builds the next process from JSON snapshots of the queue and grants, sharing only the
    session service (the framework's own durable state).
    """

    def __init__(
        self,
        *,
        sessions: InMemorySessionService | None = None,
        session_id: str | None = None,
        queue_snapshot: object = None,
        grants_snapshot: object = None,
        on_project_grant: Callable[[Action], object] | None = None,
    ) -> None:
        self.sessions = sessions or InMemorySessionService()
        self.queue, self.grants, self.policy = host_policy(queue_snapshot, grants_snapshot)
        self.on_project_grant = on_project_grant
        self.tools = Tools()
        self.model = ScriptedLlm(plan=PLAN)
        agent = LlmAgent(name="assistant", model=self.model, tools=self.tools.all)
        plugin = PermissionPlugin(self.policy, on_project_grant=on_project_grant)
        app = App(name="app", root_agent=agent, plugins=[plugin])
        self.runner = Runner(app=app, session_service=self.sessions)
        if session_id is None:
            session = asyncio.run(self.sessions.create_session(app_name="app", user_id="user"))
            session_id = session.id
        self.session_id = session_id

    def say(self, text: str) -> list[Any]:
        return self._run(types.Content(role="user", parts=[types.Part(text=text)]))

    def confirm(self, request: types.FunctionCall, confirmed: bool, payload: object = None) -> list[Any]:
        """Answer a confirmation request as ADK's client does."""
        answer = {"confirmed": confirmed, "payload": payload}
        response = types.FunctionResponse(name=CONFIRMATION, id=request.id, response=answer)
        return self._run(types.Content(role="user", parts=[types.Part(function_response=response)]))

    def _run(self, message: types.Content) -> list[Any]:
        async def run() -> list[Any]:
            stream = self.runner.run_async(user_id="user", session_id=self.session_id, new_message=message)
            return [event async for event in stream]

        return asyncio.run(run())

    def restart(self) -> Host:
        return Host(
            sessions=self.sessions,
            session_id=self.session_id,
            queue_snapshot=json.loads(json.dumps(self.queue.snapshot())),
            grants_snapshot=json.loads(json.dumps(self.grants.snapshot())),
            on_project_grant=self.on_project_grant,
        )


def _confirmations(events: list[Any]) -> list[types.FunctionCall]:
    return [call for event in events for call in event.get_function_calls() if call.name == CONFIRMATION]


def _reply(events: list[Any]) -> str:
    texts = [
        part.text for event in events if event.content for part in event.content.parts or [] if part.text
    ]
    return str(texts[-1])


def _asked(host: Host, text: str) -> types.FunctionCall:
    """Say ``text``; the invocation must end on exactly one confirmation request, which is returned."""
    (request,) = _confirmations(host.say(text))
    return request


class TestProceed:
    """A call the policy lets through runs at once."""

    def test_allowed_call_runs(self) -> None:
        """An allow rule runs the tool, and the model sees its result."""
        host = Host()
        events = host.say("read")
        assert not _confirmations(events)
        assert host.tools.ran == [("read_file", {"path": "notes.txt"})]
        assert _reply(events) == 'read_file: {"result": "contents of notes.txt"}'
        assert host.queue.pending_actions == []


class TestBlock:
    """A call the policy blocks never runs; the model reads why."""

    def test_denied_call_never_runs_and_the_model_sees_the_reason(self) -> None:
        """A deny rule answers with an error response carrying the policy's reason, asking no one."""
        host = Host()
        events = host.say("delete")
        assert not _confirmations(events)
        assert host.tools.ran == []
        assert host.model.seen == [("delete_user", {"error": "Denied by permission rules: 'delete_user'"})]
        assert host.queue.pending_actions == []


class TestPending:
    """A call that needs a person asks through ADK's tool confirmation."""

    def test_confirmation_request_carries_the_queued_action(self) -> None:
        """The request's payload names the action id, tool, arguments and reason; the model is not called."""
        host = Host()
        request = _asked(host, "list")
        assert request.args is not None
        assert request.args["originalFunctionCall"]["id"] == "list-1"
        assert request.args["toolConfirmation"]["payload"] == {
            "action_id": 1,
            "tool_call_id": "list-1",
            "tool": "bash",
            "args": {"command": "ls"},
            "reason": "Tool 'bash' requires approval",
        }
        assert host.tools.ran == []
        assert host.model.seen == []  # the invocation ended on the request, not on a model turn
        assert [action.id for action in host.queue.pending_actions] == [1]

    def test_confirmation_after_a_restart_runs_the_tool_once(self) -> None:
        """Queue and grants restored from JSON in fresh objects; the confirmed replay runs the tool once."""
        first = Host()
        request = _asked(first, "list")
        second = first.restart()
        events = second.confirm(request, True)
        assert _reply(events) == 'bash: {"result": "ran ls"}'
        assert second.tools.ran == [("bash", {"command": "ls"})]
        assert first.tools.ran == []
        action = second.queue[1]
        assert action is not None
        assert action.is_approved
        assert action.resolution_scope == "once"
        assert second.queue.snapshot()["next_id"] == 1  # the replay did not queue the call again

    def test_rejection_with_feedback_reaches_the_model(self) -> None:
        """A declined confirmation never runs the tool; the model reads the person's feedback."""
        first = Host()
        request = _asked(first, "list")
        second = first.restart()
        second.confirm(request, False, {"feedback": "use read_file instead"})
        assert second.tools.ran == []
        assert second.model.seen == [
            ("bash", {"error": "The call to 'bash' was rejected: use read_file instead"})
        ]
        action = second.queue[1]
        assert action is not None
        assert action.feedback == "use read_file instead"

    def test_unreadable_answer_rejects_the_call_saying_why(self) -> None:
        """A payload that is not a decision never runs the tool; the rejection names what was wrong."""
        host = Host()
        request = _asked(host, "list")
        host.confirm(request, True, {"scope": "forever"})
        assert host.tools.ran == []
        action = host.queue[1]
        assert action is not None
        assert action.is_rejected
        assert action.feedback is not None
        assert "the confirmation could not be read: decision.scope" in action.feedback
        ((name, response),) = host.model.seen
        assert name == "bash"
        assert response["error"].startswith("The call to 'bash' was rejected: the confirmation could not")


class TestAutoApproval:
    """An action the queue approves by itself runs without asking."""

    def test_auto_approvable_call_runs_without_asking(self) -> None:
        """fetch is auto-approvable and listed in auto_approve: no confirmation, the tool runs."""
        host = Host()
        events = host.say("fetch")
        assert not _confirmations(events)
        assert host.tools.ran == [("fetch", {"url": "https://example.org"})]


class TestScopes:
    """An approval's scope reaches beyond its call when the person says so."""

    def test_session_scope_lets_the_next_call_through(self) -> None:
        """A "session" confirmation grants the tool: the next call runs without asking, after restarts too."""
        host = Host()
        request = _asked(host, "list")
        host.confirm(request, True, {"scope": "session"})
        assert host.grants.snapshot() == {"version": 1, "granted_tools": ["bash"]}
        host = host.restart()
        events = host.say("list again")
        assert not _confirmations(events)
        assert host.tools.ran == [("bash", {"command": "ls -l"})]

    def test_project_scope_calls_the_hosts_hook(self) -> None:
        """A "project" confirmation is handed to on_project_grant; session grants stay untouched."""
        granted: list[Action] = []
        host = Host(on_project_grant=granted.append)
        request = _asked(host, "list")
        host.confirm(request, True, {"scope": "project"})
        assert [(action.id, action.resolution_scope) for action in granted] == [(1, "project")]
        assert not host.grants.is_granted("bash")
        assert host.tools.ran == [("bash", {"command": "ls"})]


# (confirmed, payload) of a ToolConfirmation, and the decision it stands for.
CONFIRMATIONS = [
    pytest.param(True, None, {"decision": "approve", "scope": "once"}, id="confirmed"),
    pytest.param(
        True, {"scope": "session"}, {"decision": "approve", "scope": "session"}, id="confirmed-session"
    ),
    pytest.param(False, None, {"decision": "reject", "feedback": None}, id="declined"),
    pytest.param(False, {"feedback": "no"}, {"decision": "reject", "feedback": "no"}, id="declined-feedback"),
]


class TestConfirmationDecision:
    """How a ToolConfirmation reads as a PermissionDecision."""

    @pytest.mark.parametrize(("confirmed", "payload", "decision"), CONFIRMATIONS)
    def test_confirmation_reads_as_a_decision(
        self, confirmed: bool, payload: object, decision: object
    ) -> None:
        """confirmed approves with the payload's scope; declined rejects with its feedback."""
        assert confirmation_decision(ToolConfirmation(confirmed=confirmed, payload=payload)) == decision

    def test_a_payload_that_is_not_a_mapping_is_refused(self) -> None:
        """A payload of another shape is a TypeError naming it."""
        with pytest.raises(TypeError, match=r"confirmation.payload: expected a mapping or None; got 'yes'"):
            confirmation_decision(ToolConfirmation(confirmed=True, payload="yes"))


class TestConstruction:
    """The plugin checks what it is given."""

    def test_a_queue_is_not_a_policy(self) -> None:
        """Passing the queue where the policy belongs is a TypeError that says so."""
        queue, _, _ = host_policy()
        with pytest.raises(
            TypeError, match=r"PermissionPlugin: policy: .*\(pass the policy, not its queue\)"
        ):
            PermissionPlugin(queue)  # type: ignore[arg-type]

    def test_the_project_hook_must_be_callable(self) -> None:
        """on_project_grant must be callable or None."""
        _, _, policy = host_policy()
        with pytest.raises(TypeError, match="on_project_grant: expected a callable or None"):
            PermissionPlugin(policy, on_project_grant="store")  # type: ignore[arg-type]


class TestEditedAnswers:
    """A person who edits the call's arguments and approves runs exactly the edit."""

    def test_a_confirmation_with_arguments_runs_the_edit(self) -> None:
        """A confirmation whose payload carries arguments runs the tool with them, once."""
        first = Host()
        request = _asked(first, "list")
        second = first.restart()
        events = second.confirm(request, True, {"arguments": {"command": "ls -a"}, "decided_by": "ann"})
        assert _reply(events) == 'bash: {"result": "ran ls -a"}'
        assert second.tools.ran == [("bash", {"command": "ls -a"})]
        action = second.queue[1]
        assert action is not None
        assert (action.edited_args, action.decided_by) == ({"command": "ls -a"}, "ann")
