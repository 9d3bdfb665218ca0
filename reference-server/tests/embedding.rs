//! The library entry points other crates embed: `serve` over in-memory
//! pipes, spawned on a multi-threaded runtime (so its future must be Send).

use reference_server::{serve, ServeOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_a_session_over_any_pipe_and_ends_at_eof() {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server);
    let task = tokio::spawn(serve(server_read, server_write, ServeOptions::default()));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    client_write
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let init = lines
        .next_line()
        .await
        .unwrap()
        .expect("initialize response");
    assert!(init.contains(r#""protocolVersion":"2025-11-25""#), "{init}");
    let ping = lines.next_line().await.unwrap().expect("ping response");
    assert_eq!(ping, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
    client_write.shutdown().await.unwrap();
    task.await.unwrap().expect("serve ends cleanly at EOF");
    assert_eq!(
        lines.next_line().await.unwrap(),
        None,
        "output closed after EOF"
    );
}

#[test]
fn shutdown_token_ends_serve() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (_client, server) = tokio::io::duplex(1024);
        let (r, w) = tokio::io::split(server);
        let options = ServeOptions::default();
        let shutdown = options.shutdown.clone();
        let task = tokio::spawn(serve(r, w, options));
        shutdown.cancel();
        let result = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
        assert!(result.expect("serve ended").unwrap().is_ok());
    });
}
