//! SCRAM (RFC 5802, RFC 7677): the credentials a broker stores per user and mechanism (Kafka's
//! `ScramCredential`: salt, iterations, stored and server keys, never the password), and the
//! server's side of the SASL exchange.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The iterations `kafka-storage format --add-scram` uses by default.
pub(crate) const DEFAULT_ITERATIONS: i32 = 4096;
/// Kafka's bounds on iterations (`ScramMechanism.minIterations` / `maxIterations`).
pub(crate) const MIN_ITERATIONS: i32 = 4096;
pub(crate) const MAX_ITERATIONS: i32 = 16384;

/// A SCRAM hash function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mechanism {
    Sha256,
    Sha512,
}

impl Mechanism {
    pub(crate) const ALL: [Mechanism; 2] = [Mechanism::Sha256, Mechanism::Sha512];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mechanism::Sha256 => "SCRAM-SHA-256",
            Mechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The number the credential apis use (`ScramMechanism.type`).
    pub(crate) fn kafka_type(self) -> i8 {
        match self {
            Mechanism::Sha256 => 1,
            Mechanism::Sha512 => 2,
        }
    }

    pub(crate) fn from_type(t: i8) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.kafka_type() == t)
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes a key of any length: new_from_slice does not fail.
        match self {
            Mechanism::Sha256 => match <Hmac<Sha256> as Mac>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
            Mechanism::Sha512 => match <Hmac<Sha512> as Mac>::new_from_slice(key) {
                Ok(mut mac) => {
                    mac.update(data);
                    mac.finalize().into_bytes().to_vec()
                }
                Err(_) => Vec::new(),
            },
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Mechanism::Sha256 => Sha256::digest(data).to_vec(),
            Mechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi(password, salt, iterations)`, PBKDF2 with this hash's HMAC.
    pub(crate) fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let rounds = u32::try_from(iterations).unwrap_or(1).max(1);
        match self {
            Mechanism::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, &mut out);
                out
            }
            Mechanism::Sha512 => {
                let mut out = vec![0; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, rounds, &mut out);
                out
            }
        }
    }
}

/// What a broker keeps of a SCRAM password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Credential {
    pub(crate) salt: Vec<u8>,
    pub(crate) iterations: i32,
    pub(crate) stored_key: Vec<u8>,
    pub(crate) server_key: Vec<u8>,
}

impl Credential {
    /// From the salted password (what AlterUserScramCredentials carries).
    pub(crate) fn from_salted(mechanism: Mechanism, salt: &[u8], salted: &[u8], iterations: i32) -> Credential {
        let client_key = mechanism.hmac(salted, b"Client Key");
        Credential { salt: salt.to_vec(), iterations, stored_key: mechanism.hash(&client_key), server_key: mechanism.hmac(salted, b"Server Key") }
    }

    pub(crate) fn from_password(mechanism: Mechanism, password: &str, salt: &[u8], iterations: i32) -> Credential {
        Credential::from_salted(mechanism, salt, &mechanism.salted_password(password.as_bytes(), salt, iterations), iterations)
    }
}

/// The server's half of a SCRAM nonce (printable, no comma), from the cluster's generator.
pub(crate) fn nonce(rng: &mut fastrand::Rng) -> String {
    (0..24).map(|_| rng.alphanumeric()).collect()
}

/// Random bytes from the cluster's generator (salts).
pub(crate) fn random_bytes(rng: &mut fastrand::Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.u8(..)).collect()
}

/// Every user's SCRAM credentials (the cluster metadata's `UserScramCredentialRecord`s).
#[derive(Debug, Default)]
pub(crate) struct ScramCredentials {
    pub(crate) users: BTreeMap<String, BTreeMap<Mechanism, Credential>>,
}

impl ScramCredentials {
    pub(crate) fn get(&self, user: &str, mechanism: Mechanism) -> Option<&Credential> {
        self.users.get(user)?.get(&mechanism)
    }
}

/// A SCRAM exchange after the client-first message: what the client-final message is checked
/// against.
#[derive(Debug)]
pub(crate) struct Exchange {
    mechanism: Mechanism,
    /// The authenticated name (a user, or a delegation token's id with `token_auth`).
    pub(crate) user: String,
    /// The client asked to authenticate with a delegation token (`tokenauth=true`).
    pub(crate) token_auth: bool,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    credential: Credential,
}

/// Why an exchange failed: the message the broker answers with.
pub(crate) type Failure = String;

/// The SCRAM `saslname` unescaped (`=2C` is `,`, `=3D` is `=`).
fn unescape(name: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        out.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// The server's answer to the client-first message (`n,,n=user,r=nonce[,ext]`), given how to
/// find a credential (`(name, token_auth)`) and the server's half of the nonce.
pub(crate) fn server_first(
    mechanism: Mechanism,
    message: &[u8],
    find: impl Fn(&str, bool) -> Option<Credential>,
    server_nonce: &str,
) -> Result<(Exchange, String), Failure> {
    let invalid = || format!("Authentication failed: invalid SCRAM client-first message with SASL mechanism {}", mechanism.name());
    let text = std::str::from_utf8(message).map_err(|_| invalid())?;
    // gs2-header: a channel-binding flag (no binding: `n` or `y`) and an optional authzid.
    let mut parts = text.splitn(3, ',');
    let (Some(cb), Some(authzid), Some(bare)) = (parts.next(), parts.next(), parts.next()) else { return Err(invalid()) };
    if cb != "n" && cb != "y" {
        return Err(invalid());
    }
    let mut user = None;
    let mut nonce = None;
    let mut token_auth = false;
    for attr in bare.split(',') {
        if let Some(v) = attr.strip_prefix("n=") {
            user = unescape(v);
        } else if let Some(v) = attr.strip_prefix("r=") {
            nonce = Some(v.to_owned());
        } else if attr == "tokenauth=true" {
            token_auth = true;
        } else if attr.starts_with("m=") {
            // Mandatory extensions are not supported (RFC 5802, 5.1).
            return Err(invalid());
        }
    }
    let (Some(user), Some(nonce)) = (user, nonce) else { return Err(invalid()) };
    if nonce.is_empty() {
        return Err(invalid());
    }
    // An authorization id other than the user itself is refused, as Kafka does.
    if let Some(a) = authzid.strip_prefix("a=") {
        if unescape(a).as_deref() != Some(user.as_str()) {
            return Err("Authentication failed: Client requested an authorization id that is different from username".into());
        }
    } else if !authzid.is_empty() {
        return Err(invalid());
    }
    let Some(credential) = find(&user, token_auth) else {
        return Err(format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", mechanism.name()));
    };
    let combined = format!("{nonce}{server_nonce}");
    let server_first = format!("r={combined},s={},i={}", B64.encode(&credential.salt), credential.iterations);
    let exchange = Exchange {
        mechanism,
        user,
        token_auth,
        gs2_header: format!("{cb},{authzid},"),
        client_first_bare: bare.to_owned(),
        server_first: server_first.clone(),
        nonce: combined,
        credential,
    };
    Ok((exchange, server_first))
}

impl Exchange {
    /// Checks the client-final message (`c=...,r=...,p=proof`); the server-final message
    /// (`v=signature`) when the proof is right.
    pub(crate) fn server_final(&self, message: &[u8]) -> Result<String, Failure> {
        let failed = || format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", self.mechanism.name());
        let text = std::str::from_utf8(message).map_err(|_| failed())?;
        let Some((without_proof, proof)) = text.rsplit_once(",p=") else { return Err(failed()) };
        let attr = |k: &str| without_proof.split(',').find_map(|a| a.strip_prefix(k));
        if attr("c=").and_then(|c| B64.decode(c).ok()).as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(failed());
        }
        if attr("r=") != Some(self.nonce.as_str()) {
            return Err("Authentication failed: Invalid client nonce in the final client message.".into());
        }
        let proof = B64.decode(proof).map_err(|_| failed())?;
        let auth_message = format!("{},{},{without_proof}", self.client_first_bare, self.server_first);
        let signature = self.mechanism.hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err(failed());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        if self.mechanism.hash(&client_key) != self.credential.stored_key {
            return Err(failed());
        }
        let server_signature = self.mechanism.hmac(&self.credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677, section 3: the server's side of the example exchange.
    #[test]
    fn rfc7677_exchange() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = Credential::from_password(Mechanism::Sha256, "pencil", &salt, 4096);
        let (exchange, first) = server_first(
            Mechanism::Sha256,
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            |u, _| (u == "user").then(|| credential.clone()),
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        )
        .unwrap();
        assert_eq!(first, "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
        let last =
            exchange.server_final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=").unwrap();
        assert_eq!(last, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
        assert!(exchange.server_final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAAZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=").is_err());
        assert!(server_first(Mechanism::Sha256, b"n,,n=nobody,r=abc", |u, _| (u == "user").then(|| credential.clone()), "x").is_err());
        assert_eq!(unescape("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
    }
}
