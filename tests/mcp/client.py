"""An MCP client written with the official Python SDK (`mcp` from PyPI), for adk's MCP tests.

    python client.py stdio PROGRAM [ARG...] < calls.json
    python client.py http URL < calls.json

Connects to the server, lists its tools, makes the calls read from stdin (a JSON list of
{"name": ..., "arguments": {...}}), and prints one JSON object on stdout:
{"server": {...}, "tools": [{"name", "description", "inputSchema"}...],
 "calls": [{"name", "isError", "content": [...], "structuredContent"}...]}.
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def session_run(read, write, calls):
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        results = []
        for call in calls:
            result = await session.call_tool(call["name"], call.get("arguments") or {})
            results.append(dict(name=call["name"], **dump(result)))
        return {
            "server": dump(init.server_info),
            "tools": [dump(tool) for tool in listed.tools],
            "calls": results,
        }


async def main():
    mode = sys.argv[1]
    calls = json.load(sys.stdin) if not sys.stdin.isatty() else []
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as streams:
            out = await session_run(streams[0], streams[1], calls)
    elif mode == "http":
        async with streamable_http_client(sys.argv[2]) as streams:
            out = await session_run(streams[0], streams[1], calls)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


anyio.run(main)
