"""``CodingSession``: one conversation of the coding agent, shared by every front end.

The ``agentloop`` command, the ACP server and the terminal UI all drive the agent through this
object. It builds the ``Agent`` from a ``Config`` (model, tools, system prompt, sandbox, turn
limit, API keys), records the conversation in the session store, and holds the state a front
end shows and changes:

* ``mode`` — ``"execute"`` or ``"plan"`` (read-only tools, a plan as the answer);
  ``plan`` is the last plan made, ``execute_plan()`` switches back and gives the follow-up
  that carries it out;
* ``approvals`` — the ``ApprovalGate``: its ``mode`` (enabled / smart / bypassed) and the tools
  trusted for this session (``trust``/``distrust``); ``commands`` — the ``bash`` commands
  trusted (``commands.trust("git status")``: "always allow this command", see ``_trust``);
  a person is asked through ``ask``, an
  async function the front end sets (a modal, an ACP permission request, a terminal prompt).
  With no ``ask``, a call that needs approval is refused with a reason the model can read:
  the plumbing fails closed.

A new session is **recorded only once it holds a real exchange**: the store is not touched
until the first answer that is not an error (``recorded`` says whether it has been), so a
start that never gets a prompt, or whose first run fails (a wrong API key), leaves no empty
session behind. A resumed session is recorded into as it goes.

Nothing here prints or reads a terminal: a front end subscribes to ``agent`` for events and
reads these attributes to render.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio.to_thread

from agentloop import (
    Agent,
    AgentEnd,
    AssistantMessage,
    ModelSpec,
    ThinkingLevel,
    extract_text,
)
from agentloop.policy import Rejected
from agentloop.sessions import JsonlSessionStore
from agentloop_policies import ApprovalGate, ApprovalMode, MaxTurns, Sandbox

from ._config import Config, ConfigError
from ._keys import ApiKeys, default_model
from ._prompt import system_prompt
from ._recorder import FirstExchangeRecorder, new_session_id
from ._toolbox import coding_tools
from ._trust import CommandTrust
from ._workspace import Workspace

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentloop import AgentEvent, AgentTool, ToolCall
    from agentloop.abc import SessionStore, StreamFn, Toolset
    from agentloop.sessions import SessionInfo
    from agentloop_policies import ApprovalAnswer, AskFn

    from ._base import CodingTool

__all__ = ["NO_APPROVER", "CodingSession", "Mode", "list_sessions", "open_store"]

Mode: TypeAlias = Literal["execute", "plan"]
"""A session's mode: ``"plan"`` (read-only tools, a plan as the answer) or ``"execute"``."""

NO_APPROVER = (
    "This call needs the user's approval and no one is there to give it, so it was not run. "
    "Say what you wanted to do; the user can allow it (approval mode 'bypassed', or trusting "
    "the tool) and run again."
)
"""What the model is told of a call that needs approval when no one can give it (headless)."""

_NO_MODEL = (
    "no model is configured: pass -m provider:model-id (e.g. anthropic:claude-sonnet-4-5), "
    "set AGENTLOOP_MODEL or 'model' in a config file, or set a provider's API key variable "
    "(ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, ...)"
)


def open_store(config: Config, environ: Mapping[str, str] | None = None) -> JsonlSessionStore:
    """The session store ``config`` names (JSONL files in ``config.sessions_path()``)."""
    return JsonlSessionStore(config.sessions_path(environ))


async def list_sessions(
    config: Config,
    *,
    environ: Mapping[str, str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> list[SessionInfo]:
    """The stored sessions, the most recently updated first, for a resume picker.

    Each ``SessionInfo`` has what a picker shows: ``title`` (the first prompt's first line),
    ``created_at`` and ``updated_at`` (milliseconds since the epoch), ``message_count``,
    ``model`` and ``metadata["cwd"]`` (the workspace). Sessions holding no message are left
    out.

    Args:
        config: where the sessions are (``sessions_dir``).
        environ: the environment (default ``os.environ``).
        workspace: only the sessions of this directory.

    Raises:
        SessionStoreError: the session directory cannot be read.
    """
    found = await open_store(config, environ).list_sessions()
    where = None
    if workspace is not None:
        where = await anyio.to_thread.run_sync(os.path.realpath, os.fspath(workspace))
    return [
        info
        for info in found
        if info.message_count > 0 and (where is None or info.metadata.get("cwd") == where)
    ]


def _workspace(config: Config, directory: str | os.PathLike[str]) -> Workspace:
    """The workspace at ``directory``, confined as ``config`` asks.

    Raises:
        ConfigError: ``directory`` is not a directory.
    """
    try:
        root = Workspace(directory).root
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not config.sandbox:
        # Said by the front end (the command prints it); the setting is the user's own.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return Workspace(root, confined=False)
    # Extra roots are taken from the workspace when relative, as every other path is. Paths
    # are not pinned: the tools take them as given and check them again where they open.
    extra = [root / os.path.expanduser(r) for r in config.roots]
    return Workspace(root, sandbox=Sandbox([root, *extra], cwd=root, pin=False))


def _model_name(model: str | ModelSpec) -> str:
    return model if isinstance(model, str) else f"{model.provider}:{model.model_id}"


class CodingSession:
    """One conversation of the coding agent; see the module docs. Made by ``start``.

    Attributes:
        agent: the agent (subscribe to it for events; prompt, steer, abort through it).
        workspace: where the tools work.
        tools: the built-in tools.
        approvals: the approval gate (mode, session trust).
        config: the settings it was made from.
        store: where the conversation is recorded (``None``: not recorded).
        session_id: the session's id in the store (``None`` when not recorded); a new
            session is only stored once it holds a real exchange (``recorded``).
        model: the model as a ``provider:model-id`` string.
        ask: asks a person about a tool call (set by the front end); ``None`` refuses.
        commands: the ``bash`` commands that run without asking (``CommandTrust``).
        plan: the answer of the last run made in plan mode, if any.
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        workspace: Workspace,
        tools: list[CodingTool],
        approvals: ApprovalGate,
        config: Config,
        model: str,
        store: SessionStore | None = None,
        session_id: str | None = None,
    ) -> None:
        self.agent = agent
        self.workspace = workspace
        self.tools = tools
        self.approvals = approvals
        self.config = config
        self.model = model
        self.store = store
        self.session_id = session_id
        self.ask: AskFn | None = None
        self.plan: str | None = None
        try:
            self.commands = CommandTrust(config.trusted_commands)
        except ValueError as exc:
            raise ConfigError(f"trusted_commands: {exc}") from None
        agent.subscribe(self._on_event)

    # ---------------------------------------------------------------- making one

    @classmethod
    async def start(
        cls,
        config: Config | None = None,
        *,
        workspace: str | os.PathLike[str] = ".",
        resume: str | None = None,
        session_id: str | None = None,
        store: SessionStore | None = None,
        record: bool = True,
        model: str | ModelSpec | None = None,
        stream_fn: StreamFn | None = None,
        ask: AskFn | None = None,
        environ: Mapping[str, str] | None = None,
        toolsets: Sequence[Toolset] = (),
    ) -> CodingSession:
        """A new session, or the stored session ``resume`` continued.

        Args:
            config: the settings (default: ``Config()``).
            workspace: the directory the agent works in.
            resume: the id of a stored session to continue.
            session_id: the id of the new session (default: a fresh one); it is stored from
                its first real exchange on (module docs).
            store: where sessions are kept (default: ``config``'s JSONL directory).
            record: record the conversation in the store.
            model: the model (wins over the resumed session's and the config's); a
                ``ModelSpec`` needs ``stream_fn``.
            stream_fn: the provider, for a ``ModelSpec`` or to replace the resolved one.
            ask: asks a person about tool calls needing approval.
            environ: the environment (API keys, the default model; default ``os.environ``).
            toolsets: more tools for the agent, whose set may change (an MCP server group).

        Raises:
            ConfigError: no model is configured and none can be chosen, or the workspace is
                not a directory.
            SessionNotFound: there is no stored session ``resume``.
            ValueError: ``session_id`` is malformed or taken.
            UnknownModel: no installed provider resolves the model string.
        """
        config = config or Config()
        space = _workspace(config, workspace)
        root, sandbox = space.root, space.sandbox
        tools = coding_tools(space, bash=config.bash, grep=config.grep)
        holder: list[CodingSession] = []

        async def dispatch(call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
            return await holder[0]._ask(call, tool)

        gate = ApprovalGate(dispatch, mode=config.approval, timeout=None)
        for name in config.trusted_tools:
            gate.trust(name)
        if record and store is None:
            store = open_store(config, environ)
        if not record:
            store = None

        chosen: str | ModelSpec | None = model
        if resume is not None and chosen is None:
            if store is None:
                raise ConfigError("resuming a session needs a session store")
            stored = (await store.info(resume)).model
            chosen = stored if stored and ":" in stored else None
        chosen = chosen or config.model or default_model(environ)
        if chosen is None:
            raise ConfigError(_NO_MODEL)
        options: dict[str, Any] = {
            "stream_fn": stream_fn,
            "system_prompt": system_prompt(
                root,
                base=config.system_prompt,
                instructions=config.instructions,
                tools=[t.name for t in tools],
            ),
            "tools": tools,
            "approval": gate,
            "pre_turn_policies": [MaxTurns(config.max_turns)],
            "pre_dispatch_policies": [sandbox] if sandbox is not None else [],
            "tool_timeout": config.tool_timeout,
            "get_api_key": ApiKeys(environ=environ),
            "toolsets": toolsets,
        }
        agent: Agent[Any]
        if resume is not None:
            assert store is not None
            agent = await Agent.from_session(store, resume, model=chosen, **options)
            session_id = resume
        else:
            session_id = None if store is None else session_id
            agent = Agent(model=chosen, **options)  # an unknown model fails before the store
            if store is not None:
                session_id = await new_session_id(store, session_id)
                agent.session = FirstExchangeRecorder(
                    store, session_id, model=_model_name(chosen), metadata={"cwd": str(root)}
                )
        if config.thinking is not None:
            agent.set_thinking_level(ThinkingLevel(config.thinking))
        session = cls(
            agent,
            workspace=space,
            tools=tools,
            approvals=gate,
            config=config,
            model=_model_name(chosen),
            store=store,
            session_id=session_id,
        )
        holder.append(session)
        session.ask = ask
        session.mode = "plan" if config.plan else "execute"
        return session

    # ---------------------------------------------------------------- modes

    @property
    def mode(self) -> Mode:
        """``"plan"`` (read-only tools, a plan as the answer) or ``"execute"``."""
        return "plan" if self.agent.plan_mode else "execute"

    @mode.setter
    def mode(self, mode: Mode) -> None:
        if mode not in ("plan", "execute"):
            raise ValueError(f"mode must be 'plan' or 'execute', not {mode!r}")
        self.agent.set_plan_mode(mode == "plan")

    def execute_plan(self) -> str:
        """Switch to execute mode; returns the message that has the agent carry out the plan
        (prompt it, or queue it with ``agent.follow_up``).

        Raises:
            ValueError: no plan has been made yet.
        """
        if not self.plan:
            raise ValueError("there is no plan to carry out: make one in plan mode first")
        self.mode = "execute"
        return f"Carry out this plan:\n\n{self.plan}"

    @property
    def approval_mode(self) -> ApprovalMode:
        """Which calls need a person's approval: enabled, smart or bypassed."""
        return self.approvals.mode

    @approval_mode.setter
    def approval_mode(self, mode: ApprovalMode | str) -> None:
        self.approvals.mode = mode

    @property
    def recorded(self) -> bool:
        """Whether the conversation is in the store (a new one is, from its first real
        exchange on)."""
        recorder = self.agent.session
        if recorder is None:
            return False
        return not isinstance(recorder, FirstExchangeRecorder) or recorder.created

    async def set_model(self, model: str) -> None:
        """Use ``model`` (``provider:model-id``) from the next turn on; a recorded session
        remembers it, so a resumed one goes on with it. The former provider is closed.

        Raises:
            UnknownModel: no installed provider resolves the model string.
        """
        former = self.agent.stream_fn
        self.agent.set_model(model)
        self.model = model
        if self.store is not None and self.session_id is not None and self.recorded:
            await self.store.update(self.session_id, model=model)
        aclose = getattr(former, "aclose", None)
        if aclose is not None and former is not self.agent.stream_fn:
            await aclose()

    def tool(self, name: str) -> CodingTool | None:
        """The built-in tool called ``name``."""
        return next((t for t in self.tools if t.name == name), None)

    # ---------------------------------------------------------------- internals

    async def _ask(self, call: ToolCall, tool: AgentTool | None) -> ApprovalAnswer:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        if call.name == "bash" and self.commands.allows(str(arguments.get("command", ""))):
            return True  # a trusted command: nobody needs to be asked
        ask = self.ask
        if ask is None:
            return Rejected(reason=NO_APPROVER)
        return await ask(call, tool)

    def _on_event(self, event: AgentEvent) -> None:
        if type(event) is AgentEnd and self.agent.plan_mode:
            assert isinstance(event, AgentEnd)
            for message in reversed(event.messages):
                if type(message) is AssistantMessage and not message.error_message:
                    text = extract_text(message.content).strip()
                    if text:
                        self.plan = text
                    break

    async def aclose(self) -> None:
        """Close what the provider holds open (its HTTP client); the session stays stored."""
        aclose = getattr(self.agent.stream_fn, "aclose", None)
        if aclose is not None:
            await aclose()

    def __repr__(self) -> str:
        return (
            f"<CodingSession {self.session_id or '(not recorded)'} model={self.model} "
            f"mode={self.mode} approval={self.approval_mode.value}>"
        )
