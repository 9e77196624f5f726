//! `rig decode`: decode one RDMA Send payload (RPC-over-RDMA header, RPC, NFS) to JSON or text.
//!
//! Exit codes: 0 decoded, 1 the message is malformed (the JSON names the layer and the RFC rule
//! it broke), 2 usage or I/O error. The `svcrdma` field says what each modelled kernel would do
//! with the bytes, whether or not our strict decoder accepts them; `svcrdma_profiles` says what
//! each measured kernel (fixtures/svcrdma-profiles, compiled in: `wirefuzz::rules`) would answer
//! and which check decided it, through the same kernel model `rig serve --profile` answers by.
//! `--profile NAME|FILE` narrows that to the named profiles or adds a profile file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Map, Value};
use trace::render::{escape_json_text, escape_text};
use wire::message::{decode_message_with, procedure_name, CallProc, DecodedMessage, MessageError};
use wire::mount3::Mount3Proc;
use wire::nfs3::Nfs3Proc;
use wire::nfsacl::NfsaclProc;
use wire::rpc::{
    auth_stat_name, program_name, AcceptStat, RejectedReply, ReplyBody, RpcMessage, MOUNT_PROGRAM,
    NFSACL_PROGRAM, NFS_PROGRAM,
};
use wire::rpcrdma::{Body, ChunkLists, ErrorBody, Header, Segment};
use wire::svcrdma::{classify, classify_with, KernelModel, Profile};
use wirefuzz::rules::{kernel_model, Answer, KernelProfile, ProfileNameError, MEASURED_PROFILES};

use crate::input::read_text;
use crate::outln;

/// Largest input accepted: far above any Receive buffer (svcrdma allows at most 64 KiB).
const MAX_INPUT: u64 = 16 << 20;
/// Most chunk segments listed in the output (see `rpcrdma_json`).
const MAX_LISTED_SEGMENTS: usize = 4096;
/// Largest `--profile` file read (the committed profiles are a few KiB).
const MAX_PROFILE_FILE_BYTES: u64 = 1 << 20;
/// The model name of a profile read from a file: [`KernelModel::name`] must be `'static` and
/// classifying does not read it; the output labels the answer with the file's kernel name.
const FILE_MODEL_NAME: &str = "profile-file";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Text,
}

#[derive(clap::Args)]
pub struct Args {
    /// File holding one Send payload (raw bytes, starting at the transport header); `-` = stdin.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// For a reply: the call it answers, as PROG:VERS:PROC (numbers, or names such as
    /// `nfs:3:READ`, `mount:3:MNT`, `nfsacl:3:GETACL`).
    #[arg(long, value_parser = parse_call_proc)]
    call_proc: Option<CallProc>,
    /// The input is hex text (whitespace and `#` comments ignored) instead of raw bytes.
    #[arg(long)]
    hex: bool,
    /// Show only these kernels' answers (repeatable): a compiled-in profile's name (debian-6.1.176,
    /// debian-6.12.117, debian-7.2.13, mainline-2026, or the modelled linux-6.1, linux-2026), or a
    /// profile TOML file (e.g. from `rig svcrdma-rules --write-profile`). Default: every measured
    /// profile compiled in.
    #[arg(long = "profile", value_name = "NAME|FILE")]
    profiles: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // Before the input is read: a bad --profile is a usage error whatever the message.
    let kernels = selected_kernels(&args.profiles)?;
    let raw = read_input(&args.file)?;
    let bytes = if args.hex { parse_hex(&raw)? } else { raw };
    let result = decode_message_with(&bytes, args.call_proc);
    let svcrdma = svcrdma_verdicts(&bytes);
    let (mut value, code) = match &result {
        Ok(msg) => (message_json(msg, args.call_proc, svcrdma), 0),
        Err(err) => (error_json(err, svcrdma), 1),
    };
    value["svcrdma_profiles"] = kernel_answers(&bytes, &kernels);
    // Strings from the message (machine names, file names) reach a terminal: escaped.
    match args.format {
        Format::Json => outln!(
            "{}",
            escape_json_text(&serde_json::to_string_pretty(&value)?)
        )?,
        Format::Text => {
            for line in text(&value).lines() {
                outln!("{}", escape_text(line))?;
            }
        }
    }
    Ok(code)
}

fn read_input(path: &Path) -> anyhow::Result<Vec<u8>> {
    crate::input::read_bounded(path, MAX_INPUT, "input")
}

/// `--hex` input: hex digits, with whitespace and `#` comments to the end of a line ignored.
fn parse_hex(text: &[u8]) -> anyhow::Result<Vec<u8>> {
    let text = std::str::from_utf8(text).context("--hex input is not UTF-8")?;
    let digits: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(str::chars)
        .filter(|c| !c.is_whitespace())
        .collect();
    wire::hex::decode(&digits).context("--hex input")
}

/// Parse `PROG:VERS:PROC`, each part a number or (for PROG and PROC) a name.
fn parse_call_proc(s: &str) -> Result<CallProc, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let [prog, vers, proc_] = parts[..] else {
        return Err(format!("expected PROG:VERS:PROC, got {s:?}"));
    };
    let prog = match prog.to_ascii_lowercase().as_str() {
        "nfs" => NFS_PROGRAM,
        "mount" => MOUNT_PROGRAM,
        "nfsacl" => NFSACL_PROGRAM,
        other => other
            .parse()
            .map_err(|_| format!("unknown program {prog:?}"))?,
    };
    let vers: u32 = vers.parse().map_err(|_| format!("bad version {vers:?}"))?;
    let proc_ = match proc_.parse::<u32>() {
        Ok(n) => n,
        Err(_) => {
            let name = proc_.to_ascii_uppercase();
            let found = match prog {
                NFS_PROGRAM => Nfs3Proc::ALL
                    .iter()
                    .find(|p| p.name() == name)
                    .map(|p| *p as u32),
                MOUNT_PROGRAM => Mount3Proc::ALL
                    .iter()
                    .find(|p| p.name() == name)
                    .map(|p| *p as u32),
                NFSACL_PROGRAM => NfsaclProc::ALL
                    .iter()
                    .find(|p| p.name() == name)
                    .map(|p| *p as u32),
                _ => None,
            };
            found.ok_or_else(|| format!("unknown procedure {proc_:?} for program {prog}"))?
        }
    };
    Ok(CallProc::new(prog, vers, proc_))
}

fn svcrdma_verdicts(bytes: &[u8]) -> Value {
    let mut map = Map::new();
    for profile in Profile::ALL {
        let verdict = classify(bytes, profile);
        map.insert(profile.name().into(), verdict.outcome.name().into());
    }
    Value::Object(map)
}

/// A kernel whose answer `rig decode` shows: a compiled-in profile, or one read from a file.
#[derive(Debug)]
struct SelectedKernel {
    /// The name it is shown under: the profile's kernel name.
    label: String,
    /// The file it was read from (`None`: compiled in).
    file: Option<PathBuf>,
    model: KernelModel,
}

/// The kernels of `--profile` (default: every measured profile compiled in), in the order given;
/// a name or file given twice is shown once.
fn selected_kernels(args: &[String]) -> anyhow::Result<Vec<SelectedKernel>> {
    if args.is_empty() {
        return MEASURED_PROFILES
            .iter()
            .map(|(name, _)| compiled_in(name).map_err(anyhow::Error::from))
            .collect();
    }
    let mut kernels: Vec<SelectedKernel> = Vec::new();
    for arg in args {
        let mut kernel = selected_kernel(arg)?;
        let taken = |label: &str| kernels.iter().any(|k| k.label == label);
        if taken(&kernel.label) {
            // A file of a kernel also named (the compiled-in profile beside a fresh measurement
            // of the same kernel): both shown, the file's under its path too.
            match &kernel.file {
                Some(path) => kernel.label = format!("{} ({})", kernel.label, path.display()),
                None => continue,
            }
            if taken(&kernel.label) {
                continue;
            }
        }
        kernels.push(kernel);
    }
    Ok(kernels)
}

/// One `--profile` value: a compiled-in profile's name, else a profile file. A value that names
/// no profile and does not look like a path is an unknown name (the error lists the known ones).
fn selected_kernel(arg: &str) -> anyhow::Result<SelectedKernel> {
    match compiled_in(arg) {
        Ok(kernel) => Ok(kernel),
        Err(ProfileNameError::Unknown(_)) if looks_like_file(arg) => profile_file(Path::new(arg)),
        Err(err) => Err(anyhow::Error::new(err).context("--profile")),
    }
}

fn looks_like_file(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR) || arg.ends_with(".toml") || Path::new(arg).exists()
}

/// A compiled-in profile (measured or modelled) by name, as `rig serve --profile` resolves it.
fn compiled_in(name: &str) -> Result<SelectedKernel, ProfileNameError> {
    Ok(SelectedKernel {
        label: name.to_owned(),
        file: None,
        model: kernel_model(name)?,
    })
}

/// A profile file, turned into a kernel model as the compiled-in ones are
/// ([`KernelProfile::model`]); any failure names the file.
fn profile_file(path: &Path) -> anyhow::Result<SelectedKernel> {
    let text = read_text(path, MAX_PROFILE_FILE_BYTES, "--profile file")?;
    let context = || format!("--profile {}", path.display());
    let profile = KernelProfile::parse(&text).with_context(context)?;
    let model = profile.model(FILE_MODEL_NAME).with_context(context)?;
    // The file's kernel name goes to a terminal as a label: a plain name only, else the path.
    let plain = !profile.kernel.is_empty()
        && profile.kernel.len() <= 64
        && profile
            .kernel
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    let label = if plain {
        profile.kernel
    } else {
        path.display().to_string()
    };
    Ok(SelectedKernel {
        label,
        file: Some(path.to_path_buf()),
        model,
    })
}

/// What each selected kernel answers `bytes`: the model's outcome (named as in `svcrdma`), the
/// same answer as the profile files name it, and the check that decided it.
fn kernel_answers(bytes: &[u8], kernels: &[SelectedKernel]) -> Value {
    let mut map = Map::new();
    for kernel in kernels {
        let verdict = classify_with(bytes, &kernel.model);
        let mut v = json!({
            "outcome": verdict.outcome.name(),
            "answer": Answer::from(verdict.outcome).name(),
            "rule": verdict.rule.name(),
        });
        if let Some(path) = &kernel.file {
            v["file"] = path.display().to_string().into();
        }
        map.insert(kernel.label.clone(), v);
    }
    Value::Object(map)
}

fn xid(x: u32) -> String {
    format!("0x{x:08x}")
}

fn segment(s: &Segment) -> Value {
    json!({"handle": s.handle, "length": s.length, "offset": s.offset})
}

fn rpcrdma_json(h: &Header) -> Value {
    let empty = ChunkLists::default();
    let chunks = h.chunks().unwrap_or(&empty);
    // The listing is budgeted: a 16 MB message can carry a million segments, and a JSON object
    // per segment costs ~100 times its 16 bytes. Past MAX_LISTED_SEGMENTS the lists are cut
    // (Read list first, then the Write chunks in order, then the Reply chunk) and
    // `segments_not_listed` says how many were left out.
    let mut left = MAX_LISTED_SEGMENTS;
    let mut take = |n: usize| {
        let k = n.min(left);
        left -= k;
        k
    };
    let reads: Vec<Value> = chunks
        .reads
        .iter()
        .take(take(chunks.reads.len()))
        .map(|r| {
            json!({"position": r.position, "handle": r.target.handle,
                   "length": r.target.length, "offset": r.target.offset})
        })
        .collect();
    let writes: Vec<Value> = chunks
        .writes
        .iter()
        .map(|c| Value::Array(c.iter().take(take(c.len())).map(segment).collect()))
        .collect();
    let reply = chunks.reply.as_ref().map(|c| {
        c.iter()
            .take(take(c.len()))
            .map(segment)
            .collect::<Vec<_>>()
    });
    let mut v = json!({
        "xid": xid(h.xid),
        "vers": h.vers,
        "credits": h.credits,
        "proc": h.proc().name(),
        "reads": reads,
        "writes": writes,
        "reply": reply,
    });
    let total = chunks.segment_count();
    if total > MAX_LISTED_SEGMENTS {
        v["segments_not_listed"] = (total - MAX_LISTED_SEGMENTS).into();
    }
    match &h.body {
        Body::Msgp { align, thresh, .. } => {
            v["align"] = (*align).into();
            v["thresh"] = (*thresh).into();
        }
        Body::Error(ErrorBody::Vers { low, high }) => {
            v["error"] = json!({"code": "ERR_VERS", "low": low, "high": high});
        }
        Body::Error(ErrorBody::Chunk) => v["error"] = json!({"code": "ERR_CHUNK"}),
        Body::Msg(_) | Body::Nomsg(_) | Body::Done => {}
    }
    v
}

fn rpc_json(rpc: &RpcMessage, hint: Option<CallProc>) -> Value {
    match rpc {
        RpcMessage::Call(c) => {
            let mut cred = json!({"flavor": c.cred.flavor().name()});
            if let Some(Ok(sys)) = c.cred.auth_sys() {
                cred["machinename"] = String::from_utf8_lossy(&sys.machinename).into();
                cred["uid"] = sys.uid.into();
                cred["gid"] = sys.gid.into();
                cred["gids"] = sys.gids.clone().into();
            }
            json!({
                "xid": xid(c.xid),
                "type": "call",
                "rpcvers": c.rpcvers,
                "prog": c.prog,
                "program": program_name(c.prog),
                "vers": c.vers,
                "proc": c.proc_,
                "proc_name": procedure_name(c.prog, c.vers, c.proc_),
                "cred": cred,
                "verf": {"flavor": c.verf.flavor().name()},
            })
        }
        RpcMessage::Reply(r) => {
            let stat = match &r.body {
                ReplyBody::Accepted { stat, .. } => {
                    let mut s = json!({"reply_stat": "MSG_ACCEPTED", "accept_stat": stat.name()});
                    if let AcceptStat::ProgMismatch { low, high } = stat {
                        s["low"] = (*low).into();
                        s["high"] = (*high).into();
                    }
                    s
                }
                ReplyBody::Denied(RejectedReply::RpcMismatch { low, high }) => json!({
                    "reply_stat": "MSG_DENIED", "reject_stat": "RPC_MISMATCH",
                    "low": low, "high": high,
                }),
                ReplyBody::Denied(RejectedReply::AuthError(a)) => json!({
                    "reply_stat": "MSG_DENIED", "reject_stat": "AUTH_ERROR",
                    "auth_stat": auth_stat_name(*a),
                }),
            };
            let mut v = json!({
                "xid": xid(r.xid),
                "type": "reply",
                "prog": hint.map(|h| h.prog),
                "program": hint.and_then(|h| program_name(h.prog)),
                "vers": hint.map(|h| h.vers),
                "proc": hint.map(|h| h.proc_),
                "proc_name": hint.and_then(|h| procedure_name(h.prog, h.vers, h.proc_)),
            });
            if let (Value::Object(dst), Value::Object(src)) = (&mut v, stat) {
                dst.extend(src);
            }
            v
        }
    }
}

fn message_json(msg: &DecodedMessage, hint: Option<CallProc>, svcrdma: Value) -> Value {
    let nfs = match (&msg.nfs, &msg.upper) {
        (Some(summary), Some(upper)) => {
            let mut v = serde_json::to_value(summary).unwrap_or(Value::Null);
            let key = if summary.direction == "call" {
                "args"
            } else {
                "res"
            };
            v[key] = serde_json::to_value(upper).unwrap_or(Value::Null);
            v
        }
        _ => Value::Null,
    };
    json!({
        "rpcrdma": rpcrdma_json(&msg.rpcrdma),
        "rpc": msg.rpc.as_ref().map(|r| rpc_json(r, hint)),
        "nfs": nfs,
        "svcrdma": svcrdma,
    })
}

fn error_json(err: &MessageError, svcrdma: Value) -> Value {
    json!({
        "error": err.error.to_string(),
        "rule": err.rule(),
        "layer": err.layer.name(),
        "field": err.error.field(),
        "rpcrdma": err.rpcrdma.as_deref().map(rpcrdma_json),
        "rpc": err.rpc.as_deref().map(|r| rpc_json(r, None)),
        "svcrdma": svcrdma,
    })
}

/// Render the JSON value as one compact line per layer.
fn text(v: &Value) -> String {
    let mut out = String::new();
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(h) = v.get("rpcrdma").filter(|h| !h.is_null()) {
        let writes: Vec<String> = h["writes"]
            .as_array()
            .map(|ws| {
                ws.iter()
                    .map(|c| {
                        let total: u64 = c
                            .as_array()
                            .map(|segs| segs.iter().filter_map(|s| s["length"].as_u64()).sum())
                            .unwrap_or(0);
                        format!("{}seg/{}B", c.as_array().map_or(0, Vec::len), total)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let reads: Vec<String> = h["reads"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .map(|r| format!("@{}:{}B", r["position"], r["length"]))
                    .collect()
            })
            .unwrap_or_default();
        let reply = match h["reply"].as_array() {
            Some(segs) => format!("{}seg", segs.len()),
            None => "none".into(),
        };
        out += &format!(
            "rpcrdma xid={} vers={} credits={} {} reads=[{}] writes=[{}] reply={}",
            s(&h["xid"]),
            h["vers"],
            h["credits"],
            s(&h["proc"]),
            reads.join(","),
            writes.join(","),
            reply
        );
        if let Some(e) = h.get("error") {
            out += &format!(" error={}", s(&e["code"]));
        }
        if let Some(n) = h.get("segments_not_listed") {
            out += &format!(" (+{n} segments not listed)");
        }
        out.push('\n');
    }
    if let Some(r) = v.get("rpc").filter(|r| !r.is_null()) {
        out += &format!("rpc     {} xid={}", s(&r["type"]), s(&r["xid"]));
        if !r["prog"].is_null() {
            let program = r["program"]
                .as_str()
                .map_or(r["prog"].to_string(), str::to_owned);
            let proc_ = r["proc_name"]
                .as_str()
                .map_or(r["proc"].to_string(), str::to_owned);
            out += &format!(" {program} v{} {proc_}", r["vers"]);
        }
        if let Some(cred) = r.get("cred") {
            out += &format!(" {}", s(&cred["flavor"]));
            if let Some(uid) = cred.get("uid") {
                out += &format!(" uid={uid} gid={}", cred["gid"]);
            }
        }
        for key in ["accept_stat", "reject_stat", "auth_stat"] {
            if let Some(x) = r.get(key) {
                out += &format!(" {}", s(x));
            }
        }
        out.push('\n');
    }
    if let Some(n) = v.get("nfs").filter(|n| !n.is_null()) {
        out += &format!(
            "nfs     {} v{} {} {}",
            s(&n["program"]),
            n["vers"],
            s(&n["proc"]),
            s(&n["type"])
        );
        if let Some(st) = n.get("status") {
            out += &format!(" {}", s(st));
        }
        if let Some(Value::Array(vs)) = n.get("violations") {
            for violation in vs {
                out += &format!(
                    " violation={}@{} [{}]",
                    s(&violation["field"]),
                    violation["value"],
                    s(&violation["rule"])
                );
            }
        }
        if let Some(d) = n.get("ddp") {
            out += &format!(
                " ddp={} {}B via {} chunk ({}B)",
                s(&d["item"]),
                d["length"],
                s(&d["chunk"]),
                d["chunk_length"]
            );
        }
        out.push('\n');
    }
    if let Some(e) = v.get("error") {
        out += &format!("error   {}: {} [{}]\n", s(&v["layer"]), s(e), s(&v["rule"]));
    }
    if let Some(Value::Object(m)) = v.get("svcrdma") {
        let verdicts: Vec<String> = m.iter().map(|(k, o)| format!("{k}={}", s(o))).collect();
        out += &format!("svcrdma {}\n", verdicts.join(" "));
    }
    if let Some(Value::Object(m)) = v.get("svcrdma_profiles") {
        for (kernel, a) in m {
            out += &format!(
                "profile {kernel}: {} (rule {})\n",
                s(&a["outcome"]),
                s(&a["rule"])
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_call_proc_by_number_and_name() {
        assert_eq!(
            parse_call_proc("100003:3:6").unwrap(),
            CallProc::new(100003, 3, 6)
        );
        assert_eq!(
            parse_call_proc("nfs:3:read").unwrap(),
            CallProc::new(100003, 3, 6)
        );
        assert_eq!(
            parse_call_proc("mount:3:MNT").unwrap(),
            CallProc::new(100005, 3, 1)
        );
        assert!(parse_call_proc("nfs:3").is_err());
        assert!(parse_call_proc("nfs:3:FROB").is_err());
    }

    /// The default answers come from the one compiled-in list, in its order: a profile added to
    /// `MEASURED_PROFILES` shows up here with nothing else to change.
    #[test]
    fn default_kernels_are_the_compiled_in_measured_profiles() {
        let kernels = selected_kernels(&[]).unwrap();
        let labels: Vec<&str> = kernels.iter().map(|k| k.label.as_str()).collect();
        let names: Vec<&str> = MEASURED_PROFILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(labels, names);
        for kernel in &kernels {
            assert!(kernel.file.is_none());
            assert_eq!(kernel.model, kernel_model(&kernel.label).unwrap());
        }
        // A bare unknown word is an unknown name, a path-like one a file.
        assert!(!looks_like_file("debian-6.1.192"));
        assert!(looks_like_file("debian-6.1.192.toml"));
        assert!(looks_like_file("profiles/x"));
        let err = format!("{:#}", selected_kernels(&["linux-5.4".into()]).unwrap_err());
        assert!(
            err.contains("known: linux-6.1, linux-2026, debian-6.1.176"),
            "{err}"
        );
    }

    #[test]
    fn parses_hex_with_comments() {
        assert_eq!(
            parse_hex(b"00 01 # xid\nff\n").unwrap(),
            vec![0x00, 0x01, 0xff]
        );
        assert!(parse_hex(b"abc").is_err());
        assert!(parse_hex(b"zz").is_err());
    }
}
