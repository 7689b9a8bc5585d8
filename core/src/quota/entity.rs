//! A quota entity: a user, a client id, or both, as AlterClientQuotas and
//! the metadata records name them. Each part is a name or `<default>` (a
//! null name on the wire).

/// Kafka's entity type of a principal's name.
pub const USER: &str = "user";
/// Kafka's entity type of a client id.
pub const CLIENT_ID: &str = "client-id";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityName {
    Named(String),
    /// `<default>`: every user (or client id) without its own quota.
    Default,
}

impl EntityName {
    /// The wire form: a null name for `<default>`.
    pub fn to_wire(&self) -> Option<String> {
        match self {
            EntityName::Named(n) => Some(n.clone()),
            EntityName::Default => None,
        }
    }

    pub fn from_wire(name: Option<&str>) -> EntityName {
        match name {
            Some(n) => EntityName::Named(n.to_string()),
            None => EntityName::Default,
        }
    }
}

impl std::fmt::Display for EntityName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntityName::Named(n) => f.write_str(n),
            EntityName::Default => f.write_str("<default>"),
        }
    }
}

/// A user, a client id, or both.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuotaEntity {
    pub user: Option<EntityName>,
    pub client_id: Option<EntityName>,
}

impl QuotaEntity {
    pub fn user(user: EntityName) -> QuotaEntity {
        QuotaEntity {
            user: Some(user),
            client_id: None,
        }
    }

    pub fn client(client_id: EntityName) -> QuotaEntity {
        QuotaEntity {
            user: None,
            client_id: Some(client_id),
        }
    }

    pub fn user_client(user: EntityName, client_id: EntityName) -> QuotaEntity {
        QuotaEntity {
            user: Some(user),
            client_id: Some(client_id),
        }
    }

    /// The entity of (type, name) pairs as AlterClientQuotas sends them;
    /// the error is Kafka's message for what is wrong.
    pub fn from_parts<'a>(
        parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<QuotaEntity, String> {
        let mut entity = QuotaEntity {
            user: None,
            client_id: None,
        };
        for (entity_type, name) in parts {
            let slot = match entity_type {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                other => {
                    return Err(format!(
                        "Unhandled client quota entity type: {other} (pinlog serves user and client-id)"
                    ))
                }
            };
            if slot.is_some() {
                return Err(format!("Duplicate {entity_type} entity"));
            }
            if name == Some("") {
                return Err(format!(
                    "Empty {entity_type} name; use <default> (null) for the default"
                ));
            }
            *slot = Some(EntityName::from_wire(name));
        }
        if entity.user.is_none() && entity.client_id.is_none() {
            return Err("Invalid empty client quota entity".to_string());
        }
        Ok(entity)
    }

    /// (type, name) pairs, user first.
    pub fn parts(&self) -> Vec<(&'static str, Option<String>)> {
        let mut out = Vec::with_capacity(2);
        if let Some(u) = &self.user {
            out.push((USER, u.to_wire()));
        }
        if let Some(c) = &self.client_id {
            out.push((CLIENT_ID, c.to_wire()));
        }
        out
    }
}

impl std::fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .parts()
            .into_iter()
            .map(|(t, n)| format!("{t}={}", n.unwrap_or_else(|| "<default>".into())))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_parse_from_the_wire_and_back() {
        let e = QuotaEntity::from_parts([("client-id", Some("app")), ("user", None)]).unwrap();
        assert_eq!(
            e,
            QuotaEntity::user_client(EntityName::Default, EntityName::Named("app".into()))
        );
        assert_eq!(
            e.parts(),
            vec![("user", None), ("client-id", Some("app".to_string()))]
        );
        assert_eq!(e.to_string(), "user=<default>,client-id=app");
        for bad in [
            vec![("ip", Some("1.2.3.4"))],
            vec![("user", Some("a")), ("user", Some("b"))],
            vec![("user", Some(""))],
            vec![],
        ] {
            assert!(QuotaEntity::from_parts(bad.clone()).is_err(), "{bad:?}");
        }
    }
}
