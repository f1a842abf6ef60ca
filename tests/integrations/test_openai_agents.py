"""PermissionGuard: real OpenAI Agents SDK agents, with a scripted offline Model, no network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

pytest.importorskip("agents")  # a guard only: the test extra installs the SDK, so CI runs these

from agents import Agent, FunctionTool, RunConfig, Runner, RunState, Tool, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from ask_permissions import Action
from ask_permissions.integrations.openai_agents import PermissionGuard

from .scenarios import PLAN, Plan, Recorder, host_policy

RUN_CONFIG = RunConfig(tracing_disabled=True)  # offline: no trace export


class ScriptedModel(Model):
    """A Model that follows PLAN and records every tool output it is shown."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.seen: list[tuple[str, str]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        names = {item["call_id"]: item["name"] for item in items if item.get("type") == "function_call"}
        outputs: list[tuple[str, str]] = []
        for item in reversed(items):
            if item.get("type") != "function_call_output":
                break
            outputs.insert(0, (names[item["call_id"]], str(item["output"])))
        if outputs:
            self.seen.extend(outputs)
            text = " | ".join(f"{name}: {output}" for name, output in outputs)
            reply: list[Any] = [
                ResponseOutputMessage(
                    id="message",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        else:
            prompt = str(items[-1]["content"])
            reply = [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc-{prompt}-{number}",
                    call_id=f"{prompt}-{number}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for number, (name, args) in enumerate(self.plan[prompt], start=1)
            ]
        return ModelResponse(output=reply, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


class Tools(Recorder):
    """The agent's tools as SDK function tools; each records the calls that really ran."""

    def __init__(self) -> None:
        super().__init__()
        self.all: list[FunctionTool] = [function_tool(function) for function in self.functions]


class Host:
    """One process of a host application: its own queue, grants, policy, guard, model and agent.

    ``restart()`` builds the next process from JSON: the queue and grants snapshots and the paused run's
    ``RunState.to_string()`` (the SDK's own state), as a host would persist them.
    """

    def __init__(
        self,
        *,
        queue_snapshot: object = None,
        grants_snapshot: object = None,
        on_project_grant: Callable[[Action], object] | None = None,
    ) -> None:
        self.queue, self.grants, self.policy = host_policy(queue_snapshot, grants_snapshot)
        self.on_project_grant = on_project_grant
        self.tools = Tools()
        self.model = ScriptedModel(PLAN)
        self.guard = PermissionGuard(self.policy, on_project_grant=on_project_grant)
        tools: list[Tool] = [*self.guard.tools(self.tools.all)]
        self.agent = Agent(name="assistant", model=self.model, tools=tools)
        self.paused: str | None = None

    def say(self, text: str) -> Any:
        return self._record(asyncio.run(Runner.run(self.agent, text, run_config=RUN_CONFIG)))

    def state(self) -> RunState[Any, Any]:
        """The paused run, restored from its string form."""
        assert self.paused is not None
        return asyncio.run(RunState.from_string(self.agent, self.paused))

    def resume(self, state: RunState[Any, Any]) -> Any:
        return self._record(asyncio.run(Runner.run(self.agent, state, run_config=RUN_CONFIG)))

    def _record(self, result: Any) -> Any:
        self.paused = result.to_state().to_string() if result.interruptions else None
        return result

    def restart(self) -> Host:
        host = Host(
            queue_snapshot=json.loads(json.dumps(self.queue.snapshot())),
            grants_snapshot=json.loads(json.dumps(self.grants.snapshot())),
            on_project_grant=self.on_project_grant,
        )
        host.paused = self.paused
        return host


def _paused(host: Host, text: str) -> Any:
    """Say ``text``; the run must stop on interruptions, and the result is returned."""
    result = host.say(text)
    assert result.interruptions
    return result


class TestProceed:
    """A call the policy lets through runs at once."""

    def test_allowed_call_runs(self) -> None:
        """An allow rule runs the tool, and the model sees its result."""
        host = Host()
        result = host.say("read")
        assert not result.interruptions
        assert result.final_output == "read_file: contents of notes.txt"
        assert host.tools.ran == [("read_file", {"path": "notes.txt"})]
        assert host.queue.pending_actions == []


class TestBlock:
    """A call the policy blocks never runs; the model reads why."""

    def test_denied_call_never_runs_and_the_model_sees_the_reason(self) -> None:
        """A deny rule answers the model with the policy's reason, without pausing the run."""
        host = Host()
        result = host.say("delete")
        assert not result.interruptions
        assert host.tools.ran == []
        assert host.model.seen == [("delete_user", "Denied by permission rules: 'delete_user'")]
        assert host.queue.pending_actions == []


class TestPending:
    """A call that needs a person stops the run with an interruption until the person decides."""

    def test_interruption_carries_the_queued_action(self) -> None:
        """The interruption's request names the action id, tool, arguments and reason; nothing ran."""
        host = Host()
        result = _paused(host, "list")
        assert host.guard.requests(result.interruptions) == [
            {
                "action_id": 1,
                "tool_call_id": "list-1",
                "tool": "bash",
                "args": {"command": "ls"},
                "reason": "Tool 'bash' requires approval",
            }
        ]
        assert host.tools.ran == []
        assert [action.id for action in host.queue.pending_actions] == [1]

    def test_approval_after_a_restart_runs_the_tool_once(self) -> None:
        """Queue, grants and RunState restored from JSON in fresh objects; the approval runs the tool once."""
        first = Host()
        _paused(first, "list")
        second = first.restart()
        state = second.state()
        (request,) = second.guard.requests(state.get_interruptions())
        second.policy.approve(request["action_id"])
        second.guard.apply_decisions(state)
        result = second.resume(state)
        assert not result.interruptions
        assert result.final_output == "bash: ran ls"
        assert second.tools.ran == [("bash", {"command": "ls"})]
        assert first.tools.ran == []
        assert second.queue.snapshot()["next_id"] == 1  # the restarted guard did not queue the call again

    def test_rejection_after_a_restart_reaches_the_model(self) -> None:
        """A rejection never runs the tool; the model reads it with the person's feedback."""
        first = Host()
        _paused(first, "list")
        second = first.restart()
        state = second.state()
        second.guard.requests(state.get_interruptions())
        second.policy.reject(1, feedback="use read_file instead")
        second.guard.apply_decisions(state)
        result = second.resume(state)
        assert result.final_output == "bash: The call to 'bash' was rejected: use read_file instead"
        assert second.tools.ran == []

    def test_undecided_calls_stay_interrupted(self) -> None:
        """apply_decisions leaves a still-pending call alone: the resumed run stops on it again."""
        host = Host()
        _paused(host, "list")
        state = host.state()
        host.guard.apply_decisions(state)
        result = host.resume(state)
        assert [item.name for item in result.interruptions] == ["bash"]
        assert host.tools.ran == []
        assert host.queue.snapshot()["next_id"] == 1

    def test_approval_given_on_the_run_state_counts_as_the_persons(self) -> None:
        """state.approve(item) without the policy approves the queued action, and the call runs."""
        host = Host()
        result = _paused(host, "list")
        state = result.to_state()
        (item,) = state.get_interruptions()
        state.approve(item)
        assert host.resume(state).final_output == "bash: ran ls"
        action = host.queue[1]
        assert action is not None
        assert action.is_approved

    def test_queue_rejection_wins_over_an_approval_on_the_run_state(self) -> None:
        """A call the queue rejected does not run, even when the RunState approves it."""
        host = Host()
        result = _paused(host, "list")
        host.policy.reject(1, feedback="no")
        state = result.to_state()
        (item,) = state.get_interruptions()
        state.approve(item)
        assert host.resume(state).final_output == "bash: The call to 'bash' was rejected: no"
        assert host.tools.ran == []


class TestAutoApproval:
    """An action the queue approves by itself runs without stopping."""

    def test_auto_approvable_call_runs_without_an_interruption(self) -> None:
        """fetch is auto-approvable and listed in auto_approve: the run completes and the tool runs."""
        host = Host()
        assert host.say("fetch").final_output == "fetch: fetched https://example.org"
        action = host.queue[1]
        assert action is not None
        assert action.is_approved


class TestScopes:
    """An approval's scope reaches beyond its call when the person says so."""

    def test_session_scope_lets_the_next_call_through(self) -> None:
        """A "session" approval grants the tool; the next call runs without stopping, even after a restart."""
        host = Host()
        result = _paused(host, "list")
        host.policy.approve(1, scope="session")
        state = result.to_state()
        host.guard.apply_decisions(state)
        host.resume(state)
        assert host.grants.snapshot() == {"version": 1, "granted_tools": ["bash"]}
        host = host.restart()
        result = host.say("list again")
        assert not result.interruptions
        assert host.tools.ran == [("bash", {"command": "ls -l"})]

    def test_project_scope_calls_the_hosts_hook(self) -> None:
        """A "project" approval is handed to on_project_grant; session grants stay untouched."""
        granted: list[Action] = []
        host = Host(on_project_grant=granted.append)
        result = _paused(host, "list")
        host.policy.approve(1, scope="project")
        state = result.to_state()
        host.guard.apply_decisions(state)
        assert host.resume(state).final_output == "bash: ran ls"
        assert [(action.id, action.resolution_scope) for action in granted] == [(1, "project")]
        assert not host.grants.is_granted("bash")


class TestConstruction:
    """The guard checks what it is given."""

    def test_a_queue_is_not_a_policy(self) -> None:
        """Passing the queue where the policy belongs is a TypeError that says so."""
        queue, _, _ = host_policy()
        with pytest.raises(TypeError, match=r"PermissionGuard: policy: .*\(pass the policy, not its queue\)"):
            PermissionGuard(queue)  # type: ignore[arg-type]

    def test_only_function_tools_are_gated(self) -> None:
        """Anything but a FunctionTool is a TypeError."""
        _, _, policy = host_policy()
        with pytest.raises(TypeError, match="expected a FunctionTool"):
            PermissionGuard(policy).tool("bash")  # type: ignore[arg-type]

    def test_a_tool_with_its_own_approval_is_refused(self) -> None:
        """A tool that sets needs_approval itself is a ValueError naming it; the policy decides approval."""
        _, _, policy = host_policy()

        @function_tool(needs_approval=True)
        def deploy(target: str) -> str:
            """Deploy."""
            return target

        with pytest.raises(ValueError, match="tool 'deploy' sets needs_approval itself"):
            PermissionGuard(policy).tool(deploy)

    def test_the_original_tool_is_left_unchanged(self) -> None:
        """tool() returns a gated copy; the tool passed in keeps its own settings."""
        _, _, policy = host_policy()
        tools = Tools()
        gated = PermissionGuard(policy).tool(tools.all[1])
        assert gated is not tools.all[1]
        assert gated.name == "bash"
        assert tools.all[1].needs_approval is False


class TestEditedAnswers:
    """A person who edits the call's arguments and approves runs exactly the edit."""

    def test_an_edit_runs_after_a_restart(self) -> None:
        """The guarded tool is invoked with the edited arguments, once, and the model reads its result."""
        first = Host()
        _paused(first, "list")
        second = first.restart()
        state = second.state()
        (request,) = second.guard.requests(state.get_interruptions())
        second.policy.approve(request["action_id"], arguments={"command": "ls -a"}, decided_by="ann")
        second.guard.apply_decisions(state)
        result = second.resume(state)
        assert result.final_output == "bash: ran ls -a"
        assert second.tools.ran == [("bash", {"command": "ls -a"})]
