//! A task call's terms: its cancel, its deadline and the grace after either, and why a
//! call is being stopped. Creating a task (`create.rs`) and following it (`follow.rs`)
//! both keep to them.

use crate::{CallError, Client};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a call is being stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Why {
    Cancel,
    Timeout,
}

/// A call's fixed terms: its cancel, its deadline and the grace after either.
pub(crate) struct Terms {
    pub(super) cancel: CancellationToken,
    pub(super) deadline: Instant,
    pub(super) timeout: Duration,
    pub(super) grace: Duration,
}

impl Terms {
    pub(super) fn new(
        client: &Client,
        cancel: Option<CancellationToken>,
        timeout: Option<Duration>,
        grace: Duration,
    ) -> Self {
        let timeout = timeout.unwrap_or(client.options.request_timeout);
        Self {
            cancel: cancel.unwrap_or_default(),
            deadline: Instant::now() + timeout,
            timeout,
            grace,
        }
    }

    /// Whether the call was given up on already (cancelled, or past its deadline).
    pub(super) fn stopped(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }

    /// What is left of the call's time.
    pub(super) fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The call's outcome when it was stopped for `why`.
    pub(super) fn error(&self, why: Why) -> CallError {
        match why {
            Why::Cancel => CallError::Cancelled,
            Why::Timeout => CallError::TimedOut(self.timeout),
        }
    }

    /// Why, in words, for a `notifications/cancelled`.
    pub(super) fn reason(&self, why: Why) -> String {
        match why {
            Why::Cancel => "cancelled by the caller".into(),
            Why::Timeout => format!("timed out after {} ms", self.timeout.as_millis()),
        }
    }
}

/// Sleeps until `at`, or forever without one.
pub(super) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
