"""Conformance adapter for the official Python SDK's high-level `mcp.Client` (`mcp` on PyPI).

Acts out the actions of one `conformance client` case and prints one outcome line per
action on stdout; the contract is in the repository README, "Testing a client". It talks to
its server over stdio (`CONFORMANCE_SERVER`, an argv to spawn) or over Streamable HTTP
(`CONFORMANCE_SERVER_URL`). The client runs in its default `mode="auto"`: it probes
`server/discover` at 2026-07-28 first and falls back to `initialize` when the server is a
2025-era one.
"""

import json
import math
import os
import sys
import warnings

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import REQUEST_TIMEOUT, ListRootsResult
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

# `Client.send_ping` is deprecated because 2026-07-28 has no ping; the cases still ping
# 2025-era servers, where it works.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


def log(message):
    print(f"[python-highlevel-client adapter] {message}", file=sys.stderr, flush=True)


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


async def call(client, index, action):
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
                await client.send_ping()
                report(index, "result", **extra)
            else:
                result = await client.call_tool(
                    action["call"],
                    action.get("arguments", {}),
                    read_timeout_seconds=timeout,
                    progress_callback=on_progress if action.get("progress") else None,
                )
                report(index, "result", text=result_text(result), **extra)
        except MCPError as error:
            # The client's own deadline raises REQUEST_TIMEOUT; a server's error response
            # could carry the same code, so only a call that had a deadline can time out.
            word = "timeout" if error.code == REQUEST_TIMEOUT and timeout is not None else "error"
            report(index, word, text=str(error), **extra)
        except Exception as error:  # any other failure of the call
            report(index, "error", text=repr(error), **extra)
    # The caller's cancel is the adapter's own scope: the SDK raises nothing of its own.
    if scope.cancelled_caught:
        report(index, "cancelled", **extra)


async def act(client, actions):
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
                group.start_soon(call, client, index, action)
            else:
                await call(client, index, action)
    return None


async def main():
    url, server, actions, version = environment()
    if version not in (None, LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION):
        log(
            f"the harness plays {version}; the client probes {LATEST_MODERN_VERSION} and its "
            f"initialize always asks for {LATEST_HANDSHAKE_VERSION} (neither can be chosen)"
        )
    target = url if url is not None else StdioServerParameters(command=server[0], args=server[1:])
    connect = actions[0]
    roots = {"list_roots_callback": roots_callback(connect["roots_delay_ms"])} if "roots_delay_ms" in connect else {}
    connected = False
    exit_index = None
    # The client has no connect deadline. The adapter's is a cancel scope around the whole
    # session whose deadline is lifted once connected: when it passes during `async with`,
    # the client unwinds its transport (stdio: closes the server's stdin, waits, then
    # signals; HTTP: DELETE if a session exists) and the SDK never cancels `initialize` or
    # `server/discover` on the wire.
    deadline = anyio.current_time() + connect["timeout_ms"] / 1000 if "timeout_ms" in connect else math.inf
    try:
        with anyio.CancelScope(deadline=deadline) as connecting:
            async with Client(target, **roots) as client:
                connecting.deadline = math.inf
                connected = True
                log(f"connected at {client.protocol_version}")
                report(0, "result")
                exit_index = await act(client, actions)
    except Exception as error:
        if not connected:
            report(0, "error", text=repr(error))
            return
        raise
    if not connected:
        report(0, "timeout" if connecting.cancelled_caught else "error", text="no connection")
        return
    # Leaving `Client` closed the session: over stdio the server's stdin is closed first
    # (then SIGTERM, then SIGKILL); over HTTP a DELETE ends the 2025-era session.
    if exit_index is not None:
        report(exit_index, "result")


if __name__ == "__main__":
    anyio.run(main)
