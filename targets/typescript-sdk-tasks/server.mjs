// The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on the
// official TypeScript SDK 1.x with its experimental tasks (the 2025-11-25 core shape):
// McpServer with a task store, `tasks` capability (list, cancel, requests.tools.call), and
// `work`, `sleep`, `ticker` registered with `server.experimental.tasks.registerToolTask`
// (`execution.taskSupport: "optional"`). The SDK itself answers `tasks/get`, `tasks/result`,
// `tasks/list` and `tasks/cancel` from the store; a plain call of an optional tool is run
// as a task by the SDK too (its "automatic polling"). `work_required` is `work` with
// `taskSupport: "required"`; `echo`, `ping` and `cancellations` are plain tools
// (`taskSupport: "forbidden"`).
//
// The SDK gives a task's work no cancellation signal: `tasks/cancel` only sets the task's
// status in the store. The store here is the SDK's InMemoryTaskStore with one hook, as a
// user of the pluggable TaskStore interface would add: setting a task `cancelled` aborts
// that task's AbortController, which is what the work waits on. The witness then records
// the task's id (a plain call of a task tool runs as a task too, so it is listed by task id).
//
// Usage: `node server.mjs` (stdio), or `node server.mjs --http --port N`: Streamable HTTP on
// 127.0.0.1:N, endpoint /mcp, one McpServer per session (as in targets/typescript-sdk), one
// task store for the process (it binds each task to its session). The witness is one list
// for the whole process.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
import { z } from "zod";

// Ids (exact JSON values, in order) of requests whose work observed its cancellation; for a
// task, its task id.
const observed = [];

// Suggested polling interval of every task, in ms. The SDK's automatic polling (a plain call
// of an optional tool) checks the store at this interval, so a plain `sleep` is answered up
// to this much after it slept.
const POLL_INTERVAL_MS = 100;

// InMemoryTaskStore, plus an AbortSignal per task that fires when the task is set
// `cancelled` (the SDK's `tasks/cancel` handler does that through updateTaskStatus).
class SignallingTaskStore extends InMemoryTaskStore {
  #controllers = new Map();

  signalFor(taskId) {
    let controller = this.#controllers.get(taskId);
    if (!controller) {
      controller = new AbortController();
      this.#controllers.set(taskId, controller);
    }
    return controller.signal;
  }

  async updateTaskStatus(taskId, status, statusMessage, sessionId) {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.#controllers.get(taskId)?.abort(new Error("task cancelled"));
    if (["completed", "failed", "cancelled"].includes(status)) this.#controllers.delete(taskId);
  }

  async storeTaskResult(taskId, status, result, sessionId) {
    await super.storeTaskResult(taskId, status, result, sessionId);
    this.#controllers.delete(taskId);
  }
}

const taskStore = new SignallingTaskStore();
const capabilities = {
  tools: {},
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
};

const text = (t) => ({ content: [{ type: "text", text: t }] });

const progress = (extra, params) => {
  const token = extra._meta?.progressToken;
  if (token === undefined) return Promise.resolve();
  return extra.sendNotification({
    method: "notifications/progress",
    params: { progressToken: token, ...params },
  });
};

// Resolves never; rejects once `signal` aborts, after recording `id`. A signal that
// fires after the work finished (`finished()`) is not a cancellation the work saw.
function untilCancelled(signal, id, cleanup = () => {}, finished = () => false) {
  return new Promise((_, reject) => {
    const stop = () => {
      if (finished()) return;
      cleanup();
      observed.push(id);
      reject(signal.reason ?? new Error("cancelled"));
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
}

// A task tool's handlers: `createTask` makes the task in the SDK's store, starts
// `run(args, extra, signal, taskId)` in the background and returns at once (the SDK answers
// the call with CreateTaskResult, or, for a plain call, polls the store until the task is
// terminal). The work's outcome goes into the store; a cancelled task keeps its status (the
// store refuses the result). `getTask` and `getTaskResult` are required by the handler type,
// but 1.32.2 never calls them: it answers `tasks/get` and `tasks/result` from the store.
function taskTool(run) {
  const createTask = async (args, extra) => {
    const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl, pollInterval: POLL_INTERVAL_MS });
    const signal = taskStore.signalFor(task.taskId);
    run(args, extra, signal, task.taskId).then(
      (result) => extra.taskStore.storeTaskResult(task.taskId, "completed", result),
      (error) => {
        if (signal.aborted) return undefined;
        return extra.taskStore.storeTaskResult(task.taskId, "failed", {
          ...text(error instanceof Error ? error.message : String(error)),
          isError: true,
        });
      },
    ).catch(() => {});
    return { task };
  };
  return {
    createTask,
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId),
  };
}

const work = async (_args, extra, signal, taskId) => {
  await progress(extra, { progress: 0, message: "Started" }).catch(() => {});
  return untilCancelled(signal, taskId);
};

// A fresh McpServer with the profile's tools: one for stdio, one per HTTP session.
function createServer() {
  const server = new McpServer(
    { name: "typescript-sdk-tasks-fixture", version: "0.1.0" },
    { capabilities, taskStore, taskMessageQueue: new InMemoryTaskMessageQueue() },
  );
  const tasks = server.experimental.tasks;

  // Tools without an inputSchema get `(extra)` only; the task helper wants `(args, extra)`.
  const noArgs = (handlers) => ({
    createTask: (extra) => handlers.createTask(undefined, extra),
    getTask: (extra) => handlers.getTask(undefined, extra),
    getTaskResult: (extra) => handlers.getTaskResult(undefined, extra),
  });

  tasks.registerToolTask(
    "work",
    { description: "Progress once, then run until cancelled", execution: { taskSupport: "optional" } },
    noArgs(taskTool(work)),
  );

  tasks.registerToolTask(
    "work_required",
    { description: "As work, but only as a task", execution: { taskSupport: "required" } },
    noArgs(taskTool(work)),
  );

  server.registerTool("ping", { description: "Liveness probe" }, async () => text("Server: still available"));

  server.registerTool(
    "echo",
    { description: "Echo the text", inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t),
  );

  tasks.registerToolTask(
    "sleep",
    {
      description: "Answer after ms milliseconds",
      inputSchema: { ms: z.number().int().min(0) },
      execution: { taskSupport: "optional" },
    },
    taskTool(async ({ ms }, _extra, signal, taskId) => {
      let timer;
      let slept = false;
      const done = new Promise((resolve) => {
        timer = setTimeout(() => {
          slept = true;
          resolve(text("slept"));
        }, ms);
      });
      return Promise.race([done, untilCancelled(signal, taskId, () => clearTimeout(timer), () => slept)]);
    }),
  );

  tasks.registerToolTask(
    "ticker",
    {
      description: "Progress 1, 2, 3, ... every interval_ms until cancelled",
      inputSchema: { interval_ms: z.number().int().min(1) },
      execution: { taskSupport: "optional" },
    },
    taskTool(async ({ interval_ms }, extra, signal, taskId) => {
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        progress(extra, { progress: n }).catch(() => {});
      }, interval_ms);
      return untilCancelled(signal, taskId, () => clearInterval(timer));
    }),
  );

  server.registerTool("cancellations", { description: "Ids of requests that observed their cancellation" }, async () =>
    text(JSON.stringify(observed)),
  );
  return server;
}

const { values: args } = parseArgs({
  options: { http: { type: "boolean" }, port: { type: "string" } },
});

if (!args.http) {
  await createServer().connect(new StdioServerTransport());
} else {
  const port = Number(args.port);
  if (!Number.isInteger(port) || port <= 0) {
    console.error("typescript-sdk-tasks-fixture: --http needs --port N");
    process.exit(2);
  }
  await serveHttp(port);
}

async function serveHttp(port) {
  const transports = new Map();
  const app = createMcpExpressApp({ host: "127.0.0.1" });
  const noSession = (res) =>
    res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });
  const unknownSession = (res) =>
    res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });

  app.post("/mcp", async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    const transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && sessionId) {
      unknownSession(res);
      return;
    }
    if (!transport) {
      // Without a session id the SDK's own transport decides: it opens a session for an
      // `initialize` and rejects anything else. A transport that opened none is closed.
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, fresh),
      });
      fresh.onclose = () => {
        if (fresh.sessionId) transports.delete(fresh.sessionId);
      };
      await createServer().connect(fresh);
      await fresh.handleRequest(req, res, req.body);
      if (!fresh.sessionId) await fresh.close();
      return;
    }
    await transport.handleRequest(req, res, req.body);
  });

  const bySession = async (req, res) => {
    const transport = transports.get(req.headers["mcp-session-id"]);
    if (!transport) {
      if (req.headers["mcp-session-id"]) unknownSession(res);
      else noSession(res);
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get("/mcp", bySession);
  app.delete("/mcp", bySession);

  const listener = app.listen(port, "127.0.0.1");
  listener.on("error", (err) => {
    console.error(`typescript-sdk-tasks-fixture: cannot listen on 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  });
  const stop = () => process.exit(0);
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
