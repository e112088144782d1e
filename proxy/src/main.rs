//! `kwire-proxy`: the [`kwire_proxy`] library's proxy from the command line (`--help`).

use kwire_proxy::{Config, Event, Proxy, USAGE};

#[tokio::main]
async fn main() {
    let config = match Config::from_args(std::env::args().skip(1)) {
        Ok(Some(c)) => c,
        Ok(None) => {
            print!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("proxy: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    let config = config.on_event(|event| match event {
        // The tests read these lines to find the listeners.
        Event::Listening { local, upstream } => println!("proxy: listening {local} -> {upstream}"),
        Event::ConnectionClosed { id, peer, error } => eprintln!("proxy: connection {id} from {peer}: {error}"),
        Event::Refused { peer, open } => eprintln!("proxy: {open} connections open; closing {peer}"),
        Event::AcceptFailed { local, error } => eprintln!("proxy: accept on {local}: {error}"),
        Event::TraceFailed { path, error } => eprintln!("proxy: trace {}: {error}", path.display()),
        other => eprintln!("proxy: {other:?}"),
    });
    let proxy = match Proxy::start(config).await {
        Ok(p) => p,
        Err(e @ kwire_proxy::ProxyError::Config(_)) => {
            eprintln!("proxy: {e}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("proxy: {e}");
            std::process::exit(1);
        }
    };
    let _ = tokio::signal::ctrl_c().await;
    proxy.shutdown();
}
