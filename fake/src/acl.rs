//! ACLs and the authorizer that enforces them (Kafka's `StandardAuthorizer` with
//! `AclControlManager`'s store): bindings of a resource pattern to a principal, host,
//! operation and permission; filters that match them as `AclBindingFilter` does; and the
//! decision for one principal's operation on one resource.

use std::collections::BTreeSet;

/// `ResourceType` codes.
pub(crate) mod resource {
    pub(crate) const ANY: i8 = 1;
    pub(crate) const TOPIC: i8 = 2;
    pub(crate) const GROUP: i8 = 3;
    pub(crate) const CLUSTER: i8 = 4;
    pub(crate) const TRANSACTIONAL_ID: i8 = 5;
    pub(crate) const DELEGATION_TOKEN: i8 = 6;
    pub(crate) const USER: i8 = 7;
}

/// `PatternType` codes.
pub(crate) mod pattern {
    pub(crate) const ANY: i8 = 1;
    pub(crate) const MATCH: i8 = 2;
    pub(crate) const LITERAL: i8 = 3;
    pub(crate) const PREFIXED: i8 = 4;
}

/// `AclOperation` codes.
pub(crate) mod op {
    pub(crate) const ANY: i8 = 1;
    pub(crate) const ALL: i8 = 2;
    pub(crate) const READ: i8 = 3;
    pub(crate) const WRITE: i8 = 4;
    pub(crate) const CREATE: i8 = 5;
    pub(crate) const DELETE: i8 = 6;
    pub(crate) const ALTER: i8 = 7;
    pub(crate) const DESCRIBE: i8 = 8;
    pub(crate) const CLUSTER_ACTION: i8 = 9;
    pub(crate) const DESCRIBE_CONFIGS: i8 = 10;
    pub(crate) const ALTER_CONFIGS: i8 = 11;
    pub(crate) const IDEMPOTENT_WRITE: i8 = 12;
    pub(crate) const CREATE_TOKENS: i8 = 13;
}

/// `AclPermissionType` codes.
pub(crate) mod permission {
    pub(crate) const ANY: i8 = 1;
    pub(crate) const DENY: i8 = 2;
    pub(crate) const ALLOW: i8 = 3;
}

/// The one CLUSTER resource's name.
pub(crate) const CLUSTER_NAME: &str = "kafka-cluster";
/// The name (and principal and host) that matches every one.
const WILDCARD: &str = "*";

/// One ACL.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Acl {
    pub(crate) resource_type: i8,
    pub(crate) name: String,
    pub(crate) pattern_type: i8,
    pub(crate) principal: String,
    pub(crate) host: String,
    pub(crate) operation: i8,
    pub(crate) permission: i8,
}

/// What DescribeAcls and DeleteAcls select by (`None` fields match anything).
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    pub(crate) resource_type: i8,
    pub(crate) name: Option<String>,
    pub(crate) pattern_type: i8,
    pub(crate) principal: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) operation: i8,
    pub(crate) permission: i8,
}

impl Filter {
    /// Kafka's `AclBindingFilter.matches`: the pattern filter (MATCH takes literal, wildcard
    /// and prefixed patterns that apply to the name) and the entry filter.
    pub(crate) fn matches(&self, acl: &Acl) -> bool {
        if self.resource_type != resource::ANY && self.resource_type != acl.resource_type {
            return false;
        }
        if self.pattern_type != pattern::ANY && self.pattern_type != pattern::MATCH && self.pattern_type != acl.pattern_type {
            return false;
        }
        let name_ok = match &self.name {
            None => true,
            Some(name) if self.pattern_type == pattern::ANY || self.pattern_type == acl.pattern_type => *name == acl.name,
            Some(name) => match acl.pattern_type {
                pattern::LITERAL => *name == acl.name || acl.name == WILDCARD,
                pattern::PREFIXED => name.starts_with(&acl.name),
                _ => false,
            },
        };
        name_ok
            && self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == op::ANY || self.operation == acl.operation)
            && (self.permission == permission::ANY || self.permission == acl.permission)
    }

    /// A filter that has an UNKNOWN (0) or out-of-range field matches nothing (Kafka's
    /// `isUnknown`).
    pub(crate) fn is_unknown(&self) -> bool {
        !(1..=7).contains(&self.resource_type)
            || !(1..=4).contains(&self.pattern_type)
            || !(1..=15).contains(&self.operation)
            || !(1..=3).contains(&self.permission)
    }
}

/// Why an ACL cannot be created (INVALID_REQUEST with this message), as
/// `AclControlManager.validateNewAcl` and the broker's `AclApis` check it.
pub(crate) fn validate(acl: &Acl) -> Result<(), String> {
    if !(2..=7).contains(&acl.resource_type) {
        return Err(format!("Invalid resourceType {}", acl.resource_type));
    }
    if acl.pattern_type != pattern::LITERAL && acl.pattern_type != pattern::PREFIXED {
        return Err(format!("Invalid patternType {}", acl.pattern_type));
    }
    if !(2..=15).contains(&acl.operation) {
        return Err(format!("Invalid operation {}", acl.operation));
    }
    if acl.permission != permission::ALLOW && acl.permission != permission::DENY {
        return Err(format!("Invalid permissionType {}", acl.permission));
    }
    if acl.name.is_empty() {
        return Err("Invalid empty resource name specified".into());
    }
    if acl.resource_type == resource::CLUSTER && acl.name != CLUSTER_NAME {
        return Err(format!("The only valid name for the CLUSTER resource is {CLUSTER_NAME}"));
    }
    match acl.principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(()),
        _ => Err(format!("Could not parse principal from `{}` (no colon is found between principal type and name)", acl.principal)),
    }
}

/// Every ACL of the cluster.
#[derive(Debug, Default)]
pub(crate) struct Acls {
    pub(crate) acls: BTreeSet<Acl>,
}

impl Acls {
    pub(crate) fn matching<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = &'a Acl> + 'a {
        self.acls.iter().filter(move |a| filter.matches(a))
    }

    /// Removes and returns the ACLs `filter` matches.
    pub(crate) fn remove(&mut self, filter: &Filter) -> Vec<Acl> {
        let gone: Vec<Acl> = self.matching(filter).cloned().collect();
        for a in &gone {
            self.acls.remove(a);
        }
        gone
    }

    /// The authorizer's decision: DENY ACLs win, then an ALLOW of the operation, of ALL, or of
    /// one implying it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
    /// DESCRIBE_CONFIGS); no matching ACL denies (`allow.everyone.if.no.acl.found` false).
    pub(crate) fn allows(&self, principal: &str, host: &str, operation: i8, resource_type: i8, name: &str) -> bool {
        let applies = |a: &&Acl| {
            a.resource_type == resource_type
                && match a.pattern_type {
                    pattern::LITERAL => a.name == name || a.name == WILDCARD,
                    pattern::PREFIXED => name.starts_with(&a.name),
                    _ => false,
                }
                && (a.principal == principal || a.principal == "User:*")
                && (a.host == host || a.host == WILDCARD)
        };
        let mut allowed = false;
        for a in self.acls.iter().filter(applies) {
            let covers = a.operation == operation || a.operation == op::ALL;
            if a.permission == permission::DENY && covers {
                return false;
            }
            let implied = match operation {
                op::DESCRIBE => matches!(a.operation, op::READ | op::WRITE | op::DELETE | op::ALTER),
                op::DESCRIBE_CONFIGS => a.operation == op::ALTER_CONFIGS,
                _ => false,
            };
            if a.permission == permission::ALLOW && (covers || implied) {
                allowed = true;
            }
        }
        allowed
    }

    /// Kafka's `authorizeByResourceType`: whether some resource of the type may get the
    /// operation, by an ALLOW binding that no DENY binding covers (a DENY of the wildcard, of the
    /// same literal name, or of a prefix of its name).
    pub(crate) fn allows_any(&self, principal: &str, host: &str, operation: i8, resource_type: i8) -> bool {
        let applies = |a: &&Acl| {
            a.resource_type == resource_type
                && (a.operation == operation || a.operation == op::ALL)
                && (a.principal == principal || a.principal == "User:*")
                && (a.host == host || a.host == WILDCARD)
        };
        let denies: Vec<&Acl> = self.acls.iter().filter(applies).filter(|a| a.permission == permission::DENY).collect();
        if denies.iter().any(|d| d.pattern_type == pattern::LITERAL && d.name == WILDCARD) {
            return false;
        }
        self.acls.iter().filter(applies).filter(|a| a.permission == permission::ALLOW).any(|a| {
            !denies.iter().any(|d| match d.pattern_type {
                pattern::LITERAL => a.pattern_type == pattern::LITERAL && d.name == a.name,
                pattern::PREFIXED => a.name.starts_with(&d.name),
                _ => false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(name: &str, pattern_type: i8, principal: &str, operation: i8, permission: i8) -> Acl {
        Acl { resource_type: resource::TOPIC, name: name.into(), pattern_type, principal: principal.into(), host: "*".into(), operation, permission }
    }

    #[test]
    fn filters_and_decisions_are_kafkas() {
        let mut acls = Acls::default();
        acls.acls.insert(acl("orders", pattern::LITERAL, "User:bob", op::READ, permission::ALLOW));
        acls.acls.insert(acl("ord", pattern::PREFIXED, "User:bob", op::WRITE, permission::ALLOW));
        acls.acls.insert(acl("*", pattern::LITERAL, "User:eve", op::ALL, permission::DENY));
        let f = |name: Option<&str>, pattern_type| Filter {
            resource_type: resource::TOPIC,
            name: name.map(str::to_owned),
            pattern_type,
            principal: None,
            host: None,
            operation: op::ANY,
            permission: permission::ANY,
        };
        assert_eq!(acls.matching(&f(Some("orders"), pattern::MATCH)).count(), 3, "literal, prefix and wildcard apply");
        assert_eq!(acls.matching(&f(Some("orders"), pattern::LITERAL)).count(), 1);
        assert_eq!(acls.matching(&f(Some("ord"), pattern::ANY)).count(), 1);
        assert_eq!(acls.matching(&f(None, pattern::ANY)).count(), 3);
        assert!(acls.allows("User:bob", "1.2.3.4", op::READ, resource::TOPIC, "orders"));
        assert!(acls.allows("User:bob", "1.2.3.4", op::DESCRIBE, resource::TOPIC, "orders"), "READ implies DESCRIBE");
        assert!(acls.allows("User:bob", "1.2.3.4", op::WRITE, resource::TOPIC, "ordinary"));
        assert!(!acls.allows("User:bob", "1.2.3.4", op::DELETE, resource::TOPIC, "orders"));
        assert!(!acls.allows("User:eve", "1.2.3.4", op::READ, resource::TOPIC, "orders"));
        assert!(!acls.allows("User:alice", "1.2.3.4", op::DESCRIBE, resource::TOPIC, "orders"), "no ACL: denied");
        assert!(validate(&acl("x", pattern::MATCH, "User:bob", op::READ, permission::ALLOW)).is_err());
        assert!(validate(&acl("x", pattern::LITERAL, "bob", op::READ, permission::ALLOW)).is_err());
        assert!(acls.allows_any("User:bob", "1.2.3.4", op::WRITE, resource::TOPIC), "WRITE on a prefix");
        assert!(!acls.allows_any("User:alice", "1.2.3.4", op::WRITE, resource::TOPIC), "no ALLOW at all");
        assert!(!acls.allows_any("User:eve", "1.2.3.4", op::WRITE, resource::TOPIC), "the wildcard DENY");
        acls.acls.insert(acl("or", pattern::PREFIXED, "User:bob", op::WRITE, permission::DENY));
        assert!(!acls.allows_any("User:bob", "1.2.3.4", op::WRITE, resource::TOPIC), "a shorter prefix DENY covers the ALLOW");
        assert_eq!(acls.remove(&f(Some("orders"), pattern::MATCH)).len(), 4);
    }
}
