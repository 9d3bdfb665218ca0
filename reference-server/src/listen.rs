//! `subscriptions/listen` (2026-07-28): a long-lived request whose stream
//! carries the notifications the client asked for, until the client cancels
//! it.
//!
//! The server exists so that a harness can check how a subscription ends
//! (CAN-14): acknowledged first (`notifications/subscriptions/acknowledged`
//! with the request's id as `io.modelcontextprotocol/subscriptionId`), then
//! nothing about it once the client's cancel was read (`notifications/cancelled`
//! on stdio, the stream closed over HTTP). This server's tool list never
//! changes and it has no prompts or resources, so of the filter it honours
//! `toolsListChanged` alone and never has anything to send on it: the
//! request waits in flight like `work`, and its cancel is recorded by the
//! `cancellations` witness like any request's. It never ends a subscription
//! on its own, so it needs neither reading of AMB-19.

use crate::outbox::Route;
use crate::registry::{Refused, Registry, MAX_IN_FLIGHT};
use crate::request::{Key, Refusal};
use reference_wire::{notification, RequestId, RpcError, INTERNAL_ERROR, INVALID_PARAMS};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// `_meta` key tying a message to its subscription: the listen request's id.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The notification types of a filter this server honours.
const HONOURED: [&str; 1] = ["toolsListChanged"];

/// Serves `subscriptions/listen`: the acknowledgement at once, then the
/// request stays in flight until it is cancelled.
pub(crate) fn serve(
    registry: &Arc<Registry>,
    key: Key,
    id: &RequestId,
    params: Option<&Value>,
    route: &Route,
) -> Result<(), Refusal> {
    let agreed = agreed(params)?;
    let token = match registry.register(key.clone(), route.clone()) {
        Ok(token) => token,
        Err(Refused::Busy) => {
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!("internal error: {MAX_IN_FLIGHT} requests are in flight; cancel some subscriptions first"),
            )
            .into())
        }
        // Unreachable: the session checked the id on this same request.
        Err(Refused::Duplicate) => return Ok(()),
    };
    let params = json!({"_meta": {SUBSCRIPTION_ID: id.to_value()}, "notifications": agreed});
    let ack = notification("notifications/subscriptions/acknowledged", Some(params));
    registry.progress(&token, route, ack);
    let registry = Arc::clone(registry);
    let id = id.clone();
    tokio::spawn(async move {
        // Nothing ever changes here: the subscription lasts until it is cancelled, and
        // `finish` then records that it observed its cancel and writes nothing.
        token.cancelled().await;
        registry.finish(&key, &id, &token, Value::Null);
    });
    Ok(())
}

/// The part of the requested filter this server honours: `params.notifications`
/// must be an object when present (`-32602` otherwise); of its fields, those in
/// [`HONOURED`] set to `true` are kept, the others omitted (subscriptions.mdx
/// §Acknowledgment).
fn agreed(params: Option<&Value>) -> Result<Value, RpcError> {
    let filter = match params.and_then(|p| p.get("notifications")) {
        None | Some(Value::Null) => return Ok(json!({})),
        Some(Value::Object(filter)) => filter,
        Some(_) => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "invalid params: subscriptions/listen: params.notifications must be an object such as {\"toolsListChanged\": true}",
            ))
        }
    };
    let kept: Map<String, Value> = filter
        .iter()
        .filter(|(name, wanted)| HONOURED.contains(&name.as_str()) && **wanted == json!(true))
        .map(|(name, wanted)| (name.clone(), wanted.clone()))
        .collect();
    Ok(Value::Object(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_acknowledged_filter_is_what_the_server_honours() {
        let asked = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["file:///a"]}});
        assert_eq!(
            agreed(Some(&asked)).ok(),
            Some(json!({"toolsListChanged": true}))
        );
        let declined = json!({"notifications": {"toolsListChanged": false}});
        assert_eq!(agreed(Some(&declined)).ok(), Some(json!({})));
        assert_eq!(agreed(None).ok(), Some(json!({})));
        let bad = json!({"notifications": ["toolsListChanged"]});
        assert_eq!(agreed(Some(&bad)).err().map(|e| e.code), Some(-32602));
    }
}
