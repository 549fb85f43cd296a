//! What reconciliation's lookup of a call finds, for a key whose call the
//! gateway answered with a failure it saved under the call's key.

/// What the gateway's lists say a call made, when its answer was a failure
/// saved under its key (reconciliation's lookup).
#[derive(Debug)]
pub enum Found<K, A> {
    /// It was made: the answer, as the gateway holds it now, which
    /// [`Endpoint::record`] records as it records any answer.
    Made(K, A),
    /// Proven never made. `refused` is the answer that ends the key without
    /// it (a stored 502), once the call may no longer be sent again.
    Absent { known: K, refused: A },
}

impl<K, A> Found<K, A> {
    /// The same finding, its answers wrapped by `wrap` (in the answer of an
    /// endpoint with several calls, say).
    pub fn map<B>(self, wrap: impl Fn(A) -> B) -> Found<K, B> {
        match self {
            Found::Made(known, answer) => Found::Made(known, wrap(answer)),
            Found::Absent { known, refused } => Found::Absent {
                known,
                refused: wrap(refused),
            },
        }
    }
}
