"""PermissionToolset and deferred_tool_results: real pydantic-ai agents with a FunctionModel, no network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")  # a guard only: the test extra installs pydantic-ai, so CI runs these

from pydantic import TypeAdapter
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelMessagesTypeAdapter
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import ApprovalRequiredToolset, FunctionToolset

from ask_permissions import Action, Check, PermissionCheck, check
from ask_permissions.integrations.pydantic_ai import (
    PermissionToolset,
    deferred_tool_results,
    permission_requests,
)

from .scenarios import PLAN, host_policy

REQUESTS = TypeAdapter(DeferredToolRequests)


class Script:
    """A FunctionModel's function that follows PLAN and records every tool result it is shown."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        prompts = [part.content for part in last.parts if isinstance(part, UserPromptPart)]
        if prompts:
            text = str(prompts[-1])
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"{text}-{number}")
                    for number, (name, args) in enumerate(PLAN[text], start=1)
                ]
            )
        answers = [
            (part.tool_name, str(part.content)) for part in last.parts if isinstance(part, ToolReturnPart)
        ]
        self.seen.extend(answers)
        return ModelResponse(parts=[TextPart(" | ".join(f"{name}: {content}" for name, content in answers))])


class Host:
    """One process of a host application: its own queue, grants, policy, toolsets and agent.

    ``restart()`` builds the next process from JSON: the queue and grants snapshots, the message history
    and the deferred requests (pydantic-ai's own state), as a host would persist them.
    """

    def __init__(
        self,
        *,
        queue_snapshot: object = None,
        grants_snapshot: object = None,
        history: list[ModelMessage] | None = None,
        requests: DeferredToolRequests | None = None,
        on_project_grant: Callable[[Action], object] | None = None,
        checks: Sequence[Check] = (),
    ) -> None:
        self.queue, self.grants, self.policy = host_policy(queue_snapshot, grants_snapshot, checks)
        self.on_project_grant = on_project_grant
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.script = Script()
        self.history = history or []
        self.requests = requests
        guarded = FunctionToolset([self.read_file, self.bash, self.delete_user, self.fetch])
        # deploy belongs to another toolset that asks for approval on its own, outside the policy.
        foreign = ApprovalRequiredToolset(FunctionToolset([self.deploy]))
        self.agent = Agent(
            FunctionModel(self.script.respond),
            toolsets=[PermissionToolset(guarded, self.policy, on_project_grant=on_project_grant), foreign],
            output_type=[str, DeferredToolRequests],
        )

    def read_file(self, path: str) -> str:
        """Read a file."""
        self.ran.append(("read_file", {"path": path}))
        return f"contents of {path}"

    def bash(self, command: str) -> str:
        """Run a shell command."""
        self.ran.append(("bash", {"command": command}))
        return f"ran {command}"

    def delete_user(self, name: str) -> str:
        """Delete a user."""
        self.ran.append(("delete_user", {"name": name}))
        return f"deleted {name}"

    def fetch(self, url: str) -> str:
        """Fetch a URL."""
        self.ran.append(("fetch", {"url": url}))
        return f"fetched {url}"

    def deploy(self, target: str) -> str:
        """Deploy."""
        self.ran.append(("deploy", {"target": target}))
        return f"deployed {target}"

    # asyncio.run, not run_sync: run_sync leaves an event loop open for reuse, which pytest (warnings as
    # errors) reports as an unclosed resource when the session ends.
    def say(self, text: str) -> str | DeferredToolRequests:
        return self._record(asyncio.run(self.agent.run(text, message_history=self.history)))

    def resume(self, results: DeferredToolResults) -> str | DeferredToolRequests:
        run = self.agent.run(message_history=self.history, deferred_tool_results=results)
        return self._record(asyncio.run(run))

    def _record(self, result: Any) -> str | DeferredToolRequests:
        self.history = result.all_messages()
        output: str | DeferredToolRequests = result.output
        self.requests = output if isinstance(output, DeferredToolRequests) else None
        return output

    def restart(self, *, restore_queue: bool = True) -> Host:
        return Host(
            queue_snapshot=json.loads(json.dumps(self.queue.snapshot())) if restore_queue else None,
            grants_snapshot=json.loads(json.dumps(self.grants.snapshot())),
            history=ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(self.history)),
            requests=_json_copy(self.requests),
            on_project_grant=self.on_project_grant,
        )


def _json_copy(requests: DeferredToolRequests | None) -> DeferredToolRequests | None:
    return None if requests is None else REQUESTS.validate_json(REQUESTS.dump_json(requests))


def _deferred(host: Host, text: str) -> DeferredToolRequests:
    """Say ``text``; the run must end with deferred requests, which are returned."""
    output = host.say(text)
    assert isinstance(output, DeferredToolRequests)
    return output


class TestProceed:
    """A call the policy lets through runs at once."""

    def test_allowed_call_runs(self) -> None:
        """An allow rule runs the tool, and the model sees its result."""
        host = Host()
        assert host.say("read") == "read_file: contents of notes.txt"
        assert host.ran == [("read_file", {"path": "notes.txt"})]
        assert host.queue.pending_actions == []


class TestBlock:
    """A call the policy blocks never runs; the model reads why."""

    def test_denied_call_never_runs_and_the_model_sees_the_reason(self) -> None:
        """A deny rule fails the call with the policy's reason, without deferring the run."""
        host = Host()
        assert host.say("delete") == "delete_user: Denied by permission rules: 'delete_user'"
        assert host.ran == []
        assert host.script.seen == [("delete_user", "Denied by permission rules: 'delete_user'")]
        assert host.queue.pending_actions == []


class TestPending:
    """A call that needs a person defers the run until the person decides."""

    def test_run_ends_with_the_queued_action(self) -> None:
        """The deferred request's metadata names the action id, tool, arguments and reason."""
        host = Host()
        requests = _deferred(host, "list")
        assert [call.tool_call_id for call in requests.approvals] == ["list-1"]
        assert permission_requests(requests) == [
            {
                "action_id": 1,
                "tool_call_id": "list-1",
                "tool": "bash",
                "args": {"command": "ls"},
                "reason": "Tool 'bash' requires approval",
            }
        ]
        assert host.ran == []
        assert [action.id for action in host.queue.pending_actions] == [1]

    def test_approval_after_a_restart_runs_the_tool(self) -> None:
        """Everything restored from JSON in a fresh setup; the approved call runs once."""
        first = Host()
        _deferred(first, "list")
        second = first.restart()
        second.queue.approve(1)
        assert second.requests is not None
        output = second.resume(deferred_tool_results(second.policy, second.requests))
        assert output == "bash: ran ls"
        assert second.ran == [("bash", {"command": "ls"})]
        assert first.ran == []
        assert second.queue.snapshot()["next_id"] == 1  # the approved run did not queue the call again

    def test_rejection_after_a_restart_reaches_the_model(self) -> None:
        """A rejected call never runs; the model reads the rejection with the person's feedback."""
        first = Host()
        _deferred(first, "list")
        second = first.restart()
        second.queue.reject(1, feedback="use read_file instead")
        assert second.requests is not None
        results = deferred_tool_results(second.policy, second.requests)
        assert second.resume(results) == "bash: The call to 'bash' was rejected: use read_file instead"
        assert second.ran == []

    def test_results_need_every_action_decided(self) -> None:
        """Building results while an action is still pending raises, naming it."""
        host = Host()
        requests = _deferred(host, "list")
        with pytest.raises(ValueError, match=r"actions still pending: 1 \('bash'\)"):
            deferred_tool_results(host.policy, requests)

    def test_results_need_the_restored_queue(self) -> None:
        """A queue that was not restored knows no action: building results raises."""
        first = Host()
        _deferred(first, "list")
        second = first.restart(restore_queue=False)
        assert second.requests is not None
        with pytest.raises(ValueError, match=r"action 1 is not in the policy's queue"):
            deferred_tool_results(second.policy, second.requests)

    def test_calls_of_other_toolsets_are_left_to_the_host(self) -> None:
        """Only this adapter's calls get results; the host adds the others' and resumes."""
        host = Host()
        requests = _deferred(host, "list and deploy")
        assert sorted(call.tool_name for call in requests.approvals) == ["bash", "deploy"]
        assert [request["tool"] for request in permission_requests(requests)] == ["bash"]
        host.queue.approve(1)
        results = deferred_tool_results(host.policy, requests)
        assert list(results.approvals) == ["list and deploy-1"]
        results.approvals["list and deploy-2"] = False
        assert host.resume(results) == "bash: ran ls | deploy: The tool call was denied."
        assert host.ran == [("bash", {"command": "ls"})]

    def test_framework_approval_resolves_the_queued_action(self) -> None:
        """An approval given straight to pydantic-ai counts as the person's: the queue records it."""
        host = Host()
        _deferred(host, "list")
        assert host.resume(DeferredToolResults(approvals={"list-1": True})) == "bash: ran ls"
        action = host.queue[1]
        assert action is not None
        assert action.is_approved

    def test_queue_rejection_wins_over_a_framework_approval(self) -> None:
        """A call the queue rejected does not run, even when the deferred results approve it."""
        host = Host()
        requests = _deferred(host, "list")
        host.queue.reject(1, feedback="no")
        approval = DeferredToolResults(approvals={"list-1": True}, metadata=requests.metadata)
        output = host.resume(approval)
        assert output == "bash: The call to 'bash' was rejected: no"
        assert host.ran == []

    def test_framework_approval_of_an_unknown_call_asks_the_policy(self) -> None:
        """With no queued action to match (lost queue), a hand-made approval still passes the policy."""
        first = Host()
        _deferred(first, "list")
        second = first.restart(restore_queue=False)
        assert second.resume(DeferredToolResults(approvals={"list-1": True})) == "bash: ran ls"
        action = second.queue[1]
        assert action is not None
        assert action.is_approved


class TestAutoApproval:
    """An action the queue approves by itself runs without deferring."""

    def test_auto_approvable_call_runs_without_deferring(self) -> None:
        """fetch is auto-approvable and listed in auto_approve: the run completes and the tool runs."""
        host = Host()
        assert host.say("fetch") == "fetch: fetched https://example.org"
        action = host.queue[1]
        assert action is not None
        assert action.is_approved


class TestScopes:
    """An approval's scope reaches beyond its call when the person says so."""

    def test_session_scope_lets_the_next_call_through(self) -> None:
        """A "session" approval grants the tool when it runs; the next call runs without deferring."""
        host = Host()
        requests = _deferred(host, "list")
        host.queue.approve(1, scope="session")
        host.resume(deferred_tool_results(host.policy, requests))
        assert host.grants.snapshot() == {"version": 1, "granted_tools": ["bash"]}
        host = host.restart()
        assert host.say("list again") == "bash: ran ls -l"
        assert host.queue.pending_actions == []

    def test_once_scope_asks_again(self) -> None:
        """A "once" approval covers that call only: the next call is deferred again."""
        host = Host()
        requests = _deferred(host, "list")
        host.queue.approve(1)
        host.resume(deferred_tool_results(host.policy, requests))
        assert permission_requests(_deferred(host, "list again"))[0]["action_id"] == 2

    def test_project_scope_calls_the_hosts_hook(self) -> None:
        """A "project" approval is handed to on_project_grant; session grants stay untouched."""
        granted: list[Action] = []
        host = Host(on_project_grant=granted.append)
        requests = _deferred(host, "list")
        host.queue.approve(1, scope="project")
        host.resume(deferred_tool_results(host.policy, requests))
        assert [(action.id, action.resolution_scope) for action in granted] == [(1, "project")]
        assert not host.grants.is_granted("bash")

    def test_project_scope_without_a_hook_counts_once(self) -> None:
        """Without on_project_grant a "project" approval covers that call only."""
        host = Host()
        requests = _deferred(host, "list")
        host.queue.approve(1, scope="project")
        assert host.resume(deferred_tool_results(host.policy, requests)) == "bash: ran ls"
        assert isinstance(host.say("list again"), DeferredToolRequests)


class TestOneLoop:
    """Deferring and resuming inside one event loop, as an async host does."""

    def test_defer_and_approve_in_one_loop(self) -> None:
        """A run defers the queued call, and a resume in the same loop runs it."""
        host = Host()

        async def scenario() -> tuple[object, object]:
            first = await host.agent.run("list")
            assert isinstance(first.output, DeferredToolRequests)
            host.queue.approve(1)
            second = await host.agent.run(
                message_history=first.all_messages(),
                deferred_tool_results=deferred_tool_results(host.policy, first.output),
            )
            return first.output, second.output

        deferred, output = asyncio.run(scenario())
        assert isinstance(deferred, DeferredToolRequests)
        assert output == "bash: ran ls"
        assert host.ran == [("bash", {"command": "ls"})]


class TestConstruction:
    """The toolset checks what it is given."""

    def test_a_queue_is_not_a_policy(self) -> None:
        """Passing the queue where the policy belongs is a TypeError that says so."""
        queue, _, _ = host_policy()
        with pytest.raises(
            TypeError, match=r"PermissionToolset: policy: .*\(pass the policy, not its queue\)"
        ):
            PermissionToolset(FunctionToolset(), queue)  # type: ignore[arg-type]

    def test_the_project_hook_must_be_callable(self) -> None:
        """on_project_grant must be callable or None."""
        _, _, policy = host_policy()
        with pytest.raises(TypeError, match="on_project_grant: expected a callable or None"):
            PermissionToolset(FunctionToolset(), policy, on_project_grant="store")  # type: ignore[arg-type]


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
        assert host.ran == [("bash", {"command": "ls -1"})]


class TestEditedAnswers:
    """A person who edits the call's arguments and approves runs exactly the edit."""

    def test_an_edit_runs_after_a_restart(self) -> None:
        """deferred_tool_results approves with override_args; the resumed run runs the edit once."""
        first = Host()
        _deferred(first, "list")
        second = first.restart()
        second.queue.approve(1, arguments={"command": "ls -a"}, decided_by="ann")
        assert second.requests is not None
        results = deferred_tool_results(second.policy, second.requests)
        assert second.resume(results) == "bash: ran ls -a"
        assert second.ran == [("bash", {"command": "ls -a"})]
        assert second.queue.snapshot()["next_id"] == 1  # the edit did not queue a new call
