//! Authentication: the password scrambles of `mysql_native_password` and
//! `caching_sha2_password`.

use sha1::{Digest, Sha1};
use sha2::Sha256;

use super::protocol::Unsupported;

/// `mysql_native_password`: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
fn native_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&scramble[..scramble.len().min(20)]);
    h.update(stage2);
    let token = h.finalize();
    stage1.iter().zip(token.iter()).map(|(a, b)| a ^ b).collect()
}

/// `caching_sha2_password` scramble: SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce).
fn caching_sha2_password(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let p1 = Sha256::digest(password);
    let p2 = Sha256::digest(p1);
    let mut h = Sha256::new();
    h.update(p2);
    h.update(&scramble[..scramble.len().min(20)]);
    let p3 = h.finalize();
    p1.iter().zip(p3.iter()).map(|(a, b)| a ^ b).collect()
}

pub(super) fn auth_response(plugin: &[u8], password: &str, scramble: &[u8]) -> Result<Vec<u8>, Unsupported> {
    match plugin {
        b"mysql_native_password" | b"" => Ok(native_password(password.as_bytes(), scramble)),
        b"caching_sha2_password" => Ok(caching_sha2_password(password.as_bytes(), scramble)),
        other => Err(Unsupported(format!("authentication plugin '{}'", String::from_utf8_lossy(other)))),
    }
}
