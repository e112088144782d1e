//! Delegation tokens (KIP-48), as `kafka-delegation-tokens.sh` handles them: create, renew,
//! expire, describe. The broker issues them only over an authenticated (SASL or mutual TLS)
//! connection.

use kwire::messages::{
    create_delegation_token_request::CreatableRenewers, describe_delegation_token_request::DescribeDelegationTokenOwner, CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest, ExpireDelegationTokenRequest, RenewDelegationTokenRequest,
};
use kwire::Bytes;

use super::{bs, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;

/// A delegation token: its id and HMAC (the secret a client authenticates with, as SCRAM
/// credentials), and its times.
#[derive(Clone, PartialEq, Eq)]
pub struct DelegationToken {
    /// The token id.
    pub token_id: String,
    /// The HMAC.
    pub hmac: Bytes,
    /// The owner, e.g. `User:alice`.
    pub owner: String,
    /// Who asked for it.
    pub requester: String,
    /// The principals that may renew it.
    pub renewers: Vec<String>,
    /// When it was issued (ms since the epoch).
    pub issue_timestamp_ms: i64,
    /// When it expires unless renewed.
    pub expiry_timestamp_ms: i64,
    /// When it expires at the latest.
    pub max_timestamp_ms: i64,
}

impl std::fmt::Debug for DelegationToken {
    // The HMAC is a secret: kept out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegationToken")
            .field("token_id", &self.token_id)
            .field("owner", &self.owner)
            .field("requester", &self.requester)
            .field("renewers", &self.renewers)
            .field("issue_timestamp_ms", &self.issue_timestamp_ms)
            .field("expiry_timestamp_ms", &self.expiry_timestamp_ms)
            .field("max_timestamp_ms", &self.max_timestamp_ms)
            .finish_non_exhaustive()
    }
}

/// `Type:name` split at the first colon (a principal without one is a `User`).
fn principal(p: &str) -> (&str, &str) {
    p.split_once(':').unwrap_or(("User", p))
}

impl Admin {
    /// Creates a delegation token for the connection's principal (or, with `owner`, for that
    /// principal: KIP-373), renewable by `renewers` (`User:bob`), living at most
    /// `max_lifetime_ms` (-1: the broker's `delegation.token.max.lifetime.ms`).
    pub fn create_delegation_token<'a>(
        &'a self,
        owner: Option<&'a str>,
        renewers: &'a [&'a str],
        max_lifetime_ms: i64,
    ) -> ClientFuture<'a, Result<DelegationToken>> {
        ClientFuture::boxed(self.create_delegation_token_boxed(owner, renewers, max_lifetime_ms))
    }

    async fn create_delegation_token_boxed(&self, owner: Option<&str>, renewers: &[&str], max_lifetime_ms: i64) -> Result<DelegationToken> {
        let request = CreateDelegationTokenRequest {
            owner_principal_type: owner.map(|o| bs(principal(o).0)),
            owner_principal_name: owner.map(|o| bs(principal(o).1)),
            renewers: renewers
                .iter()
                .map(|r| CreatableRenewers { principal_type: bs(principal(r).0), principal_name: bs(principal(r).1), ..Default::default() })
                .collect(),
            max_lifetime_ms,
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "create a delegation token".into())?;
        Ok(DelegationToken {
            token_id: r.token_id.to_string(),
            hmac: r.hmac.clone(),
            owner: format!("{}:{}", r.principal_type, r.principal_name),
            requester: format!("{}:{}", r.token_requester_principal_type, r.token_requester_principal_name),
            renewers: renewers.iter().map(|r| format!("{}:{}", principal(r).0, principal(r).1)).collect(),
            issue_timestamp_ms: r.issue_timestamp_ms,
            expiry_timestamp_ms: r.expiry_timestamp_ms,
            max_timestamp_ms: r.max_timestamp_ms,
        })
    }

    /// Renews the token with this HMAC for `period_ms` more (-1: the broker's renew
    /// interval); its new expiry time.
    pub fn renew_delegation_token<'a>(&'a self, hmac: &'a Bytes, period_ms: i64) -> ClientFuture<'a, Result<i64>> {
        ClientFuture::boxed(self.renew_delegation_token_boxed(hmac, period_ms))
    }

    async fn renew_delegation_token_boxed(&self, hmac: &Bytes, period_ms: i64) -> Result<i64> {
        let request = RenewDelegationTokenRequest { hmac: hmac.clone(), renew_period_ms: period_ms, ..Default::default() };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "renew a delegation token".into())?;
        Ok(r.expiry_timestamp_ms)
    }

    /// Expires the token with this HMAC in `period_ms` (-1 or 0: at once); its new expiry
    /// time.
    pub fn expire_delegation_token<'a>(&'a self, hmac: &'a Bytes, period_ms: i64) -> ClientFuture<'a, Result<i64>> {
        ClientFuture::boxed(self.expire_delegation_token_boxed(hmac, period_ms))
    }

    async fn expire_delegation_token_boxed(&self, hmac: &Bytes, period_ms: i64) -> Result<i64> {
        let request = ExpireDelegationTokenRequest { hmac: hmac.clone(), expiry_time_period_ms: period_ms, ..Default::default() };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "expire a delegation token".into())?;
        Ok(r.expiry_timestamp_ms)
    }

    /// The tokens of these owners (`User:alice`; every token the connection may see when
    /// `None`).
    pub fn describe_delegation_tokens<'a>(&'a self, owners: Option<&'a [&'a str]>) -> ClientFuture<'a, Result<Vec<DelegationToken>>> {
        ClientFuture::boxed(self.describe_delegation_tokens_boxed(owners))
    }

    async fn describe_delegation_tokens_boxed(&self, owners: Option<&[&str]>) -> Result<Vec<DelegationToken>> {
        let request = DescribeDelegationTokenRequest {
            owners: owners.map(|os| {
                os.iter()
                    .map(|o| DescribeDelegationTokenOwner { principal_type: bs(principal(o).0), principal_name: bs(principal(o).1), ..Default::default() })
                    .collect()
            }),
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "describe delegation tokens".into())?;
        Ok(r.tokens
            .iter()
            .map(|t| DelegationToken {
                token_id: t.token_id.to_string(),
                hmac: t.hmac.clone(),
                owner: format!("{}:{}", t.principal_type, t.principal_name),
                requester: format!("{}:{}", t.token_requester_principal_type, t.token_requester_principal_name),
                renewers: t.renewers.iter().map(|r| format!("{}:{}", r.principal_type, r.principal_name)).collect(),
                issue_timestamp_ms: t.issue_timestamp,
                expiry_timestamp_ms: t.expiry_timestamp,
                max_timestamp_ms: t.max_timestamp,
            })
            .collect())
    }
}
