//! CRC32c (Castagnoli, RFC 3385 / RFC 3720 §12.1, reflected polynomial 0x82F63B78), the MPA FPDU
//! CRC of RFC 5044 §4.4: a small table implementation (the workspace has no CRC32c crate).

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

/// The byte-at-a-time table, built at compile time.
const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// A running CRC32c.
#[derive(Debug, Clone, Copy)]
pub struct Crc32c(u32);

impl Default for Crc32c {
    fn default() -> Self {
        Crc32c(!0)
    }
}

impl Crc32c {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let mut c = self.0;
        for &b in bytes {
            c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The CRC value (complemented, as RFC 3720 §12.1 defines it).
    pub fn finish(self) -> u32 {
        !self.0
    }
}

/// CRC32c of `bytes`.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(bytes);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        // RFC 3720 Appendix B.4: 32 bytes of zeros, sent as aa 36 91 8a.
        assert_eq!(crc32c(&[0; 32]).to_le_bytes(), [0xaa, 0x36, 0x91, 0x8a]);
        let mut split = Crc32c::new();
        split.update(b"1234");
        split.update(b"56789");
        assert_eq!(split.finish(), 0xE306_9283);
    }
}
