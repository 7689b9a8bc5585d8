//! DescribeClientQuotas (API 48, KIP-546): the quotas configured for the
//! entities that match the request's components, from this broker's
//! image, as `kafka-configs.sh --describe --entity-type users|clients`
//! asks for them.
//!
//! A component matches an entity's part of its type by exact name (a null
//! name being `<default>`), as the default, or as any named one; with
//! `strict`, an entity may have no part of a type the request does not
//! name. Kafka's rule: DESCRIBE_CONFIGS on the cluster, else the request
//! answers CLUSTER_AUTHORIZATION_FAILED.

use std::rc::Rc;

use crate::acl::matrix;
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_client_quotas::*;
use crate::quota::{EntityName, QuotaEntity, CLIENT_ID, USER};
use crate::server::handlers::access::{Access, AUTHORIZATION_FAILED};
use crate::shard::shard::Shard;

fn part<'a>(entity: &'a QuotaEntity, entity_type: &str) -> Option<&'a EntityName> {
    match entity_type {
        USER => entity.user.as_ref(),
        CLIENT_ID => entity.client_id.as_ref(),
        _ => None,
    }
}

fn matches(entity: &QuotaEntity, components: &[ComponentData], strict: bool) -> bool {
    let all = components.iter().all(|c| {
        let Some(name) = part(entity, &c.entity_type) else {
            return false;
        };
        match c.match_type {
            MATCH_TYPE_EXACT => *name == EntityName::from_wire(c.match_.as_deref()),
            MATCH_TYPE_DEFAULT => *name == EntityName::Default,
            _ => matches!(name, EntityName::Named(_)),
        }
    });
    let only_named = !strict
        || entity
            .parts()
            .iter()
            .all(|(t, _)| components.iter().any(|c| c.entity_type == *t));
    all && only_named
}

pub async fn handle(
    shard: &Rc<Shard>,
    _header: &RequestHeader,
    req: DescribeClientQuotasRequest,
    access: &Access<'_>,
) -> DescribeClientQuotasResponse {
    let refuse_with = |code: i16, message: String| DescribeClientQuotasResponse {
        throttle_time_ms: 0,
        error_code: code,
        error_message: Some(message),
        entries: None,
    };
    let image = BrokerState::of(shard).image();
    if !access.allows_cluster(&image, matrix::DESCRIBE_CLIENT_QUOTAS) {
        return refuse_with(
            error_code::CLUSTER_AUTHORIZATION_FAILED,
            AUTHORIZATION_FAILED.into(),
        );
    }
    let refuse = |message: String| refuse_with(error_code::INVALID_REQUEST, message);
    for (i, c) in req.components.iter().enumerate() {
        if c.entity_type != USER && c.entity_type != CLIENT_ID {
            return refuse(format!(
                "Unhandled client quota entity type: {} (pinlog serves user and client-id)",
                c.entity_type
            ));
        }
        if !(MATCH_TYPE_EXACT..=MATCH_TYPE_SPECIFIED).contains(&c.match_type) {
            return refuse(format!("Unknown match type {}", c.match_type));
        }
        if c.match_type != MATCH_TYPE_EXACT && c.match_.is_some() {
            return refuse("A match name is only allowed with the exact match type".into());
        }
        if req.components[..i]
            .iter()
            .any(|o| o.entity_type == c.entity_type)
        {
            return refuse(format!("Duplicate {} component", c.entity_type));
        }
    }
    let entries = image
        .client_quotas
        .iter()
        .filter(|(entity, _)| matches(entity, &req.components, req.strict))
        .map(|(entity, values)| EntryData {
            entity: entity
                .parts()
                .into_iter()
                .map(|(t, n)| EntityData {
                    entity_type: t.to_string(),
                    entity_name: n,
                })
                .collect(),
            values: values
                .iter()
                .map(|(k, v)| ValueData {
                    key: k.clone(),
                    value: v.0,
                })
                .collect(),
        })
        .collect();
    DescribeClientQuotasResponse {
        throttle_time_ms: 0,
        error_code: error_code::NONE,
        error_message: None,
        entries: Some(entries),
    }
}
