"""The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on the
official Python SDK (`mcp` 2.x, MCPServer over stdio, or Streamable HTTP).

Usage: `server.py` (stdio), or `server.py --http --port N [--stateless] [--json-response]`:
Streamable HTTP on 127.0.0.1:N, endpoint /mcp. 2025-era clients get sessions unless
`--stateless`; requests whose MCP-Protocol-Version header names 2026-07-28 take the SDK's
per-request path in both modes. The witness is one list for the whole process.

A cancel arrives as the cancellation of the handler's task (asyncio CancelledError from the
SDK's anyio cancel scope); each handler records its request id before re-raising. Progress
goes out through `ctx.report_progress`.
"""

import argparse
import json

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("python-sdk-fixture", version="0.1.0")

# Ids (exact JSON values, in order) of requests whose handler observed its cancellation.
observed: list[int | str] = []


def request_id(ctx: Context) -> int | str:
    # `ctx.request_id` is a str; the request context keeps the id as it came on the wire.
    return ctx.request_context.request_id


async def until_cancelled(ctx: Context) -> None:
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        observed.append(request_id(ctx))
        raise


@server.tool()
async def work(ctx: Context) -> str:
    """Progress once, then run until cancelled."""
    await ctx.report_progress(0, message="Started")
    await until_cancelled(ctx)
    return "unreachable"


@server.tool()
async def ping() -> str:
    """Liveness probe."""
    return "Server: still available"


@server.tool()
async def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
async def sleep(ms: int, ctx: Context) -> str:
    """Answer `slept` after ms milliseconds."""
    try:
        await anyio.sleep(ms / 1000)
    except anyio.get_cancelled_exc_class():
        observed.append(request_id(ctx))
        raise
    return "slept"


@server.tool()
async def ticker(interval_ms: int, ctx: Context) -> str:
    """Progress 1, 2, 3, ... every interval_ms until cancelled."""
    n = 0
    try:
        while True:
            await anyio.sleep(interval_ms / 1000)
            n += 1
            await ctx.report_progress(n)
    except anyio.get_cancelled_exc_class():
        observed.append(request_id(ctx))
        raise


@server.tool()
async def cancellations() -> str:
    """Ids of the requests whose handler observed its cancellation."""
    return json.dumps(observed, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description="The conformance fixture profile on the official Python SDK")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, help="the loopback port for --http")
    parser.add_argument("--stateless", action="store_true", help="no sessions for 2025-era clients")
    parser.add_argument("--json-response", action="store_true", help="answer requests with JSON, not SSE")
    args = parser.parse_args()
    if not args.http:
        server.run("stdio")
        return
    if args.port is None:
        parser.error("--http needs --port N")
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=args.port,
        streamable_http_path="/mcp",
        stateless_http=args.stateless,
        json_response=args.json_response,
    )


if __name__ == "__main__":
    main()
