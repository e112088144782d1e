//! The correlation tracker: a response does not say which api or version it answers, only the
//! correlation id of its request, so every reader of responses keeps the requests in flight.

use std::collections::HashMap;

use super::CodecError;
use crate::ApiKey;

/// Requests of one connection waiting for their responses: correlation id -> (api, version).
/// The client codec and the CLI's capture reader keep one each.
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    requests: HashMap<i32, (ApiKey, i16)>,
}

impl InFlight {
    /// No request in flight.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a request; a correlation id already waiting is [`CodecError::DuplicateCorrelationId`].
    pub fn insert(&mut self, correlation_id: i32, api_key: ApiKey, version: i16) -> Result<(), CodecError> {
        match self.requests.entry(correlation_id) {
            std::collections::hash_map::Entry::Occupied(_) => Err(CodecError::DuplicateCorrelationId(correlation_id)),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((api_key, version));
                Ok(())
            }
        }
    }

    /// Whether a request with this correlation id is waiting.
    pub fn contains(&self, correlation_id: i32) -> bool {
        self.requests.contains_key(&correlation_id)
    }

    /// The api and version of the request `correlation_id` answers, without forgetting it.
    pub fn get(&self, correlation_id: i32) -> Option<(ApiKey, i16)> {
        self.requests.get(&correlation_id).copied()
    }

    /// The api and version of the request `correlation_id` answers, forgetting it.
    pub fn take(&mut self, correlation_id: i32) -> Option<(ApiKey, i16)> {
        self.requests.remove(&correlation_id)
    }

    /// How many requests are waiting.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }
}
