//! Selective decoding: which apis and versions a reader decodes, the rest passing through as
//! the bytes that came (for proxies that look at a few apis and forward everything else).

use std::collections::BTreeMap;

use crate::{ApiKey, VersionRange};

/// A set of (api, versions) to decode. Requests and responses outside it are not parsed beyond
/// their header: [`RequestFrame::decode_selected`](super::RequestFrame::decode_selected) and
/// [`ClientCodec::decode_response_selected`](super::ClientCodec::decode_response_selected)
/// return them as raw bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    wanted: BTreeMap<i16, VersionRange>,
}

impl Selection {
    /// Nothing selected: every frame passes through.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every api and version this build knows.
    pub fn all() -> Self {
        ApiKey::ALL.iter().fold(Self::none(), |s, k| s.versions(*k, k.info().valid))
    }

    /// Also every version of `api`.
    pub fn api(self, api: ApiKey) -> Self {
        self.versions(api, api.info().valid)
    }

    /// Selects `versions` of `api` (replacing what was selected for it).
    pub fn versions(mut self, api: ApiKey, versions: VersionRange) -> Self {
        self.wanted.insert(api.key(), versions);
        self
    }

    /// Whether a frame of `api_key` at `version` is decoded.
    pub fn wants(&self, api_key: i16, version: i16) -> bool {
        self.wanted.get(&api_key).is_some_and(|r| r.contains(version))
    }
}
