//! [`ClientFuture`]: what the public entry points return instead of an `async fn`'s future.
//!
//! A release build compiles an `async fn`'s state machine in the crate that polls it (instances
//! are not shared between crates there), so every `async fn` a user awaits would bring its
//! whole call tree, down to the generated encoders and decoders of the messages it sends,
//! into the user's own crate, compiled again at every rebuild of it. The entry points (of
//! `Client`, the producer, the consumers and `Admin`; not the lower-level calls that the crate
//! makes per request) box their body here instead: it is compiled once, in this crate, and the user's crate only
//! polls it through a pointer. A call whose answer is known at once (cached metadata) returns
//! it without allocating.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of a kwire-client operation; `.await` it as an `async fn`'s.
///
/// ```no_run
/// # async fn run() -> kwire_client::Result<()> {
/// use kwire_client::{Client, ClientConfig};
/// let client = Client::connect(ClientConfig::new("localhost:9092")).await?;
/// let topic = client.topic("events").await?;
/// println!("{} partitions", topic.partitions.len());
/// # Ok(()) }
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct ClientFuture<'a, T>(State<'a, T>);

enum State<'a, T> {
    Ready(Option<T>),
    Boxed(Pin<Box<dyn Future<Output = T> + Send + 'a>>),
}

impl<'a, T> ClientFuture<'a, T> {
    /// An answer known at once.
    pub(crate) fn ready(value: T) -> Self {
        ClientFuture(State::Ready(Some(value)))
    }

    /// `body` compiled in this crate (the caller is a non-generic function here).
    pub(crate) fn boxed(body: impl Future<Output = T> + Send + 'a) -> Self {
        ClientFuture(State::Boxed(Box::pin(body)))
    }
}

// `T` is only ever moved out, never pinned.
impl<T> Unpin for ClientFuture<'_, T> {}

impl<T> Future for ClientFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            State::Boxed(body) => body.as_mut().poll(cx),
            // Polled again after it was ready: it stays pending, as a finished future may.
            State::Ready(value) => value.take().map_or(Poll::Pending, Poll::Ready),
        }
    }
}

impl<T> std::fmt::Debug for ClientFuture<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            State::Ready(Some(_)) => "ClientFuture(ready)",
            State::Ready(None) => "ClientFuture(done)",
            State::Boxed(_) => "ClientFuture(pending)",
        })
    }
}
