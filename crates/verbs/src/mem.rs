//! Protection domains and memory regions that own their buffers, so memory the HCA may touch is
//! never freed while registered.

use std::cell::Cell;
use std::ptr::NonNull;
use std::rc::Rc;

use crate::device::Context;
use crate::error::{Result, VerbsError};
use crate::sys;
use crate::wr::{LocalSge, RemoteRegion};

/// The largest MR this crate registers (a caller bug, not a peer, would ask for more).
pub const MAX_MR_LEN: usize = 1 << 30;

/// Access rights every MR gets: the local HCA writes Receives and RDMA Read results into it, and the
/// peer may RDMA Read and Write it (RFC 8166 §3.4: chunks name memory the peer accesses).
pub const MR_ACCESS: u32 =
    sys::IBV_ACCESS_LOCAL_WRITE | sys::IBV_ACCESS_REMOTE_READ | sys::IBV_ACCESS_REMOTE_WRITE;

/// Access rights of a local-only buffer (Send and RDMA Write sources, Receive and RDMA Read
/// destinations): the local HCA writes into it, the peer cannot reach it at all.
pub const LOCAL_ACCESS: u32 = sys::IBV_ACCESS_LOCAL_WRITE;

/// What a peer may do to a chunk's memory, and nothing more (RFC 8166 §3.4: the Responder RDMA
/// Reads a Read chunk and RDMA Writes a Write or Reply chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteAccess {
    /// RDMA Read only (a Read chunk). The CPU fills it before the segment is advertised.
    Read,
    /// RDMA Write only (a Write or Reply chunk). ibv_reg_mr(3) requires local write with remote
    /// write.
    Write,
}

impl RemoteAccess {
    /// The `ibv_access_flags` of a region the peer may reach this way.
    pub fn flags(self) -> u32 {
        match self {
            RemoteAccess::Read => sys::IBV_ACCESS_REMOTE_READ,
            RemoteAccess::Write => sys::IBV_ACCESS_LOCAL_WRITE | sys::IBV_ACCESS_REMOTE_WRITE,
        }
    }
}

pub(crate) struct PdInner {
    pub(crate) raw: NonNull<sys::ibv_pd>,
}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: allocated by ibv_alloc_pd; every MR and QP on it holds an Rc of this and is gone.
        unsafe {
            sys::ibv_dealloc_pd(self.raw.as_ptr());
        }
    }
}

/// A protection domain (`ibv_alloc_pd`). Cheap to clone; deallocated when the last clone, MR and QP
/// using it are gone.
#[derive(Clone)]
pub struct Pd {
    pub(crate) inner: Rc<PdInner>,
}

impl Pd {
    pub fn new(context: Context) -> Result<Pd> {
        // SAFETY: `context` is a live librdmacm-owned context (see `Context`).
        let raw = unsafe { sys::ibv_alloc_pd(context.raw.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last_os_error("ibv_alloc_pd"))?;
        Ok(Pd {
            inner: Rc::new(PdInner { raw }),
        })
    }

    /// Allocate a zeroed buffer of `len` bytes and register it with [`MR_ACCESS`].
    pub fn register(&self, len: usize) -> Result<Mr> {
        self.register_with_access(len, MR_ACCESS)
    }

    /// Allocate a zeroed buffer of `len` bytes and register it with [`LOCAL_ACCESS`] (a bounce
    /// buffer no peer may name).
    pub fn register_local(&self, len: usize) -> Result<Mr> {
        self.register_with_access(len, LOCAL_ACCESS)
    }

    /// Allocate a zeroed buffer of `len` bytes and register it so the peer may reach it only by
    /// `access` (a chunk's memory; [`Pd::register`] grants remote read *and* write).
    pub fn register_remote(&self, len: usize, access: RemoteAccess) -> Result<Mr> {
        self.register_with_access(len, access.flags())
    }

    /// Like [`Pd::register`], plus the right to bind memory windows over it ([`Mw`]): the peer then
    /// gets a window's rkey, which a Send With Invalidate can revoke, instead of the MR's.
    pub fn register_bindable(&self, len: usize) -> Result<Mr> {
        self.register_with_access(len, MR_ACCESS | sys::IBV_ACCESS_MW_BIND)
    }

    /// A type 2 memory window (bound with [`crate::CmId::post_bind_window`], invalidated by the peer's
    /// Send With Invalidate or by a local invalidate). `ibv_alloc_mw` is a static inline in verbs.h:
    /// like the header, we call the provider's `alloc_mw` through the context's ops table.
    pub fn alloc_window(&self) -> Result<Mw> {
        // SAFETY: a live PD's `context` is its live device context.
        let alloc_mw = unsafe { (*(*self.inner.raw.as_ptr()).context).ops.alloc_mw }.ok_or(
            VerbsError::Os {
                verb: "ibv_alloc_mw",
                errno: libc::EOPNOTSUPP,
            },
        )?;
        // SAFETY: ibv_alloc_mw's body on a live PD; NULL is handled.
        let raw = unsafe { alloc_mw(self.inner.raw.as_ptr(), sys::IBV_MW_TYPE_2) };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last_os_error("ibv_alloc_mw"))?;
        // SAFETY: just allocated; `rkey` is the unbound window's initial key.
        let rkey = unsafe { raw.as_ref().rkey };
        Ok(Mw {
            inner: Rc::new(MwInner {
                raw,
                rkey: Cell::new(rkey),
                _pd: Rc::clone(&self.inner),
            }),
        })
    }

    fn register_with_access(&self, len: usize, access: u32) -> Result<Mr> {
        if len == 0 || len > MAX_MR_LEN {
            return Err(VerbsError::OverLimit {
                what: "memory region length (1 ..= MAX_MR_LEN)",
                value: len as u64,
                limit: MAX_MR_LEN as u64,
            });
        }
        let buf = Box::into_raw(vec![0u8; len].into_boxed_slice());
        // SAFETY: Box::into_raw never returns NULL.
        let buf = unsafe { NonNull::new_unchecked(buf.cast::<u8>()) };
        // SAFETY: live PD; `buf` points to `len` bytes we own and free only after ibv_dereg_mr.
        let raw = unsafe {
            sys::ibv_reg_mr(
                self.inner.raw.as_ptr(),
                buf.as_ptr().cast(),
                len,
                access as i32,
            )
        };
        let Some(raw) = NonNull::new(raw) else {
            let error = VerbsError::last_os_error("ibv_reg_mr");
            // SAFETY: registration failed, so only we refer to the buffer; rebuild the Box to free it.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(buf.as_ptr(), len)) });
            return Err(error);
        };
        Ok(Mr {
            inner: Rc::new(MrInner {
                raw,
                buf,
                len,
                _pd: Rc::clone(&self.inner),
            }),
        })
    }
}

pub(crate) struct MrInner {
    raw: NonNull<sys::ibv_mr>,
    /// Owned buffer (from `Box<[u8]>`), held as a raw pointer: the HCA writes it behind Rust's back,
    /// so no `&`/`&mut` to it is ever handed out; access is by copying in and out.
    buf: NonNull<u8>,
    len: usize,
    _pd: Rc<PdInner>,
}

impl Drop for MrInner {
    fn drop(&mut self) {
        // SAFETY: registered by ibv_reg_mr; the last Rc is gone, so no QP still holds a posted WR
        // naming it (QPs retain the MRs they post until destroyed).
        unsafe {
            sys::ibv_dereg_mr(self.raw.as_ptr());
        }
        // SAFETY: deregistered above, so the HCA no longer accesses it; built from a Box<[u8]> of
        // exactly `len` bytes.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.buf.as_ptr(),
                self.len,
            ))
        });
    }
}

/// A registered memory region that owns its buffer. Cheap to clone (shared).
#[derive(Clone)]
pub struct Mr {
    pub(crate) inner: Rc<MrInner>,
}

impl Mr {
    fn raw(&self) -> &sys::ibv_mr {
        // SAFETY: registered and not yet deregistered while `self` exists.
        unsafe { self.inner.raw.as_ref() }
    }

    pub fn lkey(&self) -> u32 {
        self.raw().lkey
    }

    pub fn rkey(&self) -> u32 {
        self.raw().rkey
    }

    /// The buffer's virtual address: what a peer names in an RDMA Read/Write.
    pub fn addr(&self) -> u64 {
        self.inner.buf.as_ptr() as u64
    }

    pub fn len(&self) -> usize {
        self.inner.len
    }

    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// Identity, for de-duplicating retained MRs.
    pub(crate) fn same_region(&self, other: &Mr) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn raw_ptr(&self) -> *mut sys::ibv_mr {
        self.inner.raw.as_ptr()
    }

    /// Copy `out.len()` bytes starting at `offset` out of the region. Call after the completion
    /// that delivered the data (Receive, RDMA Read) or the peer's signal that its RDMA Write is done.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        check_range(offset, out.len(), self.inner.len)?;
        // SAFETY: `offset + out.len() <= len` was checked; the source is our live buffer and `out`
        // is a distinct Rust slice, so they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.inner.buf.as_ptr().add(offset),
                out.as_mut_ptr(),
                out.len(),
            );
        }
        Ok(())
    }

    /// Copy bytes into the region at `offset` (before posting the Send / RDMA Write that uses them).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range(offset, data.len(), self.inner.len)?;
        // SAFETY: bounds checked as in `read`; `data` is a distinct Rust slice.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.inner.buf.as_ptr().add(offset),
                data.len(),
            );
        }
        Ok(())
    }

    /// `len` bytes at `offset` as a new vector.
    pub fn to_vec(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        check_range(offset, len, self.inner.len)?;
        let mut out = vec![0u8; len];
        self.read(offset, &mut out)?;
        Ok(out)
    }

    /// A scatter/gather element for `len` bytes at `offset`, bounds-checked.
    pub fn sge(&self, offset: usize, len: usize) -> Result<Sge> {
        check_range(offset, len, self.inner.len)?;
        let length = u32::try_from(len).map_err(|_| VerbsError::OverLimit {
            what: "scatter/gather length",
            value: len as u64,
            limit: u64::from(u32::MAX),
        })?;
        Ok(Sge {
            mr: self.clone(),
            local: LocalSge {
                addr: self.addr() + offset as u64,
                length,
                lkey: self.lkey(),
            },
        })
    }

    /// How a peer names `offset` in this region (what goes into an RDMA segment).
    pub fn remote(&self, offset: usize) -> Result<RemoteRegion> {
        check_range(offset, 0, self.inner.len)?;
        Ok(RemoteRegion {
            addr: self.addr() + offset as u64,
            rkey: self.rkey(),
        })
    }
}

pub(crate) struct MwInner {
    raw: NonNull<sys::ibv_mw>,
    /// The key of the latest bind we posted (the C struct's `rkey` is the allocation-time key).
    rkey: Cell<u32>,
    _pd: Rc<PdInner>,
}

impl Drop for MwInner {
    fn drop(&mut self) {
        // SAFETY: a live window's `context` is its live device context.
        let dealloc_mw = unsafe { (*self.raw.as_ptr()).context.as_ref() }
            .and_then(|context| context.ops.dealloc_mw);
        if let Some(dealloc_mw) = dealloc_mw {
            // SAFETY: ibv_dealloc_mw's body; allocated by alloc_mw, freed once; any QP that bound it
            // retains it, so it is destroyed already.
            unsafe { dealloc_mw(self.raw.as_ptr()) };
        }
    }
}

/// A type 2 memory window: a revocable remote view of part of an [`Mr`]. Cheap to clone (shared).
#[derive(Clone)]
pub struct Mw {
    pub(crate) inner: Rc<MwInner>,
}

impl Mw {
    /// The rkey a peer uses for this window (valid once the bind posted with it completes).
    pub fn rkey(&self) -> u32 {
        self.inner.rkey.get()
    }

    pub(crate) fn set_rkey(&self, rkey: u32) {
        self.inner.rkey.set(rkey);
    }

    pub(crate) fn raw_ptr(&self) -> *mut sys::ibv_mw {
        self.inner.raw.as_ptr()
    }

    pub(crate) fn same_window(&self, other: &Mw) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }
}

/// A bounds-checked slice of an [`Mr`], ready to post. Keeps the MR alive.
#[derive(Clone)]
pub struct Sge {
    pub(crate) mr: Mr,
    pub local: LocalSge,
}

/// `offset + len <= total`, without overflow.
pub fn check_range(offset: usize, len: usize, total: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= total => Ok(()),
        _ => Err(VerbsError::OverLimit {
            what: "memory region range end (offset + length)",
            value: (offset as u64).saturating_add(len as u64),
            limit: total as u64,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_without_overflow() {
        assert!(check_range(0, 4096, 4096).is_ok());
        assert!(check_range(4096, 0, 4096).is_ok());
        assert!(check_range(4095, 2, 4096).is_err());
        assert_eq!(
            check_range(usize::MAX, 2, 4096),
            Err(VerbsError::OverLimit {
                what: "memory region range end (offset + length)",
                value: u64::MAX,
                limit: 4096
            })
        );
    }

    #[test]
    fn access_rights_allow_local_write_and_remote_read_write() {
        assert_eq!(MR_ACCESS, 1 | 2 | 4);
    }

    #[test]
    fn a_chunk_region_grants_only_the_remote_access_its_chunk_needs() {
        // Read chunk: remote read, no write of any kind.
        assert_eq!(RemoteAccess::Read.flags(), sys::IBV_ACCESS_REMOTE_READ);
        // Write/Reply chunk: remote write (with the local write verbs requires), no remote read.
        assert_eq!(
            RemoteAccess::Write.flags(),
            sys::IBV_ACCESS_LOCAL_WRITE | sys::IBV_ACCESS_REMOTE_WRITE
        );
        assert_eq!(RemoteAccess::Write.flags() & sys::IBV_ACCESS_REMOTE_READ, 0);
        // A bounce buffer: written by the local HCA (Receives, RDMA Read results), by no peer.
        assert_eq!(LOCAL_ACCESS, sys::IBV_ACCESS_LOCAL_WRITE);
    }
}
