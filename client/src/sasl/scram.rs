//! SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677): the client's side of the exchange, and
//! the salted password brokers store.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::random_bytes;

/// A SCRAM hash function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (RFC 7677).
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramMechanism {
    /// `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism's number in AlterUserScramCredentials / DescribeUserScramCredentials.
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        // HMAC takes keys of any length: new_from_slice cannot fail.
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi(password, salt, iterations)`: PBKDF2 with HMAC of this hash, the "salted password"
    /// that brokers store (and AlterUserScramCredentials takes).
    pub fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, iterations, &mut out);
                out
            }
            ScramMechanism::Sha512 => {
                let mut out = vec![0; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password.as_bytes(), salt, iterations, &mut out);
                out
            }
        }
    }
}

/// The most PBKDF2 iterations a server may ask for (Kafka allows 4096 to 16384): a hostile
/// server must not make the client spin.
const MAX_ITERATIONS: u32 = 1 << 20;

/// A SCRAM client exchange: [`first`](ScramClient::first), then
/// [`final_message`](ScramClient::final_message) with the server's first message, then
/// [`verify_server_final`](ScramClient::verify_server_final).
pub(crate) struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    client_first_bare: String,
    nonce: String,
    server_signature: Option<Vec<u8>>,
}

fn sasl_name(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

impl ScramClient {
    /// A new exchange with a random nonce.
    pub fn new(mechanism: ScramMechanism, username: &str, password: &str) -> Result<ScramClient, String> {
        let nonce = B64.encode(random_bytes(24)?);
        Ok(ScramClient::with_nonce(mechanism, username, password, &nonce))
    }

    /// A new exchange authenticating with a delegation token: Kafka's `tokenauth=true`
    /// extension follows the nonce in the client-first message.
    pub fn for_token(mechanism: ScramMechanism, token_id: &str, hmac_base64: &str) -> Result<ScramClient, String> {
        let mut c = ScramClient::new(mechanism, token_id, hmac_base64)?;
        c.client_first_bare.push_str(",tokenauth=true");
        Ok(c)
    }

    /// A new exchange with the given nonce (tests).
    pub fn with_nonce(mechanism: ScramMechanism, username: &str, password: &str, nonce: &str) -> ScramClient {
        ScramClient {
            mechanism,
            password: password.to_owned(),
            client_first_bare: format!("n={},r={nonce}", sasl_name(username)),
            nonce: nonce.to_owned(),
            server_signature: None,
        }
    }

    /// The client-first message.
    pub fn first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// The client-final message for the server-first message (which must extend our nonce).
    pub fn final_message(&mut self, server_first: &[u8]) -> Result<String, String> {
        let server_first = std::str::from_utf8(server_first).map_err(|_| "server-first message is not UTF-8".to_owned())?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attr in server_first.split(',') {
            match attr.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(B64.decode(v).map_err(|_| "server-first salt is not base64".to_owned())?),
                Some(("i", v)) => iterations = Some(v.parse::<u32>().map_err(|_| format!("bad iteration count {v:?}"))?),
                Some(("e", v)) => return Err(format!("server error: {v}")),
                Some(("m", _)) => return Err("server requires an unsupported SCRAM extension".into()),
                _ => {}
            }
        }
        let nonce = nonce.ok_or("server-first message has no nonce")?;
        let salt = salt.ok_or("server-first message has no salt")?;
        let iterations = iterations.ok_or("server-first message has no iteration count")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("server nonce does not extend the client nonce".into());
        }
        if iterations == 0 || iterations > MAX_ITERATIONS {
            return Err(format!("iteration count {iterations} out of range"));
        }
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let m = self.mechanism;
        let salted = m.salted_password(&self.password, &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let client_signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
        let server_key = m.hmac(&salted, b"Server Key");
        self.server_signature = Some(m.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Checks the server-final message: the server's signature must be the one the password
    /// gives, else the server does not know the credential (or the exchange was tampered with).
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let server_final = std::str::from_utf8(server_final).map_err(|_| "server-final message is not UTF-8".to_owned())?;
        let expected = self.server_signature.as_ref().ok_or("server-final before client-final")?;
        for attr in server_final.split(',') {
            match attr.split_once('=') {
                Some(("e", v)) => return Err(format!("server error: {v}")),
                Some(("v", v)) => {
                    let got = B64.decode(v).map_err(|_| "server signature is not base64".to_owned())?;
                    return if &got == expected { Ok(()) } else { Err("server signature does not verify".into()) };
                }
                _ => {}
            }
        }
        Err("server-final message has no signature".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3: the SCRAM-SHA-256 example exchange.
    #[test]
    fn rfc7677_example() {
        let mut c = ScramClient::with_nonce(ScramMechanism::Sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(c.first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = c.final_message(server_first).unwrap();
        assert_eq!(fin, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        c.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap();
        assert!(c.verify_server_final(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").is_err());
        assert!(c.verify_server_final(b"e=invalid-proof").is_err());
    }

    #[test]
    fn hostile_server_first_messages_are_refused() {
        let mut c = ScramClient::with_nonce(ScramMechanism::Sha512, "u", "p", "abc");
        assert!(c.final_message(b"r=xyz123,s=AAAA,i=4096").is_err(), "nonce not extended");
        assert!(c.final_message(b"r=abc,s=AAAA,i=4096").is_err(), "nonce not extended");
        assert!(c.final_message(b"r=abcd,s=AAAA,i=4294967295").is_err(), "too many iterations");
        assert!(c.final_message(b"r=abcd,s=!!,i=4096").is_err(), "bad salt");
        assert!(c.final_message(b"r=abcd,i=4096").is_err(), "no salt");
        assert!(c.final_message(&[0xff, 0xfe]).is_err(), "not UTF-8");
        assert!(c.verify_server_final(b"v=AAAA").is_err(), "before client-final");
    }

    #[test]
    fn user_names_are_escaped() {
        let c = ScramClient::with_nonce(ScramMechanism::Sha256, "a=b,c", "p", "n");
        assert_eq!(c.first(), "n,,n=a=3Db=2Cc,r=n");
    }
}
