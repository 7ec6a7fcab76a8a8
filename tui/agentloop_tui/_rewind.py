"""Esc Esc: take the conversation back to before the last prompt, to edit it.

The agent's history loses the last prompt and everything after it, the view the entries from
that prompt on, and the prompt's text goes back into the input. A session store only appends,
so a recorded session is not cut: the conversation goes on in a new stored session that starts
with what was kept (the old one stays as it was, for ``/sessions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentloop import AgentError, UserMessage, extract_text
from agentloop.sessions import SessionRecorder

from ._entries import UserEntry

if TYPE_CHECKING:
    from agentloop import AgentMessage

    from ._app import AgentApp

__all__ = ["rewind"]


async def _fork(app: AgentApp, kept: list[AgentMessage]) -> str | None:
    """Record the kept messages as a new session; returns its id (``None``: not recorded)."""
    session = app.session
    if session is None or session.store is None or session.session_id is None:
        return None
    store = session.store
    old = await store.info(session.session_id)
    info = await store.create(model=session.model, metadata=dict(old.metadata))
    if kept:
        await store.append(info.id, kept)
    session.agent.session = SessionRecorder(store, info.id)
    session.session_id = info.id
    return info.id


async def rewind(app: AgentApp) -> str | None:
    """Go back to before the last prompt; returns its text (``None``: nothing to go back to)."""
    session = app.session
    if session is None or app.running:
        return None
    messages = list(session.agent.messages)
    cut = next(
        (i for i in range(len(messages) - 1, -1, -1) if type(messages[i]) is UserMessage), None
    )
    entry = app.view.last_prompt()
    if cut is None or entry is None:
        app.notify("there is no earlier prompt to go back to", timeout=2)
        return None
    prompt = messages[cut]
    assert isinstance(prompt, UserMessage)
    text = extract_text(prompt.content)
    kept = messages[:cut]
    session.agent.replace_messages(kept)
    for gone in app.view.truncate(entry):
        view = app._views.pop(gone.id, None)
        if view is not None:
            await view.remove()  # type: ignore[attr-defined]
    if app.scrollback is not None:
        app.scrollback.printed = min(app.scrollback.printed, len(app.view.entries))
    try:
        forked = await _fork(app, kept)
    except (AgentError, OSError) as exc:
        app.view.notice(
            f"went back, but the new session could not be recorded: {exc}", level="warning"
        )
    else:
        where = f" (recorded as session {forked})" if forked else ""
        shown = text if len(text) <= 60 else text[:59] + "…"
        app.view.notice(f"went back to before “{shown}”{where}")
    app.gauge.update(session.agent.messages)
    app.update_gauge()
    app._changed()
    return text if isinstance(entry, UserEntry) else None
