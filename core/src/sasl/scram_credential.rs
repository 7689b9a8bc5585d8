//! A SCRAM credential as the broker stores it (RFC 5802 section 3): the
//! salt, the iteration count, and two keys derived from the salted
//! password, never the password itself.
//!
//! ```text
//! SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
//! ClientKey      = HMAC(SaltedPassword, "Client Key")
//! StoredKey      = H(ClientKey)
//! ServerKey      = HMAC(SaltedPassword, "Server Key")
//! ```
//!
//! KIP-554's AlterUserScramCredentials carries the salted password, not the
//! password (the client salts it), so [`ScramCredential::from_salted_password`]
//! is the controller's entry point; [`ScramCredential::from_password`] is
//! for credentials in the broker's own settings and for tests. PBKDF2 runs
//! `iterations` HMACs: call it off the connection path.

use std::fmt;
use std::num::NonZeroU32;

use ring::{digest, hmac, pbkdf2};

use crate::protocol::messages::describe_user_scram_credentials::{
    MECHANISM_SCRAM_SHA_256, MECHANISM_SCRAM_SHA_512,
};

/// Kafka's `ScramMechanism.minIterations()`: fewer iterations are refused
/// both when a credential is set and when a client authenticates with it.
pub const MIN_ITERATIONS: u32 = 4096;
/// Kafka's `ScramMechanism.maxIterations()`: AlterUserScramCredentials
/// refuses more, which bounds the PBKDF2 work one request can ask of the
/// broker.
pub const MAX_ITERATIONS: u32 = 16_384;

const _: () = assert!(MIN_ITERATIONS > 0 && MIN_ITERATIONS <= MAX_ITERATIONS);

/// The two SCRAM mechanisms and their hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    /// The SCRAM side of a SASL mechanism, if it is one.
    pub fn from_mechanism(mechanism: super::Mechanism) -> Option<ScramMechanism> {
        match mechanism {
            super::Mechanism::ScramSha256 => Some(ScramMechanism::Sha256),
            super::Mechanism::ScramSha512 => Some(ScramMechanism::Sha512),
            super::Mechanism::Plain | super::Mechanism::OAuthBearer => None,
        }
    }

    /// Kafka's `ScramMechanism` type code, as the credential APIs and
    /// records carry it.
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => MECHANISM_SCRAM_SHA_256,
            ScramMechanism::Sha512 => MECHANISM_SCRAM_SHA_512,
        }
    }

    /// The mechanism of a Kafka type code; `None` for a code Kafka does
    /// not define (0 is its UNKNOWN).
    pub fn from_kafka_type(code: i8) -> Option<ScramMechanism> {
        match code {
            MECHANISM_SCRAM_SHA_256 => Some(ScramMechanism::Sha256),
            MECHANISM_SCRAM_SHA_512 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn mechanism(self) -> super::Mechanism {
        match self {
            ScramMechanism::Sha256 => super::Mechanism::ScramSha256,
            ScramMechanism::Sha512 => super::Mechanism::ScramSha512,
        }
    }

    /// Bytes of the hash's output, and so of every key and proof.
    pub fn key_len(self) -> usize {
        self.digest().output_len()
    }

    pub(crate) fn digest(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }

    pub(crate) fn hmac(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    /// HMAC(key, data), RFC 5802's `HMAC`.
    pub(crate) fn hmac_of(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        let key = hmac::Key::new(self.hmac(), key);
        hmac::sign(&key, data).as_ref().to_vec()
    }

    /// H(data), RFC 5802's `H`.
    pub(crate) fn hash_of(self, data: &[u8]) -> Vec<u8> {
        digest::digest(self.digest(), data).as_ref().to_vec()
    }

    /// RFC 5802's `Hi(password, salt, iterations)`: PBKDF2 with this
    /// mechanism's HMAC, one block. Kafka does not SASLprep the password
    /// (`ScramFormatter.normalize` is its UTF-8 bytes), and neither do we,
    /// so a password with characters SASLprep would map works the same as
    /// against Kafka.
    pub fn salted_password(
        self,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<Vec<u8>, CredentialError> {
        check_iterations(iterations)?;
        check_salt(salt)?;
        let rounds =
            NonZeroU32::new(iterations).ok_or(CredentialError::Iterations { iterations })?;
        let mut out = vec![0u8; self.key_len()];
        pbkdf2::derive(self.pbkdf2(), rounds, salt, password.as_bytes(), &mut out);
        Ok(out)
    }
}

/// What the broker keeps for one user and one SCRAM mechanism (Kafka's
/// `ScramCredential`, the `UserScramCredentialRecord`'s fields).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

impl fmt::Debug for ScramCredential {
    // The keys are password-equivalent for a man in the middle: keep them
    // out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt_len", &self.salt.len())
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// Derives the credential for `password`, with a salt the caller drew
    /// at random. Runs PBKDF2: `iterations` HMACs.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<ScramCredential, CredentialError> {
        let salted = mechanism.salted_password(password, salt, iterations)?;
        ScramCredential::from_salted_password(mechanism, salt, &salted, iterations)
    }

    /// The credential for a salted password that a client computed
    /// (KIP-554's AlterUserScramCredentials upsertion). Two HMACs and a
    /// hash.
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: u32,
    ) -> Result<ScramCredential, CredentialError> {
        check_iterations(iterations)?;
        check_salt(salt)?;
        if salted_password.len() != mechanism.key_len() {
            return Err(CredentialError::SaltedPasswordLength {
                expected: mechanism.key_len(),
                actual: salted_password.len(),
            });
        }
        let client_key = mechanism.hmac_of(salted_password, b"Client Key");
        let credential = ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash_of(&client_key),
            server_key: mechanism.hmac_of(salted_password, b"Server Key"),
            iterations,
        };
        assert!(credential.fits(mechanism));
        Ok(credential)
    }

    /// Whether the keys have this mechanism's length: a credential stored
    /// for SCRAM-SHA-256 cannot serve SCRAM-SHA-512.
    pub fn fits(&self, mechanism: ScramMechanism) -> bool {
        self.stored_key.len() == mechanism.key_len() && self.server_key.len() == mechanism.key_len()
    }
}

fn check_iterations(iterations: u32) -> Result<(), CredentialError> {
    if (MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        Ok(())
    } else {
        Err(CredentialError::Iterations { iterations })
    }
}

fn check_salt(salt: &[u8]) -> Result<(), CredentialError> {
    if salt.is_empty() {
        Err(CredentialError::EmptySalt)
    } else {
        Ok(())
    }
}

/// Why a credential cannot be made. Kafka answers these with
/// UNACCEPTABLE_CREDENTIAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialError {
    /// Outside `MIN_ITERATIONS..=MAX_ITERATIONS`.
    Iterations { iterations: u32 },
    /// An empty salt, which would make equal passwords equal credentials.
    EmptySalt,
    /// A salted password whose length is not the hash's.
    SaltedPasswordLength { expected: usize, actual: usize },
}

impl fmt::Display for CredentialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialError::Iterations { iterations } if *iterations < MIN_ITERATIONS => write!(
                f,
                "Too few iterations: {iterations}, the minimum is {MIN_ITERATIONS}"
            ),
            CredentialError::Iterations { iterations } => write!(
                f,
                "Too many iterations: {iterations}, the maximum is {MAX_ITERATIONS}"
            ),
            CredentialError::EmptySalt => f.write_str("The salt of a SCRAM credential is empty"),
            CredentialError::SaltedPasswordLength { expected, actual } => write!(
                f,
                "The salted password has {actual} bytes; the mechanism's hash has {expected}"
            ),
        }
    }
}

impl std::error::Error for CredentialError {}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    #[test]
    fn rfc7677_salted_password_gives_the_vectors_keys() {
        // RFC 7677 section 3: user "user", password "pencil".
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let m = ScramMechanism::Sha256;
        let a = ScramCredential::from_password(m, "pencil", &salt, 4096).unwrap();
        let salted = m.salted_password("pencil", &salt, 4096).unwrap();
        let b = ScramCredential::from_salted_password(m, &salt, &salted, 4096).unwrap();
        assert_eq!(a, b);
        assert!(a.fits(m));
        assert!(!a.fits(ScramMechanism::Sha512));
        assert_eq!(a.iterations, 4096);
        // Debug hides the keys.
        let shown = format!("{a:?}");
        assert!(!shown.contains("stored_key") && shown.contains("iterations"));
    }

    #[test]
    fn sha512_keys_have_64_bytes_and_differ_from_sha256() {
        let s512 =
            ScramCredential::from_password(ScramMechanism::Sha512, "pw", b"salt", 4096).unwrap();
        let s256 =
            ScramCredential::from_password(ScramMechanism::Sha256, "pw", b"salt", 4096).unwrap();
        assert_eq!(s512.stored_key.len(), 64);
        assert_eq!(s256.stored_key.len(), 32);
        assert_ne!(s512.server_key[..32], s256.server_key[..]);
    }

    #[test]
    fn refuses_out_of_range_iterations_empty_salt_and_bad_lengths() {
        let m = ScramMechanism::Sha256;
        for iterations in [0, 1, MIN_ITERATIONS - 1, MAX_ITERATIONS + 1, u32::MAX] {
            let err = ScramCredential::from_password(m, "pw", b"salt", iterations).unwrap_err();
            assert_eq!(err, CredentialError::Iterations { iterations });
        }
        assert!(ScramCredential::from_password(m, "pw", b"salt", MAX_ITERATIONS).is_ok());
        assert!(CredentialError::Iterations { iterations: 1 }
            .to_string()
            .starts_with("Too few"));
        assert!(CredentialError::Iterations {
            iterations: MAX_ITERATIONS + 1
        }
        .to_string()
        .starts_with("Too many"));
        assert_eq!(
            ScramCredential::from_password(m, "pw", b"", 4096),
            Err(CredentialError::EmptySalt)
        );
        assert_eq!(
            ScramCredential::from_salted_password(m, b"salt", &[0; 64], 4096),
            Err(CredentialError::SaltedPasswordLength {
                expected: 32,
                actual: 64
            })
        );
    }

    #[test]
    fn mechanism_mapping() {
        use crate::sasl::Mechanism;
        assert_eq!(
            ScramMechanism::from_mechanism(Mechanism::ScramSha512),
            Some(ScramMechanism::Sha512)
        );
        assert_eq!(ScramMechanism::from_mechanism(Mechanism::Plain), None);
        assert_eq!(ScramMechanism::Sha256.mechanism(), Mechanism::ScramSha256);
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            assert_eq!(ScramMechanism::from_kafka_type(m.kafka_type()), Some(m));
        }
        assert_eq!(ScramMechanism::Sha512.kafka_type(), 2);
        assert_eq!(ScramMechanism::from_kafka_type(0), None);
    }
}
