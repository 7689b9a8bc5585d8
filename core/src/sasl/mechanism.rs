//! The SASL mechanisms pinlog serves, under Kafka's names, and the parse of
//! `sasl.enabled.mechanisms`.
//!
//! Kafka also knows GSSAPI (Kerberos), which pinlog does not serve: a list
//! naming it is refused with a message that says so, rather than accepted
//! and then never offered to a client.

use std::fmt;

/// A SASL mechanism, as a SaslHandshake request and
/// `sasl.enabled.mechanisms` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

/// The mechanisms Kafka knows that pinlog does not serve.
const UNSUPPORTED_KAFKA_MECHANISMS: &[&str] = &["GSSAPI"];

impl Mechanism {
    /// Every mechanism, in the order a SaslHandshake error lists them.
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
        Mechanism::OAuthBearer,
    ];

    /// Kafka's name (`PlainSaslServer.PLAIN_MECHANISM`,
    /// `ScramMechanism.mechanismName()`, `OAUTHBEARER_MECHANISM`).
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism a client names. Case-sensitive, as Kafka's lookup is
    /// (a SaslHandshake naming `plain` gets UNSUPPORTED_SASL_MECHANISM).
    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether this is one of the SCRAM mechanisms.
    pub fn is_scram(self) -> bool {
        matches!(self, Mechanism::ScramSha256 | Mechanism::ScramSha512)
    }

    /// Parses `sasl.enabled.mechanisms` as Kafka's `ConfigDef` reads a
    /// list: comma-separated, whitespace around the names ignored, the
    /// empty string an empty list. A name listed twice is kept once, in
    /// its first place. An empty name (`PLAIN,,SCRAM-SHA-256`, or a trailing
    /// comma) is an error, as it fails in Kafka when the broker looks the
    /// mechanism up.
    pub fn parse_enabled(list: &str) -> Result<Vec<Mechanism>, MechanismError> {
        let trimmed = list.trim();
        let mut enabled = Vec::new();
        if trimmed.is_empty() {
            return Ok(enabled);
        }
        for (position, raw) in trimmed.split(',').enumerate() {
            let name = raw.trim();
            if name.is_empty() {
                return Err(MechanismError::Empty { position });
            }
            let mechanism = match Mechanism::from_name(name) {
                Some(m) => m,
                None if UNSUPPORTED_KAFKA_MECHANISMS.contains(&name) => {
                    return Err(MechanismError::NotServed {
                        name: name.to_string(),
                    })
                }
                None => {
                    return Err(MechanismError::Unknown {
                        name: name.to_string(),
                    })
                }
            };
            if !enabled.contains(&mechanism) {
                enabled.push(mechanism);
            }
        }
        debug_assert!(enabled.len() <= Mechanism::ALL.len());
        Ok(enabled)
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why `sasl.enabled.mechanisms` does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MechanismError {
    /// The list has an empty entry at this 0-based position.
    Empty { position: usize },
    /// A mechanism Kafka knows and pinlog does not serve.
    NotServed { name: String },
    /// A name no Kafka broker knows (names are case-sensitive).
    Unknown { name: String },
}

impl fmt::Display for MechanismError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let served = Mechanism::ALL.map(Mechanism::name).join(", ");
        match self {
            MechanismError::Empty { position } => write!(
                f,
                "sasl.enabled.mechanisms has an empty entry at position {position}"
            ),
            MechanismError::NotServed { name } => write!(
                f,
                "sasl.enabled.mechanisms names {name}, which pinlog does not serve (it serves {served})"
            ),
            MechanismError::Unknown { name } => write!(
                f,
                "sasl.enabled.mechanisms names unknown mechanism {name:?} (names are case-sensitive; pinlog serves {served})"
            ),
        }
    }
}

impl std::error::Error for MechanismError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Some(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(Mechanism::from_name("plain"), None);
        assert_eq!(Mechanism::from_name("SCRAM-SHA-1"), None);
        assert!(Mechanism::ScramSha512.is_scram());
        assert!(!Mechanism::OAuthBearer.is_scram());
    }

    #[test]
    fn parses_kafka_lists() {
        assert_eq!(Mechanism::parse_enabled(""), Ok(vec![]));
        assert_eq!(Mechanism::parse_enabled("   "), Ok(vec![]));
        assert_eq!(
            Mechanism::parse_enabled(" SCRAM-SHA-512 ,PLAIN, OAUTHBEARER,PLAIN "),
            Ok(vec![
                Mechanism::ScramSha512,
                Mechanism::Plain,
                Mechanism::OAuthBearer
            ])
        );
    }

    #[test]
    fn refuses_bad_lists_naming_the_entry() {
        assert_eq!(
            Mechanism::parse_enabled("PLAIN,"),
            Err(MechanismError::Empty { position: 1 })
        );
        let err = Mechanism::parse_enabled("PLAIN,GSSAPI").unwrap_err();
        assert_eq!(
            err,
            MechanismError::NotServed {
                name: "GSSAPI".into()
            }
        );
        assert!(err.to_string().contains("does not serve"));
        let err = Mechanism::parse_enabled("scram-sha-256").unwrap_err();
        assert!(err.to_string().contains("\"scram-sha-256\""), "{err}");
    }
}
