"""A deliberately broken MCP stdio server for adk's bad-input tests. It speaks raw JSON-RPC (no
SDK) so it can break the protocol in exactly one way per mode:

    python misbehaving_server.py MODE [RECORD_FILE]

MODE:
  garbage   prints log lines that are not JSON-RPC on stdout and never answers
  huge      answers `tools/call` with a 100 MB text result (one line of JSON)
  schemas   lists tools with unusable schemas and names next to one good tool (`ok`)
  slow      answers `tools/call "sleep"` never, `"die"` by exiting with status 3 mid-call,
            anything else with "pong"; sends `notifications/tools/list_changed` after
            `tools/call "grow"` and lists a second tool (`extra`) from then on

Every message received is appended to RECORD_FILE (one JSON per line) when given.
"""

import json
import os
import sys

MODE = sys.argv[1]
RECORD = sys.argv[2] if len(sys.argv) > 2 else None
GROWN = False


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def schema(properties=None):
    return {"type": "object", "properties": properties or {}}


def tools():
    if MODE == "schemas":
        return [
            {"name": "ok", "description": "A good tool.", "inputSchema": schema()},
            {"name": "array_schema", "description": "Schema is an array.", "inputSchema": {"type": "array"}},
            {"name": "no_type", "description": "Schema without type.", "inputSchema": {"properties": {}}},
            {"name": "has spaces", "description": "Name with spaces.", "inputSchema": schema()},
            {"name": "n" * 200, "description": "A 200-character name.", "inputSchema": schema()},
            {"name": "bad_ref", "description": "Remote $ref.",
             "inputSchema": {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}}},
        ]
    listed = [{"name": "ping", "description": "Answers pong.", "inputSchema": schema()},
              {"name": "sleep", "description": "Never answers.", "inputSchema": schema()},
              {"name": "die", "description": "Exits mid-call.", "inputSchema": schema()},
              {"name": "grow", "description": "Adds a tool.", "inputSchema": schema()}]
    if GROWN:
        listed.append({"name": "extra", "description": "Added later.", "inputSchema": schema()})
    return listed


def handle(request):
    global GROWN
    method = request.get("method")
    if "id" not in request:
        return
    if method == "initialize":
        reply(request, {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "misbehaving", "version": "0"},
        })
    elif method == "tools/list":
        reply(request, {"tools": tools()})
    elif method == "tools/call":
        name = request["params"]["name"]
        if MODE == "huge":
            reply(request, {"content": [{"type": "text", "text": "x" * (100 * 1024 * 1024)}]})
        elif name == "sleep":
            pass
        elif name == "die":
            sys.stderr.write("misbehaving: exiting mid-call on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif name == "grow":
            GROWN = True
            reply(request, {"content": [{"type": "text", "text": "grown"}]})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        else:
            reply(request, {"content": [{"type": "text", "text": "pong"}]})
    elif method == "ping":
        reply(request, {})
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no"}})


def main():
    if MODE == "garbage":
        sys.stdout.write("Starting server... (this log line belongs on stderr)\n")
        sys.stdout.flush()
    for line in sys.stdin:
        if RECORD:
            with open(RECORD, "a") as record:
                record.write(line if line.endswith("\n") else line + "\n")
        if MODE == "garbage":
            sys.stdout.write("INFO got a request, not telling you about it\n")
            sys.stdout.flush()
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        handle(request)


main()
