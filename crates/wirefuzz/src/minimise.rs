//! Delta debugging (Zeller and Hildebrandt's ddmin) over a sequence of cases: the smallest
//! subsequence found that still makes `still_fails` hold. Generic over the predicate, so the
//! same code shrinks a kernel finding (predicate: replay against a fresh guest, watch dmesg)
//! and a host test (predicate: replay against a fresh simulated target).

/// The result of one minimisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minimised<T> {
    pub items: Vec<T>,
    /// Predicate evaluations spent.
    pub tests: usize,
    /// Whether the test budget ran out before ddmin reached 1-minimality.
    pub exhausted: bool,
}

/// Shrink `items` (which must fail) to a 1-minimal failing subsequence, order preserved,
/// calling `still_fails` at most `max_tests` times.
pub fn minimise<T: Clone>(
    items: &[T],
    max_tests: usize,
    mut still_fails: impl FnMut(&[T]) -> bool,
) -> Minimised<T> {
    let mut current: Vec<T> = items.to_vec();
    let mut tests = 0usize;
    let mut granularity = 2usize;
    let mut check = |candidate: &[T], tests: &mut usize| -> Option<bool> {
        if *tests >= max_tests {
            return None;
        }
        *tests += 1;
        Some(still_fails(candidate))
    };
    while current.len() >= 2 {
        let chunk = current.len().div_ceil(granularity);
        let pieces: Vec<(usize, usize)> = (0..current.len())
            .step_by(chunk)
            .map(|start| (start, (start + chunk).min(current.len())))
            .collect();
        let mut reduced = false;
        // Try each piece alone, then each complement.
        for &(start, end) in &pieces {
            match check(&current[start..end], &mut tests) {
                None => return exhausted(current, tests),
                Some(true) => {
                    current = current[start..end].to_vec();
                    granularity = 2;
                    reduced = true;
                    break;
                }
                Some(false) => {}
            }
        }
        if !reduced && pieces.len() > 2 {
            for &(start, end) in &pieces {
                let complement: Vec<T> = current[..start]
                    .iter()
                    .chain(&current[end..])
                    .cloned()
                    .collect();
                match check(&complement, &mut tests) {
                    None => return exhausted(current, tests),
                    Some(true) => {
                        current = complement;
                        granularity = (granularity - 1).max(2);
                        reduced = true;
                        break;
                    }
                    Some(false) => {}
                }
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    Minimised {
        items: current,
        tests,
        exhausted: false,
    }
}

fn exhausted<T>(items: Vec<T>, tests: usize) -> Minimised<T> {
    Minimised {
        items,
        tests,
        exhausted: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_two_culprits_in_order() {
        let items: Vec<u32> = (0..40).collect();
        let fails = |s: &[u32]| {
            let a = s.iter().position(|&x| x == 7);
            let b = s.iter().position(|&x| x == 31);
            matches!((a, b), (Some(a), Some(b)) if a < b)
        };
        let out = minimise(&items, 1000, fails);
        assert_eq!(out.items, vec![7, 31]);
        assert!(!out.exhausted);
        assert!(out.tests < 100, "{} tests", out.tests);
    }

    #[test]
    fn a_single_culprit_and_the_budget() {
        let items: Vec<u32> = (0..16).collect();
        assert_eq!(minimise(&items, 100, |s| s.contains(&9)).items, vec![9]);
        let out = minimise(&items, 3, |s| s.contains(&9));
        assert!(out.exhausted);
        assert_eq!(out.tests, 3);
        assert!(out.items.contains(&9));
    }
}
