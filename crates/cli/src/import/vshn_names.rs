//! The names the vshn controller gives its backup claims and copy Jobs, computed as it computes
//! them (its `naming.ShortenName`: a long name is cut and ends in a CRC of the whole), so a note
//! can name exactly what to keep and what to delete — a label selector would also match another
//! StatefulSet's backups, which may hold the only copy of its data.

/// A claim the controller makes backups of: `<claim>-backup-<original size>`, at most 63
/// characters, lowercase.
pub fn backup_claim(claim: &str, original_size: &str) -> String {
    let suffix = format!("-backup-{original_size}");
    let name = shorten(claim, 63usize.saturating_sub(suffix.len()));
    format!("{name}{suffix}").to_lowercase()
}

/// The Job copying claim `from` into claim `to`: `sync-<from>-to-<to>`, each at most 27
/// characters, lowercase.
pub fn copy_job(from: &str, to: &str) -> String {
    format!("sync-{}-to-{}", shorten(from, 27), shorten(to, 27)).to_lowercase()
}

/// Go's `ShortenName(s, l)`: `s` if it fits, else its first characters and a hex CRC of all of it
/// (CRC-64/ISO, space-padded to 16, above 32 characters; CRC-32/IEEE, zero-padded to 8, else).
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    if max > 32 {
        let keep = String::from_utf8_lossy(&bytes[..max - 16]);
        format!("{keep}{:>16x}", crc64_iso(bytes))
    } else {
        let keep = String::from_utf8_lossy(&bytes[..max.saturating_sub(8)]);
        format!("{keep}{:08x}", crc32_ieee(bytes))
    }
}

/// CRC-64 with the ISO polynomial, as Go's `hash/crc64` with `crc64.ISO`.
fn crc64_iso(bytes: &[u8]) -> u64 {
    reflected_crc(bytes, 0xD800_0000_0000_0000)
}

/// CRC-32 with the IEEE polynomial, as Go's `hash/crc32.NewIEEE`.
fn crc32_ieee(bytes: &[u8]) -> u32 {
    // The CRC of a 32-bit polynomial fits its 32 bits.
    u32::try_from(reflected_crc(bytes, 0xEDB8_8320)).unwrap_or_default()
}

/// A reflected CRC (initial and final value all ones), bit by bit: names are short.
fn reflected_crc(bytes: &[u8], polynomial: u64) -> u64 {
    let width_mask = if polynomial > u64::from(u32::MAX) {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    let mut crc = width_mask;
    for &byte in bytes {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ polynomial
            } else {
                crc >> 1
            };
        }
    }
    !crc & width_mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crcs_are_gos() {
        // The standard check values of CRC-64/GO-ISO and CRC-32/ISO-HDLC.
        assert_eq!(crc64_iso(b"123456789"), 0xB909_56C7_75A4_1001);
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn short_names_are_kept_and_long_ones_end_in_the_crc() {
        assert_eq!(backup_claim("www-web-0", "1Gi"), "www-web-0-backup-1gi");
        assert_eq!(
            copy_job("www-web-0", "www-web-0-backup-1gi"),
            "sync-www-web-0-to-www-web-0-backup-1gi"
        );
        let long = "data-a-statefulset-with-a-rather-long-name-indeed-0000000";
        let backup = backup_claim(long, "1Gi");
        assert_eq!(backup.len(), 63);
        assert!(
            backup.starts_with(&long[..36]) && backup.ends_with("-backup-1gi"),
            "{backup}"
        );
        let job = copy_job(long, "x");
        assert_eq!(
            job,
            format!("sync-{}{:08x}-to-x", &long[..19], crc32_ieee(long.as_bytes()))
        );
    }
}
