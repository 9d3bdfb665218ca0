//! Opening a session, in either era, run when the client connects and again when the
//! server forgot the session (HTTP-16).
//!
//! Unless told a version, the client speaks 2026-07-28 when the server does: it asks
//! `server/discover` first and falls back to the `initialize` handshake (LIF-01…LIF-03,
//! LIF-06) on any answer that is not a recognised stateless-era one — any other error, an
//! error status, or silence — never on one specific code (LIF-14). A stateless-era error
//! (such as -32022 naming the versions the server supports) means the server is modern,
//! so the client picks from what it names instead of falling back.

use crate::client::{client_info, Client};
use crate::era::{self, Era, MODERN_ERRORS, PROTOCOL_VERSION, STATELESS_VERSION};
use crate::transport::OutgoingKind;
use crate::{CallError, ConnectError};
use serde_json::{json, Value};

/// What `server/discover` taught about the server.
enum Discovered {
    /// The server speaks this stateless-era version.
    Stateless(&'static str),
    /// The server speaks only the handshake era; this version if it named one.
    Handshake(Option<&'static str>),
}

impl Client {
    /// Opens a session and records its protocol version.
    pub(crate) async fn handshake(&self) -> Result<(), ConnectError> {
        let wanted = self.options.protocol_version.clone();
        match wanted.as_deref() {
            Some(version) if !era::is_stateless(version) => self.initialize(version).await,
            pinned => {
                let version = pinned.unwrap_or(STATELESS_VERSION);
                match self.discover(version, pinned.is_none()).await? {
                    Discovered::Stateless(version) => {
                        self.set_version(version);
                        Ok(())
                    }
                    Discovered::Handshake(named) => {
                        self.initialize(named.unwrap_or(PROTOCOL_VERSION)).await
                    }
                }
            }
        }
    }

    /// Opens a new session after the server forgot the old one: the era is a property of
    /// the server, so a handshake-era server gets `initialize` again, with no new probe.
    pub(crate) async fn reopen(&self) -> Result<(), ConnectError> {
        let version = self.protocol_version();
        if version.is_empty() || era::is_stateless(&version) {
            self.handshake().await
        } else {
            self.initialize(&version).await
        }
    }

    /// Asks `server/discover` under `version`; with `may_fall_back`, anything but a
    /// stateless-era answer means a handshake-era server.
    async fn discover(
        &self,
        version: &str,
        may_fall_back: bool,
    ) -> Result<Discovered, ConnectError> {
        self.set_version(version);
        let mut params = json!({});
        era::stamp(&mut params, version, client_info());
        let timeout = self.options.discover_timeout;
        let answer = self
            .call_uncancelled("server/discover", params, timeout)
            .await;
        let supported = match answer {
            Ok(result) => {
                let supported = result.get("supportedVersions").and_then(Value::as_array);
                match supported {
                    Some(supported) => {
                        era::check_result_type(&result).map_err(ConnectError::InvalidResult)?;
                        self.set_server_capabilities(&result);
                        supported.clone()
                    }
                    // Not a DiscoverResult: a handshake-era server that answers anything.
                    None if may_fall_back => return Ok(Discovered::Handshake(None)),
                    None => {
                        return Err(ConnectError::InvalidResult(
                            "the server/discover result has no supportedVersions".into(),
                        ))
                    }
                }
            }
            Err(CallError::Rpc(error)) if MODERN_ERRORS.contains(&error.code) => {
                let supported = error
                    .data
                    .as_ref()
                    .and_then(|data| data.get("supported"))
                    .and_then(Value::as_array)
                    .cloned();
                match supported {
                    Some(supported) => supported,
                    // A modern server that refused the request itself: nothing to fall back to.
                    None => return Err(ConnectError::Rpc(error)),
                }
            }
            Err(CallError::Closed) => return Err(ConnectError::Closed),
            // Any other error, an error status, or silence: a handshake-era server.
            Err(_) if may_fall_back => return Ok(Discovered::Handshake(None)),
            Err(other) => return Err(other.into()),
        };
        match era::choose(&supported) {
            Some(chosen) if era::is_stateless(chosen) => Ok(Discovered::Stateless(chosen)),
            Some(chosen) if may_fall_back => Ok(Discovered::Handshake(Some(chosen))),
            _ => Err(ConnectError::UnsupportedVersion(
                Value::Array(supported).to_string(),
            )),
        }
    }

    /// `initialize` asking for `asked`, then `notifications/initialized`. Never cancelled
    /// (LIF-08).
    async fn initialize(&self, asked: &str) -> Result<(), ConnectError> {
        let params = json!({
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": client_info(),
        });
        let timeout = self.options.initialize_timeout;
        // A new session starts without the old one's version headers.
        self.set_no_version();
        let result = self.call_uncancelled("initialize", params, timeout).await?;
        let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
            return Err(ConnectError::InvalidResult(
                "it has no protocolVersion".into(),
            ));
        };
        if !era::is_known(version) || era::is_stateless(version) {
            // LIF-06: a version this client does not speak ends the connection.
            return Err(ConnectError::UnsupportedVersion(version.to_owned()));
        }
        self.set_version(version);
        self.set_server_capabilities(&result);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.shared
            .send(initialized, OutgoingKind::Notification)
            .map_err(ConnectError::from)
    }

    fn set_version(&self, version: &str) {
        *self
            .shared
            .version
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = version.to_owned();
        self.shared.transport.set_protocol_version(Some(version));
    }

    /// Records what a handshake result says the server can do; a new session may list
    /// other tools, so what `tools/list` said is forgotten.
    fn set_server_capabilities(&self, result: &Value) {
        let capabilities = match result.get("capabilities") {
            Some(capabilities) if capabilities.is_object() => capabilities.clone(),
            _ => json!({}),
        };
        *self
            .shared
            .server_capabilities
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = capabilities;
        *self
            .shared
            .task_support
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// What the server declared it can do: the `capabilities` of its `initialize` result,
    /// or of `server/discover` in 2026-07-28.
    pub fn server_capabilities(&self) -> Value {
        self.shared
            .server_capabilities
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_no_version(&self) {
        self.shared
            .version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.shared.transport.set_protocol_version(None);
    }

    /// The era of the session.
    pub fn era(&self) -> Era {
        Era::of(&self.protocol_version())
    }

    /// Adds what the era requires to a request's params: in the stateless era, the
    /// version, capabilities and client info in `_meta` (LIF-10).
    pub(crate) fn stamp(&self, params: &mut Value) {
        let version = self.protocol_version();
        if era::is_stateless(&version) {
            era::stamp(params, &version, client_info());
        }
    }

    /// Checks a result against what the era requires of it (`resultType`, RPC-14).
    pub(crate) fn check(&self, outcome: Result<Value, CallError>) -> Result<Value, CallError> {
        let result = outcome?;
        if self.era() == Era::Stateless {
            era::check_result_type(&result).map_err(CallError::InvalidResult)?;
        }
        Ok(result)
    }
}
