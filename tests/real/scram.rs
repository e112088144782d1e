//! The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), for authenticating as the user
//! `scripts/kafka.sh` creates at format time: SHA-256 (FIPS 180-4), HMAC (RFC 2104) and the
//! PBKDF2 `Hi` function, written here so the test needs no crypto dependency. Checked against
//! the FIPS and RFC 7677 test vectors below.

use kwire::runtime::json::serde_json::Value;
use kwire::{Bytes, VersionedJson};

/// The first `n` primes.
fn primes(n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut k = 2u64;
    while out.len() < n {
        if (2..k).take_while(|d| d * d <= k).all(|d| !k.is_multiple_of(d)) {
            out.push(k);
        }
        k += 1;
    }
    out
}

/// FIPS 180-4's constants: the first 32 bits of the fractional parts of the square roots
/// (initial hash) and cube roots (round constants) of the first primes. f64 carries them exactly.
fn constants() -> ([u32; 8], [u32; 64]) {
    let frac32 = |x: f64| ((x - x.floor()) * 4_294_967_296.0) as u32;
    let p = primes(64);
    let mut h = [0u32; 8];
    let mut k = [0u32; 64];
    for i in 0..8 {
        h[i] = frac32((p[i] as f64).sqrt());
    }
    for i in 0..64 {
        k[i] = frac32((p[i] as f64).cbrt());
    }
    (h, k)
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    let (mut h, k) = constants();
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(k[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for i in 0..8 {
            h[i] = h[i].wrapping_add(v[i]);
        }
    }
    let mut out = [0u8; 32];
    for i in 0..8 {
        out[4 * i..4 * i + 4].copy_from_slice(&h[i].to_be_bytes());
    }
    out
}

pub fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&sha256(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).chain(data.iter().copied()).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).chain(sha256(&inner)).collect();
    sha256(&outer)
}

/// RFC 5802's Hi: PBKDF2-HMAC-SHA-256, one block.
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut u = hmac(password, &[salt, &1u32.to_be_bytes()].concat());
    let mut out = u;
    for _ in 1..iterations {
        u = hmac(password, &u);
        out.iter_mut().zip(u).for_each(|(o, x)| *o ^= x);
    }
    out
}

pub fn base64(bytes: &[u8]) -> String {
    Bytes::copy_from_slice(bytes).to_json(0).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub fn unbase64(text: &str) -> Option<Bytes> {
    Bytes::from_json(&Value::String(text.to_owned()), 0).ok()
}

/// A client exchange: `first()`, then `finish(server_first)` gives the client-final message;
/// `verify(server_final)` checks the server's signature.
pub struct Scram {
    user: String,
    password: String,
    nonce: String,
    auth_message: String,
    server_key: [u8; 32],
}

impl Scram {
    pub fn new(user: &str, password: &str, nonce: &str) -> Scram {
        Scram { user: user.into(), password: password.into(), nonce: nonce.into(), auth_message: String::new(), server_key: [0; 32] }
    }

    fn first_bare(&self) -> String {
        format!("n={},r={}", self.user, self.nonce)
    }

    pub fn first(&self) -> String {
        format!("n,,{}", self.first_bare())
    }

    pub fn finish(&mut self, server_first: &str) -> Result<String, String> {
        let attr = |k: &str| server_first.split(',').find_map(|a| a.strip_prefix(k)).map(str::to_owned);
        let nonce = attr("r=").ok_or("no nonce")?;
        let salt = unbase64(&attr("s=").ok_or("no salt")?).ok_or("bad salt")?;
        let iterations: u32 = attr("i=").ok_or("no iterations")?.parse().map_err(|_| "bad iterations")?;
        if !nonce.starts_with(&self.nonce) {
            return Err(format!("server nonce {nonce} does not extend ours"));
        }
        let salted = hi(self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = sha256(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        self.auth_message = format!("{},{server_first},{without_proof}", self.first_bare());
        let signature = hmac(&stored_key, self.auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(signature).map(|(k, s)| k ^ s).collect();
        self.server_key = hmac(&salted, b"Server Key");
        Ok(format!("{without_proof},p={}", base64(&proof)))
    }

    pub fn verify(&self, server_final: &str) -> bool {
        let expected = hmac(&self.server_key, self.auth_message.as_bytes());
        server_final.strip_prefix("v=").and_then(unbase64).is_some_and(|v| v[..] == expected[..])
    }
}

#[test]
fn sha256_and_scram_test_vectors() {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_eq!(hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    // RFC 7677, section 3.
    let mut s = Scram::new("user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    assert_eq!(s.first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let final_msg = s.finish("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096").unwrap();
    assert_eq!(final_msg, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    assert!(s.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}
