//! One-line renderings of transport headers and RPC messages for endpoint traces.
//!
//! Volatile values are printed as `xid=0x…` and `h=0x…` so that a later pass can replace them
//! with stable symbols (see `client::trace::normalise`).

use wire::mount3::Mount3Proc;
use wire::nfs3::Nfs3Proc;
use wire::rpc::{program_name, ReplyBody, RpcMessage, MOUNT_PROGRAM, NFS_PROGRAM};
use wire::rpcrdma::{Body, ChunkLists, ErrorBody, Header};

fn describe_chunks(chunks: &ChunkLists) -> String {
    let mut out = String::new();
    for read in &chunks.reads {
        out.push_str(&format!(
            " read@{}:h={:#x}/{}",
            read.position, read.target.handle, read.target.length
        ));
    }
    for chunk in &chunks.writes {
        let segs: Vec<String> = chunk
            .iter()
            .map(|s| format!("h={:#x}/{}", s.handle, s.length))
            .collect();
        out.push_str(&format!(" write[{}]", segs.join(",")));
    }
    if let Some(reply) = &chunks.reply {
        let segs: Vec<String> = reply
            .iter()
            .map(|s| format!("h={:#x}/{}", s.handle, s.length))
            .collect();
        out.push_str(&format!(" reply[{}]", segs.join(",")));
    }
    out
}

/// `RDMA_MSG xid=0x… cr=N chunks…`
pub fn describe_header(header: &Header) -> String {
    let body = match &header.body {
        Body::Msg(c) | Body::Nomsg(c) | Body::Msgp { chunks: c, .. } => describe_chunks(c),
        Body::Done => String::new(),
        Body::Error(ErrorBody::Vers { low, high }) => format!(" ERR_VERS {low}-{high}"),
        Body::Error(ErrorBody::Chunk) => " ERR_CHUNK".to_string(),
    };
    format!(
        "{} xid={:#x} cr={}{}",
        header.proc().name(),
        header.xid,
        header.credits,
        body
    )
}

/// `call NFS v3 proc 12` / `reply SUCCESS`, or `rpc ?` when the bytes are not an RPC header.
pub fn describe_rpc(message: &[u8]) -> String {
    match RpcMessage::decode_prefix(message) {
        Ok((RpcMessage::Call(call), _)) => {
            let procedure = match (call.prog, call.vers) {
                (NFS_PROGRAM, 3) => Nfs3Proc::from_u32(call.proc_).map(Nfs3Proc::name),
                (MOUNT_PROGRAM, 3) => Mount3Proc::from_u32(call.proc_).map(Mount3Proc::name),
                _ => None,
            };
            format!(
                "| call {} v{} {} ({}B)",
                program_name(call.prog).unwrap_or("?"),
                call.vers,
                procedure.map_or_else(|| format!("proc {}", call.proc_), str::to_string),
                message.len()
            )
        }
        Ok((RpcMessage::Reply(reply), _)) => match reply.body {
            ReplyBody::Accepted { stat, .. } => {
                format!("| reply {} ({}B)", stat.name(), message.len())
            }
            ReplyBody::Denied(_) => "| reply DENIED".to_string(),
        },
        Err(_) if message.is_empty() => String::new(),
        Err(_) => "| rpc ?".to_string(),
    }
}
