//! `pinlog quota list|set|remove`: client quotas (KIP-546) per user, per
//! client id, or both, each a name or `<default>`, like `kafka-configs.sh
//! --entity-type users|clients` and `kafka-client-quotas`-style describes.
//!
//! DescribeClientQuotas lists (every entity, or those that involve the
//! user or client id given); AlterClientQuotas sets and removes keys. The
//! entity and key names are `crate::quota`'s, the broker's own.
//!
//! In `--json`, an entity is an object keyed by Kafka's entity types
//! (`user`, `client-id`) as Kafka's `ClientQuotaEntity` is: a name, or
//! `null` for the `<default>` entity of that type; a type the entity does
//! not have is absent.

use std::io::Write;

use clap::Args;
use serde_json::{json, Map, Value};

use crate::cli::client::Client;
use crate::cli::error::{CliError, CliResult};
use crate::cli::table::{json_text, Align, Table};
use crate::cli::{emit, ConnectArgs, QuotaCommand};
use crate::protocol::error_code;
use crate::protocol::messages::alter_client_quotas::{
    AlterClientQuotasRequest, EntryData as AlterEntry, OpData,
};
use crate::protocol::messages::describe_client_quotas::{
    ComponentData, DescribeClientQuotasRequest, EntityData, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT,
};
use crate::quota::{
    EntityName, QuotaEntity, CLIENT_ID, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE, QUOTA_KEYS, REQUEST_PERCENTAGE, USER,
};

/// The largest quota value shown as a whole number: every integer up to
/// 2^53 has an exact `f64`.
const WHOLE_NUMBER_MAX: f64 = 9_007_199_254_740_992.0;

/// Which entity a quota command is about: a user, a client id, or both.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct EntityArgs {
    /// A user: the principal's name (alice for User:alice).
    #[arg(long, value_name = "NAME", conflicts_with = "user_default")]
    pub user: Option<String>,
    /// The default user: every user without a quota of their own.
    #[arg(long)]
    pub user_default: bool,
    /// A client id (the client.id producers and consumers send).
    #[arg(long, value_name = "ID", conflicts_with = "client_id_default")]
    pub client_id: Option<String>,
    /// The default client id: every client id without a quota of its own.
    #[arg(long)]
    pub client_id_default: bool,
}

impl EntityArgs {
    fn user_part(&self) -> Option<EntityName> {
        match (&self.user, self.user_default) {
            (Some(u), _) => Some(EntityName::Named(u.clone())),
            (None, true) => Some(EntityName::Default),
            (None, false) => None,
        }
    }

    fn client_part(&self) -> Option<EntityName> {
        match (&self.client_id, self.client_id_default) {
            (Some(c), _) => Some(EntityName::Named(c.clone())),
            (None, true) => Some(EntityName::Default),
            (None, false) => None,
        }
    }

    /// The entity named; `None` when no option names one.
    pub fn entity(&self) -> Option<QuotaEntity> {
        let entity = QuotaEntity {
            user: self.user_part(),
            client_id: self.client_part(),
        };
        (entity.user.is_some() || entity.client_id.is_some()).then_some(entity)
    }
}

/// The values `set` gives, by Kafka's key names.
#[derive(Args, Debug, Clone, Default, PartialEq)]
pub struct QuotaValues {
    /// Bytes per second the entity may produce.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub producer_byte_rate: Option<u64>,
    /// Bytes per second the entity may fetch.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub consumer_byte_rate: Option<u64>,
    /// Percent of one request thread's time (stored; not enforced yet).
    #[arg(long, value_name = "PERCENT", value_parser = parse_positive)]
    pub request_percentage: Option<f64>,
    /// Topic and partition creations and deletions per second (stored; not
    /// enforced yet).
    #[arg(long, value_name = "RATE", value_parser = parse_positive)]
    pub controller_mutation_rate: Option<f64>,
}

impl QuotaValues {
    /// (key, value) for each value given, in Kafka's key order.
    pub fn pairs(&self) -> Vec<(&'static str, f64)> {
        [
            (
                PRODUCER_BYTE_RATE,
                self.producer_byte_rate.map(|v| v as f64),
            ),
            (
                CONSUMER_BYTE_RATE,
                self.consumer_byte_rate.map(|v| v as f64),
            ),
            (REQUEST_PERCENTAGE, self.request_percentage),
            (CONTROLLER_MUTATION_RATE, self.controller_mutation_rate),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// A number above zero.
pub fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number above zero")),
    }
}

/// A key `remove` takes: one of Kafka's quota keys.
pub fn parse_quota_key(s: &str) -> Result<String, String> {
    let key = s.trim();
    if QUOTA_KEYS.contains(&key) {
        Ok(key.to_string())
    } else {
        Err(format!(
            "{s:?} is not a quota key; the keys are {}",
            QUOTA_KEYS.join(", ")
        ))
    }
}

/// The components `list` filters with: each part the options name, by
/// name or as the default. Not strict, so an entity that also has the
/// other part is listed too (`--user alice` shows alice's quotas for
/// each client id).
pub fn list_components(args: &EntityArgs) -> Vec<ComponentData> {
    let component = |entity_type: &str, part: Option<EntityName>| {
        part.map(|p| ComponentData {
            entity_type: entity_type.to_string(),
            match_type: match p {
                EntityName::Named(_) => MATCH_TYPE_EXACT,
                EntityName::Default => MATCH_TYPE_DEFAULT,
            },
            match_: p.to_wire(),
        })
    };
    component(USER, args.user_part())
        .into_iter()
        .chain(component(CLIENT_ID, args.client_part()))
        .collect()
}

/// One entity's quotas.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityQuotas {
    pub entity: QuotaEntity,
    pub values: Vec<(String, f64)>,
}

pub fn run(conn: &ConnectArgs, command: QuotaCommand, out: &mut dyn Write) -> CliResult<()> {
    // Each command checks its arguments before it connects.
    match command {
        QuotaCommand::List { entity } => {
            let mut cluster = conn.cluster()?;
            let quotas = list(cluster.any(), &entity)?;
            emit(out, &render_list(&quotas, conn.json))
        }
        QuotaCommand::Set { entity, values } => {
            let entity = entity_of(&entity)?;
            let mut cluster = conn.cluster()?;
            let pairs = values.pairs();
            let ops = pairs
                .iter()
                .map(|(k, v)| OpData {
                    key: k.to_string(),
                    value: *v,
                    remove: false,
                })
                .collect();
            alter(cluster.any(), &entity, ops)?;
            emit(out, &render_set(&entity, &pairs, conn.json))
        }
        QuotaCommand::Remove { keys, entity } => {
            let entity = entity_of(&entity)?;
            let mut cluster = conn.cluster()?;
            let ops = keys
                .iter()
                .map(|k| OpData {
                    key: k.clone(),
                    value: 0.0,
                    remove: true,
                })
                .collect();
            alter(cluster.any(), &entity, ops)?;
            emit(out, &render_remove(&entity, &keys, conn.json))
        }
    }
}

/// The entity of `set` and `remove`, which clap requires; the check keeps
/// a wrong command definition from sending an empty entity.
fn entity_of(args: &EntityArgs) -> CliResult<QuotaEntity> {
    args.entity().ok_or_else(|| {
        CliError::Usage(
            "name the entity: --user, --user-default, --client-id or --client-id-default".into(),
        )
    })
}

fn list(client: &mut Client, args: &EntityArgs) -> CliResult<Vec<EntityQuotas>> {
    let resp = client.send(&DescribeClientQuotasRequest {
        components: list_components(args),
        strict: false,
    })?;
    if resp.error_code != error_code::NONE {
        return Err(CliError::broker(
            "DescribeClientQuotas",
            resp.error_code,
            resp.error_message,
        ));
    }
    let mut quotas = Vec::new();
    for entry in resp.entries.unwrap_or_default() {
        let entity = QuotaEntity::from_parts(
            entry
                .entity
                .iter()
                .map(|d| (d.entity_type.as_str(), d.entity_name.as_deref())),
        )
        .map_err(|detail| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: format!("DescribeClientQuotas answered an entity pinlog cannot read: {detail}"),
        })?;
        let mut values: Vec<(String, f64)> =
            entry.values.into_iter().map(|v| (v.key, v.value)).collect();
        values.sort_by(|a, b| a.0.cmp(&b.0));
        quotas.push(EntityQuotas { entity, values });
    }
    quotas.sort_by(|a, b| a.entity.cmp(&b.entity));
    Ok(quotas)
}

fn alter(client: &mut Client, entity: &QuotaEntity, ops: Vec<OpData>) -> CliResult<()> {
    let entity_data: Vec<EntityData> = entity
        .parts()
        .into_iter()
        .map(|(t, n)| EntityData {
            entity_type: t.to_string(),
            entity_name: n,
        })
        .collect();
    let resp = client.send(&AlterClientQuotasRequest {
        entries: vec![AlterEntry {
            entity: entity_data,
            ops,
        }],
        validate_only: false,
    })?;
    let result = resp
        .entries
        .into_iter()
        .next()
        .ok_or_else(|| CliError::Protocol {
            addr: client.addr().to_string(),
            detail: "AlterClientQuotas answered no entry".into(),
        })?;
    if result.error_code != error_code::NONE {
        return Err(CliError::broker(
            format!("quota of {entity}"),
            result.error_code,
            result.error_message,
        ));
    }
    Ok(())
}

/// A value as people write it: whole numbers without a fraction.
pub fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() <= WHOLE_NUMBER_MAX {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

fn value_json(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() <= WHOLE_NUMBER_MAX {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// Kafka's `ClientQuotaEntity` as JSON (see the module's documentation).
fn entity_json(entity: &QuotaEntity) -> Value {
    Value::Object(
        entity
            .parts()
            .into_iter()
            .map(|(t, n)| (t.to_string(), n.map_or(Value::Null, Value::String)))
            .collect(),
    )
}

fn values_json<'a>(values: impl IntoIterator<Item = (&'a str, f64)>) -> Value {
    Value::Object(
        values
            .into_iter()
            .map(|(k, v)| (k.to_string(), value_json(v)))
            .collect::<Map<_, _>>(),
    )
}

fn part_text(part: &Option<EntityName>) -> String {
    part.as_ref()
        .map_or_else(|| "-".into(), EntityName::to_string)
}

pub fn render_list(quotas: &[EntityQuotas], as_json: bool) -> String {
    if as_json {
        let list: Vec<Value> = quotas
            .iter()
            .map(|q| {
                json!({
                    "entity": entity_json(&q.entity),
                    "values": values_json(q.values.iter().map(|(k, v)| (k.as_str(), *v))),
                })
            })
            .collect();
        return json_text(&json!({ "quotas": list }));
    }
    if quotas.is_empty() {
        return "No quotas match. Set one with `pinlog quota set --user NAME --producer-byte-rate BYTES`.\n"
            .into();
    }
    let mut table = Table::new(&[
        ("USER", Align::Left),
        ("CLIENT-ID", Align::Left),
        ("KEY", Align::Left),
        ("VALUE", Align::Right),
    ]);
    for q in quotas {
        for (k, v) in &q.values {
            table.row(vec![
                part_text(&q.entity.user),
                part_text(&q.entity.client_id),
                k.clone(),
                value_text(*v),
            ]);
        }
    }
    table.render()
}

pub fn render_set(entity: &QuotaEntity, values: &[(&str, f64)], as_json: bool) -> String {
    if as_json {
        return json_text(&json!({
            "entity": entity_json(entity),
            "set": values_json(values.iter().copied()),
        }));
    }
    let list: Vec<String> = values
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(*v)))
        .collect();
    format!("Set the quotas of {entity}: {}.\n", list.join(", "))
}

pub fn render_remove(entity: &QuotaEntity, keys: &[String], as_json: bool) -> String {
    if as_json {
        return json_text(&json!({ "entity": entity_json(entity), "removed": keys }));
    }
    format!("Removed {} from the quotas of {entity}.\n", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(user: Option<&str>, user_default: bool, client: Option<&str>) -> EntityArgs {
        EntityArgs {
            user: user.map(str::to_string),
            user_default,
            client_id: client.map(str::to_string),
            client_id_default: false,
        }
    }

    #[test]
    fn the_options_name_an_entity() {
        assert_eq!(args(None, false, None).entity(), None);
        assert_eq!(
            args(Some("alice"), false, None).entity(),
            Some(QuotaEntity::user(EntityName::Named("alice".into())))
        );
        let both = EntityArgs {
            client_id_default: true,
            ..args(None, true, None)
        };
        assert_eq!(
            both.entity(),
            Some(QuotaEntity::user_client(
                EntityName::Default,
                EntityName::Default
            ))
        );
        assert!(list_components(&args(None, false, None)).is_empty());
        let c = list_components(&args(None, true, Some("app")));
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].entity_type.as_str(), c[0].match_type),
            (USER, MATCH_TYPE_DEFAULT)
        );
        assert_eq!(c[0].match_, None);
        assert_eq!(c[1].match_type, MATCH_TYPE_EXACT);
        assert_eq!(c[1].match_.as_deref(), Some("app"));
    }

    #[test]
    fn values_and_keys() {
        let v = QuotaValues {
            consumer_byte_rate: Some(2048),
            request_percentage: Some(12.5),
            ..QuotaValues::default()
        };
        assert_eq!(
            v.pairs(),
            vec![(CONSUMER_BYTE_RATE, 2048.0), (REQUEST_PERCENTAGE, 12.5)]
        );
        assert!(parse_positive("0").is_err());
        assert!(parse_positive("-1").is_err());
        assert!(parse_positive("NaN").is_err());
        assert_eq!(parse_positive("2.5"), Ok(2.5));
        assert!(parse_quota_key("producer_byte_rate").is_ok());
        let e = parse_quota_key("producer-byte-rate").unwrap_err();
        assert!(e.contains("producer_byte_rate, consumer_byte_rate"), "{e}");
        assert_eq!(value_text(1_048_576.0), "1048576");
        assert_eq!(value_text(12.5), "12.5");
    }

    #[test]
    fn tables_and_json_say_the_same() {
        let quotas = vec![
            EntityQuotas {
                entity: QuotaEntity::user(EntityName::Named("alice".into())),
                values: vec![(PRODUCER_BYTE_RATE.into(), 1_048_576.0)],
            },
            EntityQuotas {
                entity: QuotaEntity::user_client(
                    EntityName::Default,
                    EntityName::Named("app".into()),
                ),
                values: vec![(REQUEST_PERCENTAGE.into(), 12.5)],
            },
        ];
        assert_eq!(
            render_list(&quotas, false),
            "USER       CLIENT-ID  KEY                   VALUE\n\
             alice      -          producer_byte_rate  1048576\n\
             <default>  app        request_percentage     12.5\n"
        );
        let v: Value = serde_json::from_str(&render_list(&quotas, true)).unwrap();
        assert_eq!(v["quotas"][0]["entity"], json!({"user": "alice"}));
        assert_eq!(v["quotas"][0]["values"]["producer_byte_rate"], 1_048_576);
        assert_eq!(
            v["quotas"][1]["entity"],
            json!({"user": null, "client-id": "app"})
        );
        assert_eq!(v["quotas"][1]["values"]["request_percentage"], 12.5);
        assert!(render_list(&[], false).contains("pinlog quota set"));
        let alice = &quotas[0].entity;
        assert_eq!(
            render_set(alice, &[(PRODUCER_BYTE_RATE, 1024.0)], false),
            "Set the quotas of user=alice: producer_byte_rate=1024.\n"
        );
        let v: Value = serde_json::from_str(&render_remove(
            alice,
            &[CONSUMER_BYTE_RATE.to_string()],
            true,
        ))
        .unwrap();
        assert_eq!(v["removed"][0], CONSUMER_BYTE_RATE);
        assert_eq!(v["entity"]["user"], "alice");
    }
}
