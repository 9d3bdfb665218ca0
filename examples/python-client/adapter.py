"""Conformance adapter for the official Python SDK's low-level `ClientSession` (`mcp` on PyPI).

Acts out the actions of one `conformance client` case and prints one outcome line per
action on stdout; the contract is in the repository README, "Testing a client". It talks to
its server over stdio (`CONFORMANCE_SERVER`, an argv to spawn) or over Streamable HTTP
(`CONFORMANCE_SERVER_URL`).
"""

import json
import os
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT, ListRootsResult
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS


def log(message):
    print(f"[python-client adapter] {message}", file=sys.stderr, flush=True)


def report(action, outcome, **extra):
    print(json.dumps({"action": action, "outcome": outcome, **extra}), flush=True)


def environment():
    """Reads the contract's variables; exits 2 with the reason when they are unusable."""

    def read(name):
        text = os.environ.get(name)
        if text is None:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            sys.exit(f"{name} is not JSON ({error}): {text}")

    url = os.environ.get("CONFORMANCE_SERVER_URL")
    server = read("CONFORMANCE_SERVER")
    actions = read("CONFORMANCE_ACTIONS")
    if not isinstance(actions, list) or not actions or "connect" not in actions[0]:
        sys.exit("CONFORMANCE_ACTIONS must be a JSON array of actions whose first action is connect")
    # This adapter runs no call as a task: it says so, and the case is skipped with its words.
    if any(isinstance(a, dict) and "task" in a for a in actions):
        print(json.dumps({"decline": "this adapter does not run tool calls as tasks"}), flush=True)
        sys.exit(0)
    if url is None and not (isinstance(server, list) and server and all(isinstance(s, str) for s in server)):
        sys.exit("set CONFORMANCE_SERVER (a JSON array: the server's argv) or CONFORMANCE_SERVER_URL")
    return url, server, actions, os.environ.get("CONFORMANCE_PROTOCOL_VERSION")


def transport(url, server):
    """The SDK's stdio or Streamable HTTP transport. Leaving the stdio one closes the server's
    stdin and waits for it; leaving the HTTP one sends DELETE for the session."""
    if url is not None:
        return streamable_http_client(url)
    return stdio_client(StdioServerParameters(command=server[0], args=server[1:]))


async def handshake(session, version):
    """`initialize` always offers the SDK's newest 2025-era version (it cannot be chosen).
    For a 2026-era version the session probes `server/discover` first, and falls back to
    `initialize` when the server does not know it, as the high-level client does."""
    if version in MODERN_PROTOCOL_VERSIONS:
        try:
            await session.discover()
            return
        except MCPError as error:
            log(f"server/discover failed ({error}); falling back to initialize")
    elif version is not None and version != LATEST_HANDSHAKE_VERSION:
        log(f"the harness plays {version}; initialize always asks for {LATEST_HANDSHAKE_VERSION}")
    await session.initialize()


def roots_callback(delay_ms):
    """`roots_delay_ms`: a `list_roots_callback` (declaring it makes the session offer the
    `roots` capability) that answers with no roots that long after the request arrives. When
    the server cancels the request, the SDK cancels this callback's scope and never answers
    it (`shared/jsonrpc_dispatcher.py`, the default peer-cancel mode `"interrupt"`)."""

    async def list_roots(context):
        try:
            await anyio.sleep(delay_ms / 1000)
        except anyio.get_cancelled_exc_class():
            log(f"roots/list {context.request_id!r} cancelled by the server")
            raise
        return ListRootsResult(roots=[])

    return list_roots


def ignored_options(action):
    """The SDK has no reset-on-progress and no total cap: its one timeout ends the call."""
    for key in ("reset_timeout_on_progress", "max_total_timeout_ms"):
        if key in action:
            log(f"{key} ignored: the SDK has no such option (read_timeout_seconds is its only timeout)")


def result_text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(session, index, action):
    seen = []
    ignored_options(action)
    timeout = action["timeout_ms"] / 1000 if "timeout_ms" in action else None
    extra = {"progress": seen} if action.get("progress") else {}
    with anyio.CancelScope() as scope:
        if "cancel_after_ms" in action:
            scope.deadline = anyio.current_time() + action["cancel_after_ms"] / 1000

        async def on_progress(progress, total, message):
            seen.append(progress)
            if action.get("cancel") == "on-progress":
                scope.cancel()

        try:
            if "ping" in action:
                await session.send_ping()
                report(index, "result", **extra)
            else:
                result = await session.call_tool(
                    action["call"],
                    action.get("arguments", {}),
                    read_timeout_seconds=timeout,
                    progress_callback=on_progress if action.get("progress") else None,
                )
                report(index, "result", text=result_text(result), **extra)
        except MCPError as error:
            # The session's own deadline raises REQUEST_TIMEOUT; a server's error response
            # could carry the same code, so only a call that had a deadline can time out.
            word = "timeout" if error.code == REQUEST_TIMEOUT and timeout is not None else "error"
            report(index, word, text=str(error), **extra)
        except Exception as error:  # any other failure of the call
            report(index, "error", text=repr(error), **extra)
    # The caller's cancel is the adapter's own scope: the SDK raises nothing of its own.
    if scope.cancelled_caught:
        report(index, "cancelled", **extra)


async def act(session, actions):
    """Every action after `connect`; returns the index of `exit`, if the case has one."""
    async with anyio.create_task_group() as group:
        for index, action in enumerate(actions[1:], start=1):
            if "exit" in action:
                return index
            if "connect" in action:
                report(index, "error", text="connect is only the first action")
            elif "sleep_ms" in action:
                await anyio.sleep(action["sleep_ms"] / 1000)
                report(index, "result")
            elif action.get("concurrent"):
                group.start_soon(call, session, index, action)
            else:
                await call(session, index, action)
    return None


async def main():
    url, server, actions, version = environment()
    exit_index = None
    failed = None  # how connect failed: (outcome, text)
    async with transport(url, server) as (read, write):
        connect = actions[0]
        roots = {"list_roots_callback": roots_callback(connect["roots_delay_ms"])} if "roots_delay_ms" in connect else {}
        async with ClientSession(read, write, **roots) as session:
            try:
                if "timeout_ms" in connect:
                    # The session has no connect deadline; the adapter's scope is one, and
                    # the SDK never cancels initialize (or server/discover) on the wire.
                    with anyio.fail_after(connect["timeout_ms"] / 1000):
                        await handshake(session, version)
                else:
                    await handshake(session, version)
            except TimeoutError as error:
                failed = ("timeout", repr(error))
            except Exception as error:
                failed = ("error", repr(error))
            if failed is None:
                log(f"connected at {session.protocol_version}")
                report(0, "result")
                exit_index = await act(session, actions)
    # Leaving stdio_client closed the server's stdin and waited for it to exit (then SIGTERM,
    # then SIGKILL); leaving streamable_http_client sent DELETE for the session. A failed
    # connect is reported only now, once the session is closed.
    if failed is not None:
        report(0, failed[0], text=failed[1])
    elif exit_index is not None:
        report(exit_index, "result")


if __name__ == "__main__":
    anyio.run(main)
