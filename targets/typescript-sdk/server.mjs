// The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on the
// official TypeScript SDK 1.x: McpServer over StdioServerTransport, or over
// StreamableHTTPServerTransport with stateful sessions. Cancellation is observed through the
// handler's AbortSignal (`extra.signal`); progress goes out through `extra.sendNotification`.
//
// Usage: `node server.mjs` (stdio), or `node server.mjs --http --port N`: Streamable HTTP on
// 127.0.0.1:N, endpoint /mcp, one McpServer per session (the SDK's stateful pattern: an
// express app from createMcpExpressApp, transports kept by Mcp-Session-Id). The witness is
// one list for the whole process.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { z } from "zod";

// Ids (exact JSON values, in order) of requests whose handler observed its cancellation.
const observed = [];

const text = (t) => ({ content: [{ type: "text", text: t }] });

// Resolves never; rejects once the request is cancelled, after recording its id. A signal
// that fires after the work finished (`finished()`) is not a cancellation the handler saw.
function untilCancelled(extra, cleanup = () => {}, finished = () => false) {
  return new Promise((_, reject) => {
    const stop = () => {
      if (finished()) return;
      cleanup();
      observed.push(extra.requestId);
      reject(extra.signal.reason ?? new Error("cancelled"));
    };
    if (extra.signal.aborted) stop();
    else extra.signal.addEventListener("abort", stop, { once: true });
  });
}

const progress = (extra, params) => {
  const token = extra._meta?.progressToken;
  if (token === undefined) return Promise.resolve();
  return extra.sendNotification({
    method: "notifications/progress",
    params: { progressToken: token, ...params },
  });
};

// A fresh McpServer with the profile's tools: one for stdio, one per HTTP session.
function createServer() {
  const server = new McpServer({ name: "typescript-sdk-fixture", version: "0.1.0" });
  server.registerTool("work", { description: "Progress once, then run until cancelled" }, async (extra) => {
    await progress(extra, { progress: 0, message: "Started" });
    return untilCancelled(extra);
  });

  server.registerTool("ping", { description: "Liveness probe" }, async () => text("Server: still available"));

  server.registerTool(
    "echo",
    { description: "Echo the text", inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t),
  );

  server.registerTool(
    "sleep",
    { description: "Answer after ms milliseconds", inputSchema: { ms: z.number().int().min(0) } },
    async ({ ms }, extra) => {
        let timer;
      let slept = false;
      const done = new Promise((resolve) => {
        timer = setTimeout(() => {
          slept = true;
          resolve(text("slept"));
        }, ms);
      });
      return Promise.race([done, untilCancelled(extra, () => clearTimeout(timer), () => slept)]);
    },
  );

  server.registerTool(
    "ticker",
    { description: "Progress 1, 2, 3, ... every interval_ms until cancelled", inputSchema: { interval_ms: z.number().int().min(1) } },
    async ({ interval_ms }, extra) => {
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        progress(extra, { progress: n }).catch(() => {});
      }, interval_ms);
      return untilCancelled(extra, () => clearInterval(timer));
    },
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
    console.error("typescript-sdk-fixture: --http needs --port N");
    process.exit(2);
  }
  await serveHttp(port);
}

async function serveHttp(port) {
  const transports = new Map();
  const app = createMcpExpressApp({ host: "127.0.0.1" });
  const noSession = (res) =>
    res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });

  app.post("/mcp", async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && sessionId) {
      res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
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
      if (req.headers["mcp-session-id"]) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      } else {
        noSession(res);
      }
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get("/mcp", bySession);
  app.delete("/mcp", bySession);

  const listener = app.listen(port, "127.0.0.1");
  listener.on("error", (err) => {
    console.error(`typescript-sdk-fixture: cannot listen on 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  });
  const stop = () => process.exit(0);
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
