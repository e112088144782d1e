//! SASL mechanisms: PLAIN (RFC 4616), SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) and
//! OAUTHBEARER (RFC 7628), as Kafka speaks them inside SaslAuthenticate requests (after
//! SaslHandshake v1).

mod oauthbearer;
mod scram;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

pub(crate) use oauthbearer::{refusal, ERROR_ACKNOWLEDGEMENT};
pub use oauthbearer::{OAuthBearer, OAuthBearerToken, RefreshPolicy, TokenFuture, TokenProvider};
pub(crate) use scram::ScramClient;
pub use scram::ScramMechanism;

/// The SASL mechanism and credentials to authenticate with.
#[derive(Clone)]
pub enum Sasl {
    /// SASL/PLAIN: the password goes to the broker as is (use TLS).
    Plain {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// SASL/SCRAM: the password never leaves the client; the broker proves it knows it too.
    Scram {
        /// SHA-256 or SHA-512.
        mechanism: ScramMechanism,
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// SASL/SCRAM with a delegation token (KIP-48): the token id as the user name, its HMAC
    /// (base64) as the password, and the `tokenauth=true` extension; the broker authenticates
    /// the connection as the token's owner.
    DelegationToken {
        /// SHA-256 or SHA-512 (a mechanism the listener enables).
        mechanism: ScramMechanism,
        /// The token id.
        token_id: String,
        /// The token's HMAC, base64 as Kafka's tools print it.
        hmac_base64: String,
    },
    /// SASL/OAUTHBEARER (KIP-255): a bearer token (a JWT for Kafka's OIDC validator, KIP-768) from
    /// a [`TokenProvider`], refreshed before it expires; connections re-authenticate (KIP-368)
    /// with the current token when the broker's session lifetime ends.
    OAuthBearer(OAuthBearer),
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password nor the token.
        match self {
            Sasl::OAuthBearer(o) => write!(f, "Sasl(OAUTHBEARER, {o:?})"),
            _ => write!(f, "Sasl({} as {:?})", self.mechanism_name(), self.username()),
        }
    }
}

impl Sasl {
    /// SASL/PLAIN.
    pub fn plain(username: impl Into<String>, password: impl Into<String>) -> Sasl {
        Sasl::Plain { username: username.into(), password: password.into() }
    }

    /// SASL/SCRAM-SHA-256.
    pub fn scram_sha256(username: impl Into<String>, password: impl Into<String>) -> Sasl {
        Sasl::Scram { mechanism: ScramMechanism::Sha256, username: username.into(), password: password.into() }
    }

    /// SASL/SCRAM-SHA-512.
    pub fn scram_sha512(username: impl Into<String>, password: impl Into<String>) -> Sasl {
        Sasl::Scram { mechanism: ScramMechanism::Sha512, username: username.into(), password: password.into() }
    }

    /// SASL/SCRAM with a delegation token (as [`Admin::create_delegation_token`](crate::Admin::create_delegation_token)
    /// returns it).
    pub fn delegation_token(mechanism: ScramMechanism, token: &crate::DelegationToken) -> Sasl {
        Sasl::DelegationToken { mechanism, token_id: token.token_id.clone(), hmac_base64: B64.encode(&token.hmac) }
    }

    /// SASL/OAUTHBEARER with tokens from `provider` (see [`TokenProvider`]), refreshed by the
    /// default [`RefreshPolicy`]; [`OAuthBearer`] sets the policy and SASL extensions.
    pub fn oauthbearer(provider: impl TokenProvider + 'static) -> Sasl {
        Sasl::OAuthBearer(OAuthBearer::new(provider))
    }

    /// SASL/OAUTHBEARER with tokens from an OIDC token endpoint by the client-credentials grant
    /// (see [`OidcProvider`](crate::OidcProvider)).
    #[cfg(feature = "oidc")]
    pub fn oidc(config: crate::OidcConfig) -> Result<Sasl, crate::OAuthError> {
        Ok(Sasl::oauthbearer(crate::OidcProvider::new(config)?))
    }

    /// The mechanism's name as SaslHandshake carries it.
    pub fn mechanism_name(&self) -> &'static str {
        match self {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::Scram { mechanism, .. } | Sasl::DelegationToken { mechanism, .. } => mechanism.name(),
            Sasl::OAuthBearer(_) => "OAUTHBEARER",
        }
    }

    /// The user name (empty for OAUTHBEARER, whose principal is the token's).
    pub fn username(&self) -> &str {
        match self {
            Sasl::Plain { username, .. } | Sasl::Scram { username, .. } => username,
            Sasl::DelegationToken { token_id, .. } => token_id,
            Sasl::OAuthBearer(_) => "",
        }
    }
}

/// Random bytes from the operating system.
pub(crate) fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0; n];
    getrandom::getrandom(&mut buf).map_err(|e| format!("no random bytes: {e}"))?;
    Ok(buf)
}
