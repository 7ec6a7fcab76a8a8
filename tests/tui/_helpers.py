"""The terminal UI under test: a scripted model that can stop mid-answer, and the app around it.

``PausingModel`` plays scripted replies like ``ScriptedStream`` and, at a ``Pause``, stops
after a given number of stream events until the test calls ``resume()``: the test can look at
the screen while an answer is half streamed, a tool is running or a run is waiting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from textual.geometry import Region

import agentloop as al
from agentloop.testing import events_for
from agentloop_coding import CodingSession, Config
from agentloop_tui import AgentApp

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from pathlib import Path

    from textual.app import App
    from textual.pilot import Pilot
    from textual.widget import Widget

    from agentloop.abc import SessionStore
    from agentloop.stream import AssistantMessageEvent

__all__ = [
    "SYSTEM",
    "Pause",
    "PausingModel",
    "make_app",
    "screen_text",
    "settle",
    "text_of",
    "wait_until",
]

SYSTEM = "You are a test."


class Pause(msgspec.Struct, frozen=True):
    """A reply that stops after ``after`` of its stream events until resumed."""

    reply: al.AssistantMessage
    after: int


class PausingModel:
    """A ``StreamFn`` playing ``script`` (replies or ``Pause``\\ s), one item per call.

    Attributes:
        contexts: the context of every call (tools offered, messages).
        paused: set while the stream is stopped at a ``Pause``.
    """

    def __init__(
        self, script: Sequence[al.AssistantMessage | Pause], *, chunk_size: int = 4
    ) -> None:
        self.script = list(script)
        self.chunk_size = chunk_size
        self.contexts: list[Any] = []
        # Made on first use: an anyio.Event belongs to the event loop it was made in, and a
        # snapshot test builds its app before Textual starts one.
        self._paused: anyio.Event | None = None
        self._go: anyio.Event | None = None

    @property
    def paused(self) -> anyio.Event:
        if self._paused is None:
            self._paused = anyio.Event()
        return self._paused

    def resume(self) -> None:
        go = self._go
        self._paused = self._go = None
        if go is not None:
            go.set()

    def __call__(
        self, model: al.ModelSpec, context: Any, options: al.StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        # A copy: the loop goes on appending to the context's lists.
        snapshot = msgspec.structs.replace(
            context, messages=list(context.messages), tools=list(context.tools)
        )
        self.contexts.append(snapshot)
        item = self.script.pop(0) if self.script else al.testing.reply_text("(script over)")
        return self._play(item)

    async def _play(
        self, item: al.AssistantMessage | Pause
    ) -> AsyncIterator[AssistantMessageEvent]:
        reply, stop = (item.reply, item.after) if isinstance(item, Pause) else (item, -1)
        for n, event in enumerate(events_for(reply, chunk_size=self.chunk_size)):
            if n == stop:
                go = self._go = anyio.Event()
                self.paused.set()
                await go.wait()
            yield event


def make_app(
    workspace: Path,
    model: Callable[..., Any],
    *,
    context_window: int | None = 2000,
    config: Config | None = None,
    store: SessionStore | None = None,
    **options: Any,
) -> AgentApp:
    """The app on a session in ``workspace`` whose model is ``model`` (not recorded unless a
    ``store`` is given), with a fixed system prompt so the context gauge is reproducible."""
    spec = al.ModelSpec(provider="scripted", model_id="demo", context_window=context_window)

    async def start(*, resume: str | None = None, model_name: str | None = None) -> CodingSession:
        session = await CodingSession.start(
            config or Config(),
            workspace=workspace,
            resume=resume,
            store=store,
            record=store is not None,
            model=spec,
            stream_fn=model,
        )
        session.agent.set_system_prompt(SYSTEM)
        return session

    async def starter(*, resume: str | None = None, model: str | None = None) -> CodingSession:
        return await start(resume=resume, model_name=model)

    options.setdefault("cursor_blink", False)
    app = AgentApp(starter, **options)
    app.animation_level = "none"
    return app


async def settle(pilot: Pilot[Any]) -> None:
    """Let the app process what is pending, then draw the view model's changes."""
    await pilot.pause()
    pilot.app.flush()  # type: ignore[attr-defined]
    await pilot.pause()


async def wait_until(pilot: Pilot[Any], done: Callable[[], bool], what: str = "it") -> None:
    """Process the app's messages until ``done()``; fails after 10 s without it."""
    with anyio.fail_after(10):
        while not done():
            await pilot.pause()
            await anyio.lowlevel.checkpoint()
    await settle(pilot)


def text_of(widget: Widget) -> str:
    """What ``widget`` shows, as plain text."""
    region = Region(0, 0, widget.size.width, widget.size.height)
    return "\n".join(strip.text.rstrip() for strip in widget.render_lines(region))


def screen_text(app: App[Any]) -> str:
    """What the whole screen shows, as plain text (what the terminal would display)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)
