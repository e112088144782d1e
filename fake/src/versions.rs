//! Which api versions the brokers advertise: those a chosen Kafka release's brokers advertise,
//! read from the releases kwire was built from (every api a broker listener takes, its valid
//! versions without an unstable newest one, as a broker with `unstable.api.versions.enable`
//! off advertises them); for 2.8 and 4.0, whose specs the build does not have, from tables of
//! what those releases' `ApiKeys` give (tests/api_ranges.rs checks them against the jars).

use std::fmt;
use std::str::FromStr;

use kwire::{ApiKey, VersionRange};

/// A Kafka release whose brokers the fake cluster imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Release {
    /// Kafka 2.8, a ZooKeeper broker (its inter-broker apis advertised too).
    V2_8,
    /// Kafka 3.9, the last release with ZooKeeper and every old version.
    V3_9,
    /// Kafka 4.0: KRaft only, the old versions of KIP-896 removed.
    V4_0,
    /// Kafka 4.4.
    V4_4,
}

/// (api key, oldest, newest) a Kafka 2.8 broker advertises: `ApiKeys.apisForListener(ZK_BROKER)`
/// of kafka-clients 2.8.2.
const V2_8_RANGES: &[(i16, i16, i16)] = &[
    (0, 0, 9),
    (1, 0, 12),
    (2, 0, 6),
    (3, 0, 11),
    (4, 0, 5),
    (5, 0, 3),
    (6, 0, 7),
    (7, 0, 3),
    (8, 0, 8),
    (9, 0, 7),
    (10, 0, 3),
    (11, 0, 7),
    (12, 0, 4),
    (13, 0, 4),
    (14, 0, 5),
    (15, 0, 5),
    (16, 0, 4),
    (17, 0, 1),
    (18, 0, 3),
    (19, 0, 7),
    (20, 0, 6),
    (21, 0, 2),
    (22, 0, 4),
    (23, 0, 4),
    (24, 0, 3),
    (25, 0, 3),
    (26, 0, 3),
    (27, 0, 1),
    (28, 0, 3),
    (29, 0, 2),
    (30, 0, 2),
    (31, 0, 2),
    (32, 0, 4),
    (33, 0, 2),
    (34, 0, 2),
    (35, 0, 2),
    (36, 0, 2),
    (37, 0, 3),
    (38, 0, 2),
    (39, 0, 2),
    (40, 0, 2),
    (41, 0, 2),
    (42, 0, 2),
    (43, 0, 2),
    (44, 0, 1),
    (45, 0, 0),
    (46, 0, 0),
    (47, 0, 0),
    (48, 0, 1),
    (49, 0, 1),
    (50, 0, 0),
    (51, 0, 0),
    (56, 0, 0),
    (57, 0, 0),
    (60, 0, 0),
    (61, 0, 0),
];

/// (api key, oldest, newest stable) a Kafka 4.0 broker advertises:
/// `ApiKeys.apisForListener(BROKER)` of kafka-clients 4.0.0, `latestVersion(false)`.
const V4_0_RANGES: &[(i16, i16, i16)] = &[
    (0, 3, 12),
    (1, 4, 17),
    (2, 1, 10),
    (3, 0, 13),
    (8, 2, 9),
    (9, 1, 9),
    (10, 0, 6),
    (11, 2, 9),
    (12, 0, 4),
    (13, 0, 5),
    (14, 0, 5),
    (15, 0, 6),
    (16, 0, 5),
    (17, 0, 1),
    (18, 0, 4),
    (19, 2, 7),
    (20, 1, 6),
    (21, 0, 2),
    (22, 0, 5),
    (23, 2, 4),
    (24, 0, 5),
    (25, 0, 4),
    (26, 0, 5),
    (27, 1, 1),
    (28, 0, 5),
    (29, 1, 3),
    (30, 1, 3),
    (31, 1, 3),
    (32, 1, 4),
    (33, 0, 2),
    (34, 1, 2),
    (35, 1, 4),
    (36, 0, 2),
    (37, 0, 3),
    (38, 1, 3),
    (39, 1, 2),
    (40, 1, 2),
    (41, 1, 3),
    (42, 0, 2),
    (43, 0, 2),
    (44, 0, 1),
    (45, 0, 0),
    (46, 0, 0),
    (47, 0, 0),
    (48, 0, 1),
    (49, 0, 1),
    (50, 0, 0),
    (51, 0, 0),
    (55, 0, 2),
    (57, 0, 2),
    (60, 0, 2),
    (61, 0, 0),
    (64, 0, 0),
    (65, 0, 0),
    (66, 0, 1),
    (68, 0, 1),
    (69, 0, 1),
    (71, 0, 0),
    (72, 0, 0),
    (74, 0, 0),
    (75, 0, 0),
    (80, 0, 0),
    (81, 0, 0),
];

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 4] = [Release::V2_8, Release::V3_9, Release::V4_0, Release::V4_4];

    /// The table of a release whose specs the build does not have.
    fn table(self) -> Option<&'static [(i16, i16, i16)]> {
        match self {
            Release::V2_8 => Some(V2_8_RANGES),
            Release::V4_0 => Some(V4_0_RANGES),
            Release::V3_9 | Release::V4_4 => None,
        }
    }

    /// The spec set's name prefix in kwire's build (`kafka-3.9`).
    fn spec_prefix(self) -> &'static str {
        match self {
            Release::V2_8 => "kafka-2.8",
            Release::V3_9 => "kafka-3.9",
            Release::V4_0 => "kafka-4.0",
            Release::V4_4 => "kafka-4.4",
        }
    }

    /// The versions of `api` its brokers advertise, `None` for an api they do not serve (one
    /// for controllers only, or the release lacks it).
    pub fn versions(self, api: ApiKey) -> Option<VersionRange> {
        if let Some(table) = self.table() {
            let (_, lo, hi) = table.iter().find(|(key, _, _)| *key == api.key())?;
            return Some(VersionRange::new(*lo, *hi));
        }
        let info = api.info();
        // A KRaft broker's apis (the merged build keeps the newest release's listeners).
        if !info.listeners.contains(&"broker") {
            return None;
        }
        let release = info.releases.iter().find(|r| r.release.starts_with(self.spec_prefix()))?;
        let mut range = release.valid;
        if release.latest_version_unstable && !range.is_empty() {
            range = VersionRange::new(range.lo, range.hi - 1);
        }
        (!range.is_empty()).then_some(range)
    }

    /// Whether the build can serve this release: has its specs or, for a release from a table,
    /// every version the table lists.
    pub fn in_build(self) -> bool {
        match self.table() {
            Some(table) => table
                .iter()
                .all(|(key, lo, hi)| ApiKey::from_i16(*key).is_some_and(|api| (*lo..=*hi).all(|v| api.info().releases.iter().any(|r| r.valid.contains(v))))),
            None => ApiKey::Produce.info().releases.iter().any(|r| r.release.starts_with(self.spec_prefix())),
        }
    }

    /// The feature levels its brokers finalize by default: `metadata.version` at the release's
    /// (3.9-IV0 is 21, 4.4-IV2 33, `MetadataVersion.LATEST_PRODUCTION`), and on 4.x
    /// `transaction.version` 2 (transactions V2, KIP-890) and `group.version` 1 (KIP-848).
    pub fn features(self) -> &'static [(&'static str, i16)] {
        // 2.8's brokers finalize no features (KIP-584's versioning, with none yet); 4.0's
        // defaults as kafka-server-common 4.0.0's `Feature.defaultLevel(4.0-IV3)` gives them.
        match self {
            Release::V2_8 => &[],
            Release::V3_9 => &[("metadata.version", 21)],
            Release::V4_0 => &[("metadata.version", 25), ("transaction.version", 2), ("group.version", 1)],
            Release::V4_4 => &[("metadata.version", 33), ("transaction.version", 2), ("group.version", 1)],
        }
    }

    /// The lowest level of a feature its brokers support: `metadata.version` from 3.0-IV1 (1)
    /// on 3.9 and from 3.3-IV3 (7, `MetadataVersion.MINIMUM_VERSION`) on 4.x; 0 for the others.
    pub fn min_feature_level(self, feature: &str) -> i16 {
        match (self, feature) {
            (Release::V3_9, "metadata.version") => 1,
            (Release::V4_0 | Release::V4_4, "metadata.version") => 7,
            _ => 0,
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Release::V2_8 => "2.8",
            Release::V3_9 => "3.9",
            Release::V4_0 => "4.0",
            Release::V4_4 => "4.4",
        })
    }
}

impl FromStr for Release {
    type Err = String;

    fn from_str(s: &str) -> Result<Release, String> {
        let release = match s.trim_start_matches('v') {
            "2.8" | "2.8.0" | "2.8.1" | "2.8.2" => Release::V2_8,
            "3.9" | "3.9.0" | "3.9.1" | "3.9.2" => Release::V3_9,
            "4.0" | "4.0.0" | "4.0.1" => Release::V4_0,
            "4.4" | "4.4.0" => Release::V4_4,
            other => return Err(format!("unknown release {other} (this build imitates {})", Release::ALL.map(|r| r.to_string()).join(", "))),
        };
        if !release.in_build() {
            return Err(format!("this build of kwire has no Kafka {release} specs"));
        }
        Ok(release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brokers_advertise_their_release_and_no_controller_api() {
        assert_eq!(Release::V4_4.versions(ApiKey::Produce).map(|r| r.lo), Some(3), "4.x removed Produce v0-2");
        assert_eq!(Release::V3_9.versions(ApiKey::Produce).map(|r| r.lo), Some(0));
        assert_eq!(Release::V4_4.versions(ApiKey::Vote), None, "controllers only");
        assert!(Release::V4_4.versions(ApiKey::ConsumerGroupHeartbeat).is_some());
        assert_eq!("4.4".parse(), Ok(Release::V4_4));
        assert!("2.1".parse::<Release>().is_err());
        // KIP-896 removed Produce v0-2 and Fetch v0-3 in 4.0; 2.8 had them, and neither
        // Produce v10 nor ConsumerGroupHeartbeat.
        assert_eq!(Release::V4_0.versions(ApiKey::Produce), Some(VersionRange::new(3, 12)));
        assert_eq!(Release::V2_8.versions(ApiKey::Produce), Some(VersionRange::new(0, 9)));
        assert_eq!(Release::V2_8.versions(ApiKey::ConsumerGroupHeartbeat), None);
        assert!(Release::V2_8.versions(ApiKey::LeaderAndIsr).is_some(), "a ZooKeeper broker's inter-broker apis");
        for release in Release::ALL {
            assert!(release.in_build(), "{release}");
            assert_eq!(release.to_string().parse(), Ok(release));
        }
    }
}
