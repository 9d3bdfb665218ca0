//! Opening a session: the `initialize` handshake (LIF-01…LIF-03, LIF-06), run when the
//! client connects and again when the server forgot the session (HTTP-16).

use crate::client::{client_info, Client};
use crate::era::{self, PROTOCOL_VERSION};
use crate::transport::OutgoingKind;
use crate::{CallError, ConnectError};
use serde_json::{json, Value};

impl Client {
    /// Opens a session and records its protocol version.
    pub(crate) async fn handshake(&self) -> Result<(), ConnectError> {
        self.initialize().await
    }

    /// `initialize`, then `notifications/initialized`. Never cancelled (LIF-08).
    async fn initialize(&self) -> Result<(), ConnectError> {
        let asked = self
            .options
            .protocol_version
            .clone()
            .unwrap_or_else(|| PROTOCOL_VERSION.to_owned());
        let params = json!({
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": client_info(),
        });
        let timeout = self.options.initialize_timeout;
        // A new session starts without the old one's version headers.
        self.shared.transport.set_protocol_version(None);
        let result = self.call_uncancelled("initialize", params, timeout).await?;
        let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
            return Err(ConnectError::InvalidResult(
                "it has no protocolVersion".into(),
            ));
        };
        if !era::is_known(version) {
            // LIF-06: a version this client does not speak ends the connection.
            return Err(ConnectError::UnsupportedVersion(version.to_owned()));
        }
        self.set_version(version);
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

    /// Adds what the protocol version requires to a request's params (nothing, in the
    /// handshake era).
    pub(crate) fn stamp(&self, params: &mut Value) {
        let _ = params;
    }

    /// Checks a result against what the protocol version requires of it.
    pub(crate) fn check(&self, outcome: Result<Value, CallError>) -> Result<Value, CallError> {
        outcome
    }
}
