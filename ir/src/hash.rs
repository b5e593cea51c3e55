//! A stable hash: SHA-256, truncated. Never `std::hash` (its output may change between Rust
//! releases, and foldhash is seeded per process).
use sha2::{Digest, Sha256};

/// Hex of the first 16 bytes of SHA-256 over `bytes`.
pub fn stable_hex(bytes: &[u8]) -> String {
    hex16(&Sha256::digest(bytes))
}

/// [`stable_hex`] over bytes fed in pieces.
#[derive(Clone, Default)]
pub struct StableHasher(Sha256);

impl StableHasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The same as `stable_hex` of every piece concatenated.
    pub fn hex(self) -> String {
        hex16(&self.0.finalize())
    }
}

fn hex16(digest: &[u8]) -> String {
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A 64-bit stable hash of `bytes`.
pub fn stable_u64(bytes: &[u8]) -> u64 {
    let digest = Sha256::digest(bytes);
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_vector() {
        // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223...
        assert_eq!(super::stable_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223");
    }

    #[test]
    fn pieces_hash_as_their_concatenation() {
        let mut h = super::StableHasher::default();
        h.update(b"a");
        h.update(b"");
        h.update(b"bc");
        assert_eq!(h.hex(), super::stable_hex(b"abc"));
    }
}
