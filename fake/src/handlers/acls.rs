//! CreateAcls, DescribeAcls and DeleteAcls (Kafka's `AclApis` over `AclControlManager`):
//! SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without ALTER
//! (DESCRIBE for DescribeAcls) on the cluster, and bindings validated as the controller does.

use kwire::messages::{
    create_acls_response::AclCreationResult,
    delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl},
    describe_acls_response::{AclDescription, DescribeAclsResource},
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource, Acl, Filter, CLUSTER_NAME};

const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// The error every result of the request carries, if it is refused whole.
fn refused(ctx: &Ctx<'_>, operation: i8) -> Option<(ErrorCode, &'static str)> {
    if !ctx.inner.config.acl_authorizer {
        return Some((ErrorCode::SECURITY_DISABLED, NO_AUTHORIZER));
    }
    if !ctx.authorized(operation, resource::CLUSTER, CLUSTER_NAME) {
        return Some((ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."));
    }
    None
}

pub(super) fn create_acls(ctx: &Ctx<'_>, req: &CreateAclsRequest) -> CreateAclsResponse {
    let result =
        |code: ErrorCode, message: Option<String>| AclCreationResult { error_code: code.0, error_message: message.as_deref().map(s), ..Default::default() };
    if let Some((code, message)) = refused(ctx, op::ALTER) {
        return CreateAclsResponse { results: req.creations.iter().map(|_| result(code, Some(message.to_owned()))).collect(), ..Default::default() };
    }
    let mut state = ctx.inner.state();
    let results = req
        .creations
        .iter()
        .map(|c| {
            let acl = Acl {
                resource_type: c.resource_type,
                name: c.resource_name.to_string(),
                pattern_type: c.resource_pattern_type,
                principal: c.principal.to_string(),
                host: c.host.to_string(),
                operation: c.operation,
                permission: c.permission_type,
            };
            match crate::acl::validate(&acl) {
                Ok(()) => {
                    state.acls.acls.insert(acl);
                    result(ErrorCode::NONE, None)
                }
                Err(why) => result(ErrorCode::INVALID_REQUEST, Some(why)),
            }
        })
        .collect();
    CreateAclsResponse { results, ..Default::default() }
}

pub(super) fn describe_acls(ctx: &Ctx<'_>, req: &DescribeAclsRequest) -> DescribeAclsResponse {
    if let Some((code, message)) = refused(ctx, op::DESCRIBE) {
        return DescribeAclsResponse { error_code: code.0, error_message: Some(s(message)), ..Default::default() };
    }
    let filter = Filter {
        resource_type: req.resource_type_filter,
        name: req.resource_name_filter.as_deref().map(str::to_owned),
        pattern_type: req.pattern_type_filter,
        principal: req.principal_filter.as_deref().map(str::to_owned),
        host: req.host_filter.as_deref().map(str::to_owned),
        operation: req.operation,
        permission: req.permission_type,
    };
    if filter.is_unknown() {
        return DescribeAclsResponse {
            error_code: ErrorCode::INVALID_REQUEST.0,
            error_message: Some(s("The filter has an unknown field")),
            ..Default::default()
        };
    }
    let state = ctx.inner.state();
    // One entry per resource pattern, its ACLs beneath.
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for a in state.acls.matching(&filter) {
        let entry =
            AclDescription { principal: s(&a.principal), host: s(&a.host), operation: a.operation, permission_type: a.permission, ..Default::default() };
        match resources.iter_mut().find(|r| r.resource_type == a.resource_type && *r.resource_name == *a.name && r.pattern_type == a.pattern_type) {
            Some(r) => r.acls.push(entry),
            None => resources.push(DescribeAclsResource {
                resource_type: a.resource_type,
                resource_name: s(&a.name),
                pattern_type: a.pattern_type,
                acls: vec![entry],
                ..Default::default()
            }),
        }
    }
    DescribeAclsResponse { resources, ..Default::default() }
}

pub(super) fn delete_acls(ctx: &Ctx<'_>, req: &DeleteAclsRequest) -> DeleteAclsResponse {
    if let Some((code, message)) = refused(ctx, op::ALTER) {
        let filter_results =
            req.filters.iter().map(|_| DeleteAclsFilterResult { error_code: code.0, error_message: Some(s(message)), ..Default::default() }).collect();
        return DeleteAclsResponse { filter_results, ..Default::default() };
    }
    let mut state = ctx.inner.state();
    let filter_results = req
        .filters
        .iter()
        .map(|f| {
            let filter = Filter {
                resource_type: f.resource_type_filter,
                name: f.resource_name_filter.as_deref().map(str::to_owned),
                pattern_type: f.pattern_type_filter,
                principal: f.principal_filter.as_deref().map(str::to_owned),
                host: f.host_filter.as_deref().map(str::to_owned),
                operation: f.operation,
                permission: f.permission_type,
            };
            if filter.is_unknown() {
                return DeleteAclsFilterResult {
                    error_code: ErrorCode::INVALID_REQUEST.0,
                    error_message: Some(s("The filter has an unknown field")),
                    ..Default::default()
                };
            }
            let matching_acls = state
                .acls
                .remove(&filter)
                .into_iter()
                .map(|a| DeleteAclsMatchingAcl {
                    resource_type: a.resource_type,
                    resource_name: s(&a.name),
                    pattern_type: a.pattern_type,
                    principal: s(&a.principal),
                    host: s(&a.host),
                    operation: a.operation,
                    permission_type: a.permission,
                    ..Default::default()
                })
                .collect();
            DeleteAclsFilterResult { matching_acls, ..Default::default() }
        })
        .collect();
    DeleteAclsResponse { filter_results, ..Default::default() }
}
