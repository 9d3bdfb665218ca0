//! One MCP session, whatever carries it: the messages of one client, handled
//! strictly in the order the transport hands them over.
//!
//! Both eras are served here. A request stamped with the 2026-07-28
//! per-request `_meta` (or `server/discover`) is served statelessly, with the
//! version it names; any other request belongs to the handshake era and to
//! the version `initialize` negotiated (LIF-14, see `meta.rs`).
//!
//! Lifecycle, `ping`, `tools/list`, instant tools and `notifications/cancelled`
//! are all handled inline here, so their effects are ordered exactly as the
//! messages arrived. Long tools are spawned as tokio tasks, each with the
//! token the registry gave it. A call that becomes an MCP task, and the
//! `tasks/*` methods, go to `tasks/`. Every output for a request goes to the
//! [`Route`] the transport gave with it: on stdio all routes share stdout, on
//! HTTP each request has its own response stream.

use crate::call;
use crate::listen;
use crate::meta::{self, CLIENT_CAPABILITIES, PROTOCOL_VERSION};
use crate::outbox::Route;
use crate::registry::Registry;
use crate::request::{Key, Refusal, Request, Status};
use crate::tasks;
use crate::tools;
use crate::version::{ProtocolVersion, Transport};
use reference_wire::{
    error_response, response, Message, RequestId, RpcError, INVALID_PARAMS, INVALID_REQUEST,
    METHOD_NOT_FOUND,
};
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) struct Session {
    registry: Arc<Registry>,
    /// Negotiated by `initialize`; `None` until then.
    version: Option<ProtocolVersion>,
    transport: Transport,
    verbose: bool,
}

impl Session {
    pub(crate) fn new(registry: Arc<Registry>, transport: Transport, verbose: bool) -> Self {
        Self {
            registry,
            version: None,
            transport,
            verbose,
        }
    }

    /// The version `initialize` negotiated, if it has run.
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        self.version
    }

    /// Handles one received line (already stripped of its newline); every
    /// reply goes to `route`.
    pub(crate) fn handle_line(&mut self, line: &str, route: &Route) {
        if line.trim().is_empty() {
            return;
        }
        match Message::parse(line) {
            Ok(Message::Request { id, method, params }) => {
                let request = Request::by_id(id, method, params);
                let id = request.id.clone();
                if let Err(refusal) = self.request(request, route) {
                    route.answer(error_response(Some(&id), &refusal.error));
                }
            }
            Ok(Message::Notification { method, params }) => self.notification(&method, params),
            Ok(Message::Response { id, .. }) => self.response(id.as_ref()),
            Err(rejected) => route.notify(rejected.to_line()),
        }
    }

    /// Handles one request. Its result (now, or later for a long tool) goes
    /// to `route`; a protocol error comes back for the transport to deliver.
    pub(crate) fn request(&mut self, request: Request, route: &Route) -> Result<(), Refusal> {
        if self.registry.is_in_flight(&request.key) {
            let id = &request.id;
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!("invalid request: id {id} is already in flight; use a fresh id"),
            )
            .into());
        }
        if meta::is_stateless_request(&request.method, request.params.as_ref()) {
            self.stateless(request, route)
        } else {
            self.handshake(request, route)
        }
    }

    /// A handshake-era request, under the version `initialize` negotiated.
    fn handshake(&mut self, request: Request, route: &Route) -> Result<(), Refusal> {
        if let Some(version) = self.version.filter(|v| tasks::serves(&request.method, *v)) {
            return tasks::handle(&self.registry, request, version, false, route);
        }
        let Request {
            key,
            id,
            method,
            params,
        } = request;
        let result = match (method.as_str(), self.version) {
            ("ping", _) => Ok(json!({})),
            ("initialize", None) => self.initialize(params.as_ref()),
            ("initialize", Some(_)) => Err(RpcError::new(
                INVALID_REQUEST,
                "invalid request: already initialized; a session has one initialize (start a new process or HTTP session)",
            )),
            // Either era could be meant, so the answer serves both: a
            // 2026-07-28 request without its `_meta` must get -32602 (LIF-10),
            // and any error is fair before `initialize` (AMB-13).
            (_, None) => Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "invalid params: {method:?} came before initialize and without a 2026-07-28 stamp; \
                     send initialize first (2025-11-25 and earlier), or put {PROTOCOL_VERSION:?} and \
                     {CLIENT_CAPABILITIES:?} in params._meta (2026-07-28)"
                ),
            )),
            ("tools/list", Some(version)) => Ok(tools::list(version)),
            ("tools/call", Some(version)) => {
                return call::serve(&self.registry, key, &id, params, version, false, route);
            }
            (other, Some(version)) if version.has_core_tasks() => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "method not found: {other:?}; this server implements initialize, ping, tools/list, tools/call, \
                     tasks/get, tasks/result, tasks/list and tasks/cancel"
                ),
            )),
            (other, Some(_)) => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "method not found: {other:?}; this server implements initialize, ping, tools/list and tools/call"
                ),
            )),
        }?;
        route.answer(response(&id, result));
        Ok(())
    }

    /// A stateless-era request, under the version its `_meta` names. Its
    /// malformed `_meta` or unsupported version is a 400 on HTTP, its
    /// unknown method a 404 (LIF-10, LIF-12, RPC-09).
    fn stateless(&mut self, request: Request, route: &Route) -> Result<(), Refusal> {
        let Request {
            key,
            id,
            method,
            params,
        } = request;
        let bad_request = Refusal::with_status(Status::BadRequest);
        let stamp = meta::stamp(&method, params.as_ref()).map_err(&bad_request)?;
        let version = meta::version(&stamp).map_err(&bad_request)?;
        if tasks::serves(&method, version) {
            let request = Request {
                key,
                id,
                method,
                params,
            };
            return tasks::handle(
                &self.registry,
                request,
                version,
                stamp.tasks_extension,
                route,
            );
        }
        let result = match method.as_str() {
            meta::DISCOVER => {
                let supported: Vec<&str> = ProtocolVersion::newest_first()
                    .map(ProtocolVersion::as_str)
                    .collect();
                // `listChanged`: a `subscriptions/listen` may ask for tool-list changes
                // (`listen.rs`), though this server's list never changes.
                let capabilities =
                    json!({"tools": {"listChanged": true}, "extensions": tasks::extensions()});
                let discovered = json!({"supportedVersions": supported, "capabilities": capabilities});
                meta::cacheable(version, discovered)
            }
            "tools/list" => meta::cacheable(version, tools::list(version)),
            "tools/call" => {
                let declared = stamp.tasks_extension;
                return call::serve(&self.registry, key, &id, params, version, declared, route);
            }
            "subscriptions/listen" => {
                return listen::serve(&self.registry, key, &id, params.as_ref(), route);
            }
            other => {
                return Err(Refusal {
                    error: RpcError::new(
                        METHOD_NOT_FOUND,
                        format!(
                            "method not found: {other:?}; in {} this server implements {}, tools/list, \
                             tools/call, subscriptions/listen, tasks/get, tasks/update and tasks/cancel (ping \
                             and initialize belong to the handshake era)",
                            version.as_str(),
                            meta::DISCOVER
                        ),
                    ),
                    status: Status::NotFound,
                })
            }
        };
        route.answer(response(&id, meta::complete(version, result)));
        Ok(())
    }

    /// A response from the client: this server sends no requests, so there
    /// is nothing it could answer.
    pub(crate) fn response(&self, id: Option<&RequestId>) {
        if self.verbose {
            let id = id.map_or_else(|| "null".to_owned(), RequestId::to_string);
            eprintln!("reference-server: ignored response {id}: this server sends no requests");
        }
    }

    fn initialize(&mut self, params: Option<&Value>) -> Result<Value, RpcError> {
        let Some(requested) = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
        else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "invalid params: initialize needs params.protocolVersion as a string",
            ));
        };
        let version = ProtocolVersion::negotiate(requested, self.transport);
        self.version = Some(version);
        let mut capabilities = json!({"tools": {}});
        if version.has_core_tasks() {
            capabilities["tasks"] = tasks::capability();
        }
        Ok(json!({
            "protocolVersion": version.as_str(),
            "capabilities": capabilities,
            "serverInfo": meta::server_info(),
        }))
    }

    /// Handles one notification; notifications are never answered.
    pub(crate) fn notification(&mut self, method: &str, params: Option<Value>) {
        match method {
            "notifications/cancelled" => {
                let params = params.as_ref();
                let id = params
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value);
                let reason = params.and_then(|p| p.get("reason")).and_then(Value::as_str);
                match id {
                    Some(id) => self.registry.cancel(&Key::Id(id), reason),
                    None if self.verbose => eprintln!(
                        "reference-server: ignored malformed cancellation: params.requestId must be a string or an integer"
                    ),
                    None => {}
                }
            }
            "notifications/initialized" => {}
            other => {
                if self.verbose {
                    eprintln!("reference-server: ignored unknown notification {other:?}");
                }
            }
        }
    }
}
