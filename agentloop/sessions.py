"""Sessions: where an agent's conversation is kept, and how it is loaded back.

A session is an append-only list of messages plus a little metadata, kept by a
``SessionStore`` (JSONL files or SQLite are built in). ``Agent(session=SessionRecorder(store,
id))`` stores every message the agent commits as the run goes; ``Agent.from_session`` (or
``load_session``) brings a session back with its history repaired.
"""

from ._abc import SessionStore as SessionStore
from ._errors import SessionNotFound as SessionNotFound, SessionStoreError as SessionStoreError
from ._jsonl_store import JsonlSessionStore as JsonlSessionStore
from ._public import publish
from ._session_recorder import SessionRecorder as SessionRecorder
from ._session_resume import load_session as load_session, repair_history as repair_history
from ._session_store import SessionInfo as SessionInfo
from ._sqlite_store import SqliteSessionStore as SqliteSessionStore

__all__ = [
    "JsonlSessionStore",
    "SessionInfo",
    "SessionNotFound",
    "SessionRecorder",
    "SessionStore",
    "SessionStoreError",
    "SqliteSessionStore",
    "load_session",
    "repair_history",
]

publish(__name__, globals(), __all__, force=False)
del publish
