//! The engine's timing rules, tested against scripted targets (`transport::scripted`): no
//! process, tokio's clock paused, so each test plays in microseconds of real time exactly the
//! orders and delays it writes down, the ones a loaded machine produces and a calm one never
//! does. Each test is named for the rule and cites the commit or the broken-target row whose
//! real-process test it twins; the broken tables keep their end-to-end role.

mod scripted {
    pub mod servers;
    pub mod support;
}
#[path = "scripted/client.rs"]
mod client;
#[path = "scripted/http_server.rs"]
mod http_server;
#[path = "scripted/server.rs"]
mod server;
#[path = "scripted/shared.rs"]
mod shared;
