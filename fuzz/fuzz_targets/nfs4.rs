//! Fuzz target: NFSv4.1 COMPOUND call and reply decoders and the DDP reduction (`ddp::Reduction`,
//! `ddp::splice`) never panic; decode → encode → decode is the identity, reduced streams included.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::ddp::{self, Reduction};
use wire::nfs4::{Compound4Args, Compound4Res};
use wire::rpcrdma::{group, ReadSegment, Segment};
use wire::xdr::pad4;
use wire::{Reader, Writer};

/// Most chunks the input may name (a COMPOUND's DDP-eligible items are few).
const MAX_CHUNKS: usize = 8;

/// The reduction the selector's low bits name, built again for each decode (the same input
/// chunks, fresh state): 0 inline, 1 every item moved, 2 Read chunks (grouped by position as
/// `rpcrdma::group` does), 3 Write chunks. Chunks: a count byte, then per chunk a position and a
/// length (mode 2) or a length (mode 3).
fn reduction(mode: u8, chunks: &[(u32, u32)]) -> Reduction {
    match mode & 3 {
        0 => Reduction::inline(),
        1 => Reduction::every_item_moved(),
        2 => {
            let reads: Vec<ReadSegment> = chunks
                .iter()
                .map(|&(position, length)| ReadSegment {
                    position,
                    target: Segment {
                        handle: 1,
                        length,
                        offset: 0,
                    },
                })
                .collect();
            Reduction::for_call(group(&reads))
        }
        _ => Reduction::for_reply(
            chunks
                .iter()
                .map(|&(_, l)| u64::from(l))
                .collect::<Vec<_>>(),
        ),
    }
}

/// `(position, length)` per chunk, as the input names them.
type Chunks = Vec<(u32, u32)>;

fn chunks(data: &[u8], mode: u8) -> Option<(Chunks, &[u8])> {
    if mode & 2 == 0 {
        return Some((Vec::new(), data));
    }
    let (&count, mut rest) = data.split_first()?;
    let word = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut out = Vec::new();
    for _ in 0..usize::from(count).min(MAX_CHUNKS) {
        if mode & 1 == 0 {
            let b = rest.get(..8)?;
            out.push((word(&b[..4]), word(&b[4..])));
            rest = &rest[8..];
        } else {
            let b = rest.get(..4)?;
            out.push((0, word(b)));
            rest = &rest[4..];
        }
    }
    Some((out, rest))
}

fuzz_target!(|data: &[u8]| {
    // Selector: 0x80 reply; the low two bits the reduction mode.
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let call = selector & 0x80 == 0;
    let mode = selector & 3;
    let Some((chunks, body)) = chunks(rest, mode) else {
        return;
    };
    if call {
        let mut first = reduction(mode, &chunks);
        let Ok(args) = Compound4Args::decode_with(&mut Reader::new(body), &mut first) else {
            return;
        };
        let mut w = Writer::new();
        args.encode(&mut w);
        let mut second = reduction(mode, &chunks);
        let mut r = Reader::new(w.as_bytes());
        let again = Compound4Args::decode_with(&mut r, &mut second).expect("re-decode");
        assert!(r.is_empty());
        assert_eq!(again, args);
        assert_eq!(second.items(), first.items());
        let _ = args.summary();
    } else {
        let mut first = reduction(mode, &chunks);
        let Ok(res) = Compound4Res::decode_with(&mut Reader::new(body), &mut first) else {
            return;
        };
        let mut w = Writer::new();
        res.encode(&mut w);
        let mut second = reduction(mode, &chunks);
        let mut r = Reader::new(w.as_bytes());
        let again = Compound4Res::decode_with(&mut r, &mut second).expect("re-decode");
        assert!(r.is_empty());
        assert_eq!(again, res);
        assert_eq!(second.items(), first.items());
        let _ = res.summary();
    }
    // The Read chunk reinsertion rule on the same bytes: chunks of the body's own bytes at the
    // input's positions; a splice that succeeds keeps the base and adds each chunk padded.
    let pieces: Vec<(u32, Vec<u8>)> = chunks
        .iter()
        .filter(|(position, _)| *position != 0)
        .map(|&(position, length)| {
            let n = (length as usize).min(body.len()).min(4096);
            (position, body[..n].to_vec())
        })
        .collect();
    let mut sorted = pieces.clone();
    sorted.sort_by_key(|(p, _)| *p);
    if let Ok(out) = ddp::splice(body, &sorted) {
        let added: usize = sorted.iter().map(|(_, d)| pad4(d.len())).sum();
        assert_eq!(out.len(), body.len() + added);
    }
});
