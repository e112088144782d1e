//! Delegation tokens (KIP-48, Kafka's `DelegationTokenManager`): each token's owner, requester,
//! renewers and times, its HMAC (HMAC-SHA512 of its id under `delegation.token.secret.key`), and
//! the SCRAM credentials a client authenticates with through it (`tokenauth=true`).

use std::collections::BTreeMap;

use crate::scram::{Credential, Mechanism, DEFAULT_ITERATIONS};

/// `delegation.token.max.lifetime.ms` (7 days) and `delegation.token.expiry.time.ms` (1 day).
pub(crate) const MAX_LIFETIME_MS: i64 = 7 * 24 * 3_600_000;
pub(crate) const RENEW_INTERVAL_MS: i64 = 24 * 3_600_000;

/// One token.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub(crate) id: String,
    pub(crate) hmac: Vec<u8>,
    /// `User:NAME`.
    pub(crate) owner: String,
    pub(crate) requester: String,
    pub(crate) renewers: Vec<String>,
    pub(crate) issue_ms: i64,
    pub(crate) expiry_ms: i64,
    pub(crate) max_ms: i64,
    /// Its SCRAM credentials, the HMAC's base64 as the password.
    pub(crate) credentials: BTreeMap<Mechanism, Credential>,
}

/// Every token, by id.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    pub(crate) by_id: BTreeMap<String, Token>,
}

impl Tokens {
    pub(crate) fn by_hmac(&self, hmac: &[u8]) -> Option<&Token> {
        self.by_id.values().find(|t| t.hmac == hmac)
    }

    /// The credential a client authenticates with as token `id` (not expired).
    pub(crate) fn scram_credential(&self, id: &str, mechanism: Mechanism, now_ms: i64) -> Option<Credential> {
        let t = self.by_id.get(id).filter(|t| t.expiry_ms >= now_ms)?;
        t.credentials.get(&mechanism).cloned()
    }

    /// Who authenticating with token `id` is: its owner.
    pub(crate) fn owner(&self, id: &str) -> Option<String> {
        self.by_id.get(id).map(|t| t.owner.clone())
    }

    /// Drops tokens past their expiry (the manager's expiry check).
    pub(crate) fn expire(&mut self, now_ms: i64) {
        self.by_id.retain(|_, t| t.expiry_ms >= now_ms);
    }
}

/// The token's SCRAM credentials: for each mechanism, a random salt and the HMAC (base64) as
/// the password, as `DelegationTokenManager.updateToken` derives them.
pub(crate) fn credentials(rng: &mut fastrand::Rng, hmac: &[u8]) -> BTreeMap<Mechanism, Credential> {
    use base64::Engine;
    let password = base64::engine::general_purpose::STANDARD.encode(hmac);
    Mechanism::ALL
        .into_iter()
        .map(|m| {
            let salt = crate::scram::random_bytes(rng, 16);
            (m, Credential::from_password(m, &password, &salt, DEFAULT_ITERATIONS))
        })
        .collect()
}
