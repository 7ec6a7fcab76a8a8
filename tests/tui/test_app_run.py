"""The app driven with Pilot against a scripted model that stops mid-answer: streaming, the
input editor, steering and follow-ups, abort, resizing, copying (PRD §17 criteria 16–20)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import pytest
from textual.widgets import Static

import agentloop as al
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_tui import AgentApp, AssistantEntry, ToolEntry, UserEntry, _text_view as text_view
from agentloop_tui._prompt import PromptInput
from agentloop_tui._text_view import TextView, ThinkingView
from agentloop_tui._widgets import AnswerView, ToolBlock

from ._helpers import Pause, PausingModel, make_app, screen_text, settle, text_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

ANSWER = "First paragraph.\n\n```python\nprint('hi')\n```\n\nLast paragraph, still streaming"


def _answers(app: AgentApp) -> list[AssistantEntry]:
    return [e for e in app.view.entries if isinstance(e, AssistantEntry)]


async def test_criterion_16_answers_render_incrementally_as_deltas_arrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[str] = []

    def counting(text: str) -> Any:
        rendered.append(text)
        return original(text)

    original = text_view.markdown
    monkeypatch.setattr(text_view, "markdown", counting)
    model = PausingModel([Pause(reply_text(ANSWER), after=12)], chunk_size=4)
    app = make_app(tmp_path, model)
    async with app.run_test(size=(90, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"hello", "enter")
        await model.paused.wait()
        await settle(pilot)
        (answer,) = _answers(app)
        assert answer.streaming and answer.text == ANSWER[: 4 * 10]  # 10 deltas so far
        view = app.query_one(TextView)
        assert view.part.markdown.blocks == ["First paragraph.\n\n"]
        shown = text_of(view)
        assert shown.startswith("First paragraph.") and text_view.CURSOR in shown  # generating
        first_line = view.render_line(0)

        rendered.clear()
        model.resume()
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert not answer.streaming and answer.text == ANSWER
        assert view.render_line(0) is first_line  # the finished block was kept, not redrawn
        assert "First paragraph.\n\n" not in rendered  # ... nor rendered again
        assert all(len(text) < len(ANSWER) for text in rendered)  # never the whole document
        assert text_view.CURSOR not in screen_text(app)
        assert "Last paragraph, still streaming" in screen_text(app)


async def test_criterion_17_the_editor_takes_several_lines_and_enter_sends(
    tmp_path: Path,
) -> None:
    model = PausingModel([reply_text("one"), reply_text("two")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        prompt = app.query_one(PromptInput)
        await pilot.press(*"first", "shift+enter", *"second", "ctrl+j", *"third")
        assert prompt.text == "first\nsecond\nthird" and not model.contexts
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        assert prompt.text == ""
        sent = model.contexts[0].messages[-1]
        assert al.extract_text(sent.content) == "first\nsecond\nthird"
        # Up recalls the last prompt, Down goes back to the draft.
        await pilot.press(*"draft", "up")
        assert prompt.text == "first\nsecond\nthird"
        await pilot.press("down")
        assert prompt.text == "draft"


async def test_enter_steers_a_running_agent_and_alt_enter_queues_a_follow_up(
    tmp_path: Path,
) -> None:
    slow = Pause(reply_tool_calls(("list_dir", {})), after=3)
    model = PausingModel([slow, reply_text("steered"), reply_text("followed")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(90, 30)) as pilot:
        await app.ready.wait()
        await pilot.press(*"start", "enter")
        await model.paused.wait()
        await pilot.press(*"look elsewhere", "enter")
        await pilot.press(*"then summarise", "alt+enter")
        await settle(pilot)
        queue = app.query_one("#queue", Static)
        shown = text_of(queue)
        assert "steer: look elsewhere" in shown and "follow-up: then summarise" in shown
        assert queue.display
        model.resume()
        await app.workers.wait_for_complete()
        await settle(pilot)
        users = [e.text for e in app.view.entries if isinstance(e, UserEntry)]
        assert users == ["start", "look elsewhere", "then summarise"]
        assert [a.text for a in _answers(app)][-2:] == ["steered", "followed"]
        assert not app.query_one("#queue", Static).display


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_criterion_18_escape_and_ctrl_c_abort_and_show_it(tmp_path: Path, key: str) -> None:
    model = PausingModel([Pause(reply_text("a long answer " * 20), after=6)])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"go", "enter")
        await model.paused.wait()
        await settle(pilot)
        assert app.view.status.state == "running"
        await pilot.press(key)
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert str(app.view.status.state) == "aborted" and not app.running
        assert app.session is not None and not app.session.agent.is_running
        (answer,) = _answers(app)
        assert answer.aborted and app.query_one(AnswerView).has_class("-aborted")
        screen = screen_text(app)
        assert "aborted" in screen and "⊘" in screen


async def test_what_was_queued_for_an_aborted_run_goes_back_into_the_prompt(
    tmp_path: Path,
) -> None:
    # A steer and a follow-up typed while the answer streams wait for the run; Esc stops the
    # run, and they come back into the prompt (to edit or send again) instead of staying
    # queued, shown as pending, to go with whatever is asked next.
    model = PausingModel([Pause(reply_text("a long answer " * 20), after=6), reply_text("ok")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"go", "enter")
        await model.paused.wait()
        await pilot.press(*"stop that", "enter")
        await pilot.press(*"then this", "alt+enter")
        await settle(pilot)
        assert "steer: stop that" in screen_text(app)
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert app.session is not None
        assert not app.session.agent.has_queued_messages()
        assert app.prompt.text == "stop that\nthen this"
        assert "steer: stop that" not in screen_text(app)


async def test_criterion_19_the_tool_panel_shows_active_tools_and_results(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    model = PausingModel([reply_tool_calls(("read_file", {"path": "notes.txt"})), reply_text("ok")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(130, 30)) as pilot:  # wide: the side panel is shown
        await app.ready.wait()
        await pilot.press(*"read it", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        panel = app.query_one("#tool-panel", Static)
        assert panel.display and "✓" in text_of(panel) and "notes.txt" in text_of(panel)
        block = app.query_one(ToolBlock)
        assert block.entry.status == "done" and "remember the milk" in text_of(block)


async def test_a_running_tool_shows_as_running(tmp_path: Path) -> None:
    model = PausingModel([reply_tool_calls(("bash", {"command": "sleep 30"})), reply_text("ok")])
    app = make_app(tmp_path, model)
    async with app.run_test(size=(130, 30)) as pilot:
        await app.ready.wait()
        assert app.session is not None
        app.session.approval_mode = "bypassed"
        started = anyio.Event()
        app.session.agent.subscribe(
            lambda event: started.set() if isinstance(event, al.ToolExecutionStart) else None
        )
        await pilot.press(*"wait", "enter")
        await started.wait()
        await settle(pilot)
        (entry,) = app.view.tool_entries()
        assert entry.status == "running" and "…" in text_of(app.query_one("#tool-panel"))
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        assert str(entry.status) == "cancelled", entry.output


async def test_criterion_20_the_layout_follows_the_terminal_size(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([]))
    async with app.run_test(size=(140, 30)) as pilot:
        await app.ready.wait()
        await settle(pilot)
        panel = app.query_one("#tool-panel")
        assert app.screen.has_class("-wide") and panel.display and panel.size.width > 0
        status = text_of(app.query_one("#status"))
        assert "approve smart" in status and "scripted:demo" in status
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        assert app.screen.has_class("-narrow") and panel.size.width == 0
        narrow = text_of(app.query_one("#status"))
        assert "scripted:demo" not in narrow and "EXECUTE" in narrow and "ctx" in narrow
        assert app.query_one("#conversation").outer_size.width == 60
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert app.screen.has_class("-normal") and panel.size.width == 0
        assert "scripted:demo" in text_of(app.query_one("#status"))


async def test_thinking_is_dimmed_folded_and_shown_on_demand(tmp_path: Path) -> None:
    answer = al.AssistantMessage(
        content=[al.Thinking(thinking="step one\nstep two"), al.Text(text="Answer.")]
    )
    app = make_app(tmp_path, PausingModel([answer]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"think", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        thinking = app.query_one(".thinking", ThinkingView)
        assert "thinking (2 lines)" in text_of(thinking)
        assert thinking.styles.text_style.italic
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert "step one\nstep two" in text_of(thinking)


async def test_one_key_copies_the_answer_or_its_code_block(tmp_path: Path) -> None:
    app = make_app(tmp_path, PausingModel([reply_text(ANSWER)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"code please", "enter")
        await app.workers.wait_for_complete()
        await pilot.press("ctrl+y")
        assert app.clipboard == ANSWER
        await pilot.press("alt+y")
        assert app.clipboard == "print('hi')\n"


async def test_page_keys_scroll_the_history(tmp_path: Path) -> None:
    long = "\n\n".join(f"Paragraph {i}." for i in range(80))
    app = make_app(tmp_path, PausingModel([reply_text(long)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.ready.wait()
        await pilot.press(*"long", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        conversation = app.query_one("#conversation")
        bottom = conversation.scroll_y
        assert bottom > 0 and bottom == conversation.max_scroll_y  # follows the answer
        await pilot.press("pageup")
        await pilot.pause()
        assert conversation.scroll_y < bottom
        await pilot.press("ctrl+down")
        await pilot.pause()
        assert conversation.scroll_y > bottom - conversation.size.height
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert conversation.scroll_y == conversation.max_scroll_y


def test_tool_entries_are_their_own_kind() -> None:
    assert ToolEntry("c", "n", {}, "t").kind == "tool"
