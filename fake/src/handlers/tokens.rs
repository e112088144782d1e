//! CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
//! DescribeDelegationToken (KIP-48, Kafka's `DelegationTokenManager`): refused without
//! `delegation.token.secret.key` (DELEGATION_TOKEN_AUTH_DISABLED) and on connections that are
//! not SASL-authenticated or were authenticated by a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).

use kwire::messages::{
    describe_delegation_token_response::{DescribedDelegationToken, DescribedDelegationTokenRenewer},
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest, DescribeDelegationTokenResponse, ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse, RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};
use kwire::{Bytes, ErrorCode};

use super::{s, Ctx};
use crate::acl::{op, resource};
use crate::scram::Mechanism;
use crate::tokens::{Token, MAX_LIFETIME_MS, RENEW_INTERVAL_MS};

/// Why this connection may not use the token apis, if it may not.
fn refused(ctx: &Ctx<'_>) -> Option<ErrorCode> {
    if ctx.inner.config.delegation_token_secret.is_none() {
        return Some(ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED);
    }
    // SASL_PLAINTEXT or SASL_SSL (an SSL listener's principal is anonymous: one-way TLS).
    let sasl = ctx.inner.needs_sasl(ctx.listener);
    (!sasl || ctx.token_auth).then_some(ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
}

/// `Type:name` split (a principal without a colon is a user).
fn split(principal: &str) -> (&str, &str) {
    principal.split_once(':').unwrap_or(("User", principal))
}

/// The token's HMAC: HMAC-SHA512 of its id under the secret.
fn hmac(secret: &str, id: &str) -> Vec<u8> {
    Mechanism::Sha512.hmac(secret.as_bytes(), id.as_bytes())
}

pub(super) fn create(ctx: &Ctx<'_>, req: &CreateDelegationTokenRequest) -> CreateDelegationTokenResponse {
    let (ptype, pname) = split(ctx.principal);
    // The requester fields are v3+.
    let v3 = ctx.version >= 3;
    let mut response = CreateDelegationTokenResponse { principal_type: s(ptype), principal_name: s(pname), ..Default::default() };
    if v3 {
        response.token_requester_principal_type = s(ptype);
        response.token_requester_principal_name = s(pname);
    }
    if let Some(code) = refused(ctx) {
        response.error_code = code.0;
        return response;
    }
    let owner = match (req.owner_principal_type.as_deref(), req.owner_principal_name.as_deref()) {
        (Some(t), Some(n)) if !n.is_empty() => format!("{t}:{n}"),
        _ => ctx.principal.to_owned(),
    };
    if req.renewers.iter().any(|r| &*r.principal_type != "User") || !owner.starts_with("User:") {
        response.error_code = ErrorCode::INVALID_PRINCIPAL_TYPE.0;
        return response;
    }
    // A token for another owner needs CREATE_TOKENS on that user.
    if owner != ctx.principal && !ctx.authorized(op::CREATE_TOKENS, resource::USER, split(&owner).1) {
        response.error_code = ErrorCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED.0;
        return response;
    }
    let secret = ctx.inner.config.delegation_token_secret.clone().unwrap_or_default();
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    state.tokens.expire(now);
    let id = crate::groups::uuid_string(&mut state.rng);
    let hmac = hmac(&secret, &id);
    let lifetime = if req.max_lifetime_ms <= 0 { MAX_LIFETIME_MS } else { req.max_lifetime_ms.min(MAX_LIFETIME_MS) };
    let max_ms = now.saturating_add(lifetime);
    let credentials = crate::tokens::credentials(&mut state.rng, &hmac);
    let token = Token {
        id: id.clone(),
        hmac: hmac.clone(),
        owner: owner.clone(),
        requester: ctx.principal.to_owned(),
        renewers: req.renewers.iter().map(|r| format!("{}:{}", r.principal_type, r.principal_name)).collect(),
        issue_ms: now,
        expiry_ms: now.saturating_add(RENEW_INTERVAL_MS).min(max_ms),
        max_ms,
        credentials,
    };
    let (otype, oname) = split(&owner);
    response.principal_type = s(otype);
    response.principal_name = s(oname);
    response.issue_timestamp_ms = token.issue_ms;
    response.expiry_timestamp_ms = token.expiry_ms;
    response.max_timestamp_ms = token.max_ms;
    response.token_id = s(&id);
    response.hmac = Bytes::from(hmac);
    state.tokens.by_id.insert(id, token);
    response
}

/// May `principal` renew or expire `token`: its owner, its requester or a renewer.
fn may_renew(principal: &str, token: &Token) -> bool {
    token.owner == principal || token.requester == principal || token.renewers.iter().any(|r| r == principal)
}

/// Renews (`Some(period)`) or expires a token; its new expiry time.
fn change(ctx: &Ctx<'_>, hmac: &[u8], renew: bool, period: i64) -> Result<i64, ErrorCode> {
    if let Some(code) = refused(ctx) {
        return Err(code);
    }
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    state.tokens.expire(now);
    let token = state.tokens.by_hmac(hmac).ok_or(ErrorCode::DELEGATION_TOKEN_NOT_FOUND)?;
    if !may_renew(ctx.principal, token) {
        return Err(ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH);
    }
    if token.max_ms < now || token.expiry_ms < now {
        return Err(ErrorCode::DELEGATION_TOKEN_EXPIRED);
    }
    let id = token.id.clone();
    let max = token.max_ms;
    if !renew && period < 0 {
        // A negative period expires the token now.
        state.tokens.by_id.remove(&id);
        return Ok(now);
    }
    let period = if renew && period < 0 { RENEW_INTERVAL_MS } else { period };
    let expiry = now.saturating_add(period).min(max);
    if let Some(t) = state.tokens.by_id.get_mut(&id) {
        t.expiry_ms = expiry;
    }
    Ok(expiry)
}

pub(super) fn renew(ctx: &Ctx<'_>, req: &RenewDelegationTokenRequest) -> RenewDelegationTokenResponse {
    match change(ctx, &req.hmac, true, req.renew_period_ms) {
        Ok(expiry) => RenewDelegationTokenResponse { expiry_timestamp_ms: expiry, ..Default::default() },
        Err(code) => RenewDelegationTokenResponse { error_code: code.0, expiry_timestamp_ms: -1, ..Default::default() },
    }
}

pub(super) fn expire(ctx: &Ctx<'_>, req: &ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse {
    match change(ctx, &req.hmac, false, req.expiry_time_period_ms) {
        Ok(expiry) => ExpireDelegationTokenResponse { expiry_timestamp_ms: expiry, ..Default::default() },
        Err(code) => ExpireDelegationTokenResponse { error_code: code.0, expiry_timestamp_ms: -1, ..Default::default() },
    }
}

pub(super) fn describe(ctx: &Ctx<'_>, req: &DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse {
    if let Some(code) = refused(ctx) {
        return DescribeDelegationTokenResponse { error_code: code.0, ..Default::default() };
    }
    let owners: Option<Vec<String>> = req.owners.as_ref().map(|o| o.iter().map(|p| format!("{}:{}", p.principal_type, p.principal_name)).collect());
    let now = ctx.inner.now_ms();
    let visible: Vec<Token> = {
        let mut state = ctx.inner.state();
        state.tokens.expire(now);
        state.tokens.by_id.values().filter(|t| owners.as_ref().is_none_or(|o| o.contains(&t.owner))).cloned().collect()
    };
    // A principal sees its own tokens, those it may renew, and those it may describe.
    let tokens = visible
        .into_iter()
        .filter(|t| may_renew(ctx.principal, t) || ctx.authorized(op::DESCRIBE, resource::DELEGATION_TOKEN, &t.id))
        .map(|t| {
            let (otype, oname) = split(&t.owner);
            let (rtype, rname) = split(&t.requester);
            let v3 = ctx.version >= 3;
            DescribedDelegationToken {
                principal_type: s(otype),
                principal_name: s(oname),
                token_requester_principal_type: if v3 { s(rtype) } else { Default::default() },
                token_requester_principal_name: if v3 { s(rname) } else { Default::default() },
                issue_timestamp: t.issue_ms,
                expiry_timestamp: t.expiry_ms,
                max_timestamp: t.max_ms,
                token_id: s(&t.id),
                hmac: Bytes::from(t.hmac.clone()),
                renewers: t
                    .renewers
                    .iter()
                    .map(|r| {
                        let (ty, n) = split(r);
                        DescribedDelegationTokenRenewer { principal_type: s(ty), principal_name: s(n), ..Default::default() }
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    DescribeDelegationTokenResponse { tokens, ..Default::default() }
}
