//! The transports of the harness as a client of a server target: stdio, and Streamable HTTP
//! (with the SSE reader of its response streams, the kernel's arrival stamps of what they
//! carry, and the headers a 2026-07-28 request mirrors from its body).

pub mod http;
mod http_arrival;
pub mod http_headers;
mod http_stream;
pub mod stdio;
