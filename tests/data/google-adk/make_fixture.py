"""Writes `sessions.db` with google-adk's own DatabaseSessionService (SQLite, schema v1).

Run: python3 -m venv /tmp/adkvenv && /tmp/adkvenv/bin/pip install "google-adk[db]" aiosqlite
     /tmp/adkvenv/bin/python tests/data/google-adk/make_fixture.py
The Rust test `sqlite_store_reads_state_written_by_google_adk` reads the result.
"""
import asyncio
import os

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "sessions.db")


async def main():
    if os.path.exists(PATH):
        os.remove(PATH)
    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{PATH}")
    session = await service.create_session(
        app_name="a",
        user_id="u1",
        session_id="s1",
        state={"sk": "initial", "user:k": 1, "app:k": "A", "temp:t": "never stored"},
    )
    event = Event(
        invocation_id="inv-1",
        author="system",
        actions=EventActions(
            state_delta={"sk": None, "sk2": "S", "user:k2": "U", "app:k2": 2, "temp:t2": True}
        ),
    )
    await service.append_event(session, event)
    await service.create_session(app_name="a", user_id="u2", session_id="s2", state={})
    await service.close() if hasattr(service, "close") else None


asyncio.run(main())
