//! Work completions as Rust values: status and opcode with their verbs names, and the
//! immediate-data / invalidated-rkey union resolved by the completion's flags.

use std::fmt;

use crate::sys;

/// A completion status (`enum ibv_wc_status`); unknown values are kept, not rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WcStatus(pub u32);

impl WcStatus {
    pub fn is_success(self) -> bool {
        self.0 == sys::IBV_WC_SUCCESS
    }

    /// The verbs name (`IBV_WC_REM_ACCESS_ERR`), or `IBV_WC_UNKNOWN` for values rdma-core 44 lacks.
    pub fn name(self) -> &'static str {
        match self.0 {
            sys::IBV_WC_SUCCESS => "IBV_WC_SUCCESS",
            sys::IBV_WC_LOC_LEN_ERR => "IBV_WC_LOC_LEN_ERR",
            sys::IBV_WC_LOC_QP_OP_ERR => "IBV_WC_LOC_QP_OP_ERR",
            sys::IBV_WC_LOC_EEC_OP_ERR => "IBV_WC_LOC_EEC_OP_ERR",
            sys::IBV_WC_LOC_PROT_ERR => "IBV_WC_LOC_PROT_ERR",
            sys::IBV_WC_WR_FLUSH_ERR => "IBV_WC_WR_FLUSH_ERR",
            sys::IBV_WC_MW_BIND_ERR => "IBV_WC_MW_BIND_ERR",
            sys::IBV_WC_BAD_RESP_ERR => "IBV_WC_BAD_RESP_ERR",
            sys::IBV_WC_LOC_ACCESS_ERR => "IBV_WC_LOC_ACCESS_ERR",
            sys::IBV_WC_REM_INV_REQ_ERR => "IBV_WC_REM_INV_REQ_ERR",
            sys::IBV_WC_REM_ACCESS_ERR => "IBV_WC_REM_ACCESS_ERR",
            sys::IBV_WC_REM_OP_ERR => "IBV_WC_REM_OP_ERR",
            sys::IBV_WC_RETRY_EXC_ERR => "IBV_WC_RETRY_EXC_ERR",
            sys::IBV_WC_RNR_RETRY_EXC_ERR => "IBV_WC_RNR_RETRY_EXC_ERR",
            sys::IBV_WC_LOC_RDD_VIOL_ERR => "IBV_WC_LOC_RDD_VIOL_ERR",
            sys::IBV_WC_REM_INV_RD_REQ_ERR => "IBV_WC_REM_INV_RD_REQ_ERR",
            sys::IBV_WC_REM_ABORT_ERR => "IBV_WC_REM_ABORT_ERR",
            sys::IBV_WC_INV_EECN_ERR => "IBV_WC_INV_EECN_ERR",
            sys::IBV_WC_INV_EEC_STATE_ERR => "IBV_WC_INV_EEC_STATE_ERR",
            sys::IBV_WC_FATAL_ERR => "IBV_WC_FATAL_ERR",
            sys::IBV_WC_RESP_TIMEOUT_ERR => "IBV_WC_RESP_TIMEOUT_ERR",
            sys::IBV_WC_GENERAL_ERR => "IBV_WC_GENERAL_ERR",
            sys::IBV_WC_TM_ERR => "IBV_WC_TM_ERR",
            sys::IBV_WC_TM_RNDV_INCOMPLETE => "IBV_WC_TM_RNDV_INCOMPLETE",
            _ => "IBV_WC_UNKNOWN",
        }
    }
}

impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// A completion opcode (`enum ibv_wc_opcode`). Receive-side opcodes have bit 7 set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WcOpcode(pub u32);

impl WcOpcode {
    pub fn name(self) -> &'static str {
        match self.0 {
            sys::IBV_WC_SEND => "IBV_WC_SEND",
            sys::IBV_WC_RDMA_WRITE => "IBV_WC_RDMA_WRITE",
            sys::IBV_WC_RDMA_READ => "IBV_WC_RDMA_READ",
            sys::IBV_WC_COMP_SWAP => "IBV_WC_COMP_SWAP",
            sys::IBV_WC_FETCH_ADD => "IBV_WC_FETCH_ADD",
            sys::IBV_WC_BIND_MW => "IBV_WC_BIND_MW",
            sys::IBV_WC_LOCAL_INV => "IBV_WC_LOCAL_INV",
            sys::IBV_WC_TSO => "IBV_WC_TSO",
            sys::IBV_WC_ATOMIC_WRITE => "IBV_WC_ATOMIC_WRITE",
            sys::IBV_WC_RECV => "IBV_WC_RECV",
            sys::IBV_WC_RECV_RDMA_WITH_IMM => "IBV_WC_RECV_RDMA_WITH_IMM",
            _ => "IBV_WC_UNKNOWN",
        }
    }

    /// Whether this completes a Receive (`IBV_WC_RECV` and later have bit 7 set, per verbs.h).
    pub fn is_receive(self) -> bool {
        self.0 & sys::IBV_WC_RECV != 0
    }
}

impl fmt::Display for WcOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// The bit layout of a completion's `wc_flags`.
///
/// libibverbs defines `IBV_WC_IP_CSUM_OK = 1 << 2` and `IBV_WC_WITH_INV = 1 << 3`; the kernel's
/// `enum ib_wc_flags` has them the other way round (`IB_WC_WITH_INVALIDATE = 1 << 2`). Providers
/// that copy the kernel's completion to user space unchanged (soft-RoCE rxe: measured on the 6.1,
/// 6.12 and 7.2 guests, a Send With Invalidate arrives with `wc_flags = 0x5`) therefore report an
/// invalidation as "IP checksum OK".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WcFlagLayout {
    /// `enum ibv_wc_flags`, what verbs.h documents (hardware providers).
    Verbs,
    /// `enum ib_wc_flags` of the kernel (rxe).
    KernelIbWc,
}

impl WcFlagLayout {
    /// The bit that marks "invalidated_rkey is valid".
    pub fn with_invalidate_bit(self) -> u32 {
        match self {
            WcFlagLayout::Verbs => sys::IBV_WC_WITH_INV,
            // include/rdma/ib_verbs.h: IB_WC_WITH_INVALIDATE = (1<<2).
            WcFlagLayout::KernelIbWc => 1 << 2,
        }
    }
}

/// The `imm_data` / `invalidated_rkey` union, resolved by `wc_flags`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImmOrInv {
    None,
    /// Immediate data, in host order (the C field is big-endian).
    Immediate(u32),
    /// The peer's Send With Invalidate invalidated this local rkey.
    Invalidated(u32),
}

/// One polled completion, copied out of `struct ibv_wc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkCompletion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    /// Bytes received (Receive completions only; undefined for Send-side completions).
    pub byte_len: u32,
    pub vendor_err: u32,
    pub qp_num: u32,
    /// Raw `IBV_WC_*` flags, kept for diagnosis (the union below is already resolved from them).
    pub wc_flags: u32,
    pub imm_or_inv: ImmOrInv,
}

impl WorkCompletion {
    /// A completion whose flags follow verbs.h.
    pub fn from_raw(raw: &sys::ibv_wc) -> Self {
        Self::from_raw_with(raw, WcFlagLayout::Verbs)
    }

    /// A completion whose flags follow `layout` (see [`WcFlagLayout`]).
    pub fn from_raw_with(raw: &sys::ibv_wc, layout: WcFlagLayout) -> Self {
        // SAFETY: both union arms are u32; every bit pattern is a valid u32.
        let union_value = unsafe { raw.__bindgen_anon_1.invalidated_rkey };
        let imm_or_inv = if raw.wc_flags & layout.with_invalidate_bit() != 0 {
            ImmOrInv::Invalidated(union_value)
        } else if raw.wc_flags & sys::IBV_WC_WITH_IMM != 0 {
            ImmOrInv::Immediate(u32::from_be(union_value))
        } else {
            ImmOrInv::None
        };
        WorkCompletion {
            wr_id: raw.wr_id,
            status: WcStatus(raw.status),
            opcode: WcOpcode(raw.opcode),
            byte_len: raw.byte_len,
            vendor_err: raw.vendor_err,
            qp_num: raw.qp_num,
            wc_flags: raw.wc_flags,
            imm_or_inv,
        }
    }
}

impl fmt::Display for WorkCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wr_id={} {} {} byte_len={} wc_flags={:#x}",
            self.wr_id, self.opcode, self.status, self.byte_len, self.wc_flags
        )?;
        match self.imm_or_inv {
            ImmOrInv::None => Ok(()),
            ImmOrInv::Immediate(imm) => write!(f, " imm={imm:#x}"),
            ImmOrInv::Invalidated(rkey) => write!(f, " invalidated_rkey={rkey:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_wc(status: u32, opcode: u32, wc_flags: u32, union_value: u32) -> sys::ibv_wc {
        let mut raw = sys::ibv_wc {
            wr_id: 9,
            status,
            opcode,
            byte_len: 100,
            qp_num: 17,
            wc_flags,
            ..Default::default()
        };
        raw.__bindgen_anon_1.invalidated_rkey = union_value;
        raw
    }

    #[test]
    fn status_names_match_the_verbs_header_values() {
        assert_eq!(WcStatus(0).name(), "IBV_WC_SUCCESS");
        assert!(WcStatus(0).is_success());
        assert_eq!(WcStatus(5).name(), "IBV_WC_WR_FLUSH_ERR");
        assert_eq!(WcStatus(10).name(), "IBV_WC_REM_ACCESS_ERR");
        assert_eq!(WcStatus(13).name(), "IBV_WC_RNR_RETRY_EXC_ERR");
        assert_eq!(WcStatus(999).to_string(), "IBV_WC_UNKNOWN(999)");
        assert!(!WcStatus(12).is_success());
    }

    #[test]
    fn named_statuses_are_exactly_the_ones_libibverbs_knows() {
        fn libibverbs_name(status: u32) -> &'static std::ffi::CStr {
            // SAFETY: ibv_wc_status_str accepts any value and returns a pointer to a static
            // NUL-terminated string ("unknown" for values it does not know).
            unsafe { std::ffi::CStr::from_ptr(sys::ibv_wc_status_str(status)) }
        }
        for status in 0..64 {
            let libibverbs_knows = libibverbs_name(status).to_bytes() != b"unknown";
            let we_know = WcStatus(status).name() != "IBV_WC_UNKNOWN";
            assert_eq!(we_know, libibverbs_knows, "status {status}");
        }
    }

    #[test]
    fn opcode_names_and_receive_bit() {
        assert_eq!(WcOpcode(sys::IBV_WC_RDMA_READ).name(), "IBV_WC_RDMA_READ");
        assert_eq!(WcOpcode(128).name(), "IBV_WC_RECV");
        assert!(WcOpcode(128).is_receive());
        assert!(WcOpcode(sys::IBV_WC_RECV_RDMA_WITH_IMM).is_receive());
        assert!(!WcOpcode(sys::IBV_WC_SEND).is_receive());
        assert_eq!(WcOpcode(77).to_string(), "IBV_WC_UNKNOWN(77)");
    }

    #[test]
    fn flags_select_the_union_arm() {
        let plain = WorkCompletion::from_raw(&raw_wc(0, sys::IBV_WC_RECV, 0, 0x1234));
        assert_eq!(plain.imm_or_inv, ImmOrInv::None);
        assert_eq!((plain.wr_id, plain.byte_len, plain.qp_num), (9, 100, 17));

        let inv =
            WorkCompletion::from_raw(&raw_wc(0, sys::IBV_WC_RECV, sys::IBV_WC_WITH_INV, 0xabcd));
        assert_eq!(inv.imm_or_inv, ImmOrInv::Invalidated(0xabcd));
        assert_eq!(
            inv.to_string(),
            "wr_id=9 IBV_WC_RECV(128) IBV_WC_SUCCESS(0) byte_len=100 wc_flags=0x8 invalidated_rkey=0xabcd"
        );

        // rxe's kernel-layout flags: GRH | IB_WC_WITH_INVALIDATE.
        let rxe = raw_wc(0, sys::IBV_WC_RECV, 0x5, 0x77);
        assert_eq!(WorkCompletion::from_raw(&rxe).imm_or_inv, ImmOrInv::None);
        assert_eq!(
            WorkCompletion::from_raw_with(&rxe, WcFlagLayout::KernelIbWc).imm_or_inv,
            ImmOrInv::Invalidated(0x77)
        );
        // Immediate data has the same bit in both layouts.
        let imm = WorkCompletion::from_raw(&raw_wc(
            0,
            sys::IBV_WC_RECV_RDMA_WITH_IMM,
            sys::IBV_WC_WITH_IMM,
            0x0102_0304u32.to_be(),
        ));
        assert_eq!(imm.imm_or_inv, ImmOrInv::Immediate(0x0102_0304));
    }
}
