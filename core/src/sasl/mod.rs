//! SASL (issue 31): the server side of Kafka's four mechanisms, as pure
//! state machines and validators that the broker's connection code drives.
//!
//! - [`mechanism`]: the mechanism names and `sasl.enabled.mechanisms`.
//! - [`scram_credential`]: a SCRAM credential (salt, stored and server
//!   keys, iterations) and its derivation from a password or, as
//!   KIP-554's AlterUserScramCredentials sends it, a salted password.
//! - [`scram`]: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677):
//!   the server's side of the exchange.
//! - [`plain`]: PLAIN (RFC 4616) against a user table.
//! - [`jaas`]: Kafka's `sasl.jaas.config` line, from which PLAIN's user
//!   table and the broker's own credentials come.
//! - [`oauthbearer`]: OAUTHBEARER (RFC 7628, KIP-255): the client's
//!   initial response and the server's exchange, including the JSON error
//!   and the client's `%x01` that closes it.
//! - [`jwt`]: a JWT's compact form and claims, and Kafka's unsecured
//!   (`alg: none`) validator.
//! - [`jwks`]: signed JWTs checked against a JWKS document.
//! - [`session_lifetime_ms`]: KIP-368's bound on a session, from
//!   `connections.max.reauth.ms` and the credential's expiry.
//!
//! # What is pure here, and what the shell supplies
//!
//! Nothing here reads a clock, draws randomness or does I/O: the server
//! nonce, a new credential's salt and `now_ms` are parameters, and so is the
//! JWKS document's text (the shell fetches and refreshes it). ring is used
//! for HMAC, digests, PBKDF2 and signature checks only; its `SystemRandom`
//! appears in tests alone.
//!
//! PBKDF2 ([`scram::ScramCredential::from_password`]) runs thousands of
//! HMACs: the broker calls it when credentials change, never per
//! connection. An exchange itself costs a few HMACs and, for a signed
//! token, one signature check.
//!
//! # Errors and what the client sees
//!
//! Kafka's `SaslServerAuthenticator` sends a client the message of a
//! `SaslAuthenticationException` as it is, and for any other failure
//! (a `SaslException`) the fixed text of [`generic_failure_message`], so
//! that a failed login does not tell a client why. Each error type here has
//! `is_client_visible()`, true exactly where Kafka throws the former; the
//! shell sends `to_string()` for those and the generic text otherwise.

pub mod client_login;
pub mod jaas;
pub mod jwks;
pub mod jwt;
pub mod mechanism;
pub mod oauthbearer;
pub mod plain;
pub mod scram;
pub mod scram_client;
pub mod scram_credential;

pub use mechanism::Mechanism;

/// The longest SASL message a parser here accepts: Kafka's default for
/// `sasl.server.max.receive.size` (`BrokerSecurityConfigs`), the bound the
/// broker puts on an unauthenticated client's frame. The parsers check it
/// again so that each of them is bounded on its own.
pub const SASL_MESSAGE_BYTES_MAX: usize = 524_288;

/// The most extensions (SCRAM's `,name=value`, OAUTHBEARER's
/// `name=value%x01`) one message may carry. Kafka knows one SCRAM extension
/// (`tokenauth`) and OAUTHBEARER's are the client's `sasl.oauthbearer`
/// extensions, a handful in practice.
pub const SASL_EXTENSIONS_MAX: usize = 32;

/// The text Kafka sends a client whose authentication failed with a
/// `SaslException`, which hides the reason (`SaslServerAuthenticator`).
pub fn generic_failure_message(mechanism: Mechanism, reauthentication: bool) -> String {
    let during = if reauthentication {
        "re-authentication"
    } else {
        "authentication"
    };
    format!(
        "Authentication failed during {during} due to invalid credentials with SASL mechanism {}",
        mechanism.name()
    )
}

/// The session lifetime the broker puts in its SaslAuthenticate response
/// and enforces (KIP-368), as Kafka's `SaslServerAuthenticator` computes
/// it at the end of authentication: `connections.max.reauth.ms` (0 for
/// none), the credential's expiry if it has one (an OAUTHBEARER token's
/// `exp`, a delegation token's), or the smaller of the two, never
/// negative. `None` when neither applies: the session does not expire.
pub fn session_lifetime_ms(
    authentication_end_ms: i64,
    connections_max_reauth_ms: i64,
    credential_expiry_ms: Option<i64>,
) -> Option<i64> {
    let max_reauth = (connections_max_reauth_ms > 0).then_some(connections_max_reauth_ms);
    let until_expiry = credential_expiry_ms.map(|e| e.saturating_sub(authentication_end_ms));
    let lifetime = match (max_reauth, until_expiry) {
        (None, None) => return None,
        (Some(m), None) => m,
        (None, Some(e)) => e,
        (Some(m), Some(e)) => m.min(e),
    };
    Some(lifetime.max(0))
}

/// Compares a secret a client sent (`attempt`) with the one the broker
/// holds (`expected`) in time that depends on the attempt's length alone,
/// as Kafka's `Utils.isEqualConstantTime` does: every byte of the attempt
/// is compared, cycling through the expected bytes, so neither where they
/// first differ nor the expected secret's length shows in the timing.
pub(crate) fn constant_time_eq(attempt: &[u8], expected: &[u8]) -> bool {
    if expected.is_empty() {
        return attempt.is_empty();
    }
    let mut difference = u8::from(attempt.len() != expected.len());
    for (a, e) in attempt.iter().zip(expected.iter().cycle()) {
        difference |= a ^ e;
    }
    // black_box keeps the optimiser from turning the loop into an early
    // exit on the first differing byte.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"Secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secrets"));
        assert!(!constant_time_eq(b"secrets", b"secret"));
        // A repetition of the expected bytes is not equal to them.
        assert!(!constant_time_eq(b"abab", b"ab"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(!constant_time_eq(b"x", b""));
    }

    #[test]
    fn session_lifetime_follows_kip_368() {
        assert_eq!(session_lifetime_ms(1_000, 0, None), None);
        assert_eq!(session_lifetime_ms(1_000, 60_000, None), Some(60_000));
        assert_eq!(session_lifetime_ms(1_000, 0, Some(31_000)), Some(30_000));
        assert_eq!(
            session_lifetime_ms(1_000, 60_000, Some(31_000)),
            Some(30_000)
        );
        assert_eq!(
            session_lifetime_ms(1_000, 10_000, Some(31_000)),
            Some(10_000)
        );
        // A token that expired during authentication: zero, not negative.
        assert_eq!(session_lifetime_ms(1_000, 10_000, Some(500)), Some(0));
        assert_eq!(session_lifetime_ms(i64::MAX, -1, Some(i64::MIN)), Some(0));
    }

    #[test]
    fn generic_message_is_kafkas() {
        assert_eq!(
            generic_failure_message(Mechanism::ScramSha256, false),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
        assert!(generic_failure_message(Mechanism::Plain, true).contains("re-authentication"));
    }
}
