//! Posting work requests to a connection's RC QP (its sizing from credits is [`crate::caps`]).
//!
//! `ibv_post_send` / `ibv_post_recv` are static inline functions in verbs.h; like the header, we call
//! the provider's `post_send` / `post_recv` through `qp->context->ops`.

use crate::cm::CmId;
use crate::error::{Result, VerbsError};
use crate::mem::{Mw, Sge};
use crate::sys;
use crate::wr::{inc_rkey, BindWindowWr, RecvWr, SendOp, SendWr};

pub use crate::caps::{QpCaps, MAX_CREDITS, MAX_RDMA_OPS_PER_RPC};

impl CmId {
    /// Post one Send Queue work request on this connection's QP. The MR behind `sge` is retained
    /// until the QP is destroyed, so the HCA never touches freed memory.
    pub fn post_send(&self, wr_id: u64, op: SendOp, sge: &Sge, signaled: bool) -> Result<()> {
        let qp = self.qp_ptr()?;
        let wr = SendWr {
            wr_id,
            op,
            local: sge.local,
            signaled,
        };
        let mut raw_sge = sys::ibv_sge::default();
        let mut raw = wr.to_raw(&mut raw_sge);
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: live QP (owned by `self`); its context is the live device context.
        let post_send = unsafe { (*(*qp).context).ops.post_send }
            .ok_or(VerbsError::InvalidState("provider has no post_send"))?;
        self.retain(&sge.mr);
        // SAFETY: ibv_post_send's body. `raw` and `raw_sge` live on this frame until the call
        // returns (the provider copies them into the Send Queue); the MR is retained above.
        let rc = unsafe { post_send(qp, &mut raw, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::from_errno(op_verb(op), rc));
        }
        Ok(())
    }

    /// Bind memory window `mw` over `region` (a bounds-checked slice of an MR from
    /// [`crate::Pd::register_bindable`]) with the given remote rights (`IBV_ACCESS_REMOTE_READ` /
    /// `_WRITE`), under a fresh rkey which is returned; the peer may use it once this completes.
    pub fn post_bind_window(
        &self,
        wr_id: u64,
        mw: &Mw,
        region: &Sge,
        access: u32,
        signaled: bool,
    ) -> Result<u32> {
        let qp = self.qp_ptr()?;
        let mr = &region.mr;
        let new_rkey = inc_rkey(mw.rkey());
        let wr = BindWindowWr {
            wr_id,
            new_rkey,
            addr: region.local.addr,
            length: u64::from(region.local.length),
            access,
            signaled,
        };
        let mut raw = wr.to_raw(mw.raw_ptr(), mr.raw_ptr());
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: live QP; its context is the live device context.
        let post_send = unsafe { (*(*qp).context).ops.post_send }
            .ok_or(VerbsError::InvalidState("provider has no post_send"))?;
        self.retain(mr);
        self.retain_window(mw);
        // SAFETY: ibv_post_send's body; `raw` outlives the call; the MR and window it names are
        // retained by this QP until it is destroyed.
        let rc = unsafe { post_send(qp, &mut raw, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::from_errno("ibv_post_send(IBV_WR_BIND_MW)", rc));
        }
        mw.set_rkey(new_rkey);
        Ok(new_rkey)
    }

    /// Post one Receive on this connection's QP (same retention rule as [`CmId::post_send`]).
    pub fn post_recv(&self, wr_id: u64, sge: &Sge) -> Result<()> {
        let qp = self.qp_ptr()?;
        let wr = RecvWr {
            wr_id,
            local: sge.local,
        };
        let mut raw_sge = sys::ibv_sge::default();
        let mut raw = wr.to_raw(&mut raw_sge);
        let mut bad: *mut sys::ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: live QP; its context is the live device context.
        let post_recv = unsafe { (*(*qp).context).ops.post_recv }
            .ok_or(VerbsError::InvalidState("provider has no post_recv"))?;
        self.retain(&sge.mr);
        // SAFETY: ibv_post_recv's body; request and SGE outlive the call, the MR is retained.
        let rc = unsafe { post_recv(qp, &mut raw, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::from_errno("ibv_post_recv", rc));
        }
        Ok(())
    }
}

/// The verb named in a post error, so "RDMA Read failed" is distinguishable from "Send failed".
fn op_verb(op: SendOp) -> &'static str {
    match op {
        SendOp::Send => "ibv_post_send(IBV_WR_SEND)",
        SendOp::SendWithInvalidate { .. } => "ibv_post_send(IBV_WR_SEND_WITH_INV)",
        SendOp::RdmaWrite { .. } => "ibv_post_send(IBV_WR_RDMA_WRITE)",
        SendOp::RdmaRead { .. } => "ibv_post_send(IBV_WR_RDMA_READ)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_scale_with_credits_and_rdma_ops() {
        let caps = QpCaps::for_credits(32, 2).unwrap();
        assert_eq!(
            caps,
            QpCaps {
                max_send_wr: 96,
                max_recv_wr: 32
            }
        );
        assert_eq!(caps.cq_entries(), 128);
        let largest = QpCaps::for_credits(MAX_CREDITS, MAX_RDMA_OPS_PER_RPC).unwrap();
        assert_eq!(largest.max_send_wr, 4096 * 65);
    }

    #[test]
    fn caps_reject_zero_and_excessive_credits() {
        assert!(QpCaps::for_credits(0, 1).is_err());
        assert!(QpCaps::for_credits(MAX_CREDITS + 1, 1).is_err());
        assert!(QpCaps::for_credits(8, MAX_RDMA_OPS_PER_RPC + 1).is_err());
    }

    #[test]
    fn init_attr_is_an_rc_qp_with_one_sge_and_selective_signaling() {
        let caps = QpCaps::for_credits(4, 1).unwrap();
        let attr = caps.init_attr(std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(attr.qp_type, sys::IBV_QPT_RC);
        assert_eq!(attr.sq_sig_all, 0);
        assert_eq!((attr.cap.max_send_wr, attr.cap.max_recv_wr), (8, 4));
        assert_eq!((attr.cap.max_send_sge, attr.cap.max_recv_sge), (1, 1));
        assert!(attr.srq.is_null());
    }

    #[test]
    fn post_errors_name_the_operation() {
        let error = VerbsError::from_errno(
            op_verb(SendOp::RdmaRead {
                remote: crate::wr::RemoteRegion { addr: 0, rkey: 0 },
            }),
            libc::ENOMEM,
        );
        assert!(error
            .to_string()
            .starts_with("ibv_post_send(IBV_WR_RDMA_READ): Cannot allocate memory"));
    }
}
