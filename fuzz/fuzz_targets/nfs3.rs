//! Fuzz target: NFSv3 argument and result decoders (inline and reduced) never panic; round-trips hold.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::nfs3::{Ddp, Nfs3Call, Nfs3Proc, Nfs3Reply};
use wire::{Reader, Writer};

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
        if ddp == Ddp::Inline {
            let mut w = Writer::new();
            res.encode(&mut w);
            let again =
                Nfs3Reply::decode(proc_, &mut Reader::new(w.as_bytes())).expect("re-decode");
            assert_eq!(again, res);
        }
    } else {
        let Ok(args) = Nfs3Call::decode_reduced(proc_, &mut Reader::new(body), ddp) else {
            return;
        };
        if ddp == Ddp::Inline {
            let mut w = Writer::new();
            args.encode(&mut w);
            let again = Nfs3Call::decode(proc_, &mut Reader::new(w.as_bytes())).expect("re-decode");
            assert_eq!(again, args);
        }
    }
});
