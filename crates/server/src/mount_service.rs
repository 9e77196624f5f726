//! The MOUNT v3 and portmap answers `rig serve --mount-tcp` gives over TCP, sans-IO: one RPC
//! call message in, its reply out. The kernel NFS client mounting `rig serve`
//! (`mountproto=tcp,mountport=P`) asks portmap GETPORT (RFC 1833 §3) and MNT (RFC 1813
//! Appendix I); the socket loop that carries them lives with the driver (`rig serve`).

use wire::mount3::{Mount3Call, Mount3Proc, MOUNT_V3};
use wire::rpc::{AcceptStat, ReplyHeader, RpcMessage, MOUNT_PROGRAM, NFS_PROGRAM, PORTMAP_PROGRAM};
use wire::{Reader, Writer, Xdr};

use crate::fs::Fs;

/// portmap v2 (RFC 1833 §3) and its GETPORT procedure.
pub const PMAP_V2: u32 = 2;
pub const PMAPPROC_GETPORT: u32 = 3;
/// RFC 1833 §3 `IPPROTO_TCP`.
pub const IPPROTO_TCP: u32 = 6;

/// The ports a portmap GETPORT answer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub nfs: u16,
    pub mount: u16,
}

fn accepted(xid: u32, stat: AcceptStat) -> Vec<u8> {
    ReplyHeader::accepted(xid, stat).to_bytes()
}

/// Answer one call: MOUNT v3 from a fresh [`Fs`] (its root handle is the one every `rig serve`
/// slot has), portmap NULL and GETPORT for NFS and MOUNT over TCP; `None` for a message that is
/// not a call (dropped, RFC 5531 §9).
pub fn answer(message: &[u8], ports: Ports) -> Option<Vec<u8>> {
    let Ok((RpcMessage::Call(header), used)) = RpcMessage::decode_prefix(message) else {
        return None;
    };
    let args = &message[used..];
    let xid = header.xid;
    let reply = match (header.prog, header.vers) {
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let Some(proc_) = Mount3Proc::from_u32(header.proc_) else {
                return Some(accepted(xid, AcceptStat::ProcUnavail));
            };
            let Ok(call) = Mount3Call::decode(proc_, &mut Reader::new(args)) else {
                return Some(accepted(xid, AcceptStat::GarbageArgs));
            };
            let mut message = accepted(xid, AcceptStat::Success);
            let mut w = Writer::new();
            Fs::default().mount(&call).encode(&mut w);
            message.extend_from_slice(w.as_bytes());
            message
        }
        (MOUNT_PROGRAM, _) => accepted(
            xid,
            AcceptStat::ProgMismatch {
                low: MOUNT_V3,
                high: MOUNT_V3,
            },
        ),
        (PORTMAP_PROGRAM, PMAP_V2) if header.proc_ == 0 => accepted(xid, AcceptStat::Success),
        (PORTMAP_PROGRAM, PMAP_V2) if header.proc_ == PMAPPROC_GETPORT => {
            // RFC 1833 §3: struct mapping { prog, vers, prot, port }.
            let mut r = Reader::new(args);
            let (Ok(prog), Ok(_vers), Ok(prot)) =
                (r.u32("pmap prog"), r.u32("pmap vers"), r.u32("pmap prot"))
            else {
                return Some(accepted(xid, AcceptStat::GarbageArgs));
            };
            let port = match (prog, prot) {
                (NFS_PROGRAM, _) => u32::from(ports.nfs),
                (MOUNT_PROGRAM, IPPROTO_TCP) => u32::from(ports.mount),
                _ => 0,
            };
            let mut message = accepted(xid, AcceptStat::Success);
            message.extend_from_slice(&port.to_be_bytes());
            message
        }
        _ => accepted(xid, AcceptStat::ProgUnavail),
    };
    Some(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::rpc::CallHeader;

    const PORTS: Ports = Ports {
        nfs: 20049,
        mount: 20048,
    };

    #[test]
    fn portmap_getport_names_our_ports() {
        let mut call = CallHeader::new(9, PORTMAP_PROGRAM, PMAP_V2, PMAPPROC_GETPORT).to_bytes();
        for v in [MOUNT_PROGRAM, MOUNT_V3, IPPROTO_TCP, 0] {
            call.extend_from_slice(&v.to_be_bytes());
        }
        let reply = answer(&call, PORTS).unwrap();
        assert_eq!(&reply[reply.len() - 4..], &20048u32.to_be_bytes());
        assert_eq!(answer(b"junk", PORTS), None);
        // A GETPORT without its mapping is garbage, answered as such.
        let short = CallHeader::new(10, PORTMAP_PROGRAM, PMAP_V2, PMAPPROC_GETPORT).to_bytes();
        let (RpcMessage::Reply(reply), _) =
            RpcMessage::decode_prefix(&answer(&short, PORTS).unwrap()).unwrap()
        else {
            panic!("not a reply");
        };
        assert_eq!(reply, ReplyHeader::accepted(10, AcceptStat::GarbageArgs));
    }

    #[test]
    fn mnt_of_the_export_answers_the_root_handle() {
        use wire::mount3::{DirPath, MntRes, Mount3Reply};
        let mut call =
            CallHeader::new(3, MOUNT_PROGRAM, MOUNT_V3, Mount3Proc::Mnt as u32).to_bytes();
        let mut w = Writer::new();
        Mount3Call::Mnt(DirPath(b"/export".to_vec())).encode(&mut w);
        call.extend_from_slice(w.as_bytes());
        let reply = answer(&call, PORTS).unwrap();
        let (_, used) = RpcMessage::decode_prefix(&reply).unwrap();
        match Mount3Reply::decode(Mount3Proc::Mnt, &mut Reader::new(&reply[used..])) {
            Ok(Mount3Reply::Mnt(MntRes::Ok(ok))) => {
                assert_eq!(ok.fhandle, Fs::default().root_handle())
            }
            other => panic!("{other:?}"),
        }
    }
}
