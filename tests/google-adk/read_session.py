"""google-adk's own session services on a file, for adk's interop tests
(tests/tests/google_adk_interop.rs). Run with the python of `.ci/google-adk install`.

  read_session.py read database|sqlite|postgres PATH APP USER SESSION
      Reads the session with DatabaseSessionService (v1 schema) or SqliteSessionService (what
      `adk web` writes); `postgres` is DatabaseSessionService on PostgreSQL through asyncpg, PATH
      then being a libpq URL (postgresql:///DB?host=SOCKET_DIR&user=USER) and the tables those of
      the schema named by $ADK_GOOGLE_ADK_PG_SCHEMA (default: the search path). Prints {"state", "events", "last_update_time", "listed"} as JSON:
      events as google-adk stores them (model_dump, exclude_none), listed = the ids
      list_sessions returns for APP and USER.
  read_session.py write-sqlite PATH APP USER SESSION
      Writes a session the way `adk web` does (SqliteSessionService): initial state, a user
      message, a function call, its response carrying a state delta, and a model answer.
  read_session.py write database|sqlite|postgres PATH APP USER SESSION
      Writes the same session with that service.
"""
import asyncio
import json
import os
import sys

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types


def service(kind, path):
    if kind == "database":
        return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    if kind == "sqlite":
        return SqliteSessionService(db_path=path)
    if kind == "postgres":
        scheme, separator, rest = path.partition("://")
        if not separator or scheme not in ("postgres", "postgresql"):
            raise SystemExit(f"not a postgresql:// URL: {path!r}")
        schema = os.environ.get("ADK_GOOGLE_ADK_PG_SCHEMA")
        settings = {"server_settings": {"search_path": schema}} if schema else {}
        return DatabaseSessionService(db_url=f"postgresql+asyncpg://{rest}", connect_args=settings)
    raise SystemExit(f"unknown service {kind!r}")


async def read(kind, path, app, user, session_id):
    sessions = service(kind, path)
    session = await sessions.get_session(app_name=app, user_id=user, session_id=session_id)
    listed = await sessions.list_sessions(app_name=app, user_id=user)
    print(json.dumps({
        "state": session.state if session else None,
        "events": [event.model_dump(mode="json", exclude_none=True) for event in session.events]
        if session else None,
        "last_update_time": session.last_update_time if session else None,
        "listed": sorted(listed_session.id for listed_session in listed.sessions),
    }))


async def write(kind, path, app, user, session_id):
    schema = os.environ.get("ADK_GOOGLE_ADK_PG_SCHEMA")
    if kind == "postgres" and schema:
        import asyncpg
        connection = await asyncpg.connect(path)
        await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await connection.close()
    sessions = service(kind, path)
    session = await sessions.create_session(
        app_name=app, user_id=user, session_id=session_id,
        state={"step": 1, "user:lang": "fr", "temp:t": "never stored"},
    )
    text = lambda role, words: types.Content(role=role, parts=[types.Part(text=words)])
    call = types.Part(function_call=types.FunctionCall(id="call-1", name="weather", args={"city": "Paris"}))
    result = types.Part(function_response=types.FunctionResponse(
        id="call-1", name="weather", response={"result": "sunny"}))
    for event in [
        Event(invocation_id="inv-1", author="user", content=text("user", "Weather in Paris?")),
        Event(invocation_id="inv-1", author="root_agent", content=types.Content(role="model", parts=[call])),
        Event(invocation_id="inv-1", author="root_agent", content=types.Content(role="user", parts=[result]),
              actions=EventActions(state_delta={"city": "Paris", "app:calls": 1})),
        Event(invocation_id="inv-1", author="root_agent", content=text("model", "Sunny in Paris.")),
    ]:
        await sessions.append_event(session, event)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "read":
        asyncio.run(read(*arguments))
    elif command == "write-sqlite":
        asyncio.run(write("sqlite", *arguments))
    elif command == "write":
        asyncio.run(write(*arguments))
    else:
        raise SystemExit(f"unknown command {command!r}")
