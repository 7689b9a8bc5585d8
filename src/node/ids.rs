//! Random ids: topic ids and cluster ids (16 random bytes), and Kafka-style
//! member ids (a UUID in its text form). The controller's decisions take
//! their ids as a parameter (`controller::Context::new_topic_id`); this is
//! where the broker draws them.

/// 16 random bytes from the kernel (getrandom).
pub fn random_uuid() -> [u8; 16] {
    let mut u = [0u8; 16];
    let mut filled = 0usize;
    // getrandom returns fewer bytes than asked only when a signal
    // interrupts it (EINTR), which is worth a retry; anything else means no
    // entropy source, which a booted Linux always has.
    for _ in 0..RANDOM_ATTEMPTS {
        // SAFETY: getrandom writes at most the length passed into the
        // buffer that follows `filled`.
        let n = unsafe { libc::getrandom(u[filled..].as_mut_ptr().cast(), u.len() - filled, 0) };
        if n > 0 {
            filled += n as usize;
            if filled == u.len() {
                return u;
            }
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    tracing::warn!("getrandom failed: ids fall back to the clock and may repeat across restarts");
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    t.to_le_bytes()
}

/// Attempts at getrandom before the clock fallback.
const RANDOM_ATTEMPTS: usize = 8;

/// A random UUID in its usual text form, as Kafka's member ids use.
pub fn uuid_string() -> String {
    let u = random_uuid();
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random 16-byte id in Kafka's URL-safe base64 form (22 characters).
pub fn new_cluster_id() -> String {
    base64_url(&random_uuid())
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_differ_and_uuids_have_their_text_shape() {
        assert_ne!(random_uuid(), random_uuid());
        let s = uuid_string();
        let parts: Vec<usize> = s.split('-').map(str::len).collect();
        assert_eq!(parts, vec![8, 4, 4, 4, 12], "{s}");
        assert_eq!(new_cluster_id().len(), 22);
    }
}
