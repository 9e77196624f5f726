//! The seeded byte stream a case's `arbitrary::Unstructured` reads, drawn from the simulator's
//! splitmix64 ([`sim::SplitMix64`], re-exported here).
//!
//! Case files promise that `(seed, index)` regenerates the same bytes forever, so the PRNG's
//! outputs are pinned by the reference-sequence test below: a change to the simulator's
//! generator that would move every case fails here first.

pub use sim::SplitMix64;

/// Bytes of entropy one case may consume; more than any family draws, so cases never run dry.
pub const CASE_ENTROPY_BYTES: usize = 512;

/// The entropy for case `index` of run `seed`. Each case gets its own stream (seeded from both
/// numbers), so case `i` is reproducible without generating cases `0..i`.
pub fn case_entropy(seed: u64, index: u64) -> Vec<u8> {
    let mut mixer = SplitMix64::new(seed);
    let stream_seed = mixer.next_u64() ^ index.wrapping_mul(0xd605_bbb5_8c8a_bbb5);
    let mut rng = SplitMix64::new(stream_seed);
    let mut out = Vec::with_capacity(CASE_ENTROPY_BYTES);
    while out.len() < CASE_ENTROPY_BYTES {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs for seed 0 from the reference C implementation.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn streams_differ_per_index_and_per_seed() {
        assert_eq!(case_entropy(7, 3), case_entropy(7, 3));
        assert_ne!(case_entropy(7, 3), case_entropy(7, 4));
        assert_ne!(case_entropy(7, 3), case_entropy(8, 3));
        assert_eq!(case_entropy(1, 1).len(), CASE_ENTROPY_BYTES);
    }
}
