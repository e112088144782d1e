//! Version negotiation: from a broker's ApiVersionsResponse and this build's supported ranges,
//! the version to use for each api (the highest both sides support).

use std::collections::BTreeMap;
use std::fmt;

use crate::messages::ApiVersionsResponse;
use crate::{ApiKey, VersionRange};

/// Why no version can be used for an api.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NegotiationError {
    /// The broker did not list the api.
    NotAdvertised(ApiKey),
    /// Both sides know the api but their version ranges do not meet.
    NoOverlap {
        /// The api.
        api: ApiKey,
        /// What this build supports.
        ours: VersionRange,
        /// What the broker advertised.
        theirs: VersionRange,
    },
}

impl fmt::Display for NegotiationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NegotiationError::NotAdvertised(api) => write!(f, "the broker does not support {}", api.name()),
            NegotiationError::NoOverlap { api, ours, theirs } => {
                write!(f, "no common version for {}: this build supports {ours}, the broker {theirs}", api.name())
            }
        }
    }
}

impl std::error::Error for NegotiationError {}

/// Options for [`negotiate`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NegotiateOptions {
    /// Also use versions Kafka marks unstable (`latestVersionUnstable`). Off by default.
    pub include_unstable: bool,
}

/// The outcome of negotiating with one broker.
#[derive(Debug, Clone, Default)]
pub struct Negotiated {
    results: BTreeMap<i16, Result<i16, NegotiationError>>,
    /// Api keys the broker advertised that this build does not know.
    pub unknown_to_us: Vec<i16>,
}

impl Negotiated {
    /// The version to use for `api`: the highest both sides support.
    pub fn version(&self, api: ApiKey) -> Result<i16, NegotiationError> {
        self.results.get(&api.key()).cloned().unwrap_or(Err(NegotiationError::NotAdvertised(api)))
    }

    /// True when the negotiated version of `api` is one Kafka has deprecated.
    pub fn is_deprecated(&self, api: ApiKey) -> bool {
        self.version(api).is_ok_and(|v| api.info().deprecated.contains(v))
    }

    /// Every api with a usable version, with that version.
    pub fn usable(&self) -> impl Iterator<Item = (ApiKey, i16)> + '_ {
        self.results.iter().filter_map(|(k, r)| Some((ApiKey::from_i16(*k)?, *r.as_ref().ok()?)))
    }
}

/// Intersects the broker's advertised ranges with this build's. Apis the broker lists but this
/// build does not know are reported in [`Negotiated::unknown_to_us`].
pub fn negotiate(response: &ApiVersionsResponse, options: NegotiateOptions) -> Negotiated {
    let mut out = Negotiated::default();
    for theirs in &response.api_keys {
        let Some(api) = ApiKey::from_i16(theirs.api_key) else {
            out.unknown_to_us.push(theirs.api_key);
            continue;
        };
        let ours = api.info().versions(options.include_unstable);
        let theirs = VersionRange::new(theirs.min_version, theirs.max_version);
        let common = ours.intersect(&theirs);
        let result = if common.is_empty() { Err(NegotiationError::NoOverlap { api, ours, theirs }) } else { Ok(common.hi) };
        out.results.insert(api.key(), result);
    }
    out
}

/// What a proxy in front of a broker advertises: the broker's ApiVersionsResponse with each
/// api's range intersected with what this build decodes (stable versions unless
/// `include_unstable`), and apis this build does not know, or whose ranges do not meet, left
/// out, so clients never pick a version the proxy cannot read. Everything else of the response
/// (error code, throttle time, features, unknown tagged fields) is kept as the broker sent it.
pub fn mediate(broker: &ApiVersionsResponse, options: NegotiateOptions) -> ApiVersionsResponse {
    let mut out = broker.clone();
    out.api_keys.retain_mut(|theirs| {
        let Some(api) = ApiKey::from_i16(theirs.api_key) else { return false };
        let common = api.info().versions(options.include_unstable).intersect(&VersionRange::new(theirs.min_version, theirs.max_version));
        (theirs.min_version, theirs.max_version) = (common.lo, common.hi);
        !common.is_empty()
    });
    out
}

/// The answer to an ApiVersionsRequest of a version the responder does not support (KIP-511):
/// to be sent at version 0, with UNSUPPORTED_VERSION and the one api ApiVersions at `supported`,
/// so that the client retries at a version both sides know. The request body is never decoded:
/// its version may be newer than anything this build can read.
pub fn unsupported_api_versions(supported: VersionRange) -> ApiVersionsResponse {
    let mut response = ApiVersionsResponse { error_code: crate::ErrorCode::UNSUPPORTED_VERSION.0, ..Default::default() };
    // The element type is not named: releases name it differently (2.4: ApiVersionsResponseKey).
    response.api_keys.push(Default::default());
    if let Some(api) = response.api_keys.last_mut() {
        (api.api_key, api.min_version, api.max_version) = (ApiKey::ApiVersions.key(), supported.lo, supported.hi);
    }
    response
}
