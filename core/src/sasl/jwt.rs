//! JWTs for OAUTHBEARER: the compact serialization (RFC 7515), the claims
//! Kafka reads, and Kafka's unsecured validator
//! (`OAuthBearerUnsecuredValidatorCallbackHandler`, `alg: none`), which is
//! Kafka's default on an OAUTHBEARER listener and meant for development.
//! Signed tokens are [`super::jwks`]'s.
//!
//! Times in claims are seconds since the epoch, possibly fractional; Kafka
//! turns them into milliseconds with `Math.round(seconds * 1000)`, and so
//! do we. `now_ms` is always the caller's.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde_json::{Map, Value};

use super::SASL_MESSAGE_BYTES_MAX;

/// base64url, with or without padding, as Java's URL decoder accepts it.
pub(crate) const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The claim holding the principal by default (Kafka's
/// `sasl.oauthbearer.sub.claim.name`, and the unsecured validator's
/// `unsecuredValidatorPrincipalClaimName`).
pub const DEFAULT_PRINCIPAL_CLAIM: &str = "sub";
/// The claim holding the scope by default.
pub const DEFAULT_SCOPE_CLAIM: &str = "scope";
/// Kafka's unsecured validator's default clock skew.
pub const DEFAULT_UNSECURED_CLOCK_SKEW_MS: u64 = 0;
/// The largest clock skew an option may give: Kafka parses it as a Java
/// `int`.
pub const CLOCK_SKEW_MS_MAX: u64 = i32::MAX as u64;

/// A JWT split and decoded, its signature not yet checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Jwt {
    pub header: Map<String, Value>,
    pub claims: Map<String, Value>,
    /// `base64url(header) "." base64url(claims)`: what the signature signs.
    pub signing_input: String,
    pub signature: Vec<u8>,
}

impl Jwt {
    /// Splits and decodes a compact JWS. Kafka's rules: no `..`, exactly
    /// three parts, and the first two base64url JSON objects.
    pub fn parse(token: &str) -> Result<Jwt, TokenError> {
        if token.len() > SASL_MESSAGE_BYTES_MAX {
            return Err(TokenError::Malformed("the token is too long"));
        }
        if token.contains("..") {
            return Err(TokenError::Malformed(
                "Malformed compact serialization contains '..'",
            ));
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [header, claims, signature] = parts[..] else {
            return Err(TokenError::Malformed(
                "compact serializations must have 3 dot-separated Base64URL-encoded values",
            ));
        };
        Ok(Jwt {
            header: json_object(header)?,
            claims: json_object(claims)?,
            signing_input: token[..header.len() + 1 + claims.len()].to_string(),
            signature: BASE64URL
                .decode(signature)
                .map_err(|_| TokenError::Malformed("malformed Base64 URL encoded value"))?,
        })
    }

    /// The header's `alg`, which must be a string.
    pub fn alg(&self) -> Result<&str, TokenError> {
        match self.header.get("alg") {
            Some(Value::String(alg)) => Ok(alg),
            Some(_) => Err(TokenError::Malformed(
                "the JWS header's alg is not a string",
            )),
            None => Err(TokenError::Malformed(
                "JWS header must have an Algorithm value",
            )),
        }
    }

    /// A claim that must be a number if present; `null` counts as absent.
    pub fn number_claim(&self, name: &str) -> Result<Option<f64>, TokenError> {
        match self.claims.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| type_error(name, "Number")),
            Some(_) => Err(type_error(name, "Number")),
        }
    }

    /// A claim that must be a string if present.
    pub fn string_claim(&self, name: &str) -> Result<Option<&str>, TokenError> {
        match self.claims.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(type_error(name, "String")),
        }
    }

    /// The scope claim as Kafka reads it: a string is one scope (trimmed,
    /// none if blank); a list gives its non-blank entries, trimmed.
    pub fn scope(&self, name: &str) -> Result<BTreeSet<String>, TokenError> {
        let mut scope = BTreeSet::new();
        match self.claims.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                if !s.trim().is_empty() {
                    scope.insert(s.trim().to_string());
                }
            }
            Some(Value::Array(items)) => {
                for item in items {
                    let text = match item {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    if !text.trim().is_empty() {
                        scope.insert(text.trim().to_string());
                    }
                }
            }
            Some(_) => return Err(type_error(name, "List")),
        }
        Ok(scope)
    }

    /// The principal claim: a string that is not blank.
    pub(crate) fn principal(&self, name: &str) -> Result<String, TokenError> {
        match self.string_claim(name)? {
            Some(p) if !p.trim().is_empty() => Ok(p.to_string()),
            _ => Err(TokenError::NoPrincipal {
                claim: name.to_string(),
            }),
        }
    }
}

fn type_error(claim: &str, expected: &'static str) -> TokenError {
    TokenError::ClaimType {
        claim: claim.to_string(),
        expected,
    }
}

fn json_object(part: &str) -> Result<Map<String, Value>, TokenError> {
    let bytes = BASE64URL
        .decode(part)
        .map_err(|_| TokenError::Malformed("malformed Base64 URL encoded value"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(TokenError::Malformed("malformed JSON")),
    }
}

/// Seconds (possibly fractional) to milliseconds, as Kafka rounds them.
/// Saturates at the ends of `i64` rather than wrapping.
pub(crate) fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

/// A token that passed validation: what the broker keeps for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedToken {
    /// The principal name (the principal claim's value).
    pub principal: String,
    /// When the token expires (`exp`), in ms since the epoch: the bound on
    /// the session's lifetime (KIP-368).
    pub expiry_ms: i64,
    /// When the token was issued (`iat`), if it says.
    pub issued_at_ms: Option<i64>,
    pub scope: BTreeSet<String>,
}

/// The unsecured validator's options (its JAAS options,
/// `unsecuredValidator*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidatorConfig {
    pub principal_claim: String,
    pub scope_claim: String,
    /// Scopes the token must all carry.
    pub required_scope: Vec<String>,
    pub allowable_clock_skew_ms: u64,
}

impl Default for UnsecuredValidatorConfig {
    fn default() -> Self {
        UnsecuredValidatorConfig {
            principal_claim: DEFAULT_PRINCIPAL_CLAIM.to_string(),
            scope_claim: DEFAULT_SCOPE_CLAIM.to_string(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: DEFAULT_UNSECURED_CLOCK_SKEW_MS,
        }
    }
}

impl UnsecuredValidatorConfig {
    /// Reads OAuthBearerLoginModule's options as Kafka's handler does:
    /// blank values mean the default, the required scope is
    /// space-separated, the clock skew a non-negative `int`.
    pub fn from_jaas_options(
        options: &BTreeMap<String, String>,
    ) -> Result<UnsecuredValidatorConfig, String> {
        let mut config = UnsecuredValidatorConfig::default();
        let option = |key: &str| options.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        if let Some(claim) = option("unsecuredValidatorPrincipalClaimName") {
            config.principal_claim = claim.to_string();
        }
        if let Some(claim) = option("unsecuredValidatorScopeClaimName") {
            config.scope_claim = claim.to_string();
        }
        if let Some(scope) = option("unsecuredValidatorRequiredScope") {
            config.required_scope = scope.split_whitespace().map(str::to_string).collect();
        }
        if let Some(skew) = option("unsecuredValidatorAllowableClockSkewMs") {
            config.allowable_clock_skew_ms = skew
                .parse::<i64>()
                .ok()
                .filter(|s| (0..=CLOCK_SKEW_MS_MAX as i64).contains(s))
                .map(|s| s as u64)
                .ok_or_else(|| {
                    format!("Allowable clock skew millis must be a non-negative int: {skew}")
                })?;
        }
        Ok(config)
    }
}

/// Validates an unsecured (`alg: none`) token as Kafka's
/// `OAuthBearerUnsecuredValidatorCallbackHandler` does, in its order: the
/// JWS shape, `alg`, no signature, the scope claim's type, `exp` present,
/// the principal, `iat` not after now plus skew, now minus skew before
/// `exp`, `exp` after `iat`, and the required scope. Kafka ignores `nbf`
/// here, and so do we.
pub fn validate_unsecured(
    token: &str,
    config: &UnsecuredValidatorConfig,
    now_ms: i64,
) -> Result<ValidatedToken, TokenError> {
    let jwt = Jwt::parse(token)?;
    if jwt.alg()? != "none" {
        return Err(TokenError::AlgNotNone);
    }
    if !jwt.signature.is_empty() {
        return Err(TokenError::SignaturePresent);
    }
    let scope = jwt.scope(&config.scope_claim)?;
    let exp = jwt.number_claim("exp")?.ok_or(TokenError::NoExpiration)?;
    let principal = jwt.principal(&config.principal_claim)?;
    let iat = jwt.number_claim("iat")?;
    let skew_ms = config.allowable_clock_skew_ms.min(CLOCK_SKEW_MS_MAX) as i64;
    check_times(exp, iat, now_ms, skew_ms)?;
    if let Some(missing) = config.required_scope.iter().find(|s| !scope.contains(*s)) {
        return Err(TokenError::InsufficientScope {
            missing: missing.clone(),
            required: config.required_scope.clone(),
        });
    }
    Ok(ValidatedToken {
        principal,
        expiry_ms: seconds_to_ms(exp),
        issued_at_ms: iat.map(seconds_to_ms),
        scope,
    })
}

/// Kafka's `validateIssuedAt`, `validateExpirationTime` and
/// `validateTimeConsistency`, in that order.
pub(crate) fn check_times(
    exp: f64,
    iat: Option<f64>,
    now_ms: i64,
    skew_ms: i64,
) -> Result<(), TokenError> {
    if let Some(iat) = iat {
        if 1000.0 * iat > now_ms.saturating_add(skew_ms) as f64 {
            return Err(TokenError::IssuedInFuture {
                iat_s: iat,
                now_ms,
                skew_ms,
            });
        }
    }
    if now_ms.saturating_sub(skew_ms) as f64 >= 1000.0 * exp {
        return Err(TokenError::Expired {
            exp_s: exp,
            now_ms,
            skew_ms,
        });
    }
    if let Some(iat) = iat {
        if exp <= iat {
            return Err(TokenError::ExpiryNotAfterIssue {
                exp_s: exp,
                iat_s: iat,
            });
        }
    }
    Ok(())
}

/// Why a token was refused. Every one is answered with OAUTHBEARER's JSON
/// error ([`TokenError::status`]); the text is for the broker's log.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenError {
    Malformed(&'static str),
    AlgNotNone,
    SignaturePresent,
    ClaimType {
        claim: String,
        expected: &'static str,
    },
    NoExpiration,
    /// A required claim other than the principal and `exp` is missing.
    MissingClaim {
        claim: &'static str,
    },
    NoPrincipal {
        claim: String,
    },
    IssuedInFuture {
        iat_s: f64,
        now_ms: i64,
        skew_ms: i64,
    },
    Expired {
        exp_s: f64,
        now_ms: i64,
        skew_ms: i64,
    },
    NotYetValid {
        nbf_s: f64,
        now_ms: i64,
        skew_ms: i64,
    },
    ExpiryNotAfterIssue {
        exp_s: f64,
        iat_s: f64,
    },
    InsufficientScope {
        missing: String,
        required: Vec<String>,
    },
    /// A signed token's `alg` that pinlog does not verify (or `none`).
    UnsupportedAlg {
        alg: String,
    },
    /// No key in the JWKS has the token's `kid` (or, without a `kid`, no
    /// single key fits).
    UnknownKey {
        kid: Option<String>,
    },
    /// The key found is of another type or curve than `alg` needs.
    KeyAlgMismatch {
        alg: String,
    },
    BadSignature,
    AudienceMismatch,
    IssuerMismatch,
}

impl TokenError {
    /// The `status` of Kafka's JSON error: `insufficient_scope` when a
    /// required scope is missing, `invalid_token` otherwise.
    pub fn status(&self) -> &'static str {
        match self {
            TokenError::InsufficientScope { .. } => "insufficient_scope",
            _ => "invalid_token",
        }
    }

    /// The `scope` of Kafka's JSON error: the required scope, as Java
    /// prints a list.
    pub fn error_scope(&self) -> Option<String> {
        match self {
            TokenError::InsufficientScope { required, .. } => {
                Some(format!("[{}]", required.join(", ")))
            }
            _ => None,
        }
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Malformed(why) => write!(f, "Malformed token: {why}"),
            TokenError::AlgNotNone => f.write_str("Unsecured JWS must have 'none' for an algorithm"),
            TokenError::SignaturePresent => {
                f.write_str("Unsecured JWS must not contain a digital signature")
            }
            TokenError::ClaimType { claim, expected } => {
                write!(f, "The '{claim}' claim was not of type {expected}")
            }
            TokenError::NoExpiration => f.write_str("No expiration time in JWT"),
            TokenError::MissingClaim { claim } => write!(f, "Required claim missing: {claim}"),
            TokenError::NoPrincipal { claim } => {
                write!(f, "No principal name in JWT claim: {claim}")
            }
            TokenError::IssuedInFuture { iat_s, now_ms, skew_ms } => write!(
                f,
                "The Issued At value ({iat_s} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew ({skew_ms} ms)"
            ),
            TokenError::Expired { exp_s, now_ms, skew_ms } => write!(
                f,
                "The indicated time ({now_ms} ms) minus allowable clock skew ({skew_ms} ms) was on or after the Expiration Time value ({exp_s} seconds)"
            ),
            TokenError::NotYetValid { nbf_s, now_ms, skew_ms } => write!(
                f,
                "The indicated time ({now_ms} ms) plus allowable clock skew ({skew_ms} ms) is before the Not Before value ({nbf_s} seconds)"
            ),
            TokenError::ExpiryNotAfterIssue { exp_s, iat_s } => write!(
                f,
                "The Expiration Time time ({exp_s} seconds) was not after the Issued At time ({iat_s} seconds)"
            ),
            TokenError::InsufficientScope { missing, required } => write!(
                f,
                "The provided scope was missing a required scope ({missing}). All required scope elements: [{}]",
                required.join(", ")
            ),
            TokenError::UnsupportedAlg { alg } => {
                write!(f, "The JWS algorithm {alg:?} is not accepted")
            }
            TokenError::UnknownKey { kid: Some(kid) } => {
                write!(f, "No key in the JWKS has kid {kid:?}")
            }
            TokenError::UnknownKey { kid: None } => {
                f.write_str("The token has no kid and the JWKS has no single key for its algorithm")
            }
            TokenError::KeyAlgMismatch { alg } => {
                write!(f, "The key the token names does not fit algorithm {alg}")
            }
            TokenError::BadSignature => f.write_str("The token's signature does not verify"),
            TokenError::AudienceMismatch => {
                f.write_str("The token's aud claim names none of the expected audiences")
            }
            TokenError::IssuerMismatch => {
                f.write_str("The token's iss claim is not the expected issuer")
            }
        }
    }
}

impl std::error::Error for TokenError {}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An unsecured token with these claims.
    pub(crate) fn unsecured(claims: &str) -> String {
        format!(
            "{}.{}.",
            BASE64URL.encode(r#"{"alg":"none"}"#),
            BASE64URL.encode(claims)
        )
    }

    const NOW_MS: i64 = 1_700_000_000_000;

    fn validate(claims: &str) -> Result<ValidatedToken, TokenError> {
        validate_unsecured(
            &unsecured(claims),
            &UnsecuredValidatorConfig::default(),
            NOW_MS,
        )
    }

    #[test]
    fn a_good_unsecured_token() {
        let token = validate(
            r#"{"sub":"alice","exp":1700000060,"iat":1699999990.5,"scope":["a"," b ",""]}"#,
        )
        .unwrap();
        assert_eq!(
            token,
            ValidatedToken {
                principal: "alice".into(),
                expiry_ms: 1_700_000_060_000,
                issued_at_ms: Some(1_699_999_990_500),
                scope: ["a".to_string(), "b".to_string()].into(),
            }
        );
        // A single-string scope; no iat.
        let token = validate(r#"{"sub":"bob","exp":1700000001,"scope":"x"}"#).unwrap();
        assert_eq!(token.scope, ["x".to_string()].into());
        assert_eq!(token.issued_at_ms, None);
    }

    #[test]
    fn expired_and_future_tokens_fail_with_skew_counted() {
        // exp exactly now: Kafka's "on or after" fails it.
        assert!(matches!(
            validate(r#"{"sub":"a","exp":1700000000}"#),
            Err(TokenError::Expired { .. })
        ));
        let skewed = UnsecuredValidatorConfig {
            allowable_clock_skew_ms: 1,
            ..Default::default()
        };
        let token = unsecured(r#"{"sub":"a","exp":1700000000}"#);
        assert!(validate_unsecured(&token, &skewed, NOW_MS).is_ok());
        assert!(matches!(
            validate(r#"{"sub":"a","exp":1800000000,"iat":1700000000.001}"#),
            Err(TokenError::IssuedInFuture { .. })
        ));
        assert!(matches!(
            validate(r#"{"sub":"a","exp":1600000000,"iat":1600000001}"#),
            Err(TokenError::Expired { .. })
        ));
        assert!(matches!(
            validate(r#"{"sub":"a","exp":1700000001,"iat":1700000001}"#),
            Err(TokenError::IssuedInFuture { .. })
        ));
    }

    #[test]
    fn exp_must_follow_iat() {
        let config = UnsecuredValidatorConfig {
            allowable_clock_skew_ms: 10_000,
            ..Default::default()
        };
        let token = unsecured(r#"{"sub":"a","exp":1700000005,"iat":1700000005}"#);
        assert!(matches!(
            validate_unsecured(&token, &config, NOW_MS),
            Err(TokenError::ExpiryNotAfterIssue { .. })
        ));
    }

    #[test]
    fn alg_must_be_none_and_signature_empty() {
        let header = BASE64URL.encode(r#"{"alg":"HS256"}"#);
        let claims = BASE64URL.encode(r#"{"sub":"a","exp":1800000000}"#);
        let config = UnsecuredValidatorConfig::default();
        assert_eq!(
            validate_unsecured(&format!("{header}.{claims}."), &config, NOW_MS),
            Err(TokenError::AlgNotNone)
        );
        let mut signed = unsecured(r#"{"sub":"a","exp":1800000000}"#);
        signed.push_str("c2ln");
        assert_eq!(
            validate_unsecured(&signed, &config, NOW_MS),
            Err(TokenError::SignaturePresent)
        );
        let no_alg = format!("{}.{claims}.", BASE64URL.encode(r#"{"typ":"JWT"}"#));
        assert!(matches!(
            validate_unsecured(&no_alg, &config, NOW_MS),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn missing_or_mistyped_claims() {
        assert_eq!(
            validate(r#"{"exp":1800000000}"#),
            Err(TokenError::NoPrincipal {
                claim: "sub".into()
            })
        );
        assert_eq!(
            validate(r#"{"sub":"  ","exp":1800000000}"#),
            Err(TokenError::NoPrincipal {
                claim: "sub".into()
            })
        );
        assert_eq!(
            validate(r#"{"sub":7,"exp":1800000000}"#),
            Err(TokenError::ClaimType {
                claim: "sub".into(),
                expected: "String"
            })
        );
        assert_eq!(validate(r#"{"sub":"a"}"#), Err(TokenError::NoExpiration));
        assert_eq!(
            validate(r#"{"sub":"a","exp":"soon"}"#),
            Err(TokenError::ClaimType {
                claim: "exp".into(),
                expected: "Number"
            })
        );
        assert_eq!(
            validate(r#"{"sub":"a","exp":1800000000,"scope":{"x":1}}"#),
            Err(TokenError::ClaimType {
                claim: "scope".into(),
                expected: "List"
            })
        );
    }

    #[test]
    fn configured_claims_scope_and_skew() {
        let options: BTreeMap<String, String> = [
            ("unsecuredValidatorPrincipalClaimName", " user "),
            ("unsecuredValidatorScopeClaimName", "roles"),
            ("unsecuredValidatorRequiredScope", "LOGIN_TO_KAFKA  ADMIN"),
            ("unsecuredValidatorAllowableClockSkewMs", "3000"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let config = UnsecuredValidatorConfig::from_jaas_options(&options).unwrap();
        assert_eq!(config.principal_claim, "user");
        assert_eq!(config.required_scope, ["LOGIN_TO_KAFKA", "ADMIN"]);
        assert_eq!(config.allowable_clock_skew_ms, 3000);
        let token =
            unsecured(r#"{"user":"carol","exp":1700000002,"roles":["ADMIN","LOGIN_TO_KAFKA"]}"#);
        assert_eq!(
            validate_unsecured(&token, &config, NOW_MS)
                .unwrap()
                .principal,
            "carol"
        );
        let token = unsecured(r#"{"user":"carol","exp":1700000002,"roles":"ADMIN"}"#);
        let err = validate_unsecured(&token, &config, NOW_MS).unwrap_err();
        assert_eq!(err.status(), "insufficient_scope");
        assert_eq!(
            err.error_scope().as_deref(),
            Some("[LOGIN_TO_KAFKA, ADMIN]")
        );
        assert_eq!(TokenError::BadSignature.status(), "invalid_token");
        for bad in ["-1", "x", "3000000000"] {
            let options: BTreeMap<String, String> = [(
                "unsecuredValidatorAllowableClockSkewMs".to_string(),
                bad.to_string(),
            )]
            .into();
            assert!(UnsecuredValidatorConfig::from_jaas_options(&options).is_err());
        }
        assert_eq!(
            UnsecuredValidatorConfig::from_jaas_options(&BTreeMap::new()).unwrap(),
            UnsecuredValidatorConfig::default()
        );
    }

    #[test]
    fn malformed_compact_forms() {
        let config = UnsecuredValidatorConfig::default();
        let good = unsecured(r#"{"sub":"a","exp":1800000000}"#);
        for bad in [
            "".to_string(),
            "a.b".to_string(),
            "a.b.c.d".to_string(),
            format!("{good}."),
            good.replace('.', ".."),
            "!!.e30.".to_string(),
            format!("{}.e30.", BASE64URL.encode("[1]")),
            format!("{}.e30.", BASE64URL.encode("{")),
        ] {
            assert!(
                matches!(
                    validate_unsecured(&bad, &config, NOW_MS),
                    Err(TokenError::Malformed(_))
                ),
                "{bad}"
            );
        }
        // Padding is accepted, as Java's URL decoder does.
        let padded = format!(
            "{}.{}.",
            base64::engine::general_purpose::URL_SAFE.encode(r#"{"alg":"none"}"#),
            base64::engine::general_purpose::URL_SAFE.encode(r#"{"sub":"a","exp":1800000000}"#)
        );
        assert!(validate_unsecured(&padded, &config, NOW_MS).is_ok());
        for end in 0..good.len() {
            let _ = validate_unsecured(&good[..end], &config, NOW_MS);
        }
    }

    proptest! {
        #[test]
        fn never_panics(token in "[A-Za-z0-9_.=-]{0,80}", now_ms in any::<i64>()) {
            let _ = validate_unsecured(&token, &UnsecuredValidatorConfig::default(), now_ms);
        }

        #[test]
        fn extreme_times_never_panic(exp in any::<f64>(), iat in any::<f64>(), now_ms in any::<i64>()) {
            let claims = serde_json::json!({"sub": "a", "exp": exp, "iat": iat}).to_string();
            let _ = validate_unsecured(&unsecured(&claims), &UnsecuredValidatorConfig::default(), now_ms);
        }
    }
}
