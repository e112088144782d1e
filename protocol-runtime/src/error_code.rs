//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`): every code from -1 up, with
//! its name, whether a client may retry, and Kafka's default message, as kafka-clients 4.4.0 has
//! them (`tests/java_oracle.rs` compares the table with Java's `Errors`).
//!
//! [`ErrorCode`] wraps the raw `i16`, so codes newer than this table survive untouched.

use std::fmt;

/// A Kafka error code as it travels in responses. Unknown codes are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub i16);

/// What Kafka says about one error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The numeric code.
    pub code: i16,
    /// Kafka's name (`NOT_LEADER_OR_FOLLOWER`).
    pub name: &'static str,
    /// Whether Kafka's exception for it is retriable.
    pub retriable: bool,
    /// Kafka's default message.
    pub message: &'static str,
}

macro_rules! error_codes {
    ($(($code:literal, $name:ident, $retriable:literal, $message:literal),)*) => {
        impl ErrorCode {
            $(
                #[doc = $message]
                pub const $name: ErrorCode = ErrorCode($code);
            )*
        }

        /// Every code Kafka defines, in code order from -1, without gaps.
        pub const ERROR_CODES: &[ErrorInfo] = &[
            $(ErrorInfo { code: $code, name: stringify!($name), retriable: $retriable, message: $message },)*
        ];
    };
}

error_codes! {
    (-1, UNKNOWN_SERVER_ERROR, false, "The server experienced an unexpected error when processing the request."),
    (0, NONE, false, "No error"),
    (1, OFFSET_OUT_OF_RANGE, false, "The requested offset is not within the range of offsets maintained by the server."),
    (2, CORRUPT_MESSAGE, true, "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt."),
    (3, UNKNOWN_TOPIC_OR_PARTITION, true, "This server does not host this topic-partition."),
    (4, INVALID_FETCH_SIZE, false, "The requested fetch size is invalid."),
    (5, LEADER_NOT_AVAILABLE, true, "There is no leader for this topic-partition as we are in the middle of a leadership election."),
    (6, NOT_LEADER_OR_FOLLOWER, true, "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition."),
    (7, REQUEST_TIMED_OUT, true, "The request timed out."),
    (8, BROKER_NOT_AVAILABLE, false, "The broker is not available."),
    (9, REPLICA_NOT_AVAILABLE, true, "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition."),
    (10, MESSAGE_TOO_LARGE, false, "The request included a message larger than the max message size the server will accept."),
    (11, STALE_CONTROLLER_EPOCH, false, "The controller moved to another broker."),
    (12, OFFSET_METADATA_TOO_LARGE, false, "The metadata field of the offset request was too large."),
    (13, NETWORK_EXCEPTION, true, "The server disconnected before a response was received."),
    (14, COORDINATOR_LOAD_IN_PROGRESS, true, "The coordinator is loading and hence can't process requests."),
    (15, COORDINATOR_NOT_AVAILABLE, true, "The coordinator is not available."),
    (16, NOT_COORDINATOR, true, "This is not the correct coordinator."),
    (17, INVALID_TOPIC_EXCEPTION, false, "The request attempted to perform an operation on an invalid topic."),
    (18, RECORD_LIST_TOO_LARGE, false, "The request included message batch larger than the configured segment size on the server."),
    (19, NOT_ENOUGH_REPLICAS, true, "Messages are rejected since there are fewer in-sync replicas than required."),
    (20, NOT_ENOUGH_REPLICAS_AFTER_APPEND, true, "Messages are written to the log, but to fewer in-sync replicas than required."),
    (21, INVALID_REQUIRED_ACKS, false, "Produce request specified an invalid value for required acks."),
    (22, ILLEGAL_GENERATION, false, "Specified group generation id is not valid."),
    (23, INCONSISTENT_GROUP_PROTOCOL, false, "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list."),
    (24, INVALID_GROUP_ID, false, "The group id is invalid."),
    (25, UNKNOWN_MEMBER_ID, false, "The coordinator is not aware of this member."),
    (26, INVALID_SESSION_TIMEOUT, false, "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms)."),
    (27, REBALANCE_IN_PROGRESS, false, "The group is rebalancing, so a rejoin is needed."),
    (28, INVALID_COMMIT_OFFSET_SIZE, false, "The committing offset data size is not valid."),
    (29, TOPIC_AUTHORIZATION_FAILED, false, "Topic authorization failed."),
    (30, GROUP_AUTHORIZATION_FAILED, false, "Group authorization failed."),
    (31, CLUSTER_AUTHORIZATION_FAILED, false, "Cluster authorization failed."),
    (32, INVALID_TIMESTAMP, false, "The timestamp of the message is out of acceptable range."),
    (33, UNSUPPORTED_SASL_MECHANISM, false, "The broker does not support the requested SASL mechanism."),
    (34, ILLEGAL_SASL_STATE, false, "Request is not valid given the current SASL state."),
    (35, UNSUPPORTED_VERSION, false, "The version of API is not supported."),
    (36, TOPIC_ALREADY_EXISTS, false, "Topic with this name already exists."),
    (37, INVALID_PARTITIONS, false, "Number of partitions is below 1."),
    (38, INVALID_REPLICATION_FACTOR, false, "Replication factor is below 1 or larger than the number of available brokers."),
    (39, INVALID_REPLICA_ASSIGNMENT, false, "Replica assignment is invalid."),
    (40, INVALID_CONFIG, false, "Configuration is invalid."),
    (41, NOT_CONTROLLER, true, "This is not the correct controller for this cluster."),
    (42, INVALID_REQUEST, false, "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details."),
    (43, UNSUPPORTED_FOR_MESSAGE_FORMAT, false, "The message format version on the broker does not support the request."),
    (44, POLICY_VIOLATION, false, "Request parameters do not satisfy the configured policy."),
    (45, OUT_OF_ORDER_SEQUENCE_NUMBER, false, "The broker received an out of order sequence number."),
    (46, DUPLICATE_SEQUENCE_NUMBER, false, "The broker received a duplicate sequence number."),
    (47, INVALID_PRODUCER_EPOCH, false, "Producer attempted to produce with an old epoch."),
    (48, INVALID_TXN_STATE, false, "The producer attempted a transactional operation in an invalid state."),
    (49, INVALID_PRODUCER_ID_MAPPING, false, "The producer attempted to use a producer id which is not currently assigned to its transactional id."),
    (50, INVALID_TRANSACTION_TIMEOUT, false, "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms)."),
    (51, CONCURRENT_TRANSACTIONS, true, "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing."),
    (52, TRANSACTION_COORDINATOR_FENCED, false, "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer."),
    (53, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, false, "Transactional Id authorization failed."),
    (54, SECURITY_DISABLED, false, "Security features are disabled."),
    (55, OPERATION_NOT_ATTEMPTED, false, "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest."),
    (56, KAFKA_STORAGE_ERROR, true, "Disk error when trying to access log file on the disk."),
    (57, LOG_DIR_NOT_FOUND, false, "The user-specified log directory is not found in the broker config."),
    (58, SASL_AUTHENTICATION_FAILED, false, "SASL Authentication failed."),
    (59, UNKNOWN_PRODUCER_ID, false, "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception."),
    (60, REASSIGNMENT_IN_PROGRESS, false, "A partition reassignment is in progress."),
    (61, DELEGATION_TOKEN_AUTH_DISABLED, false, "Delegation Token feature is not enabled."),
    (62, DELEGATION_TOKEN_NOT_FOUND, false, "Delegation Token is not found on server."),
    (63, DELEGATION_TOKEN_OWNER_MISMATCH, false, "Specified Principal is not valid Owner/Renewer."),
    (64, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, false, "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels."),
    (65, DELEGATION_TOKEN_AUTHORIZATION_FAILED, false, "Delegation Token authorization failed."),
    (66, DELEGATION_TOKEN_EXPIRED, false, "Delegation Token is expired."),
    (67, INVALID_PRINCIPAL_TYPE, false, "Supplied principalType is not supported."),
    (68, NON_EMPTY_GROUP, false, "The group is not empty."),
    (69, GROUP_ID_NOT_FOUND, false, "The group id does not exist."),
    (70, FETCH_SESSION_ID_NOT_FOUND, true, "The fetch session ID was not found."),
    (71, INVALID_FETCH_SESSION_EPOCH, true, "The fetch session epoch is invalid."),
    (72, LISTENER_NOT_FOUND, true, "There is no listener on the leader broker that matches the listener on which metadata request was processed."),
    (73, TOPIC_DELETION_DISABLED, false, "Topic deletion is disabled."),
    (74, FENCED_LEADER_EPOCH, true, "The leader epoch in the request is older than the epoch on the broker."),
    (75, UNKNOWN_LEADER_EPOCH, true, "The leader epoch in the request is newer than the epoch on the broker."),
    (76, UNSUPPORTED_COMPRESSION_TYPE, false, "The requesting client does not support the compression type of given partition."),
    (77, STALE_BROKER_EPOCH, false, "Broker epoch has changed."),
    (78, OFFSET_NOT_AVAILABLE, true, "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing."),
    (79, MEMBER_ID_REQUIRED, false, "The group member needs to have a valid member id before actually entering a consumer group."),
    (80, PREFERRED_LEADER_NOT_AVAILABLE, true, "The preferred leader was not available."),
    (81, GROUP_MAX_SIZE_REACHED, false, "The group has reached its maximum size."),
    (82, FENCED_INSTANCE_ID, false, "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id."),
    (83, ELIGIBLE_LEADERS_NOT_AVAILABLE, true, "Eligible topic partition leaders are not available."),
    (84, ELECTION_NOT_NEEDED, true, "Leader election not needed for topic partition."),
    (85, NO_REASSIGNMENT_IN_PROGRESS, false, "No partition reassignment is in progress."),
    (86, GROUP_SUBSCRIBED_TO_TOPIC, false, "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."),
    (87, INVALID_RECORD, false, "This record has failed the validation on broker and hence will be rejected."),
    (88, UNSTABLE_OFFSET_COMMIT, true, "There are unstable offsets that need to be cleared."),
    (89, THROTTLING_QUOTA_EXCEEDED, true, "The throttling quota has been exceeded."),
    (90, PRODUCER_FENCED, false, "There is a newer producer with the same transactionalId which fences the current one."),
    (91, RESOURCE_NOT_FOUND, false, "A request illegally referred to a resource that does not exist."),
    (92, DUPLICATE_RESOURCE, false, "A request illegally referred to the same resource twice."),
    (93, UNACCEPTABLE_CREDENTIAL, false, "Requested credential would not meet criteria for acceptability."),
    (94, INCONSISTENT_VOTER_SET, false, "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters."),
    (95, INVALID_UPDATE_VERSION, false, "The given update version was invalid."),
    (96, FEATURE_UPDATE_FAILED, false, "Unable to update finalized features due to an unexpected server error."),
    (97, PRINCIPAL_DESERIALIZATION_FAILURE, false, "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup."),
    (98, SNAPSHOT_NOT_FOUND, false, "Requested snapshot was not found."),
    (99, POSITION_OUT_OF_RANGE, false, "Requested position is not greater than or equal to zero, and less than the size of the snapshot."),
    (100, UNKNOWN_TOPIC_ID, true, "This server does not host this topic ID."),
    (101, DUPLICATE_BROKER_REGISTRATION, false, "This broker ID is already in use."),
    (102, BROKER_ID_NOT_REGISTERED, false, "The given broker ID was not registered."),
    (103, INCONSISTENT_TOPIC_ID, true, "The log's topic ID did not match the topic ID in the request."),
    (104, INCONSISTENT_CLUSTER_ID, false, "The clusterId in the request does not match that found on the server."),
    (105, TRANSACTIONAL_ID_NOT_FOUND, false, "The transactionalId could not be found."),
    (106, FETCH_SESSION_TOPIC_ID_ERROR, true, "The fetch session encountered inconsistent topic ID usage."),
    (107, INELIGIBLE_REPLICA, false, "The new ISR contains at least one ineligible replica."),
    (108, NEW_LEADER_ELECTED, false, "The AlterPartition request successfully updated the partition state but the leader has changed."),
    (109, OFFSET_MOVED_TO_TIERED_STORAGE, false, "The requested offset is moved to tiered storage."),
    (110, FENCED_MEMBER_EPOCH, false, "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin."),
    (111, UNRELEASED_INSTANCE_ID, false, "The instance ID is still used by another member in the consumer group. That member must leave first."),
    (112, UNSUPPORTED_ASSIGNOR, false, "The assignor or its version range is not supported by the consumer group."),
    (113, STALE_MEMBER_EPOCH, false, "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API."),
    (114, MISMATCHED_ENDPOINT_TYPE, false, "The request was sent to an endpoint of the wrong type."),
    (115, UNSUPPORTED_ENDPOINT_TYPE, false, "This endpoint type is not supported yet."),
    (116, UNKNOWN_CONTROLLER_ID, false, "This controller ID is not known."),
    (117, UNKNOWN_SUBSCRIPTION_ID, false, "Client sent a push telemetry request with an invalid or outdated subscription ID."),
    (118, TELEMETRY_TOO_LARGE, false, "Client sent a push telemetry request larger than the maximum size the broker will accept."),
    (119, INVALID_REGISTRATION, false, "The controller has considered the broker registration to be invalid."),
    (120, TRANSACTION_ABORTABLE, false, "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID."),
    (121, INVALID_RECORD_STATE, false, "The record state is invalid. The acknowledgement of delivery could not be completed."),
    (122, SHARE_SESSION_NOT_FOUND, true, "The share session was not found."),
    (123, INVALID_SHARE_SESSION_EPOCH, true, "The share session epoch is invalid."),
    (124, FENCED_STATE_EPOCH, false, "The coordinator rejected the request because the state epoch did not match."),
    (125, INVALID_VOTER_KEY, false, "The voter key doesn't match the receiving replica's key."),
    (126, DUPLICATE_VOTER, false, "The voter is already part of the set of voters."),
    (127, VOTER_NOT_FOUND, false, "The voter is not part of the set of voters."),
    (128, INVALID_REGULAR_EXPRESSION, false, "The regular expression is not valid."),
    (129, REBOOTSTRAP_REQUIRED, false, "Client metadata is stale. The client should rebootstrap to obtain new metadata."),
    (130, STREAMS_INVALID_TOPOLOGY, false, "The supplied topology is invalid."),
    (131, STREAMS_INVALID_TOPOLOGY_EPOCH, false, "The supplied topology epoch is invalid."),
    (132, STREAMS_TOPOLOGY_FENCED, false, "The supplied topology epoch is outdated."),
    (133, SHARE_SESSION_LIMIT_REACHED, true, "The limit of share sessions has been reached."),
    (134, GROUP_DELETION_FAILED, false, "DeleteGroups could not complete; see the error message on the per-group result for details."),
    (135, STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED, false, "The broker could not process the topology description update; see the error message for details."),
    (136, CONTROLLER_ID_NOT_REGISTERED, false, "The given controller ID was not registered."),
}

impl ErrorCode {
    /// What Kafka says about this code, when this table knows it.
    pub fn info(self) -> Option<&'static ErrorInfo> {
        // The table starts at -1 and has no gaps.
        let index = usize::try_from(i32::from(self.0) + 1).ok()?;
        ERROR_CODES.get(index).filter(|i| i.code == self.0)
    }

    /// Kafka's name, e.g. `NOT_LEADER_OR_FOLLOWER`.
    pub fn name(self) -> Option<&'static str> {
        self.info().map(|i| i.name)
    }

    /// True for `NONE` (0).
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// True when a client may retry the request as it is (unknown codes are not retriable).
    pub fn is_retriable(self) -> bool {
        self.info().is_some_and(|i| i.retriable)
    }

    /// True for the codes whose Java exception is an `InvalidMetadataException`: the client's
    /// view of the cluster (a partition's leader, a topic) is out of date, and its metadata
    /// should be refreshed before the request is retried.
    pub fn invalidates_metadata(self) -> bool {
        matches!(
            self,
            ErrorCode::NOT_LEADER_OR_FOLLOWER
                | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                | ErrorCode::LEADER_NOT_AVAILABLE
                | ErrorCode::FENCED_LEADER_EPOCH
                | ErrorCode::UNKNOWN_TOPIC_ID
                | ErrorCode::INCONSISTENT_TOPIC_ID
                | ErrorCode::KAFKA_STORAGE_ERROR
                | ErrorCode::REPLICA_NOT_AVAILABLE
                | ErrorCode::NETWORK_EXCEPTION
                | ErrorCode::LISTENER_NOT_FOUND
                | ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                | ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE
                | ErrorCode::ELECTION_NOT_NEEDED
        )
    }

    /// Kafka's default message.
    pub fn message(self) -> Option<&'static str> {
        self.info().map(|i| i.message)
    }

    /// The code with Kafka's name `name`.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ERROR_CODES.iter().find(|i| i.name == name).map(|i| ErrorCode(i.code))
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> Self {
        ErrorCode(code)
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}({})", self.0),
            None => write!(f, "ErrorCode({})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info() {
            Some(i) => write!(f, "{} ({}): {}", i.name, i.code, i.message),
            None => write!(f, "unknown error code {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_contiguous_and_lookups_agree() {
        for (i, info) in ERROR_CODES.iter().enumerate() {
            assert_eq!(i as i32 - 1, i32::from(info.code));
            assert_eq!(ErrorCode(info.code).name(), Some(info.name));
            assert_eq!(ErrorCode::from_name(info.name), Some(ErrorCode(info.code)));
        }
        assert_eq!(ErrorCode::NOT_LEADER_OR_FOLLOWER, ErrorCode(6));
        assert!(ErrorCode::NOT_LEADER_OR_FOLLOWER.is_retriable());
        assert!(!ErrorCode::TOPIC_AUTHORIZATION_FAILED.is_retriable());
        assert_eq!(ErrorCode(-1).name(), Some("UNKNOWN_SERVER_ERROR"));
        assert_eq!(ErrorCode(35).to_string(), "UNSUPPORTED_VERSION (35): The version of API is not supported.");
    }

    #[test]
    fn unknown_codes_are_kept() {
        let code = ErrorCode::from(9999);
        assert_eq!(i16::from(code), 9999);
        assert_eq!(code.info(), None);
        assert!(!code.is_retriable());
        assert_eq!(code.to_string(), "unknown error code 9999");
        assert_eq!(ErrorCode(-2).info(), None);
    }
}
