//! Signed JWTs checked against a JWKS document (RFC 7517), as Kafka's
//! `BrokerJwtValidator` does with jose4j on a listener that sets
//! `sasl.oauthbearer.jwks.endpoint.url`. The shell fetches and refreshes
//! the document; [`Jwks::parse`] takes its text.
//!
//! # What is checked, in order
//!
//! 1. The compact form ([`Jwt::parse`]) and `alg`: RS256/384/512,
//!    PS256/384/512, ES256 and ES384. `none` is refused (jose4j's
//!    `DISALLOW_NONE`); the HMAC algorithms are refused too, since a
//!    shared secret has no place in a public key set.
//! 2. The key: the one whose `kid` is the token's; without a `kid`, the
//!    only key that fits the algorithm. A key whose own `alg` differs from
//!    the token's is refused.
//! 3. The signature, with ring.
//! 4. `exp` and `iat` present (jose4j's `setRequireExpirationTime` and
//!    `setRequireIssuedAt`); now minus skew before `exp`; now plus skew not
//!    before `nbf` if present. The skew is `sasl.oauthbearer.clock.skew.seconds`
//!    (default 30).
//! 5. `aud`: with expected audiences, the token's (a string or a list)
//!    must name one. With none expected, a token that carries `aud` is
//!    refused: jose4j's default audience check, which Kafka does not turn
//!    off. `iss`: with an expected issuer, it must be that.
//! 6. The subject claim (`sasl.oauthbearer.sub.claim.name`, default
//!    `sub`) a non-blank string; the scope claim a string or a list.
//!
//! Keys that are not for signatures (`use` other than `sig`), of a type
//! or curve pinlog does not verify, or malformed, are skipped and counted
//! in [`Jwks::skipped`]: one odd key at an identity provider must not
//! stop every login.

use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::{Map, Value};

use super::jwt::{
    seconds_to_ms, Jwt, TokenError, ValidatedToken, BASE64URL, DEFAULT_PRINCIPAL_CLAIM,
    DEFAULT_SCOPE_CLAIM,
};
use base64::Engine;

/// The most keys a JWKS may hold. Identity providers publish a handful
/// (the current key and the next); the bound keeps a hostile or broken
/// endpoint from growing the broker's memory.
pub const JWKS_KEYS_MAX: usize = 64;
/// The longest JWKS document parsed.
pub const JWKS_DOCUMENT_BYTES_MAX: usize = 1 << 20;
/// Kafka's `sasl.oauthbearer.clock.skew.seconds` default.
pub const DEFAULT_CLOCK_SKEW_S: u64 = 30;
/// The largest clock skew accepted: Kafka's option is a Java `int`.
pub const CLOCK_SKEW_S_MAX: u64 = i32::MAX as u64;

/// A curve pinlog verifies ECDSA on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

impl Curve {
    fn coordinate_len(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyMaterial {
    /// Big-endian modulus and exponent, leading zeros removed (ring
    /// refuses them).
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// The uncompressed point `04 || x || y`.
    Ec { curve: Curve, point: Vec<u8> },
}

/// One usable public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    /// The key's own `alg`, if it names one.
    pub alg: Option<String>,
    material: KeyMaterial,
}

/// The usable keys of a JWKS document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwks {
    keys: Vec<Jwk>,
    /// Keys in the document that were left out (not for signing, of an
    /// unsupported type, or malformed).
    pub skipped: usize,
}

impl Jwks {
    /// Parses a JWKS document: `{"keys": [...]}`.
    pub fn parse(document: &str) -> Result<Jwks, JwksError> {
        if document.len() > JWKS_DOCUMENT_BYTES_MAX {
            return Err(JwksError::TooLarge {
                len: document.len(),
            });
        }
        let value: Value = serde_json::from_str(document).map_err(|_| JwksError::NotJson)?;
        let Some(Value::Array(entries)) = value.get("keys") else {
            return Err(JwksError::NoKeysArray);
        };
        if entries.len() > JWKS_KEYS_MAX {
            return Err(JwksError::TooManyKeys {
                count: entries.len(),
            });
        }
        let keys: Vec<Jwk> = entries
            .iter()
            .filter_map(|entry| entry.as_object().and_then(parse_key))
            .collect();
        Ok(Jwks {
            skipped: entries.len() - keys.len(),
            keys,
        })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key for a token's `kid` and `alg`.
    fn select(&self, kid: Option<&str>, alg: Algorithm) -> Result<&Jwk, TokenError> {
        let key = match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut fitting = self.keys.iter().filter(|k| alg.fits(&k.material));
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        }
        .ok_or_else(|| TokenError::UnknownKey {
            kid: kid.map(str::to_string),
        })?;
        let alg_agrees = key.alg.as_deref().is_none_or(|a| a == alg.name());
        if !alg_agrees || !alg.fits(&key.material) {
            return Err(TokenError::KeyAlgMismatch {
                alg: alg.name().to_string(),
            });
        }
        Ok(key)
    }
}

/// base64url big-endian unsigned integer, leading zeros removed.
fn unsigned(entry: &Map<String, Value>, field: &str) -> Option<Vec<u8>> {
    let bytes = BASE64URL.decode(entry.get(field)?.as_str()?).ok()?;
    let first = bytes.iter().position(|b| *b != 0)?;
    Some(bytes[first..].to_vec())
}

/// An EC coordinate, left-padded to the curve's length.
fn coordinate(entry: &Map<String, Value>, field: &str, len: usize) -> Option<Vec<u8>> {
    let bytes = BASE64URL.decode(entry.get(field)?.as_str()?).ok()?;
    if bytes.len() > len {
        return None;
    }
    let mut padded = vec![0u8; len - bytes.len()];
    padded.extend_from_slice(&bytes);
    Some(padded)
}

fn parse_key(entry: &Map<String, Value>) -> Option<Jwk> {
    let string = |field: &str| entry.get(field).and_then(Value::as_str);
    if string("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let material = match string("kty")? {
        "RSA" => KeyMaterial::Rsa {
            n: unsigned(entry, "n")?,
            e: unsigned(entry, "e")?,
        },
        "EC" => {
            let curve = match string("crv")? {
                "P-256" => Curve::P256,
                "P-384" => Curve::P384,
                _ => return None,
            };
            let len = curve.coordinate_len();
            let mut point = vec![0x04];
            point.extend(coordinate(entry, "x", len)?);
            point.extend(coordinate(entry, "y", len)?);
            KeyMaterial::Ec { curve, point }
        }
        _ => return None,
    };
    Some(Jwk {
        kid: string("kid").map(str::to_string),
        alg: string("alg").map(str::to_string),
        material,
    })
}

/// The JWS algorithms pinlog verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
}

impl Algorithm {
    fn from_name(name: &str) -> Option<Algorithm> {
        Some(match name {
            "RS256" => Algorithm::Rs256,
            "RS384" => Algorithm::Rs384,
            "RS512" => Algorithm::Rs512,
            "PS256" => Algorithm::Ps256,
            "PS384" => Algorithm::Ps384,
            "PS512" => Algorithm::Ps512,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Rs256 => "RS256",
            Algorithm::Rs384 => "RS384",
            Algorithm::Rs512 => "RS512",
            Algorithm::Ps256 => "PS256",
            Algorithm::Ps384 => "PS384",
            Algorithm::Ps512 => "PS512",
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
        }
    }

    fn fits(self, material: &KeyMaterial) -> bool {
        match (self, material) {
            (Algorithm::Es256, KeyMaterial::Ec { curve, .. }) => *curve == Curve::P256,
            (Algorithm::Es384, KeyMaterial::Ec { curve, .. }) => *curve == Curve::P384,
            (Algorithm::Es256 | Algorithm::Es384, _) => false,
            (_, material) => matches!(material, KeyMaterial::Rsa { .. }),
        }
    }

    fn verify(self, material: &KeyMaterial, message: &[u8], sig: &[u8]) -> bool {
        let rsa = |params: &'static signature::RsaParameters| match material {
            KeyMaterial::Rsa { n, e } => RsaPublicKeyComponents { n, e }
                .verify(params, message, sig)
                .is_ok(),
            KeyMaterial::Ec { .. } => false,
        };
        let ec = |alg: &'static signature::EcdsaVerificationAlgorithm| match material {
            KeyMaterial::Ec { point, .. } => UnparsedPublicKey::new(alg, point)
                .verify(message, sig)
                .is_ok(),
            KeyMaterial::Rsa { .. } => false,
        };
        match self {
            Algorithm::Rs256 => rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
            Algorithm::Rs384 => rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            Algorithm::Rs512 => rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
            Algorithm::Ps256 => rsa(&signature::RSA_PSS_2048_8192_SHA256),
            Algorithm::Ps384 => rsa(&signature::RSA_PSS_2048_8192_SHA384),
            Algorithm::Ps512 => rsa(&signature::RSA_PSS_2048_8192_SHA512),
            // JWS carries ECDSA signatures as r || s (RFC 7518 3.4).
            Algorithm::Es256 => ec(&signature::ECDSA_P256_SHA256_FIXED),
            Algorithm::Es384 => ec(&signature::ECDSA_P384_SHA384_FIXED),
        }
    }
}

/// The broker's `sasl.oauthbearer.*` settings that bear on validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedValidatorConfig {
    /// `sasl.oauthbearer.expected.audience`: empty for none.
    pub expected_audiences: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name`.
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name`.
    pub scope_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds`.
    pub clock_skew_s: u64,
}

impl Default for SignedValidatorConfig {
    fn default() -> Self {
        SignedValidatorConfig {
            expected_audiences: Vec::new(),
            expected_issuer: None,
            sub_claim: DEFAULT_PRINCIPAL_CLAIM.to_string(),
            scope_claim: DEFAULT_SCOPE_CLAIM.to_string(),
            clock_skew_s: DEFAULT_CLOCK_SKEW_S,
        }
    }
}

/// Validates a signed token against the key set (the module doc lists the
/// checks and their order).
pub fn validate_signed(
    token: &str,
    jwks: &Jwks,
    config: &SignedValidatorConfig,
    now_ms: i64,
) -> Result<ValidatedToken, TokenError> {
    let jwt = Jwt::parse(token)?;
    let alg_name = jwt.alg()?;
    let alg = Algorithm::from_name(alg_name).ok_or_else(|| TokenError::UnsupportedAlg {
        alg: alg_name.to_string(),
    })?;
    let kid = match jwt.header.get("kid") {
        None | Some(Value::Null) => None,
        Some(Value::String(kid)) => Some(kid.as_str()),
        Some(_) => {
            return Err(TokenError::Malformed(
                "the JWS header's kid is not a string",
            ))
        }
    };
    let key = jwks.select(kid, alg)?;
    if !alg.verify(&key.material, jwt.signing_input.as_bytes(), &jwt.signature) {
        return Err(TokenError::BadSignature);
    }

    let skew_ms = config.clock_skew_s.min(CLOCK_SKEW_S_MAX) as i64 * 1000;
    let exp = jwt.number_claim("exp")?.ok_or(TokenError::NoExpiration)?;
    let iat = jwt
        .number_claim("iat")?
        .ok_or(TokenError::MissingClaim { claim: "iat" })?;
    if now_ms.saturating_sub(skew_ms) as f64 >= 1000.0 * exp {
        return Err(TokenError::Expired {
            exp_s: exp,
            now_ms,
            skew_ms,
        });
    }
    if let Some(nbf) = jwt.number_claim("nbf")? {
        if (now_ms.saturating_add(skew_ms) as f64) < 1000.0 * nbf {
            return Err(TokenError::NotYetValid {
                nbf_s: nbf,
                now_ms,
                skew_ms,
            });
        }
    }
    check_audience(&jwt, &config.expected_audiences)?;
    if let Some(expected) = &config.expected_issuer {
        if jwt.string_claim("iss")? != Some(expected.as_str()) {
            return Err(TokenError::IssuerMismatch);
        }
    }
    let scope = jwt.scope(&config.scope_claim)?;
    let principal = jwt.principal(&config.sub_claim)?;
    Ok(ValidatedToken {
        principal,
        expiry_ms: seconds_to_ms(exp),
        issued_at_ms: Some(seconds_to_ms(iat)),
        scope,
    })
}

fn check_audience(jwt: &Jwt, expected: &[String]) -> Result<(), TokenError> {
    let audiences: Vec<&str> = match jwt.claims.get("aud") {
        None | Some(Value::Null) => {
            return if expected.is_empty() {
                Ok(())
            } else {
                Err(TokenError::AudienceMismatch)
            };
        }
        Some(Value::String(aud)) => vec![aud.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| {
                a.as_str().ok_or(TokenError::ClaimType {
                    claim: "aud".to_string(),
                    expected: "String",
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(TokenError::ClaimType {
                claim: "aud".to_string(),
                expected: "String",
            })
        }
    };
    if audiences.iter().any(|a| expected.iter().any(|e| e == a)) {
        Ok(())
    } else {
        Err(TokenError::AudienceMismatch)
    }
}

/// Why a JWKS document is unusable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksError {
    TooLarge { len: usize },
    NotJson,
    NoKeysArray,
    TooManyKeys { count: usize },
}

impl std::fmt::Display for JwksError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwksError::TooLarge { len } => write!(
                f,
                "JWKS document of {len} bytes exceeds {JWKS_DOCUMENT_BYTES_MAX}"
            ),
            JwksError::NotJson => f.write_str("JWKS document is not JSON"),
            JwksError::NoKeysArray => f.write_str("JWKS document has no \"keys\" array"),
            JwksError::TooManyKeys { count } => write!(
                f,
                "JWKS document has {count} keys, more than {JWKS_KEYS_MAX}"
            ),
        }
    }
}

impl std::error::Error for JwksError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair};

    const JWKS: &str = r#"{"keys":[{"kty":"RSA","kid":"rsa-1","use":"sig","alg":"RS256","n":"52JtGhns3HTW9X91HCn8C3__WYneFQ0QfvB76G2VAVEpIlJfODcFPC2NSgDDCC2H3m47woNKfpl3U17z3U-JyS6XVCgFyWcDBFfJBNh_x1mU2QlWbRzS7LEj6nOkKghJwDOJxVpXoRyCTaWiDSFdCbj-e9QHGX6YMLhW1vuGSk1iDPILHL3ReOReA1DGsriUCD_PgOnWWWrSf3LXq4NO4Co-1iGQBoBPyoq_Abkx2cSjZDMT_pVrx5l4DcjLq197KTzLGlVvrGxDw9Dp-8tZKOs5lfHYIwbYke6SDd3quvUhKO_os7aAZJhApUCrqNdokMGYRU14ho2Fdo6GGlrfZw","e":"AQAB"},{"kty":"EC","kid":"ec-1","use":"sig","crv":"P-256","x":"4_Vj4NpJyTzoEmUubF8HrfQ9xDLp_F1uiH1QbJ4oBVk","y":"X5gJ3ei089FFDLiCO_vnrXl3fQDuyVFqdj2e-RBveng"},{"kty":"EC","kid":"ec-384","crv":"P-384","x":"jqdQvO3MeGltmiUFwPrI2RdoxlwlAeuQO2nVJEZwvvDH7tgUWZaW1ibHT8qxAanl","y":"BJbvhup6X9ReKJRGux2cLy0RQhlzdyGJwlPagXDE6aP-0zvjhzGvRq9BoCGOjo9m"},{"kty":"oct","kid":"hmac-1","k":"c2VjcmV0"},{"kty":"RSA","kid":"enc-1","use":"enc","n":"52JtGhns3HTW9X91HCn8C3__WYneFQ0QfvB76G2VAVEpIlJfODcFPC2NSgDDCC2H3m47woNKfpl3U17z3U-JyS6XVCgFyWcDBFfJBNh_x1mU2QlWbRzS7LEj6nOkKghJwDOJxVpXoRyCTaWiDSFdCbj-e9QHGX6YMLhW1vuGSk1iDPILHL3ReOReA1DGsriUCD_PgOnWWWrSf3LXq4NO4Co-1iGQBoBPyoq_Abkx2cSjZDMT_pVrx5l4DcjLq197KTzLGlVvrGxDw9Dp-8tZKOs5lfHYIwbYke6SDd3quvUhKO_os7aAZJhApUCrqNdokMGYRU14ho2Fdo6GGlrfZw","e":"AQAB"}]}"#;
    /// Signed once by OpenSSL (through Python's cryptography), not by ring.
    const OPENSSL_RS256: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSIsImlzcyI6Imh0dHBzOi8vaXNzdWVyLmV4YW1wbGUiLCJhdWQiOiJrYWZrYSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDAzNjAwLCJzY29wZSI6ImthZmthIn0.w7tdctUSO4f8ttKMpuGXygoSOI5J7D5Uwq5RGHh6tgYCCO6ZW2Ri0HL20eP66hnppQLMB-7zZ-osLwtQO6-RdmaalwqW-x-LS3YpwukKNsDlfFtC2szdN4oLsVO4AK8_irDDaqyad-7oJZnrzSNRJG2fyJbhD8TB-JvhPpLUZafRtuvShy4wU_C40zqx96yLV4cPrWVJKHr64BNGrWrc-KJt9eDKsTJkS2piuENxw-vlknBib4tUQCjDk8bEAYxlOHvU1WDXtC4TkHU7OgF7niBcZlYbScFKXIstjcHw9A4ODMUkfggZGqZxfMIH0vaztE54lrhDdgy1NJ7QCASUPQ";
    /// Signed once by OpenSSL (through Python's cryptography), not by ring.
    const OPENSSL_ES256: &str = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImVjLTEiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJhbGljZSIsImlzcyI6Imh0dHBzOi8vaXNzdWVyLmV4YW1wbGUiLCJhdWQiOiJrYWZrYSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDAzNjAwLCJzY29wZSI6ImthZmthIn0.Ga3Y_6MCGbsVuJCf3krwcq8LoKVs_TBbmN6GXkWuwogoMCaJiV7lnLO4ALGgzW9GIplaulzh6VQy4vpBjdlWsA";
    /// Signed once by OpenSSL (through Python's cryptography), not by ring.
    const OPENSSL_ES384: &str = "eyJhbGciOiJFUzM4NCIsImtpZCI6ImVjLTM4NCIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImlzcyI6Imh0dHBzOi8vaXNzdWVyLmV4YW1wbGUiLCJhdWQiOiJrYWZrYSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDAzNjAwLCJzY29wZSI6ImthZmthIn0.PVXGM83132CrKRHigfqVAnYmlqh_Fhu69nObDgSgsRohCR8fGPBMpyxMiTpaeqvkG_ImgPwVEjFDb9jAov8ya4EDWhui968Lv9e8sXbqm8wf9OC19H4x9WXxg1rYn1aw";
    /// Test-only keys, generated for these tests: PKCS#8 DER, base64.
    const RSA_PKCS8: &str = "MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDnYm0aGezcdNb1f3UcKfwLf/9Zid4VDRB+8HvobZUBUSkiUl84NwU8LY1KAMMILYfebjvCg0p+mXdTXvPdT4nJLpdUKAXJZwMEV8kE2H/HWZTZCVZtHNLssSPqc6QqCEnAM4nFWlehHIJNpaINIV0JuP571AcZfpgwuFbW+4ZKTWIM8gscvdF45F4DUMayuJQIP8+A6dZZatJ/cterg07gKj7WIZAGgE/Kir8BuTHZxKNkMxP+lWvHmXgNyMurX3spPMsaVW+sbEPD0On7y1ko6zmV8dgjBtiR7pIN3eq69SEo7+iztoBkmEClQKuo12iQwZhFTXiGjYV2joYaWt9nAgMBAAECggEABP0dRxPKBJLMU6y01K+fDIxs7/xF+oQ2l9YNhdxe+xFJ5sCJ5wdgqIR+6FqN2e5JYKVVyoLUJ1idtwF0FpBxcxH7F0hpn4cGDKDr55vXXW/0Ap3t7BpT/eBv2s01e+aD2I4D6WpiO0oHES+CB/BxNhVz/y16HbWaCGrhDG+N3Ko182NngkxOvihFbKq3rh3uC+EbYB5b3DVbj7pNO+xjs/YKQSb94KftE+jxCAdgQMefCedVYd7JTXG3TulojQMLr7ZCbrRvt+IwLxMkqg2iCjaUo0OmC8lY8JziBMgKF0ZzRVtvFbYTuGMU9S4VgxtSJ+VC49lXJPQrQ+6ZbWh4EQKBgQD8sRPd4Gd1JYNVoCxS4k8FTJ27nYikkDtrTs9DWmIUeg9hvw7k7aoVct/ZRlEBQwH/vXQCTMCIkW+mFj/ZLrTTJ6/iCA1OJJS9+qeb03DljrNA1wkpqdLYYwDyZzRA3kYF9fDKUZbM4prytZy/gP+3zZgq9GF93C494Xqp787c/wKBgQDqae9oK+I4Xm2cDlOtGGjNoppsFFhSHQeWGUrPhTH2wdNxEzlAz62DBfRIqKwUTCOZxddLc9bZYukBI8r+AYp2OhY2+6ie2HtK2zg1e3VuA4zJ2X1erX3J1owJhJdjU/rrZ2jYPgps8lqMCBdi+MRwOZMXPPNolde4nfrK9Ag1mQKBgQCtlIp8ILmQ3EsCl7u61+DGWCIGDioeOUHH7eQsdTrorAxC7fayRZxPjZC9dTMR9dC6t46oQccESTtz0NbdPttSLXIBh9xz8GcItdVLEoz78/Gouc5+gzzmDeRJn6Fiag2Z7J8Sq8c2SPd9gEoDtv5yaVV9NFCAH67YLTqQ372vSwKBgQDgDUD2oHsoxZiegFMaLyp84d4XT5rbYUPPA32tu/F1mO0wNt+SQu3lPduvVwiineOpJqARTjccsJ1kqYFsJqzhM8Pn6cHRkbjGY6Hl/IrRDDOU+nwJ8mk4cgiHUGQiXDKIrd5YUXRFjZ9eGJ3By2R2n5EntOoyHIaDvvvm4Di4gQKBgQDXm7+lVq/rsz/NUwi4yeSBpTkkU6HcqP4LKbjiRgQhXyVKb/EiEBGRJPELcqXh+VYAX/qHRk22tvMgdRC2vKpXRqAJC+Px3eWnkJuPFsRJ2KwwXXZyVqzs7ZNfLtxO9lz8OCl5YiuAmW035tFQ1SE6WpB3fFpZjeheQAA9U6f94g==";
    const EC_PKCS8: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHNCkM8LXH6YuEo91S/nIRGTAkftjVRABpHZAvw6PWu6hRANCAATj9WPg2knJPOgSZS5sXwet9D3EMun8XW6IfVBsnigFWV+YCd3otPPRRQy4gjv75615d30A7slRanY9nvkQb3p4";

    /// Inside the OpenSSL tokens' lifetime (iat 1700000000, exp +3600).
    const NOW_MS: i64 = 1_700_000_100_000;

    fn jwks() -> Jwks {
        Jwks::parse(JWKS).unwrap()
    }

    fn kafka_audience() -> SignedValidatorConfig {
        SignedValidatorConfig {
            expected_audiences: vec!["other".into(), "kafka".into()],
            expected_issuer: Some("https://issuer.example".into()),
            ..Default::default()
        }
    }

    fn b64(part: &Value) -> String {
        BASE64URL.encode(part.to_string())
    }

    fn standard_claims() -> Value {
        serde_json::json!({
            "sub": "alice", "iss": "https://issuer.example", "aud": "kafka",
            "iat": 1_700_000_000, "exp": 1_700_003_600, "scope": "kafka"
        })
    }

    /// Signs with ring from the test PKCS#8 keys.
    fn sign(alg: &str, kid: Option<&str>, claims: &Value) -> String {
        let mut header = serde_json::json!({"alg": alg, "typ": "JWT"});
        if let Some(kid) = kid {
            header["kid"] = Value::from(kid);
        }
        let input = format!("{}.{}", b64(&header), b64(claims));
        let rng = SystemRandom::new();
        let pkcs8 = |b: &str| base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        let sig = if alg.starts_with("ES") {
            let key = EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &pkcs8(EC_PKCS8),
                &rng,
            )
            .unwrap();
            key.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec()
        } else {
            let key = RsaKeyPair::from_pkcs8(&pkcs8(RSA_PKCS8)).unwrap();
            let padding: &'static dyn signature::RsaEncoding = match alg {
                "RS256" => &signature::RSA_PKCS1_SHA256,
                "RS512" => &signature::RSA_PKCS1_SHA512,
                "PS256" => &signature::RSA_PSS_SHA256,
                _ => panic!("no test signer for {alg}"),
            };
            let mut sig = vec![0; key.public().modulus_len()];
            key.sign(padding, &rng, input.as_bytes(), &mut sig).unwrap();
            sig
        };
        format!("{input}.{}", BASE64URL.encode(sig))
    }

    #[test]
    fn the_jwks_keeps_signing_keys_and_skips_the_rest() {
        let set = jwks();
        // rsa-1, ec-1, ec-384; the oct key and the enc key are skipped.
        assert_eq!(set.len(), 3);
        assert_eq!(set.skipped, 2);
        assert!(!set.is_empty());
        // The ring key pairs are the ones the JWKS publishes.
        let rng = SystemRandom::new();
        let pkcs8 = |b: &str| base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        let ec = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &pkcs8(EC_PKCS8),
            &rng,
        )
        .unwrap();
        let published = set
            .keys
            .iter()
            .find(|k| k.kid.as_deref() == Some("ec-1"))
            .unwrap();
        assert_eq!(
            published.material,
            KeyMaterial::Ec {
                curve: Curve::P256,
                point: ec.public_key().as_ref().to_vec()
            }
        );
    }

    #[test]
    fn openssl_signed_tokens_verify() {
        for token in [OPENSSL_RS256, OPENSSL_ES256, OPENSSL_ES384] {
            let valid = validate_signed(token, &jwks(), &kafka_audience(), NOW_MS).unwrap();
            assert_eq!(valid.principal, "alice");
            assert_eq!(valid.expiry_ms, 1_700_003_600_000);
            assert_eq!(valid.issued_at_ms, Some(1_700_000_000_000));
            assert_eq!(valid.scope, ["kafka".to_string()].into());
        }
    }

    #[test]
    fn ring_signed_tokens_verify_for_each_algorithm() {
        for alg in ["RS256", "RS512", "PS256"] {
            let token = sign(alg, Some("rsa-1"), &standard_claims());
            let set = Jwks::parse(&JWKS.replace(r#""alg":"RS256","#, "")).unwrap();
            assert!(
                validate_signed(&token, &set, &kafka_audience(), NOW_MS).is_ok(),
                "{alg}"
            );
        }
        let token = sign("ES256", Some("ec-1"), &standard_claims());
        assert!(validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS).is_ok());
    }

    #[test]
    fn a_tampered_token_fails_the_signature() {
        for token in [OPENSSL_RS256, OPENSSL_ES256] {
            let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
            let mut claims = standard_claims();
            claims["sub"] = Value::from("mallory");
            parts[1] = b64(&claims);
            assert_eq!(
                validate_signed(&parts.join("."), &jwks(), &kafka_audience(), NOW_MS),
                Err(TokenError::BadSignature)
            );
            // A signature of the wrong length, and no signature at all.
            let short = format!("{}.{}.AAAA", parts[0], parts[1]);
            assert_eq!(
                validate_signed(&short, &jwks(), &kafka_audience(), NOW_MS),
                Err(TokenError::BadSignature)
            );
        }
        // ES256 signed by the P-256 key but claiming the RSA key's kid.
        let token = sign("ES256", Some("rsa-1"), &standard_claims());
        assert_eq!(
            validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS),
            Err(TokenError::KeyAlgMismatch {
                alg: "ES256".into()
            })
        );
        // RS512 under a key that declares alg RS256.
        let token = sign("RS512", Some("rsa-1"), &standard_claims());
        assert_eq!(
            validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS),
            Err(TokenError::KeyAlgMismatch {
                alg: "RS512".into()
            })
        );
    }

    #[test]
    fn unknown_kid_and_kidless_tokens() {
        let token = sign("RS256", Some("rsa-2"), &standard_claims());
        assert_eq!(
            validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS),
            Err(TokenError::UnknownKey {
                kid: Some("rsa-2".into())
            })
        );
        // Without a kid the only key that fits the algorithm is used.
        let token = sign("RS256", None, &standard_claims());
        assert!(validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS).is_ok());
        let token = sign("ES256", None, &standard_claims());
        assert!(validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS).is_ok());
        // Two RSA keys and no kid: no choice is made.
        let two = JWKS.replace(r#""use":"enc","#, "");
        let token = sign("RS256", None, &standard_claims());
        assert_eq!(
            validate_signed(
                &token,
                &Jwks::parse(&two).unwrap(),
                &kafka_audience(),
                NOW_MS
            ),
            Err(TokenError::UnknownKey { kid: None })
        );
    }

    #[test]
    fn none_and_hmac_are_refused() {
        let unsecured = crate::sasl::jwt::tests::unsecured(&standard_claims().to_string());
        assert_eq!(
            validate_signed(&unsecured, &jwks(), &kafka_audience(), NOW_MS),
            Err(TokenError::UnsupportedAlg { alg: "none".into() })
        );
        let header = b64(&serde_json::json!({"alg": "HS256", "kid": "hmac-1"}));
        let token = format!("{header}.{}.AAAA", b64(&standard_claims()));
        assert_eq!(
            validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS),
            Err(TokenError::UnsupportedAlg {
                alg: "HS256".into()
            })
        );
    }

    #[test]
    fn time_claims_with_skew() {
        let config = kafka_audience();
        // Expired 10 s ago: inside the default 30 s skew.
        assert!(validate_signed(OPENSSL_RS256, &jwks(), &config, 1_700_003_610_000).is_ok());
        assert!(matches!(
            validate_signed(OPENSSL_RS256, &jwks(), &config, 1_700_003_630_000),
            Err(TokenError::Expired { .. })
        ));
        let strict = SignedValidatorConfig {
            clock_skew_s: 0,
            ..kafka_audience()
        };
        assert!(matches!(
            validate_signed(OPENSSL_RS256, &jwks(), &strict, 1_700_003_600_000),
            Err(TokenError::Expired { .. })
        ));
        let mut claims = standard_claims();
        claims["nbf"] = Value::from(1_700_000_200);
        let token = sign("RS256", Some("rsa-1"), &claims);
        assert!(matches!(
            validate_signed(&token, &jwks(), &strict, NOW_MS),
            Err(TokenError::NotYetValid { .. })
        ));
        assert!(validate_signed(&token, &jwks(), &strict, 1_700_000_200_000).is_ok());
        for missing in ["exp", "iat"] {
            let mut claims = standard_claims();
            claims.as_object_mut().unwrap().remove(missing);
            let token = sign("ES256", Some("ec-1"), &claims);
            let err = validate_signed(&token, &jwks(), &config, NOW_MS).unwrap_err();
            assert!(
                matches!(
                    err,
                    TokenError::NoExpiration | TokenError::MissingClaim { claim: "iat" }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn audience_issuer_and_subject() {
        let set = jwks();
        // No expected audience: a token with aud is refused (jose4j's default).
        assert_eq!(
            validate_signed(
                OPENSSL_RS256,
                &set,
                &SignedValidatorConfig::default(),
                NOW_MS
            ),
            Err(TokenError::AudienceMismatch)
        );
        let wrong_aud = SignedValidatorConfig {
            expected_audiences: vec!["billing".into()],
            ..kafka_audience()
        };
        assert_eq!(
            validate_signed(OPENSSL_RS256, &set, &wrong_aud, NOW_MS),
            Err(TokenError::AudienceMismatch)
        );
        let wrong_iss = SignedValidatorConfig {
            expected_issuer: Some("https://elsewhere".into()),
            ..kafka_audience()
        };
        assert_eq!(
            validate_signed(OPENSSL_RS256, &set, &wrong_iss, NOW_MS),
            Err(TokenError::IssuerMismatch)
        );
        // A list audience; no aud with none expected; a custom sub claim.
        let mut claims = standard_claims();
        claims["aud"] = serde_json::json!(["x", "kafka"]);
        let token = sign("RS256", Some("rsa-1"), &claims);
        assert!(validate_signed(&token, &set, &kafka_audience(), NOW_MS).is_ok());
        claims.as_object_mut().unwrap().remove("aud");
        claims["client_id"] = Value::from("svc-1");
        let token = sign("RS256", Some("rsa-1"), &claims);
        let by_client = SignedValidatorConfig {
            sub_claim: "client_id".into(),
            ..Default::default()
        };
        assert_eq!(
            validate_signed(&token, &set, &by_client, NOW_MS)
                .unwrap()
                .principal,
            "svc-1"
        );
        assert_eq!(
            validate_signed(&token, &set, &kafka_audience(), NOW_MS),
            Err(TokenError::AudienceMismatch)
        );
        claims.as_object_mut().unwrap().remove("sub");
        let token = sign("RS256", Some("rsa-1"), &claims);
        assert_eq!(
            validate_signed(&token, &set, &SignedValidatorConfig::default(), NOW_MS),
            Err(TokenError::NoPrincipal {
                claim: "sub".into()
            })
        );
    }

    #[test]
    fn bad_documents() {
        assert_eq!(Jwks::parse("nope"), Err(JwksError::NotJson));
        assert_eq!(Jwks::parse("{}"), Err(JwksError::NoKeysArray));
        assert_eq!(Jwks::parse(r#"{"keys":{}}"#), Err(JwksError::NoKeysArray));
        let many = format!(
            r#"{{"keys":[{}]}}"#,
            vec!["{}"; JWKS_KEYS_MAX + 1].join(",")
        );
        assert_eq!(
            Jwks::parse(&many),
            Err(JwksError::TooManyKeys {
                count: JWKS_KEYS_MAX + 1
            })
        );
        // Malformed keys are skipped, not fatal.
        let odd = r#"{"keys":[{"kty":"RSA","n":"!!","e":"AQAB"},{"kty":"EC","crv":"P-521","x":"AA","y":"AA"},7]}"#;
        let set = Jwks::parse(odd).unwrap();
        assert_eq!((set.len(), set.skipped), (0, 3));
    }

    proptest! {
        #[test]
        fn never_panics(token in "[A-Za-z0-9_.-]{0,120}", doc in "[{}\\[\\]\":,a-zA-Z0-9 ]{0,80}") {
            let _ = validate_signed(&token, &jwks(), &kafka_audience(), NOW_MS);
            let _ = Jwks::parse(&doc);
        }

        #[test]
        fn truncations_never_verify(end in 0usize..400) {
            let end = end.min(OPENSSL_ES256.len() - 1);
            prop_assert!(validate_signed(&OPENSSL_ES256[..end], &jwks(), &kafka_audience(), NOW_MS).is_err());
        }
    }
}
