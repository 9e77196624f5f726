//! Work requests as plain Rust values, and their pure translation into the C structs that
//! `ibv_post_send` / `ibv_post_recv` take (testable without a device).

use crate::sys;

/// One local scatter/gather element: bytes inside a registered MR, named by its lkey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalSge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// A peer's registered memory: where an RDMA Read/Write goes (RFC 8166 §3.4.5: an RDMA segment is
/// handle (rkey), length and offset (address)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    pub addr: u64,
    pub rkey: u32,
}

/// What a Send Queue work request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// A Send; the peer consumes one posted Receive.
    Send,
    /// A Send that also invalidates `invalidate_rkey` at the peer (RFC 8166 §3.4.6 / RFC 8797 §4:
    /// only to a peer that advertised the W flag in its private data).
    SendWithInvalidate { invalidate_rkey: u32 },
    /// Push the local bytes into the peer's memory.
    RdmaWrite { remote: RemoteRegion },
    /// Pull the peer's bytes into the local buffer (needs initiator depth ≥ 1 at connect).
    RdmaRead { remote: RemoteRegion },
}

impl SendOp {
    /// The verbs opcode for this operation.
    pub fn opcode(&self) -> sys::ibv_wr_opcode {
        match self {
            SendOp::Send => sys::IBV_WR_SEND,
            SendOp::SendWithInvalidate { .. } => sys::IBV_WR_SEND_WITH_INV,
            SendOp::RdmaWrite { .. } => sys::IBV_WR_RDMA_WRITE,
            SendOp::RdmaRead { .. } => sys::IBV_WR_RDMA_READ,
        }
    }

    /// The verbs opcode's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            SendOp::Send => "IBV_WR_SEND",
            SendOp::SendWithInvalidate { .. } => "IBV_WR_SEND_WITH_INV",
            SendOp::RdmaWrite { .. } => "IBV_WR_RDMA_WRITE",
            SendOp::RdmaRead { .. } => "IBV_WR_RDMA_READ",
        }
    }
}

/// A Send Queue work request with one scatter/gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWr {
    pub wr_id: u64,
    pub op: SendOp,
    pub local: LocalSge,
    /// Ask for a completion even though the QP is created with `sq_sig_all = 0`.
    pub signaled: bool,
}

impl SendWr {
    /// The C work request, pointing at `sge` (which the caller must keep alive and unmoved until
    /// `ibv_post_send` returns; the provider copies the request into the Send Queue).
    pub fn to_raw(&self, sge: &mut sys::ibv_sge) -> sys::ibv_send_wr {
        *sge = sys::ibv_sge {
            addr: self.local.addr,
            length: self.local.length,
            lkey: self.local.lkey,
        };
        let mut raw = sys::ibv_send_wr {
            wr_id: self.wr_id,
            next: std::ptr::null_mut(),
            sg_list: sge,
            num_sge: 1,
            opcode: self.op.opcode(),
            send_flags: if self.signaled {
                sys::IBV_SEND_SIGNALED
            } else {
                0
            },
            ..Default::default()
        };
        match self.op {
            SendOp::Send => {}
            SendOp::SendWithInvalidate { invalidate_rkey } => {
                raw.__bindgen_anon_1.invalidate_rkey = invalidate_rkey;
            }
            SendOp::RdmaWrite { remote } | SendOp::RdmaRead { remote } => {
                raw.wr.rdma = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                    remote_addr: remote.addr,
                    rkey: remote.rkey,
                };
            }
        }
        raw
    }
}

/// `ibv_inc_rkey` (a static inline in verbs.h): a new key for a type 2 window re-bind keeps the index
/// (upper 24 bits) and bumps the 8-bit tag, so stale keys from an earlier bind stop working.
pub fn inc_rkey(rkey: u32) -> u32 {
    (rkey & !0xff) | (rkey.wrapping_add(1) & 0xff)
}

/// A type 2 memory window bind (IBV_WR_BIND_MW): make `[addr, addr + length)` of an MR remotely
/// accessible through the window under `new_rkey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindWindowWr {
    pub wr_id: u64,
    pub new_rkey: u32,
    pub addr: u64,
    pub length: u64,
    /// `IBV_ACCESS_REMOTE_*` rights the window grants.
    pub access: u32,
    pub signaled: bool,
}

impl BindWindowWr {
    /// The C work request for window `mw` over region `mr` (pointers are stored, not dereferenced).
    pub fn to_raw(&self, mw: *mut sys::ibv_mw, mr: *mut sys::ibv_mr) -> sys::ibv_send_wr {
        let mut raw = sys::ibv_send_wr {
            wr_id: self.wr_id,
            next: std::ptr::null_mut(),
            sg_list: std::ptr::null_mut(),
            num_sge: 0,
            opcode: sys::IBV_WR_BIND_MW,
            send_flags: if self.signaled {
                sys::IBV_SEND_SIGNALED
            } else {
                0
            },
            ..Default::default()
        };
        raw.__bindgen_anon_2.bind_mw = sys::ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
            mw,
            rkey: self.new_rkey,
            bind_info: sys::ibv_mw_bind_info {
                mr,
                addr: self.addr,
                length: self.length,
                mw_access_flags: self.access,
            },
        };
        raw
    }
}

/// A Receive Queue work request with one scatter/gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvWr {
    pub wr_id: u64,
    pub local: LocalSge,
}

impl RecvWr {
    /// The C work request, pointing at `sge` (same lifetime rule as [`SendWr::to_raw`]).
    pub fn to_raw(&self, sge: &mut sys::ibv_sge) -> sys::ibv_recv_wr {
        *sge = sys::ibv_sge {
            addr: self.local.addr,
            length: self.local.length,
            lkey: self.local.lkey,
        };
        sys::ibv_recv_wr {
            wr_id: self.wr_id,
            next: std::ptr::null_mut(),
            sg_list: sge,
            num_sge: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: LocalSge = LocalSge {
        addr: 0x7f00_1000,
        length: 4096,
        lkey: 0x11,
    };
    const REMOTE: RemoteRegion = RemoteRegion {
        addr: 0xdead_beef_0000,
        rkey: 0x2233,
    };

    fn build(op: SendOp, signaled: bool) -> (sys::ibv_send_wr, Box<sys::ibv_sge>) {
        let mut sge = Box::new(sys::ibv_sge::default());
        let raw = SendWr {
            wr_id: 42,
            op,
            local: LOCAL,
            signaled,
        }
        .to_raw(&mut sge);
        (raw, sge)
    }

    #[test]
    fn send_points_at_its_sge_and_sets_signaled() {
        let (raw, sge) = build(SendOp::Send, true);
        assert_eq!(raw.wr_id, 42);
        assert_eq!(raw.opcode, sys::IBV_WR_SEND);
        assert_eq!(raw.send_flags, sys::IBV_SEND_SIGNALED);
        assert_eq!(raw.num_sge, 1);
        assert!(raw.next.is_null());
        assert!(std::ptr::eq(raw.sg_list, &*sge));
        assert_eq!((sge.addr, sge.length, sge.lkey), (0x7f00_1000, 4096, 0x11));
        let (unsignaled, _sge) = build(SendOp::Send, false);
        assert_eq!(unsignaled.send_flags, 0);
    }

    #[test]
    fn rdma_write_and_read_carry_the_remote_address_and_rkey() {
        for (op, opcode) in [
            (SendOp::RdmaWrite { remote: REMOTE }, sys::IBV_WR_RDMA_WRITE),
            (SendOp::RdmaRead { remote: REMOTE }, sys::IBV_WR_RDMA_READ),
        ] {
            let (raw, _sge) = build(op, true);
            assert_eq!(raw.opcode, opcode);
            // SAFETY: to_raw wrote the `rdma` arm for RDMA operations; both fields are plain integers.
            let rdma = unsafe { raw.wr.rdma };
            assert_eq!((rdma.remote_addr, rdma.rkey), (REMOTE.addr, REMOTE.rkey));
        }
    }

    #[test]
    fn send_with_invalidate_carries_the_rkey_to_invalidate() {
        let (raw, _sge) = build(
            SendOp::SendWithInvalidate {
                invalidate_rkey: 0x5566,
            },
            true,
        );
        assert_eq!(raw.opcode, sys::IBV_WR_SEND_WITH_INV);
        // SAFETY: a union of two u32 views; every bit pattern is valid.
        assert_eq!(unsafe { raw.__bindgen_anon_1.invalidate_rkey }, 0x5566);
        assert_eq!(
            SendOp::SendWithInvalidate { invalidate_rkey: 1 }.name(),
            "IBV_WR_SEND_WITH_INV"
        );
    }

    #[test]
    fn inc_rkey_bumps_only_the_tag_byte() {
        assert_eq!(inc_rkey(0x1234_5600), 0x1234_5601);
        assert_eq!(inc_rkey(0x1234_56ff), 0x1234_5600);
        assert_eq!(inc_rkey(0xffff_ffff), 0xffff_ff00);
    }

    #[test]
    fn bind_window_carries_window_region_key_and_rights() {
        let mw = 0x1000 as *mut sys::ibv_mw;
        let mr = 0x2000 as *mut sys::ibv_mr;
        let raw = BindWindowWr {
            wr_id: 5,
            new_rkey: 0xabcd_ef01,
            addr: 0x7f00_0000,
            length: 8192,
            access: sys::IBV_ACCESS_REMOTE_READ,
            signaled: true,
        }
        .to_raw(mw, mr);
        assert_eq!(raw.opcode, sys::IBV_WR_BIND_MW);
        assert_eq!((raw.num_sge, raw.send_flags), (0, sys::IBV_SEND_SIGNALED));
        // SAFETY: to_raw wrote the `bind_mw` arm; reading it back copies plain fields.
        let bind = unsafe { raw.__bindgen_anon_2.bind_mw };
        assert_eq!((bind.mw, bind.rkey), (mw, 0xabcd_ef01));
        assert_eq!(bind.bind_info.mr, mr);
        assert_eq!(
            (bind.bind_info.addr, bind.bind_info.length),
            (0x7f00_0000, 8192)
        );
        assert_eq!(bind.bind_info.mw_access_flags, sys::IBV_ACCESS_REMOTE_READ);
    }

    #[test]
    fn recv_points_at_its_sge() {
        let mut sge = sys::ibv_sge::default();
        let raw = RecvWr {
            wr_id: 7,
            local: LOCAL,
        }
        .to_raw(&mut sge);
        assert_eq!((raw.wr_id, raw.num_sge), (7, 1));
        assert!(std::ptr::eq(raw.sg_list, &sge));
        assert_eq!(sge.lkey, 0x11);
    }
}
