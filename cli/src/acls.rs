//! `kwire acls list|create|delete`, as `kafka-acls.sh` does them (`--list`, `--add`, `--remove`).

use std::io::Write;

use clap::{Args, Subcommand};
use kwire::runtime::json::serde_json::{json, Value};
use kwire_client::{AclBinding, AclBindingFilter, AclOperation, AclPermission, Admin, PatternType, ResourceType};

use crate::error::CliError;
use crate::format::{print_json, Table};

/// `kwire acls`.
#[derive(Subcommand, Debug)]
pub enum AclsCommand {
    /// Lists the ACLs matching the options (all of them without any).
    #[command(visible_alias = "describe")]
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// One JSON object per ACL: resourceType, resourceName, patternType, principal, host,
        /// operation, permission (Kafka's names: TOPIC, LITERAL, READ, ALLOW).
        #[arg(long)]
        json: bool,
    },
    /// Creates ACLs: one per principal, host and operation given.
    Create(CreateArgs),
    /// Deletes the ACLs matching the options; prints those deleted.
    Delete {
        #[command(flatten)]
        filter: FilterArgs,
        /// Deletes every ACL when no other option narrows it (refused otherwise, as a guard).
        #[arg(long)]
        all: bool,
        /// One JSON object per deleted ACL.
        #[arg(long)]
        json: bool,
    },
}

/// The resource an ACL is about, as `kafka-acls.sh` names it.
#[derive(Args, Debug, Default)]
#[group(multiple = false)]
pub struct ResourceArgs {
    /// A topic (`*` for every topic).
    #[arg(long)]
    pub topic: Option<String>,
    /// A consumer group.
    #[arg(long)]
    pub group: Option<String>,
    /// The cluster (resource name `kafka-cluster`).
    #[arg(long)]
    pub cluster: bool,
    /// A transactional id.
    #[arg(long)]
    pub transactional_id: Option<String>,
    /// A delegation token.
    #[arg(long)]
    pub delegation_token: Option<String>,
    /// A user principal (KIP-373: who may create tokens for whom), e.g. `User:bob`.
    #[arg(long)]
    pub user_principal: Option<String>,
}

impl ResourceArgs {
    fn resource(&self) -> Option<(ResourceType, String)> {
        let named = [
            (ResourceType::Topic, &self.topic),
            (ResourceType::Group, &self.group),
            (ResourceType::TransactionalId, &self.transactional_id),
            (ResourceType::DelegationToken, &self.delegation_token),
            (ResourceType::User, &self.user_principal),
        ];
        if self.cluster {
            // Kafka's single cluster resource is always named so.
            return Some((ResourceType::Cluster, "kafka-cluster".to_owned()));
        }
        named.into_iter().find_map(|(t, n)| n.clone().map(|n| (t, n)))
    }
}

/// Which ACLs `list` and `delete` apply to; an option left out matches anything.
#[derive(Args, Debug, Default)]
pub struct FilterArgs {
    #[command(flatten)]
    pub resource: ResourceArgs,
    /// How the resource name matches: literal, prefixed, any, or match (every ACL that applies
    /// to the name: literal, `*` and prefixes). Default: any for list, literal for delete.
    #[arg(long, value_name = "TYPE")]
    pub pattern_type: Option<String>,
    /// The principal, e.g. `User:alice`.
    #[arg(long)]
    pub principal: Option<String>,
    /// The host.
    #[arg(long)]
    pub host: Option<String>,
    /// The operation (read, write, create, delete, alter, describe, cluster-action,
    /// describe-configs, alter-configs, idempotent-write, create-tokens, describe-tokens, all).
    #[arg(long)]
    pub operation: Option<String>,
    /// allow or deny.
    #[arg(long)]
    pub permission: Option<String>,
}

/// `kwire acls create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    pub resource: ResourceArgs,
    /// literal (the default) or prefixed (every resource whose name starts with it).
    #[arg(long, value_name = "TYPE", default_value = "literal")]
    pub pattern_type: String,
    /// The principal, e.g. `User:alice`; repeatable.
    #[arg(long, required = true)]
    pub principal: Vec<String>,
    /// The host the principal connects from (default `*`, any); repeatable.
    #[arg(long)]
    pub host: Vec<String>,
    /// The operation (see `list --help`); repeatable.
    #[arg(long, required = true)]
    pub operation: Vec<String>,
    /// allow (the default) or deny.
    #[arg(long, default_value = "allow")]
    pub permission: String,
    /// One JSON object per ACL created.
    #[arg(long)]
    pub json: bool,
}

const RESOURCE_TYPES: &[(ResourceType, &str)] = &[
    (ResourceType::Any, "ANY"),
    (ResourceType::Topic, "TOPIC"),
    (ResourceType::Group, "GROUP"),
    (ResourceType::Cluster, "CLUSTER"),
    (ResourceType::TransactionalId, "TRANSACTIONAL_ID"),
    (ResourceType::DelegationToken, "DELEGATION_TOKEN"),
    (ResourceType::User, "USER"),
];
const PATTERN_TYPES: &[(PatternType, &str)] =
    &[(PatternType::Any, "ANY"), (PatternType::Match, "MATCH"), (PatternType::Literal, "LITERAL"), (PatternType::Prefixed, "PREFIXED")];
const OPERATIONS: &[(AclOperation, &str)] = &[
    (AclOperation::Any, "ANY"),
    (AclOperation::All, "ALL"),
    (AclOperation::Read, "READ"),
    (AclOperation::Write, "WRITE"),
    (AclOperation::Create, "CREATE"),
    (AclOperation::Delete, "DELETE"),
    (AclOperation::Alter, "ALTER"),
    (AclOperation::Describe, "DESCRIBE"),
    (AclOperation::ClusterAction, "CLUSTER_ACTION"),
    (AclOperation::DescribeConfigs, "DESCRIBE_CONFIGS"),
    (AclOperation::AlterConfigs, "ALTER_CONFIGS"),
    (AclOperation::IdempotentWrite, "IDEMPOTENT_WRITE"),
    (AclOperation::CreateTokens, "CREATE_TOKENS"),
    (AclOperation::DescribeTokens, "DESCRIBE_TOKENS"),
    (AclOperation::TwoPhaseCommit, "TWO_PHASE_COMMIT"),
];
const PERMISSIONS: &[(AclPermission, &str)] = &[(AclPermission::Any, "ANY"), (AclPermission::Deny, "DENY"), (AclPermission::Allow, "ALLOW")];

/// Kafka's name of a code (`TOPIC`, `READ`), or `UNKNOWN` for one this build does not know.
fn name_of<T: PartialEq + Copy>(table: &[(T, &'static str)], v: T) -> &'static str {
    table.iter().find(|(t, _)| *t == v).map_or("UNKNOWN", |(_, n)| n)
}

/// Parses a name as `kafka-acls.sh` and Kafka's enums spell it: `READ`, `Read`,
/// `DescribeConfigs`, `describe-configs`, `describe_configs` all name the same operation.
fn parse<T: Copy>(table: &[(T, &'static str)], s: &str, what: &str, allow_filters: bool) -> Result<T, CliError> {
    let norm = |x: &str| x.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect::<String>();
    let wanted = norm(s);
    table
        .iter()
        // ANY and MATCH only filter; an ACL must say what it is.
        .filter(|(_, n)| allow_filters || (*n != "ANY" && *n != "MATCH"))
        .find(|(_, n)| norm(n) == wanted)
        .map(|(t, _)| *t)
        .ok_or_else(|| {
            let names: Vec<String> =
                table.iter().filter(|(_, n)| allow_filters || (*n != "ANY" && *n != "MATCH")).map(|(_, n)| n.to_lowercase().replace('_', "-")).collect();
            CliError::Usage(format!("{what} {s:?}: expected one of {}", names.join(", ")))
        })
}

impl FilterArgs {
    fn is_empty(&self) -> bool {
        self.resource.resource().is_none()
            && self.pattern_type.is_none()
            && self.principal.is_none()
            && self.host.is_none()
            && self.operation.is_none()
            && self.permission.is_none()
    }

    fn filter(&self, default_pattern: PatternType) -> Result<AclBindingFilter, CliError> {
        let mut f = AclBindingFilter::any();
        if let Some((t, name)) = self.resource.resource() {
            f.resource_type = t;
            f.resource_name = Some(name);
            f.pattern_type = default_pattern;
        }
        if let Some(p) = &self.pattern_type {
            f.pattern_type = parse(PATTERN_TYPES, p, "--pattern-type", true)?;
        }
        f.principal = self.principal.clone();
        f.host = self.host.clone();
        if let Some(o) = &self.operation {
            f.operation = parse(OPERATIONS, o, "--operation", true)?;
        }
        if let Some(p) = &self.permission {
            f.permission = parse(PERMISSIONS, p, "--permission", true)?;
        }
        Ok(f)
    }
}

/// An ACL as JSON, with Kafka's names.
pub fn acl_json(a: &AclBinding) -> Value {
    json!({
        "resourceType": name_of(RESOURCE_TYPES, a.resource_type),
        "resourceName": a.resource_name,
        "patternType": name_of(PATTERN_TYPES, a.pattern_type),
        "principal": a.principal,
        "host": a.host,
        "operation": name_of(OPERATIONS, a.operation),
        "permission": name_of(PERMISSIONS, a.permission),
    })
}

fn print_acls(out: &mut impl Write, acls: &[AclBinding], json: bool) -> Result<(), CliError> {
    if json {
        for a in acls {
            print_json(out, &acl_json(a))?;
        }
        return Ok(());
    }
    let mut table = Table::new(&["RESOURCE-TYPE", "RESOURCE", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"]);
    for a in acls {
        table.row(vec![
            name_of(RESOURCE_TYPES, a.resource_type).to_owned(),
            a.resource_name.clone(),
            name_of(PATTERN_TYPES, a.pattern_type).to_owned(),
            a.principal.clone(),
            a.host.clone(),
            name_of(OPERATIONS, a.operation).to_owned(),
            name_of(PERMISSIONS, a.permission).to_owned(),
        ]);
    }
    table.write(out)
}

/// The ACLs `create` makes: every principal, host and operation combined.
fn bindings(a: &CreateArgs) -> Result<Vec<AclBinding>, CliError> {
    let (resource_type, resource_name) = a.resource.resource().ok_or_else(|| {
        CliError::Usage("acls create: which resource? --topic, --group, --cluster, --transactional-id, --delegation-token or --user-principal".into())
    })?;
    let pattern_type = parse(PATTERN_TYPES, &a.pattern_type, "--pattern-type", false)?;
    let permission = parse(PERMISSIONS, &a.permission, "--permission", false)?;
    let operations = a.operation.iter().map(|o| parse(OPERATIONS, o, "--operation", false)).collect::<Result<Vec<_>, _>>()?;
    let hosts = if a.host.is_empty() { vec!["*".to_owned()] } else { a.host.clone() };
    let mut out = Vec::new();
    for principal in &a.principal {
        if !principal.contains(':') {
            return Err(CliError::Usage(format!("--principal {principal:?}: expected TYPE:NAME, e.g. User:alice")));
        }
        for host in &hosts {
            for &operation in &operations {
                out.push(AclBinding {
                    resource_type,
                    resource_name: resource_name.clone(),
                    pattern_type,
                    principal: principal.clone(),
                    host: host.clone(),
                    operation,
                    permission,
                });
            }
        }
    }
    Ok(out)
}

/// Runs `kwire acls ...`.
pub async fn run(admin: &Admin, command: AclsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        AclsCommand::List { filter, json } => {
            let f = filter.filter(PatternType::Any)?;
            let acls = admin.describe_acls(&f).await.map_err(|e| CliError::kafka("listing ACLs", e))?;
            print_acls(out, &acls, json)
        }
        AclsCommand::Create(a) => {
            let acls = bindings(&a)?;
            let results = admin.create_acls(&acls).await.map_err(|e| CliError::kafka("creating ACLs", e))?;
            let mut created = Vec::new();
            let mut failed = 0;
            for (acl, r) in acls.into_iter().zip(results) {
                match r {
                    Ok(()) => created.push(acl),
                    Err(e) => {
                        failed += 1;
                        eprintln!("kwire: creating ACL {}: {e}", acl_json(&acl));
                    }
                }
            }
            print_acls(out, &created, a.json)?;
            if failed > 0 {
                return Err(CliError::Incomplete(format!("{failed} of {} ACL(s) not created", failed + created.len())));
            }
            Ok(())
        }
        AclsCommand::Delete { filter, all, json } => {
            if filter.is_empty() && !all {
                return Err(CliError::Usage(
                    "acls delete without a resource, principal, host, operation or permission deletes every ACL: add --all to mean it".into(),
                ));
            }
            let f = filter.filter(PatternType::Literal)?;
            let mut results = admin.delete_acls(&[f]).await.map_err(|e| CliError::kafka("deleting ACLs", e))?;
            match results.pop() {
                Some(Ok(deleted)) => print_acls(out, &deleted, json),
                Some(Err(e)) => Err(CliError::kafka("deleting ACLs", e)),
                None => Err(CliError::Incomplete("deleting ACLs: the broker answered no filter".into())),
            }
        }
    }
}
