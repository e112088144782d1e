//! ACLs, as `kafka-acls.sh` handles them: create, describe and delete by filter.

use kwire::messages::{create_acls_request::AclCreation, delete_acls_request::DeleteAclsFilter, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kwire::ApiKey;

use super::{bs, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;

/// Declares a Kafka enum carried as an `i8`: its variants and codes, `code()`, and
/// `from_code()` (`Unknown` for a code this build does not know).
macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            /// A code this build does not know (a newer broker's).
            Unknown,
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Kafka's code.
            pub fn code(self) -> i8 {
                match self {
                    $name::Unknown => 0,
                    $($name::$variant => $code,)*
                }
            }

            /// The value of Kafka's code.
            pub fn from_code(code: i8) -> $name {
                match code {
                    $($code => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }
        }
    };
}

kafka_enum! {
    /// What an ACL is about (Java's `ResourceType`).
    ResourceType {
        /// Any type (filters only).
        Any = 1,
        /// A topic.
        Topic = 2,
        /// A consumer group.
        Group = 3,
        /// The cluster.
        Cluster = 4,
        /// A transactional id.
        TransactionalId = 5,
        /// A delegation token.
        DelegationToken = 6,
        /// A user (KIP-373).
        User = 7,
    }
}

kafka_enum! {
    /// How an ACL's resource name matches (Java's `PatternType`).
    PatternType {
        /// Any pattern type (filters only).
        Any = 1,
        /// Whatever an ACL of any pattern type would match (filters only).
        Match = 2,
        /// The name exactly (or `*`, every resource).
        Literal = 3,
        /// Names starting with it.
        Prefixed = 4,
    }
}

kafka_enum! {
    /// The operation an ACL allows or denies (Java's `AclOperation`).
    AclOperation {
        /// Any operation (filters only).
        Any = 1,
        /// Every operation.
        All = 2,
        /// Read.
        Read = 3,
        /// Write.
        Write = 4,
        /// Create.
        Create = 5,
        /// Delete.
        Delete = 6,
        /// Alter.
        Alter = 7,
        /// Describe.
        Describe = 8,
        /// Cluster actions (brokers among themselves).
        ClusterAction = 9,
        /// Describe configs.
        DescribeConfigs = 10,
        /// Alter configs.
        AlterConfigs = 11,
        /// Idempotent writes.
        IdempotentWrite = 12,
        /// Create delegation tokens.
        CreateTokens = 13,
        /// Describe delegation tokens.
        DescribeTokens = 14,
        /// Two-phase commit (KIP-939).
        TwoPhaseCommit = 15,
    }
}

kafka_enum! {
    /// Whether an ACL allows or denies (Java's `AclPermissionType`).
    AclPermission {
        /// Either (filters only).
        Any = 1,
        /// Deny.
        Deny = 2,
        /// Allow.
        Allow = 3,
    }
}

/// One ACL: a resource pattern and an access control entry (Java's `AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name (`*` for every resource of the type).
    pub resource_name: String,
    /// How the name matches.
    pub pattern_type: PatternType,
    /// The principal, e.g. `User:alice`.
    pub principal: String,
    /// The host (`*` for any).
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: AclPermission,
}

impl AclBinding {
    /// `permission` of `operation` on a literal resource for `principal` from any host.
    pub fn new(resource_type: ResourceType, resource_name: &str, principal: &str, operation: AclOperation, permission: AclPermission) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: resource_name.to_owned(),
            pattern_type: PatternType::Literal,
            principal: principal.to_owned(),
            host: "*".to_owned(),
            operation,
            permission,
        }
    }
}

impl AclBinding {
    /// From a response's `(resource type, name, pattern type)` and `(principal, host,
    /// operation, permission)`.
    fn from_wire(resource: (i8, &str, i8), entry: (&str, &str, i8, i8)) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::from_code(resource.0),
            resource_name: resource.1.to_owned(),
            pattern_type: PatternType::from_code(resource.2),
            principal: entry.0.to_owned(),
            host: entry.1.to_owned(),
            operation: AclOperation::from_code(entry.2),
            permission: AclPermission::from_code(entry.3),
        }
    }
}

/// Which ACLs to describe or delete (Java's `AclBindingFilter`): `None` matches anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    /// The resource type (`Any` for every type).
    pub resource_type: ResourceType,
    /// The resource name.
    pub resource_name: Option<String>,
    /// The pattern type (`Any`, or `Match` for what would apply to `resource_name`).
    pub pattern_type: PatternType,
    /// The principal.
    pub principal: Option<String>,
    /// The host.
    pub host: Option<String>,
    /// The operation (`Any` for every one).
    pub operation: AclOperation,
    /// The permission (`Any` for both).
    pub permission: AclPermission,
}

impl AclBindingFilter {
    /// Every ACL.
    pub fn any() -> AclBindingFilter {
        AclBindingFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermission::Any,
        }
    }

    /// Exactly this ACL.
    pub fn exactly(acl: &AclBinding) -> AclBindingFilter {
        AclBindingFilter {
            resource_type: acl.resource_type,
            resource_name: Some(acl.resource_name.clone()),
            pattern_type: acl.pattern_type,
            principal: Some(acl.principal.clone()),
            host: Some(acl.host.clone()),
            operation: acl.operation,
            permission: acl.permission,
        }
    }
}

impl Admin {
    /// Creates ACLs (CreateAcls); one result per ACL, in order.
    pub fn create_acls<'a>(&'a self, acls: &'a [AclBinding]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.create_acls_boxed(acls))
    }

    async fn create_acls_boxed(&self, acls: &[AclBinding]) -> Result<Vec<Result<()>>> {
        let request = CreateAclsRequest {
            creations: acls
                .iter()
                .map(|a| AclCreation {
                    resource_type: a.resource_type.code(),
                    resource_name: bs(&a.resource_name),
                    resource_pattern_type: a.pattern_type.code(),
                    principal: bs(&a.principal),
                    host: bs(&a.host),
                    operation: a.operation.code(),
                    permission_type: a.permission.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let response = self.send_controller_retrying(request).await?;
        let results = super::one_each(ApiKey::CreateAcls, &response.results, acls.len())?;
        Ok(results.iter().zip(acls).map(|(r, a)| Error::check(r.error_code, r.error_message.as_deref(), || format!("create ACL {a:?}"))).collect())
    }

    /// The ACLs matching `filter` (DescribeAcls), sorted.
    pub fn describe_acls<'a>(&'a self, filter: &'a AclBindingFilter) -> ClientFuture<'a, Result<Vec<AclBinding>>> {
        ClientFuture::boxed(self.describe_acls_boxed(filter))
    }

    async fn describe_acls_boxed(&self, filter: &AclBindingFilter) -> Result<Vec<AclBinding>> {
        let request = DescribeAclsRequest {
            resource_type_filter: filter.resource_type.code(),
            resource_name_filter: filter.resource_name.as_deref().map(bs),
            pattern_type_filter: filter.pattern_type.code(),
            principal_filter: filter.principal.as_deref().map(bs),
            host_filter: filter.host.as_deref().map(bs),
            operation: filter.operation.code(),
            permission_type: filter.permission.code(),
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "describe ACLs".into())?;
        let mut out: Vec<AclBinding> = r
            .resources
            .iter()
            .flat_map(|res| {
                res.acls.iter().map(move |a| {
                    AclBinding::from_wire((res.resource_type, &res.resource_name, res.pattern_type), (&a.principal, &a.host, a.operation, a.permission_type))
                })
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Deletes the ACLs matching each filter (DeleteAcls); per filter, the ACLs it deleted.
    pub fn delete_acls<'a>(&'a self, filters: &'a [AclBindingFilter]) -> ClientFuture<'a, Result<Vec<Result<Vec<AclBinding>>>>> {
        ClientFuture::boxed(self.delete_acls_boxed(filters))
    }

    async fn delete_acls_boxed(&self, filters: &[AclBindingFilter]) -> Result<Vec<Result<Vec<AclBinding>>>> {
        let request = DeleteAclsRequest {
            filters: filters
                .iter()
                .map(|f| DeleteAclsFilter {
                    resource_type_filter: f.resource_type.code(),
                    resource_name_filter: f.resource_name.as_deref().map(bs),
                    pattern_type_filter: f.pattern_type.code(),
                    principal_filter: f.principal.as_deref().map(bs),
                    host_filter: f.host.as_deref().map(bs),
                    operation: f.operation.code(),
                    permission_type: f.permission.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let response = self.send_controller_retrying(request).await?;
        let r = &response;
        super::one_each(ApiKey::DeleteAcls, &r.filter_results, filters.len())?;
        Ok(r.filter_results
            .iter()
            .map(|fr| {
                Error::check(fr.error_code, fr.error_message.as_deref(), || "delete ACLs".into())?;
                let mut deleted = Vec::new();
                for m in &fr.matching_acls {
                    Error::check(m.error_code, m.error_message.as_deref(), || "delete an ACL".into())?;
                    deleted.push(AclBinding::from_wire(
                        (m.resource_type, &m.resource_name, m.pattern_type),
                        (&m.principal, &m.host, m.operation, m.permission_type),
                    ));
                }
                deleted.sort();
                Ok(deleted)
            })
            .collect())
    }
}
