//! The transports of the harness as the server of a client target (an adapter program): the
//! relay the adapter starts as its stdio server, and the harness's own Streamable HTTP server
//! (its request handling, and the sessions and streams it keeps).

mod http_serve;
pub mod http_server;
mod http_state;
pub mod relay;
mod relay_program;
