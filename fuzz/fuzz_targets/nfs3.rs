//! Fuzz target: NFSv3 argument and result decoders (inline and reduced) never panic, and both
//! streams round-trip. A reduced call (its WRITE data or SYMLINK path moved to a Read chunk) also
//! goes the whole way a Responder takes it: an RDMA_MSG whose Read list carries the argument at
//! its XDR position decodes through `wire::message` (the `Reduction` of the call's chunk lists)
//! to the same arguments, reports the chunk with no violation, re-encodes byte for byte, and
//! with the chunk's data spliced back in is the inline call.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::ddp::{argument_position, splice};
use wire::message::{decode_message, Upper};
use wire::nfs3::{Ddp, DdpData, Nfs3Call, Nfs3Proc, Nfs3Reply};
use wire::nfs_client::{nfs3_call, pattern};
use wire::rpcrdma::{Body, ChunkLists, Header, ReadSegment, Segment};
use wire::{Reader, Writer, Xdr};

const XID: u32 = 0x5eed_0001;
/// Largest moved argument whose data is built to splice back (a WRITE's length word may say
/// 1 MiB; building that much on every input would slow the fuzzer for no new path).
const MAX_SPLICED: u32 = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    // First byte picks procedure, direction and whether the DDP item was moved to a chunk.
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let procs = Nfs3Proc::ALL;
    let proc_ = procs[usize::from(selector) % procs.len()];
    let reply = selector & 0x80 != 0;
    let ddp = if selector & 0x40 != 0 {
        Ddp::Moved
    } else {
        Ddp::Inline
    };
    if reply {
        let Ok(res) = Nfs3Reply::decode_reduced(proc_, &mut Reader::new(body), ddp) else {
            return;
        };
        // Inline or reduced, the encoding decodes back in the same mode to the same results.
        let mut w = Writer::new();
        res.encode(&mut w);
        let again = Nfs3Reply::decode_reduced(proc_, &mut Reader::new(w.as_bytes()), ddp)
            .expect("re-decode");
        assert_eq!(again, res);
    } else {
        let Ok(args) = Nfs3Call::decode_reduced(proc_, &mut Reader::new(body), ddp) else {
            return;
        };
        let again = Nfs3Call::decode_reduced(proc_, &mut Reader::new(&args.to_bytes()), ddp)
            .expect("re-decode");
        assert_eq!(again, args);
        if let Some(&DdpData::Moved { length }) = args.ddp_data() {
            reduced_call_round_trips(&args, length);
        }
    }
});

/// `args` (reduced: its DDP-eligible argument of `length` bytes moved) as a Send payload with
/// the Read chunk a Requester would give it, through the message decoder and back.
fn reduced_call_round_trips(args: &Nfs3Call, length: u32) {
    let rpc = nfs3_call(XID, args);
    // RFC 8267 §4: the moved argument is the last of the call, so its XDR position is where
    // the reduced RPC message ends.
    let position = argument_position(rpc.len());
    let header = Header {
        xid: XID,
        vers: 1,
        credits: 8,
        body: Body::Msg(ChunkLists {
            reads: vec![ReadSegment {
                position,
                target: Segment {
                    handle: 0x1000,
                    length,
                    offset: 0x4000,
                },
            }],
            writes: Vec::new(),
            reply: None,
        }),
    };
    let mut w = Writer::new();
    header.encode(&mut w);
    w.raw(&rpc);
    let send = w.into_bytes();
    let decoded = decode_message(&send).expect("a well-placed reduced call decodes");
    assert_eq!(decoded.upper, Some(Upper::Nfs3Call(args.clone())));
    let nfs = decoded.nfs.as_ref().expect("an NFSv3 call has a summary");
    assert!(nfs.violations.is_empty(), "{:?}", nfs.violations);
    let moved = nfs.ddp.as_ref().expect("the moved argument is reported");
    assert_eq!(
        (moved.position, moved.length, moved.chunk_length),
        (Some(position), length, u64::from(length))
    );
    assert!(moved.chunk_length_matches);
    assert_eq!(decoded.to_bytes(), send);

    if length > MAX_SPLICED {
        return;
    }
    let bytes = pattern(length);
    let inline = match args.clone() {
        Nfs3Call::Write(mut a) => {
            a.data = DdpData::Inline(bytes.clone());
            Nfs3Call::Write(a)
        }
        Nfs3Call::Symlink(mut a) => {
            a.symlink_data = DdpData::Inline(bytes.clone());
            Nfs3Call::Symlink(a)
        }
        // Only WRITE and SYMLINK have a DDP-eligible argument (`ddp_data`).
        _ => return,
    };
    let spliced = splice(&rpc, &[(position, bytes)]).expect("the chunk is in the stream");
    assert_eq!(spliced, nfs3_call(XID, &inline));
}
