"""The prompt: a multi-line editor that sends, steers and queues, recalls earlier prompts and
completes slash commands and ``@`` paths as you type.

Keys (every encoding of them; see ``_keys``): Enter sends, Alt+Enter queues a follow-up,
Shift+Enter, Ctrl+Enter and Ctrl+J add a line (Ctrl+J in every terminal). Up and Down at the
first and last line recall earlier prompts (the project's history, kept across restarts),
Ctrl+R searches them. While suggestions are shown, Up and Down move in them and Tab or Enter
takes one; Tab never moves the focus away (keys typed after it would be lost). End at the end
of the prompt jumps to the newest output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from ._history import PromptHistory

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual import events

    from ._complete import Suggestion

__all__ = ["NEWLINE_KEYS", "PromptInput", "SuggestionList"]

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+enter", "ctrl+j"})
"""Keys that add a line to the prompt."""


class SuggestionList(OptionList):
    """The suggestions for what is being typed, shown above the prompt (never focused)."""

    can_focus = False

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.suggestions: list[Suggestion] = []

    def show(self, suggestions: list[Suggestion]) -> None:
        self.suggestions = suggestions
        self.clear_options()
        if suggestions:
            self.add_options(
                Option(Text.assemble(s.label, ("  " + s.detail if s.detail else "", "dim")))
                for s in suggestions
            )
            self.highlighted = 0
        self.display = bool(suggestions)

    @property
    def chosen(self) -> Suggestion | None:
        index = self.highlighted
        if not self.display or index is None or index >= len(self.suggestions):
            return None
        return self.suggestions[index]


class PromptInput(TextArea):
    """The input editor (see the module docs)."""

    class Submitted(Message):
        """The prompt was sent (``follow_up``: with Alt+Enter)."""

        def __init__(self, text: str, *, follow_up: bool) -> None:
            super().__init__()
            self.text = text
            self.follow_up = follow_up

    class JumpToEnd(Message):
        """End was pressed at the end of the prompt: show the newest output."""

    class SearchHistory(Message):
        """Ctrl+R: search the history."""

    def __init__(self, *, history: PromptHistory | None = None, **options: Any) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, compact=True, **options)
        self.prompt_history = history if history is not None else PromptHistory()
        self.suggestions: SuggestionList | None = None
        self.completer: Callable[[str, int], list[Suggestion]] | None = None
        self._recall: int | None = None  # the index being shown, while browsing
        self._draft = ""
        self._quiet = False  # a change made here: no suggestions for it

    @property
    def prompts(self) -> list[str]:
        """The earlier prompts, oldest first."""
        return self.prompt_history.prompts

    # ---------------------------------------------------------------- text

    def submit(self, *, follow_up: bool = False) -> None:
        text = self.text
        if not text.strip():
            return
        self.prompt_history.add(text)
        self._recall = None
        self.set_text("")
        self.post_message(self.Submitted(text, follow_up=follow_up))

    def set_text(self, text: str) -> None:
        """Replace the prompt's text, the cursor at its end, suggestions closed."""
        self._quiet = True
        self.load_text(text)
        self.move_cursor(self.document.end)
        self._hide_suggestions()

    def _offset(self) -> int:
        """The cursor as a character offset into the text."""
        row, column = self.cursor_location
        lines = self.text.split("\n")
        return sum(len(line) + 1 for line in lines[:row]) + column

    # ---------------------------------------------------------------- suggestions

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self._quiet:
            self._quiet = False
            return
        self._suggest(only_commands=False)

    def _suggest(self, *, only_commands: bool) -> list[Suggestion]:
        if self.completer is None or self.suggestions is None:
            return []
        found = self.completer(self.text, self._offset())
        self.suggestions.show(found)
        return found

    def _hide_suggestions(self) -> None:
        if self.suggestions is not None and self.suggestions.display:
            self.suggestions.show([])

    def _take(self, suggestion: Suggestion) -> None:
        text = self.text
        new = text[: suggestion.start] + suggestion.text + text[suggestion.end :]
        self._quiet = True
        self.load_text(new)
        offset = suggestion.start + len(suggestion.text)
        before = new[:offset]
        self.move_cursor((before.count("\n"), len(before) - before.rfind("\n") - 1))
        if suggestion.text.endswith("/"):
            self._suggest(only_commands=False)  # a directory: its entries next
        else:
            self._hide_suggestions()

    # ---------------------------------------------------------------- keys

    async def _on_key(self, event: events.Key) -> None:
        if self._suggestion_key(event.key) or self._own_key(event.key):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _suggestion_key(self, key: str) -> bool:
        """Keys that act on the suggestions while they are shown."""
        shown = self.suggestions
        if shown is None or not shown.display:
            return False
        chosen = shown.chosen
        if key in ("up", "down"):
            count = len(shown.suggestions)
            index = (shown.highlighted or 0) + (1 if key == "down" else -1)
            shown.highlighted = index % count
        elif key == "escape":
            self._hide_suggestions()
        elif key in ("tab", "enter") and chosen is not None:
            whole = self.text.strip()
            self._take(chosen)
            if key == "enter" and chosen.label.startswith("/") and whole.startswith("/"):
                self.submit()  # a command picked with Enter runs, as typed out would
        else:
            return False
        return True

    def _own_key(self, key: str) -> bool:
        row = self.cursor_location[0]
        if key == "enter":
            self.submit()
        elif key == "alt+enter":
            self.submit(follow_up=True)
        elif key in NEWLINE_KEYS:
            self.insert("\n")
        elif key == "tab":
            found = self._suggest(only_commands=False)
            if len(found) == 1:
                self._take(found[0])
        elif key == "ctrl+r":
            self.post_message(self.SearchHistory())
        elif key == "end" and self.cursor_location == self.document.end:
            self.post_message(self.JumpToEnd())
        elif key == "up" and row == 0 and self.prompts and self._recall != 0:
            if self._recall is None:
                self._draft, self._recall = self.text, len(self.prompts)
            self._recall -= 1
            self.set_text(self.prompts[self._recall])
        elif key == "down" and self._recall is not None and row == self.document.line_count - 1:
            self._recall += 1
            if self._recall >= len(self.prompts):
                self._recall = None
                self.set_text(self._draft)
            else:
                self.set_text(self.prompts[self._recall])
        else:
            return False
        return True
