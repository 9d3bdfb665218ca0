// Conformance adapter for the official TypeScript SDK 1.x client (@modelcontextprotocol/sdk).
// Acts out the actions of one `conformance client` case and prints one outcome line per
// action on stdout; the contract is in the repository README, "Testing a client".
// It talks to its server over stdio (CONFORMANCE_SERVER, an argv to spawn) or over
// Streamable HTTP (CONFORMANCE_SERVER_URL).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  ListRootsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

function log(message) {
  process.stderr.write(`[typescript-client adapter] ${message}\n`);
}

// A broken environment: the harness (or whoever runs the adapter) set it up wrong.
class UsageError extends Error {}

function environment() {
  const read = (name) => {
    const text = process.env[name];
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${name} is not JSON (${error.message}): ${text}`);
    }
  };
  const url = process.env.CONFORMANCE_SERVER_URL;
  const server = read("CONFORMANCE_SERVER");
  const actions = read("CONFORMANCE_ACTIONS");
  if (!Array.isArray(actions)) throw new UsageError("CONFORMANCE_ACTIONS must be a JSON array of actions");
  if (url === undefined) {
    const argv = Array.isArray(server) && server.length > 0 && server.every((s) => typeof s === "string");
    if (!argv) throw new UsageError("set CONFORMANCE_SERVER (a JSON array: the server's argv) or CONFORMANCE_SERVER_URL");
  }
  return { url, server, actions, version: process.env.CONFORMANCE_PROTOCOL_VERSION };
}

function report(action, outcome, extra = {}) {
  process.stdout.write(JSON.stringify({ action, outcome, ...extra }) + "\n");
}

// The SDK rejects an aborted call with the abort reason when that reason is an McpError, and
// otherwise with an McpError whose code is RequestTimeout (-32001), the code of its own
// timeout. The adapter aborts with an McpError of its own, so the rejection *is* that object:
// identity tells a caller cancel from a deadline, whatever code either carries.
class CallerCancel extends McpError {
  constructor() {
    super(ErrorCode.RequestTimeout, "cancelled by the conformance adapter");
  }
}

function classify(error) {
  if (error instanceof CallerCancel) return "cancelled";
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return "timeout";
  return "error";
}

function resultText(result) {
  return (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

async function call(client, index, action) {
  const controller = new AbortController();
  const cancel = () => controller.abort(new CallerCancel());
  const seen = [];
  const options = { signal: controller.signal };
  if (action.timeout_ms !== undefined) options.timeout = action.timeout_ms;
  // The SDK's own options: a progress notification restarts the timeout, and the cap is
  // checked only when progress arrives (`_resetTimeout` in shared/protocol.js), so it acts
  // only together with `resetTimeoutOnProgress`.
  if (action.reset_timeout_on_progress) options.resetTimeoutOnProgress = true;
  if (action.max_total_timeout_ms !== undefined) options.maxTotalTimeout = action.max_total_timeout_ms;
  if (action.progress) {
    options.onprogress = (p) => {
      seen.push(p.progress);
      if (action.cancel === "on-progress") cancel();
    };
  }
  let timer;
  if (action.cancel_after_ms !== undefined) timer = setTimeout(cancel, action.cancel_after_ms);
  const progress = action.progress ? { progress: seen } : {};
  try {
    if (action.ping !== undefined) {
      await client.ping(options);
      report(index, "result", progress);
    } else {
      const result = await client.callTool(
        { name: action.call, arguments: action.arguments ?? {} },
        undefined,
        options,
      );
      report(index, "result", { text: resultText(result), ...progress });
    }
  } catch (error) {
    report(index, classify(error), { text: String(error), ...progress });
  } finally {
    clearTimeout(timer);
  }
}

// A `call` with `task`: the SDK's experimental tasks (`client.experimental.tasks`, 2025-11-25).
// The tools are listed first (once a session), as the SDK decides from the cached
// `execution.taskSupport` and the server's `tasks.requests.tools.call` whether a call may be a
// task (`isToolTask`); `callToolStream` then creates the task and follows it by polling
// `tasks/get` at the task's `pollInterval`, and fetches `tasks/result` once it is completed.
// A cancel (`cancel`, `cancel_after_ms`, `timeout_ms`) of a call that became a task is
// `cancelTask` (tasks/cancel); if the server refuses it (the task had ended), the adapter
// follows the task on and reports how it ended. `abandon` stops following: the poll in flight,
// if any, is aborted (`notifications/cancelled` for that `tasks/get`), and the task works on.
// A stop before the task exists aborts the `tools/call` itself.
const listedTools = new WeakSet();

async function taskCall(client, index, action) {
  if (!listedTools.has(client)) {
    await client.listTools();
    listedTools.add(client);
  }
  const controller = new AbortController();
  const options = { signal: controller.signal };
  const ttl = typeof action.task === "object" && action.task !== null ? action.task.ttl : undefined;
  if (ttl !== undefined && client.isToolTask(action.call)) options.task = { ttl };
  const seen = [];
  const abandons = action.abandon !== undefined || action.abandon_after_ms !== undefined;
  const trigger = abandons ? action.abandon : action.cancel;
  const after = abandons ? action.abandon_after_ms : action.cancel_after_ms;
  let why;
  let wake;
  const stopping = new Promise((resolve) => (wake = resolve));
  const stop = (reason) => {
    if (why === undefined) {
      why = reason;
      wake("stop");
    }
  };
  if (action.progress) {
    options.onprogress = (p) => {
      seen.push(p.progress);
      if (trigger === "on-progress") stop(abandons ? "abandon" : "cancel");
    };
  }
  const timers = [];
  if (after !== undefined) timers.push(setTimeout(() => stop(abandons ? "abandon" : "cancel"), after));
  if (action.timeout_ms !== undefined) timers.push(setTimeout(() => stop("timeout"), action.timeout_ms));
  const progress = action.progress ? { progress: seen } : {};
  const stream = client.experimental.tasks.callToolStream(
    { name: action.call, arguments: action.arguments ?? {} },
    undefined,
    options,
  );
  const messages = stream[Symbol.asyncIterator]();
  let taskId;
  let following = true;
  try {
    while (true) {
      const next = messages.next();
      const got = following ? await Promise.race([next, stopping]) : await next;
      if (got === "stop") {
        next.catch(() => {});
        following = false;
        if (taskId === undefined || why === "abandon") {
          // No task yet: the call itself is cancelled. Abandoning: only the poll in flight is.
          controller.abort(new CallerCancel());
          report(index, why === "timeout" ? "timeout" : "cancelled", { task: taskId, ...progress });
          return;
        }
        try {
          await client.experimental.tasks.cancelTask(taskId);
          report(index, why === "timeout" ? "timeout" : "cancelled", { task: taskId, ...progress });
          return;
        } catch (error) {
          log(`tasks/cancel of ${taskId} refused (${error}); following the task to its end`);
        }
        continue;
      }
      if (got.done) {
        report(index, "error", { text: "the stream ended without a result", ...progress });
        return;
      }
      const message = got.value;
      if (message.type === "taskCreated") {
        taskId = message.task.taskId;
        if (trigger === "on-task") stop(abandons ? "abandon" : "cancel");
      } else if (message.type === "result") {
        report(index, "result", { text: resultText(message.result), task: taskId, ...progress });
        return;
      } else if (message.type === "error") {
        const outcome = why !== undefined && /was cancelled/.test(String(message.error)) ? "cancelled" : classify(message.error);
        report(index, outcome, { text: String(message.error), task: taskId, ...progress });
        return;
      }
    }
  } finally {
    timers.forEach(clearTimeout);
  }
}

function transportFor(env) {
  if (env.url !== undefined) return new StreamableHTTPClientTransport(new URL(env.url));
  return new StdioClientTransport({ command: env.server[0], args: env.server.slice(1), stderr: "inherit" });
}

// How long the end of the session waits for messages still being sent (at most).
const SEND_DRAIN_MS = 1500;

// Keeps the transport's unfinished sends. The SDK sends a cancel without awaiting it (the
// call's promise rejects at once), and over HTTP that send is a POST of its own; ending the
// session right after (DELETE, then `close()`, which aborts every POST) could overtake or
// abort it. `drain()` waits for what is still being sent, so the session ends after it.
function trackSends(transport) {
  const sending = new Set();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const sent = send(message, options);
    const settled = sent.then(
      () => {},
      () => {},
    );
    sending.add(settled);
    settled.then(() => sending.delete(settled));
    return sent;
  };
  return async () => {
    if (sending.size === 0) return;
    const limit = new Promise((resolve) => setTimeout(() => resolve("limit"), SEND_DRAIN_MS));
    const ended = await Promise.race([Promise.all([...sending]), limit]);
    if (ended === "limit") log(`${sending.size} message(s) still being sent after ${SEND_DRAIN_MS} ms; ending the session anyway`);
  };
}

// `roots_delay_ms`: the client declares `roots` and answers `roots/list` with no roots that
// long after it arrives. The wait ends early when the server cancels the request (the
// handler's signal); the SDK then drops the handler's answer (`_onrequest` sends nothing for
// an aborted request), so a cancelled `roots/list` is never answered.
function answerRoots(client, delay) {
  client.setRequestHandler(ListRootsRequestSchema, async (_request, extra) => {
    const signal = extra.signal;
    await new Promise((resolve) => {
      // Over stdio the cancel can be read in the same chunk as the request, and so abort the
      // signal before the handler runs: an aborted signal fires no more events.
      const cancelled = () => {
        log(`roots/list ${extra.requestId} cancelled by the server: ${signal.reason}`);
        resolve();
      };
      if (signal.aborted) return cancelled();
      const timer = setTimeout(resolve, delay);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        cancelled();
      });
    });
    return { roots: [] };
  });
}

// Ends the session the way the SDK offers, once every message still being sent is out: over
// HTTP `close()` only aborts the open streams, so the session is ended with
// `terminateSession()` (DELETE) first; over stdio `close()` ends the server's stdin, waits
// 2 s, then sends SIGTERM, waits 2 s more, then SIGKILL.
async function end(client, transport, drain) {
  await drain();
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
    await transport.terminateSession().catch((error) => log(`terminateSession failed: ${error}`));
  }
  await client.close();
}

async function main() {
  const env = environment();
  if (env.version !== undefined && env.version !== LATEST_PROTOCOL_VERSION) {
    log(`the harness plays ${env.version}; the SDK always asks for ${LATEST_PROTOCOL_VERSION} (it cannot be chosen)`);
  }
  let client;
  let transport;
  let drain;
  const pending = [];
  let exitIndex;
  for (const [index, action] of env.actions.entries()) {
    if (action.connect !== undefined) {
      transport = transportFor(env);
      drain = trackSends(transport);
      const roots = action.roots_delay_ms !== undefined;
      client = new Client(
        { name: "conformance-adapter-typescript", version: "0.2.0" },
        roots ? { capabilities: { roots: {} } } : {},
      );
      if (roots) answerRoots(client, action.roots_delay_ms);
      const options = action.timeout_ms !== undefined ? { timeout: action.timeout_ms } : {};
      const closed = new Promise((resolve) => (client.onclose = resolve));
      try {
        await client.connect(transport, options);
        report(index, "result");
      } catch (error) {
        // The session is closed before the outcome is reported. A failed connect starts
        // closing the transport itself without waiting (stdio: the server's stdin is ended,
        // then SIGTERM after 2 s and SIGKILL after 2 s more), so the adapter waits for the
        // transport's close event, at most 5 s.
        await client.close().catch(() => {});
        await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5000))]);
        report(index, classify(error), { text: String(error) });
        return;
      }
    } else if (action.sleep_ms !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, action.sleep_ms));
      report(index, "result");
    } else if (action.exit !== undefined) {
      exitIndex = index;
      break;
    } else if (client === undefined) {
      report(index, "error", { text: "no session: the case must connect first" });
    } else {
      const run = action.task !== undefined ? taskCall : call;
      if (action.concurrent) pending.push(run(client, index, action));
      else await run(client, index, action);
    }
  }
  await Promise.all(pending);
  if (client) await end(client, transport, drain);
  if (exitIndex !== undefined) report(exitIndex, "result");
}

main().then(
  () => process.exit(0),
  (error) => {
    log(error?.stack ?? String(error));
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
