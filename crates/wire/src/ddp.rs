//! Read chunk positions (RFC 8166 §3.4.4, §3.4.5; RFC 8267 §4 for NFSv3): where a moved data
//! item sits in the XDR stream. The one place the rule is computed.

/// RFC 8166 §3.4.5 with RFC 8267 §4: the XDR position of an NFSv3 call's DDP-eligible argument
/// (`WRITE3args.data`, `SYMLINK3args.symlink_data`), given the length of the *reduced* call
/// message (RPC header and arguments without the moved bytes). The item is the last of its
/// arguments, so its position is where the reduced message ends. Saturates at `u32::MAX` (no
/// Send is that long).
pub fn argument_position(reduced_len: usize) -> u32 {
    u32::try_from(reduced_len).unwrap_or(u32::MAX)
}
