//! AlterClientQuotas (KIP-546) at the active controller: each entry's
//! checks, and the ClientQuota records of the entries that pass. An entry
//! is applied whole or not at all; entries are independent.

use serde::{Deserialize, Serialize};

use crate::metadata::records::MetadataRecord;
use crate::protocol::error_code;
use crate::quota::{QuotaEntity, QuotaValue, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, QUOTA_KEYS};

/// One entry of the request: the entity as (type, name) pairs, and each
/// key's new value (`None` removes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaAlteration {
    pub entity: Vec<(String, Option<String>)>,
    pub ops: Vec<(String, Option<f64>)>,
}

/// An entry's outcome: `Err((code, message))` refuses it.
pub type QuotaOutcome = Result<(), (i16, String)>;

fn check(alteration: &QuotaAlteration) -> Result<QuotaEntity, String> {
    let entity = QuotaEntity::from_parts(
        alteration
            .entity
            .iter()
            .map(|(t, n)| (t.as_str(), n.as_deref())),
    )?;
    let mut seen = Vec::new();
    for (key, value) in &alteration.ops {
        if !QUOTA_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "Invalid configuration key {key}; the quota keys are {}",
                QUOTA_KEYS.join(", ")
            ));
        }
        if seen.contains(&key) {
            return Err(format!("Duplicate quota key {key}"));
        }
        seen.push(key);
        let Some(v) = value else { continue };
        if !v.is_finite() || *v <= 0.0 {
            return Err(format!(
                "Invalid value {v} for {key}: it must be above zero"
            ));
        }
        let whole = [PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE];
        if whole.contains(&key.as_str()) && v.fract() != 0.0 {
            return Err(format!(
                "Invalid value {v} for {key}: bytes per second are a whole number"
            ));
        }
    }
    Ok(entity)
}

/// The records of the entries that pass, and every entry's outcome in
/// request order.
pub fn plan_alter_client_quotas(
    alterations: &[QuotaAlteration],
) -> (Vec<MetadataRecord>, Vec<QuotaOutcome>) {
    let mut records = Vec::new();
    let mut outcomes = Vec::with_capacity(alterations.len());
    for a in alterations {
        match check(a) {
            Ok(entity) => {
                let parts: Vec<(String, Option<String>)> = entity
                    .parts()
                    .into_iter()
                    .map(|(t, n)| (t.to_string(), n))
                    .collect();
                for (key, value) in &a.ops {
                    records.push(MetadataRecord::ClientQuota {
                        entity: parts.clone(),
                        key: key.clone(),
                        value: value.map(QuotaValue),
                    });
                }
                outcomes.push(Ok(()));
            }
            Err(why) => outcomes.push(Err((error_code::INVALID_REQUEST, why))),
        }
    }
    (records, outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::MetadataImage;

    fn alteration(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> QuotaAlteration {
        QuotaAlteration {
            entity: entity
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
            ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn good_entries_apply_and_bad_ones_are_refused_alone() {
        let (records, outcomes) = plan_alter_client_quotas(&[
            alteration(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", Some(1024.0))],
            ),
            alteration(
                &[("user", Some("bob"))],
                &[("producer_byte_rate", Some(-1.0))],
            ),
            alteration(
                &[("ip", Some("1.2.3.4"))],
                &[("producer_byte_rate", Some(1.0))],
            ),
            alteration(&[("client-id", None)], &[("no_such_key", Some(1.0))]),
            alteration(&[("user", None)], &[("consumer_byte_rate", Some(1.5))]),
            alteration(&[("user", None)], &[("request_percentage", Some(12.5))]),
        ]);
        assert_eq!(outcomes[0], Ok(()));
        for refused in &outcomes[1..5] {
            assert_eq!(refused.as_ref().unwrap_err().0, error_code::INVALID_REQUEST);
        }
        assert_eq!(outcomes[5], Ok(()));
        assert_eq!(records.len(), 2);
        let mut image = MetadataImage::empty();
        for (i, r) in records.iter().enumerate() {
            image.apply(i as i64 + 1, r);
        }
        assert_eq!(image.client_quotas.len(), 2);
        // Removing the last value removes the entity.
        let (records, _) = plan_alter_client_quotas(&[alteration(
            &[("user", Some("alice"))],
            &[("producer_byte_rate", None)],
        )]);
        image.apply(10, &records[0]);
        assert_eq!(image.client_quotas.len(), 1);
    }
}
