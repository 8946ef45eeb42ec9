"""google-adk's side of adk/benches/stores.rs: the same turns through google-adk's own
DatabaseSessionService, on the database the bench names.

    python google_adk_turns.py DATABASE_URL CONCURRENCY TIMED_TURNS TAG

Each of CONCURRENCY workers has a session and a user of its own in the app `bench` and runs,
per turn, what a google-adk runner does with its session service for such a turn: it reads the
session (`get_session`, no events: `num_recent_events=0`) and appends one model event whose
state delta increments three keys read from that session (`turns`, `user:turns` and the
worker's own `app:turns_<user>`). One untimed turn per worker first (it creates the session),
then TIMED_TURNS turns in all. The last line printed is `TURNS_PER_SECOND P50_MS`.

Needs google-adk[db]==2.13.0 with aiosqlite (SQLite) or asyncpg (PostgreSQL).
"""

import asyncio
import statistics
import sys
import time

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

APP = "bench"


async def turn(service, user, session_id):
    session = await service.get_session(
        app_name=APP,
        user_id=user,
        session_id=session_id,
        config=GetSessionConfig(num_recent_events=0),
    )
    app_key = f"app:turns_{user}"
    delta = {
        key: session.state.get(key, 0) + 1 for key in ("turns", "user:turns", app_key)
    }
    event = Event(
        invocation_id=f"i-{time.monotonic_ns()}",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text="an answer")]),
        actions=EventActions(state_delta=delta),
    )
    await service.append_event(session, event)


async def main():
    url, concurrency, timed, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    # SQLite: wait for the file's lock as long as a turn may (the default 5 s fails turns at
    # 16 and 256 in flight on a loaded machine).
    options = {"connect_args": {"timeout": 600}} if url.startswith("sqlite") else {}
    service = DatabaseSessionService(db_url=url, **options)
    per_worker = -(-timed // concurrency)

    async def warm(worker):
        user, session_id = f"{tag}u{worker}", f"{tag}w{worker}"
        await service.create_session(app_name=APP, user_id=user, session_id=session_id)
        await turn(service, user, session_id)

    # Creating the tables is not part of any turn.
    await warm(0)
    await asyncio.gather(*(warm(worker) for worker in range(1, concurrency)))

    latencies = []

    async def work(worker):
        user, session_id = f"{tag}u{worker}", f"{tag}w{worker}"
        for _ in range(per_worker):
            started = time.perf_counter()
            await turn(service, user, session_id)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(work(worker) for worker in range(concurrency)))
    elapsed = time.perf_counter() - started
    await service.close()
    print(f"{len(latencies) / elapsed:.1f} {statistics.median(latencies) * 1e3:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
