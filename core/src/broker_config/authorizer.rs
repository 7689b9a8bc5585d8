//! The authorizer's settings, by Kafka's names: `authorizer.class.name`
//! turns authorization on, `super.users` and
//! `allow.everyone.if.no.acl.found` tune it (`acl::AuthorizerConfig`).
//!
//! pinlog has one authorizer, Kafka's `StandardAuthorizer` rules over the
//! ACLs in the metadata image, so the class name is a switch: Kafka's
//! class (or its short name) turns it on, empty (the default) leaves every
//! request allowed. Any other class is refused at startup rather than
//! ignored, since a broker that silently authorizes nothing is the worst
//! outcome of a typo.

use crate::acl::authorizer::{ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, SUPER_USERS_CONFIG};
use crate::acl::AuthorizerConfig;

/// Kafka's setting that names the authorizer.
pub const AUTHORIZER_CLASS_NAME_CONFIG: &str = "authorizer.class.name";
/// Kafka's KRaft authorizer, the one pinlog implements.
pub const STANDARD_AUTHORIZER_CLASS: &str =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// The short name pinlog also accepts for it.
pub const STANDARD_AUTHORIZER_ALIAS: &str = "StandardAuthorizer";

/// The authorizer settings of a settings file, as text until settled.
pub const AUTHORIZER_KEYS: &[&str] = &[
    AUTHORIZER_CLASS_NAME_CONFIG,
    SUPER_USERS_CONFIG,
    ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
];

/// The three settings as given (each absent by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerSettings {
    pub class_name: Option<String>,
    pub super_users: Option<String>,
    pub allow_everyone_if_no_acl_found: Option<String>,
}

impl AuthorizerSettings {
    /// Keeps one of [`AUTHORIZER_KEYS`].
    pub fn set(&mut self, key: &str, value: String) {
        match key {
            AUTHORIZER_CLASS_NAME_CONFIG => self.class_name = Some(value),
            SUPER_USERS_CONFIG => self.super_users = Some(value),
            ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG => {
                self.allow_everyone_if_no_acl_found = Some(value)
            }
            other => unreachable!("{other} is not an authorizer key"),
        }
    }

    /// The authorizer to run, or `None` when `authorizer.class.name` is
    /// empty or absent (every request allowed). The other two settings
    /// are checked either way, so that turning the authorizer on later
    /// does not reveal an old mistake.
    pub fn settle(&self) -> Result<Option<AuthorizerConfig>, String> {
        let config = AuthorizerConfig::from_kafka_settings(
            self.super_users.as_deref(),
            self.allow_everyone_if_no_acl_found.as_deref(),
        )?;
        match self.class_name.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(STANDARD_AUTHORIZER_CLASS | STANDARD_AUTHORIZER_ALIAS) => Ok(Some(config)),
            Some(other) => Err(format!(
                "{AUTHORIZER_CLASS_NAME_CONFIG}: pinlog implements one authorizer, \
                 {STANDARD_AUTHORIZER_CLASS} (or {STANDARD_AUTHORIZER_ALIAS}); {other:?} is \
                 not it. Leave the setting empty to authorize nothing."
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(
        class: Option<&str>,
        users: Option<&str>,
        allow: Option<&str>,
    ) -> Result<Option<AuthorizerConfig>, String> {
        AuthorizerSettings {
            class_name: class.map(String::from),
            super_users: users.map(String::from),
            allow_everyone_if_no_acl_found: allow.map(String::from),
        }
        .settle()
    }

    #[test]
    fn no_class_name_means_no_authorizer() {
        assert_eq!(settle(None, None, None), Ok(None));
        assert_eq!(settle(Some(" "), Some("User:admin"), None), Ok(None));
    }

    #[test]
    fn kafkas_class_and_its_short_name_turn_it_on() {
        for class in [STANDARD_AUTHORIZER_CLASS, STANDARD_AUTHORIZER_ALIAS] {
            let config = settle(Some(class), Some("User:admin;User:broker"), Some("true"))
                .unwrap()
                .expect("on");
            assert_eq!(config.super_users, vec!["User:admin", "User:broker"]);
            assert!(config.allow_everyone_if_no_acl_found);
        }
    }

    #[test]
    fn another_class_or_a_bad_super_user_is_refused() {
        let e = settle(Some("kafka.security.authorizer.AclAuthorizer"), None, None).unwrap_err();
        assert!(e.contains(STANDARD_AUTHORIZER_CLASS), "{e}");
        let e = settle(None, Some("admin"), None).unwrap_err();
        assert!(e.contains("super.users"), "{e}");
    }
}
