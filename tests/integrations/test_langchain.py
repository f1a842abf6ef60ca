"""PermissionMiddleware: real LangChain v1 agents, with a scripted offline chat model, no network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("langchain.agents")  # a guard only: the test extra installs LangChain, so CI runs these

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ask_permissions import Action, Check, PermissionCheck, check
from ask_permissions.integrations.langchain import PermissionMiddleware

from .scenarios import PLAN, Plan, host_policy

# Resume values that are not decisions, and what the repeated request's error says about each.
MALFORMED_DECISIONS = [
    pytest.param("yes", "expected a PermissionDecision", id="not-a-mapping"),
    pytest.param({"decision": "aprove"}, "'approve', 'reject' or 'queue'; got 'aprove'", id="misspelt"),
    pytest.param({"decision": "approve", "scope": "forever"}, "decision.scope", id="bad-scope"),
    pytest.param({"decision": "reject", "feedback": 3}, "decision.feedback", id="bad-feedback"),
]


class ScriptedChatModel(BaseChatModel):
    """A chat model that follows PLAN and records every tool result it is shown."""

    plan: Plan
    seen: list[ToolMessage] = []  # noqa: RUF012  # pydantic copies field defaults per instance

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            answers = []
            for message in reversed(messages):
                if not isinstance(message, ToolMessage):
                    break
                self.seen.append(message)
                answers.append(f"{message.name}: {message.content}")
            reply = AIMessage(content=" | ".join(reversed(answers)))
        else:
            assert isinstance(last, HumanMessage)
            text = str(last.content)
            calls = [
                {"name": name, "args": args, "id": f"{text}-{number}", "type": "tool_call"}
                for number, (name, args) in enumerate(self.plan[text], start=1)
            ]
            reply = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[object], **kwargs: Any) -> ScriptedChatModel:
        return self  # the script ignores the tool schemas


class Tools:
    """The agent's tools; each records the calls that really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", {"path": path}))
            return f"contents of {path}"

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            self.ran.append(("bash", {"command": command}))
            return f"ran {command}"

        @tool
        def delete_user(name: str) -> str:
            """Delete a user."""
            self.ran.append(("delete_user", {"name": name}))
            return f"deleted {name}"

        @tool
        def fetch(url: str) -> str:
            """Fetch a URL."""
            self.ran.append(("fetch", {"url": url}))
            return f"fetched {url}"

        self.all: list[BaseTool] = [read_file, bash, delete_user, fetch]


class Host:
    """One process of a host application: its own queue, grants, policy, model and agent.

    ``restart()`` builds the next process from JSON snapshots of the queue and grants, sharing only the
    LangGraph checkpointer (the framework's own durable state).
    """

    def __init__(
        self,
        *,
        saver: InMemorySaver | None = None,
        queue_snapshot: object = None,
        grants_snapshot: object = None,
        on_project_grant: Callable[[Action], object] | None = None,
        checks: Sequence[Check] = (),
    ) -> None:
        self.saver = saver or InMemorySaver()
        self.queue, self.grants, self.policy = host_policy(queue_snapshot, grants_snapshot, checks)
        self.on_project_grant = on_project_grant
        self.tools = Tools()
        self.model = ScriptedChatModel(plan=PLAN)
        self.agent = create_agent(
            self.model,
            self.tools.all,
            middleware=[PermissionMiddleware(self.policy, on_project_grant=on_project_grant)],
            checkpointer=self.saver,
        )
        self.config: Any = {"configurable": {"thread_id": "thread-1"}}

    def say(self, text: str) -> dict[str, Any]:
        return self.agent.invoke({"messages": [HumanMessage(text)]}, self.config)

    def resume(self, value: object) -> dict[str, Any]:
        return self.agent.invoke(Command(resume=value), self.config)

    def restart(self) -> Host:
        return Host(
            saver=self.saver,
            queue_snapshot=json.loads(json.dumps(self.queue.snapshot())),
            grants_snapshot=json.loads(json.dumps(self.grants.snapshot())),
            on_project_grant=self.on_project_grant,
        )


def _interrupts(state: dict[str, Any]) -> list[Any]:
    return list(state.get("__interrupt__", []))


def _reply(state: dict[str, Any]) -> str:
    message = state["messages"][-1]
    assert isinstance(message, AIMessage)
    return str(message.content)


def _pause(host: Host, text: str) -> Any:
    """Say ``text``; the agent must pause on exactly one interrupt, which is returned."""
    state = host.say(text)
    (pause,) = _interrupts(state)
    return pause


class TestProceed:
    """A call the policy lets through runs at once."""

    def test_allowed_call_runs(self) -> None:
        """An allow rule runs the tool, and the model sees its result."""
        host = Host()
        state = host.say("read")
        assert not _interrupts(state)
        assert host.tools.ran == [("read_file", {"path": "notes.txt"})]
        assert _reply(state) == "read_file: contents of notes.txt"
        assert host.queue.pending_actions == []


class TestBlock:
    """A call the policy blocks never runs; the model reads why."""

    def test_denied_call_never_runs_and_the_model_sees_the_reason(self) -> None:
        """A deny rule answers with an error ToolMessage carrying the policy's reason."""
        host = Host()
        state = host.say("delete")
        assert not _interrupts(state)
        assert host.tools.ran == []
        (seen,) = host.model.seen
        assert seen.content == "Denied by permission rules: 'delete_user'"
        assert seen.status == "error"
        assert seen.tool_call_id == "delete-1"
        assert _reply(state) == "delete_user: Denied by permission rules: 'delete_user'"
        assert host.queue.pending_actions == []


class TestPending:
    """A call that needs a person pauses the graph until the person decides."""

    def test_pause_carries_the_queued_action(self) -> None:
        """The interrupt's value names the action id, tool, arguments and reason; the tool has not run."""
        host = Host()
        pause = _pause(host, "list")
        assert pause.value == {
            "action_id": 1,
            "tool_call_id": "list-1",
            "tool": "bash",
            "args": {"command": "ls"},
            "reason": "Tool 'bash' requires approval",
        }
        assert host.tools.ran == []
        assert [action.id for action in host.queue.pending_actions] == [1]

    def test_approval_after_a_restart_runs_the_tool(self) -> None:
        """Queue and grants restored from JSON in a fresh setup; an approval runs the tool once."""
        first = Host()
        _pause(first, "list")
        second = first.restart()
        state = second.resume({"decision": "approve"})
        assert not _interrupts(state)
        assert second.tools.ran == [("bash", {"command": "ls"})]
        assert first.tools.ran == []
        assert _reply(state) == "bash: ran ls"
        action = second.queue[1]
        assert action is not None
        assert action.is_approved
        assert action.resolution_scope == "once"
        assert second.queue.snapshot()["next_id"] == 1  # the re-run did not queue the call again

    def test_rejection_after_a_restart_reaches_the_model(self) -> None:
        """A rejection never runs the tool; the model reads it with the person's feedback."""
        first = Host()
        _pause(first, "list")
        second = first.restart()
        state = second.resume({"decision": "reject", "feedback": "use read_file instead"})
        assert not _interrupts(state)
        assert second.tools.ran == []
        (seen,) = second.model.seen
        assert seen.content == "The call to 'bash' was rejected: use read_file instead"
        assert seen.status == "error"
        action = second.queue[1]
        assert action is not None
        assert action.is_rejected
        assert action.feedback == "use read_file instead"

    def test_rejection_without_feedback(self) -> None:
        """Without feedback the model still learns the call was rejected."""
        host = Host()
        _pause(host, "list")
        host.resume({"decision": "reject"})
        assert [message.content for message in host.model.seen] == ["The call to 'bash' was rejected"]

    def test_decision_taken_through_the_queue(self) -> None:
        """Resuming with "queue" uses the queue's verdict: a person approved through the queue."""
        host = Host()
        pause = _pause(host, "list")
        host.queue.approve(pause.value["action_id"])
        state = host.resume({"decision": "queue"})
        assert not _interrupts(state)
        assert host.tools.ran == [("bash", {"command": "ls"})]

    def test_still_pending_pauses_again(self) -> None:
        """Resuming with "queue" while the action still waits pauses again on the same action."""
        host = Host()
        _pause(host, "list")
        state = host.resume({"decision": "queue"})
        (again,) = _interrupts(state)
        assert again.value["action_id"] == 1
        assert host.tools.ran == []
        state = host.resume({"decision": "approve"})
        assert host.tools.ran == [("bash", {"command": "ls"})]
        assert host.queue.snapshot()["next_id"] == 1

    def test_parallel_calls_pause_and_resume_independently(self) -> None:
        """Two queued calls in one turn give two interrupts, each answered by its interrupt id."""
        host = Host()
        state = host.say("two")
        pauses = {pause.value["args"]["command"]: pause for pause in _interrupts(state)}
        assert sorted(pauses) == ["pwd", "whoami"]
        host = host.restart()
        state = host.resume(
            {
                pauses["pwd"].id: {"decision": "approve"},
                pauses["whoami"].id: {"decision": "reject", "feedback": "no"},
            }
        )
        assert not _interrupts(state)
        assert host.tools.ran == [("bash", {"command": "pwd"})]
        assert _reply(state) == "bash: ran pwd | bash: The call to 'bash' was rejected: no"

    @pytest.mark.parametrize(("decision", "match"), MALFORMED_DECISIONS)
    def test_malformed_decision_asks_again_and_a_corrected_one_works(
        self, decision: object, match: str
    ) -> None:
        """An unreadable resume pauses again saying what was wrong; nothing runs; a corrected resume works."""
        host = Host()
        _pause(host, "list")
        (again,) = _interrupts(host.resume(decision))
        assert again.value["action_id"] == 1
        assert match in again.value["error"]
        assert host.tools.ran == []
        assert host.queue.is_pending(1)
        state = host.resume({"decision": "approve"})
        assert not _interrupts(state)
        assert host.tools.ran == [("bash", {"command": "ls"})]
        assert host.queue[1] is not None
        assert host.queue[1].is_approved

    def test_a_second_malformed_answer_still_leaves_a_way_out(self) -> None:
        """Two bad answers in a row pause twice; a rejection afterwards reaches the model."""
        host = Host()
        _pause(host, "list")
        host.resume({"decision": "aprove"})
        (again,) = _interrupts(host.resume({"decision": "rejct"}))
        assert "got 'rejct'" in again.value["error"]
        state = host.resume({"decision": "reject", "feedback": "not now"})
        assert not _interrupts(state)
        assert host.tools.ran == []
        assert host.model.seen[-1].content == "The call to 'bash' was rejected: not now"


class TestConstruction:
    """The middleware checks what it is given."""

    def test_a_queue_is_not_a_policy(self) -> None:
        """Passing the queue where the policy belongs is a TypeError that says so."""
        queue, _, _ = host_policy()
        with pytest.raises(
            TypeError, match=r"PermissionMiddleware: policy: .*\(pass the policy, not its queue\)"
        ):
            PermissionMiddleware(queue)  # type: ignore[arg-type]

    def test_the_project_hook_must_be_callable(self) -> None:
        """on_project_grant must be callable or None."""
        _, _, policy = host_policy()
        with pytest.raises(TypeError, match="on_project_grant: expected a callable or None"):
            PermissionMiddleware(policy, on_project_grant="store")  # type: ignore[arg-type]


class TestAutoApproval:
    """An action the queue approves by itself runs without pausing."""

    def test_auto_approvable_call_runs_without_pausing(self) -> None:
        """fetch is auto-approvable and listed in auto_approve: no interrupt, the tool runs."""
        host = Host()
        state = host.say("fetch")
        assert not _interrupts(state)
        assert host.tools.ran == [("fetch", {"url": "https://example.org"})]
        action = host.queue[1]
        assert action is not None
        assert action.is_approved

    def test_auto_approval_waits_behind_a_person(self) -> None:
        """Behind a call waiting for a person, an auto-approvable call waits too (the queue keeps order)."""
        host = Host()
        host.policy.before_tool_call({"name": "bash", "arguments": {"command": "x"}, "id": "elsewhere"})
        pause = _pause(host, "fetch")
        assert pause.value["tool"] == "fetch"
        host.queue.reject(1)
        # A rejection drains nothing: fetch waits until the next submit or drain.
        state = host.resume({"decision": "queue"})
        assert _interrupts(state)
        host.queue.drain()
        state = host.resume({"decision": "queue"})
        assert not _interrupts(state)
        assert host.tools.ran == [("fetch", {"url": "https://example.org"})]


class TestScopes:
    """An approval's scope reaches beyond its call when the person says so."""

    def test_session_scope_lets_the_next_call_through(self) -> None:
        """A "session" approval grants the tool; the next call runs without pausing, even after a restart."""
        host = Host()
        _pause(host, "list")
        host.resume({"decision": "approve", "scope": "session"})
        assert host.grants.is_granted("bash")
        host = host.restart()
        state = host.say("list again")
        assert not _interrupts(state)
        assert host.tools.ran == [("bash", {"command": "ls -l"})]
        assert host.grants.snapshot() == {"version": 1, "granted_tools": ["bash"]}

    def test_once_scope_asks_again(self) -> None:
        """A "once" approval covers that call only: the next call pauses again."""
        host = Host()
        _pause(host, "list")
        host.resume({"decision": "approve"})
        assert not host.grants.is_granted("bash")
        pause = _pause(host, "list again")
        assert pause.value["action_id"] == 2

    def test_project_scope_calls_the_hosts_hook(self) -> None:
        """A "project" approval is handed to on_project_grant; session grants stay untouched."""
        granted: list[Action] = []
        host = Host(on_project_grant=granted.append)
        _pause(host, "list")
        host.resume({"decision": "approve", "scope": "project"})
        assert [(action.id, action.tool_name, action.resolution_scope) for action in granted] == [
            (1, "bash", "project")
        ]
        assert not host.grants.is_granted("bash")
        assert host.tools.ran == [("bash", {"command": "ls"})]

    def test_project_scope_without_a_hook_counts_once(self) -> None:
        """Without on_project_grant a "project" approval covers that call only."""
        host = Host()
        _pause(host, "list")
        host.resume({"decision": "approve", "scope": "project"})
        assert host.tools.ran == [("bash", {"command": "ls"})]
        pause = _pause(host, "list again")
        assert pause.value["tool"] == "bash"


class TestAsync:
    """The async path (ainvoke) behaves like the sync one."""

    def test_async_pause_restart_and_approval(self) -> None:
        """ainvoke pauses on a queued call, and resumes after a restart to run it."""
        first = Host()

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], Host]:
            paused = await first.agent.ainvoke({"messages": [HumanMessage("list")]}, first.config)
            second = first.restart()
            resumed = await second.agent.ainvoke(Command(resume={"decision": "approve"}), second.config)
            return paused, resumed, second

        paused, resumed, second = asyncio.run(scenario())
        assert [pause.value["action_id"] for pause in _interrupts(paused)] == [1]
        assert not _interrupts(resumed)
        assert second.tools.ran == [("bash", {"command": "ls"})]

    def test_async_block(self) -> None:
        """ainvoke refuses a denied call with the reason."""
        host = Host()
        state = asyncio.run(host.agent.ainvoke({"messages": [HumanMessage("delete")]}, host.config))
        assert _reply(state) == "delete_user: Denied by permission rules: 'delete_user'"
        assert host.tools.ran == []


class TestMiddleware:
    """The middleware object itself."""

    def test_repr_and_policy(self) -> None:
        """It exposes its policy and names it in its repr."""
        host = Host()
        middleware = PermissionMiddleware(host.policy)
        assert middleware.policy is host.policy
        assert repr(middleware).startswith("<PermissionMiddleware policy=")


class TestRewrittenArguments:
    """A check that rewrites the arguments makes the tool run with the new ones."""

    def test_the_tool_runs_with_the_replaced_arguments(self) -> None:
        """bash is allowed once its command is made harmless; the tool sees the rewrite, not the model's."""
        harmless = check(
            lambda call: PermissionCheck.modify({"command": "ls -1"}) if call.name == "bash" else None,
            rule_id="harmless",
        )
        host = Host(checks=[harmless])
        host.say("list")
        assert host.tools.ran == [("bash", {"command": "ls -1"})]


class SameIdChatModel(ScriptedChatModel):
    """A provider that numbers tool calls per response: every first call is ``call_0``."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
        for call in message.tool_calls:
            call["id"] = "call_0"
        return result


class TestOneApprovalOneCall:
    """An approval lets only the call the person saw run: not another thread's call with the same id,
    nor this call with its arguments changed before the resume."""

    def _host(self) -> Host:
        host = Host()
        host.model = SameIdChatModel(plan=PLAN)
        host.agent = create_agent(
            host.model,
            host.tools.all,
            middleware=[PermissionMiddleware(host.policy)],
            checkpointer=host.saver,
        )
        return host

    def test_another_thread_reusing_the_id_is_asked(self) -> None:
        """Thread 1's ls is approved through the queue; thread 2's ls -l under the same id still pauses."""
        host = self._host()
        first = _pause(host, "list")
        host.queue.approve(first.value["action_id"])
        host.config = {"configurable": {"thread_id": "thread-2"}}
        (second,) = _interrupts(host.say("list again"))
        assert second.value["args"] == {"command": "ls -l"}
        assert second.value["action_id"] != first.value["action_id"]
        assert host.tools.ran == []

    def test_arguments_changed_before_the_resume_are_asked_about(self) -> None:
        """The person approved ls; the checkpoint's call now says ls -l: the answer stays with ls, and the
        changed call pauses with its own request."""
        host = self._host()
        pause = _pause(host, "list")
        state = host.agent.get_state(host.config)
        message = state.values["messages"][-1]
        changed = AIMessage(
            content="", id=message.id, tool_calls=[{**message.tool_calls[0], "args": {"command": "ls -l"}}]
        )
        host.agent.update_state(host.config, {"messages": [changed]})
        (again,) = _interrupts(host.resume({"decision": "approve"}))
        assert again.value["args"] == {"command": "ls -l"}
        approved = host.queue[pause.value["action_id"]]
        assert approved is not None
        assert approved.is_approved
        assert host.tools.ran == []

    def test_an_answer_naming_its_action_is_applied_to_it(self) -> None:
        """A resume value with the request's action_id resolves that action, whatever is asked now."""
        host = self._host()
        pause = _pause(host, "list")
        state = host.resume({"decision": "reject", "action_id": pause.value["action_id"], "feedback": "no"})
        assert not _interrupts(state)
        assert "rejected: no" in _reply(state)
        assert host.tools.ran == []


class TestEditedAnswers:
    """A person who edits the call's arguments and approves runs exactly the edit."""

    def test_an_edited_resume_value_runs_the_edit(self) -> None:
        """A PermissionDecision with arguments runs the tool with them, never with the model's."""
        host = Host()
        _pause(host, "list")
        state = host.resume({"decision": "approve", "arguments": {"command": "ls -a"}, "decided_by": "ann"})
        assert not _interrupts(state)
        assert host.tools.ran == [("bash", {"command": "ls -a"})]
        action = host.queue[1]
        assert action is not None
        assert (action.edited_args, action.decided_by) == ({"command": "ls -a"}, "ann")

    def test_an_edit_approved_through_the_queue_runs_the_edit(self) -> None:
        """An edit given through the queue (the command, the web inbox) is what runs on resume."""
        host = Host()
        pause = _pause(host, "list")
        host.queue.approve(pause.value["action_id"], arguments={"command": "pwd"}, decided_by="ann")
        host.resume({"decision": "queue"})
        assert host.tools.ran == [("bash", {"command": "pwd"})]
