"""The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on FastMCP
with `fastmcp-tasks`, its implementation of the 2026 tasks extension (SEP-2663,
`io.modelcontextprotocol/tasks`), over stdio or Streamable HTTP.

`TasksExtension()` (Docket, in memory) serves `tasks/get`, `tasks/update` and `tasks/cancel`;
`work`, `sleep` and `ticker` are `task=True` tools (mode "optional"): a request that declares
the extension gets a task (`resultType: "task"`), any other a plain call. A task's work is a
Docket execution in this process; `tasks/cancel` cancels it (anyio's cancelled exception), and
the witness records its task id (a plain call's entry is its request id).

Usage: `server.py` (stdio), or `server.py --http --port N [--stateless] [--json-response]`:
Streamable HTTP on 127.0.0.1:N, endpoint /mcp. 2025-era clients get sessions unless
`--stateless`; 2026-07-28 requests take the SDK's per-request path in both modes. The
witness is one list for the whole process.

A cancel arrives as the cancellation of the tool's task (anyio's cancelled exception); each
tool records its request id before re-raising. Progress goes out through
`ctx.report_progress`.
"""

import argparse
import json

import anyio
from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks-fixture", version="0.1.0")
mcp.add_extension(TasksExtension())

# Ids (exact JSON values, in order) of requests whose handler observed its cancellation; for a
# task, its task id.
observed: list[int | str] = []


def request_id(ctx: Context) -> int | str:
    # A task's work runs in a Docket worker, with no request: it is known by its task id.
    if ctx.is_background_task:
        return ctx.task_id
    # FastMCP's `ctx.request_id` (and its request context's) is the id made a str; the SDK's
    # own request context underneath keeps the id as it came on the wire.
    return ctx.request_context._srctx.request_id


@mcp.tool(task=True)
async def work(ctx: Context) -> str:
    """Progress once, then run until cancelled."""
    await ctx.report_progress(0, message="Started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        observed.append(request_id(ctx))
        raise
    return "unreachable"


@mcp.tool
async def ping() -> str:
    """Liveness probe."""
    return "Server: still available"


@mcp.tool
async def echo(text: str) -> str:
    """Echo the text."""
    return text


@mcp.tool(task=True)
async def sleep(ms: int, ctx: Context) -> str:
    """Answer `slept` after ms milliseconds."""
    try:
        await anyio.sleep(ms / 1000)
    except anyio.get_cancelled_exc_class():
        observed.append(request_id(ctx))
        raise
    return "slept"


@mcp.tool(task=True)
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


@mcp.tool
async def cancellations() -> str:
    """Ids of the requests whose handler observed its cancellation."""
    return json.dumps(observed, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description="The conformance fixture profile on FastMCP with fastmcp-tasks")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, help="the loopback port for --http")
    parser.add_argument("--stateless", action="store_true", help="no sessions for 2025-era clients")
    parser.add_argument("--json-response", action="store_true", help="answer requests with JSON, not SSE")
    args = parser.parse_args()
    if not args.http:
        mcp.run("stdio", show_banner=False)
        return
    if args.port is None:
        parser.error("--http needs --port N")
    mcp.run(
        "http",
        show_banner=False,
        host="127.0.0.1",
        port=args.port,
        path="/mcp",
        stateless_http=args.stateless,
        json_response=args.json_response,
    )


if __name__ == "__main__":
    main()
