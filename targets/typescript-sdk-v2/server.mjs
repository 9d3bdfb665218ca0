// The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on the
// official TypeScript SDK 2.x (@modelcontextprotocol/server, @modelcontextprotocol/node), which
// speaks 2026-07-28 as well as the 2025 era. Cancellation is observed through the handler's
// AbortSignal (`ctx.mcpReq.signal`); progress goes out through `ctx.mcpReq.notify`.
//
// Usage:
//   node server.mjs                              stdio, through serveStdio: an `initialize`
//                                                opening pins the 2025 era, a stamped
//                                                request (server/discover) the 2026 one.
//   node server.mjs --http --port N              Streamable HTTP on 127.0.0.1:N, endpoint /mcp,
//                                                through createMcpHandler: 2026-07-28 requests
//                                                per request, 2025-era requests by the SDK's
//                                                stateless fallback (no sessions).
//   node server.mjs --http --port N --sessions   the same 2026 path, but 2025-era requests go
//                                                (by isLegacyRequest) to stateful sessions on
//                                                NodeStreamableHTTPServerTransport.
// Both HTTP modes put the SDK's localhost Host and Origin guards in front. The witness is one
// list for the whole process.
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import { parseArgs } from "node:util";
import { createMcpHandler, isJsonContentType, isLegacyRequest, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import {
  localhostHostValidation,
  localhostOriginValidation,
  NodeStreamableHTTPServerTransport,
  toNodeHandler,
  toWebRequest,
} from "@modelcontextprotocol/node";
import { z } from "zod";

// Ids (exact JSON values, in order) of requests whose handler observed its cancellation.
const observed = [];

const text = (t) => ({ content: [{ type: "text", text: t }] });

// Resolves never; rejects once the request is cancelled, after recording its id. A signal
// that fires after the work finished (`finished()`) is not a cancellation the handler saw.
function untilCancelled(ctx, cleanup = () => {}, finished = () => false) {
  const signal = ctx.mcpReq.signal;
  return new Promise((_, reject) => {
    const stop = () => {
      if (finished()) return;
      cleanup();
      observed.push(ctx.mcpReq.id);
      reject(signal.reason ?? new Error("cancelled"));
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
}

const progress = (ctx, params) => {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return Promise.resolve();
  return ctx.mcpReq.notify({
    method: "notifications/progress",
    params: { progressToken: token, ...params },
  });
};

// A fresh McpServer with the profile's tools, for every connection or request the SDK serves.
function createServer() {
  const server = new McpServer({ name: "typescript-sdk-v2-fixture", version: "0.1.0" });

  server.registerTool("work", { description: "Progress once, then run until cancelled" }, async (ctx) => {
    await progress(ctx, { progress: 0, message: "Started" });
    return untilCancelled(ctx);
  });

  server.registerTool("ping", { description: "Liveness probe" }, async () => text("Server: still available"));

  server.registerTool(
    "echo",
    { description: "Echo the text", inputSchema: z.object({ text: z.string() }) },
    async ({ text: t }) => text(t),
  );

  server.registerTool(
    "sleep",
    { description: "Answer after ms milliseconds", inputSchema: z.object({ ms: z.number().int().min(0) }) },
    async ({ ms }, ctx) => {
      let timer;
      let slept = false;
      const done = new Promise((resolve) => {
        timer = setTimeout(() => {
          slept = true;
          resolve(text("slept"));
        }, ms);
      });
      return Promise.race([done, untilCancelled(ctx, () => clearTimeout(timer), () => slept)]);
    },
  );

  server.registerTool(
    "ticker",
    {
      description: "Progress 1, 2, 3, ... every interval_ms until cancelled",
      inputSchema: z.object({ interval_ms: z.number().int().min(1) }),
    },
    async ({ interval_ms }, ctx) => {
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        progress(ctx, { progress: n }).catch(() => {});
      }, interval_ms);
      return untilCancelled(ctx, () => clearInterval(timer));
    },
  );

  server.registerTool("cancellations", { description: "Ids of requests that observed their cancellation" }, async () =>
    text(JSON.stringify(observed)),
  );

  return server;
}

const { values: args } = parseArgs({
  options: { http: { type: "boolean" }, port: { type: "string" }, sessions: { type: "boolean" } },
});

if (!args.http) {
  serveStdio(() => createServer());
} else {
  const port = Number(args.port);
  if (!Number.isInteger(port) || port <= 0) {
    console.error("typescript-sdk-v2-fixture: --http needs --port N");
    process.exit(2);
  }
  serveHttp(port, args.sessions ? sessionsHandler() : toNodeHandler(createMcpHandler(() => createServer())));
}

// 2026-07-28 through createMcpHandler (legacy: "reject"); 2025-era traffic to stateful sessions.
function sessionsHandler() {
  const modern = toNodeHandler(createMcpHandler(() => createServer(), { legacy: "reject" }));
  const transports = new Map();
  const json = (res, status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  return async (req, res) => {
    let parsed;
    if (req.method === "POST") {
      if (!isJsonContentType(req.headers["content-type"] ?? "")) {
        json(res, 415, { jsonrpc: "2.0", error: { code: -32000, message: "Content-Type must be application/json" }, id: null });
        return;
      }
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        json(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
        return;
      }
    }
    if (!(await isLegacyRequest(await toWebRequest(req, parsed), parsed))) {
      await modern(req, res, parsed);
      return;
    }
    const sessionId = req.headers["mcp-session-id"];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && sessionId) {
      json(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      return;
    }
    if (!transport) {
      // The SDK's own transport decides: it opens a session for `initialize` and rejects
      // anything else. A transport that opened none is closed.
      const fresh = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, fresh),
      });
      fresh.onclose = () => {
        if (fresh.sessionId) transports.delete(fresh.sessionId);
      };
      await createServer().connect(fresh);
      await fresh.handleRequest(req, res, parsed);
      if (!fresh.sessionId) await fresh.close();
      return;
    }
    await transport.handleRequest(req, res, parsed);
  };
}

function serveHttp(port, handler) {
  const validHost = localhostHostValidation();
  const validOrigin = localhostOriginValidation();
  const listener = createHttpServer(async (req, res) => {
    if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (!validHost(req, res) || !validOrigin(req, res)) return;
    try {
      await handler(req, res);
    } catch (err) {
      console.error("typescript-sdk-v2-fixture:", err);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  listener.listen(port, "127.0.0.1");
  listener.on("error", (err) => {
    console.error(`typescript-sdk-v2-fixture: cannot listen on 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  });
  const stop = () => process.exit(0);
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
