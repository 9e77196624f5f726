//! Completion channels and completion queues: poll, request notification, and a blocking wait with a
//! deadline on the channel's fd (which a driver can also put in its own poll(2) set).
//!
//! `ibv_poll_cq` and `ibv_req_notify_cq` are static inline functions in verbs.h (bindgen cannot bind
//! them); like the header, we call through the provider's `context->ops` table.

use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::device::Context;
use crate::error::{Result, VerbsError};
use crate::fd::wait_readable;
pub use crate::fd::{wait_any_readable, MAX_WAIT_FDS};
use crate::sys;
use crate::wc::{WcFlagLayout, WorkCompletion};

/// Largest CQ this crate creates (credits × operations per RPC stays far below it).
pub const MAX_CQE: u32 = 1 << 16;
/// Completions read per `ibv_poll_cq` call (a stack array).
pub const POLL_BATCH: usize = 16;

pub(crate) struct CompChannelInner {
    raw: NonNull<sys::ibv_comp_channel>,
}

impl Drop for CompChannelInner {
    fn drop(&mut self) {
        // SAFETY: created by ibv_create_comp_channel; every CQ on it holds an Rc of this and is gone.
        unsafe {
            sys::ibv_destroy_comp_channel(self.raw.as_ptr());
        }
    }
}

/// A completion channel (`ibv_create_comp_channel`): the fd CQ notifications arrive on.
#[derive(Clone)]
pub struct CompletionChannel {
    inner: Rc<CompChannelInner>,
}

impl CompletionChannel {
    pub fn new(context: Context) -> Result<Self> {
        // SAFETY: `context` is a live librdmacm-owned context.
        let raw = unsafe { sys::ibv_create_comp_channel(context.raw.as_ptr()) };
        let raw = NonNull::new(raw)
            .ok_or_else(|| VerbsError::last_os_error("ibv_create_comp_channel"))?;
        Ok(CompletionChannel {
            inner: Rc::new(CompChannelInner { raw }),
        })
    }

    /// The fd that becomes readable when a CQ armed with [`Cq::request_notify`] gets a completion.
    pub fn fd(&self) -> RawFd {
        // SAFETY: live channel; `fd` is set at creation and never changes.
        unsafe { (*self.inner.raw.as_ptr()).fd }
    }
}

pub(crate) struct CqInner {
    pub(crate) raw: NonNull<sys::ibv_cq>,
    channel: Rc<CompChannelInner>,
    flag_layout: WcFlagLayout,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: created by ibv_create_cq; every QP using it holds an Rc of this and is destroyed;
        // every CQ event was acked as soon as it was read (ibv_destroy_cq waits for unacked ones).
        unsafe {
            sys::ibv_destroy_cq(self.raw.as_ptr());
        }
    }
}

/// A completion queue bound to a completion channel. Cheap to clone (shared).
#[derive(Clone)]
pub struct Cq {
    pub(crate) inner: Rc<CqInner>,
}

impl Cq {
    /// A CQ with room for at least `entries` completions, notifying on `channel`.
    pub fn new(context: Context, entries: u32, channel: &CompletionChannel) -> Result<Cq> {
        if entries == 0 || entries > MAX_CQE {
            return Err(VerbsError::OverLimit {
                what: "completion queue entries (1 ..= MAX_CQE)",
                value: u64::from(entries),
                limit: u64::from(MAX_CQE),
            });
        }
        // SAFETY: live context and channel; no cq_context; completion vector 0 always exists.
        let raw = unsafe {
            sys::ibv_create_cq(
                context.raw.as_ptr(),
                entries as i32,
                std::ptr::null_mut(),
                channel.inner.raw.as_ptr(),
                0,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last_os_error("ibv_create_cq"))?;
        Ok(Cq {
            inner: Rc::new(CqInner {
                raw,
                channel: Rc::clone(&channel.inner),
                flag_layout: context.wc_flag_layout(),
            }),
        })
    }

    fn ops(&self) -> &sys::ibv_context_ops {
        // SAFETY: a live CQ's `context` points to its live device context (the provider's ops table).
        unsafe { &(*(*self.inner.raw.as_ptr()).context).ops }
    }

    /// Append up to `max` completions to `out` without blocking; returns how many were added.
    pub fn poll(&self, max: usize, out: &mut Vec<WorkCompletion>) -> Result<usize> {
        let poll_cq = self
            .ops()
            .poll_cq
            .ok_or(VerbsError::InvalidState("provider has no poll_cq"))?;
        let mut batch = [sys::ibv_wc::default(); POLL_BATCH];
        let mut total = 0;
        // Bounded: at most `max` completions, each call returns fewer than asked or we stop.
        while total < max {
            let want = (max - total).min(POLL_BATCH);
            // SAFETY: ibv_poll_cq's body: the provider's poll_cq on a live CQ, writing at most `want`
            // (<= POLL_BATCH) entries into `batch`.
            let polled =
                unsafe { poll_cq(self.inner.raw.as_ptr(), want as i32, batch.as_mut_ptr()) };
            if polled < 0 {
                // Providers return a negative value, not an errno; report it as EIO with the code.
                return Err(VerbsError::Os {
                    verb: "ibv_poll_cq",
                    errno: libc::EIO,
                });
            }
            let polled = (polled as usize).min(want);
            let layout = self.inner.flag_layout;
            out.extend(
                batch[..polled]
                    .iter()
                    .map(|raw| WorkCompletion::from_raw_with(raw, layout)),
            );
            total += polled;
            if polled < want {
                break;
            }
        }
        Ok(total)
    }

    /// How this CQ decodes `wc_flags` (chosen from the device at creation).
    pub fn flag_layout(&self) -> WcFlagLayout {
        self.inner.flag_layout
    }

    /// Arm the CQ: the next completion (or next solicited one) makes the channel fd readable.
    pub fn request_notify(&self, solicited_only: bool) -> Result<()> {
        let req_notify_cq = self
            .ops()
            .req_notify_cq
            .ok_or(VerbsError::InvalidState("provider has no req_notify_cq"))?;
        // SAFETY: ibv_req_notify_cq's body: the provider's req_notify_cq on a live CQ.
        let rc = unsafe { req_notify_cq(self.inner.raw.as_ptr(), i32::from(solicited_only)) };
        if rc != 0 {
            return Err(VerbsError::from_errno("ibv_req_notify_cq", rc));
        }
        Ok(())
    }

    /// The completion channel's fd, for a driver's own poll(2) set.
    pub fn channel_fd(&self) -> RawFd {
        // SAFETY: live channel; `fd` is set at creation.
        unsafe { (*self.inner.channel.raw.as_ptr()).fd }
    }

    /// Block until at least one completion is available (at most `max` are returned) or `timeout`
    /// passes. Uses notification, never busy-polls: poll, arm, poll again (a completion that landed
    /// before arming raises no event), then sleep on the channel fd.
    pub fn wait(&self, max: usize, timeout: Duration) -> Result<Vec<WorkCompletion>> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            if self.poll(max, &mut out)? > 0 {
                return Ok(out);
            }
            self.request_notify(false)?;
            if self.poll(max, &mut out)? > 0 {
                return Ok(out);
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            wait_readable(self.channel_fd(), remaining, "a work completion").map_err(|error| {
                match error {
                    VerbsError::Timeout { what, .. } => VerbsError::Timeout {
                        what,
                        after: timeout,
                    },
                    other => other,
                }
            })?;
            self.read_and_ack_event()?;
        }
    }

    /// For a driver with its own poll(2) loop, when the channel fd is readable: consume the pending
    /// notification (if any, without blocking), re-arm, and return up to `max` completions. Without
    /// consuming the notification the fd would stay readable and the loop would spin.
    pub fn on_notification(&self, max: usize) -> Result<Vec<WorkCompletion>> {
        if wait_readable(self.channel_fd(), Duration::ZERO, "a CQ notification").is_ok() {
            self.read_and_ack_event()?;
        }
        self.request_notify(false)?;
        let mut out = Vec::new();
        self.poll(max, &mut out)?;
        Ok(out)
    }

    /// Consume one notification from the channel (readable per poll, so this does not block) and
    /// ack it at once, so `ibv_destroy_cq` never waits on unacked events.
    fn read_and_ack_event(&self) -> Result<()> {
        let mut event_cq: *mut sys::ibv_cq = std::ptr::null_mut();
        let mut event_context: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: live channel, valid out-pointers.
        let rc = unsafe {
            sys::ibv_get_cq_event(
                self.inner.channel.raw.as_ptr(),
                &mut event_cq,
                &mut event_context,
            )
        };
        if rc != 0 {
            return Err(VerbsError::last_os_error("ibv_get_cq_event"));
        }
        // SAFETY: libibverbs returned a live CQ bound to this channel (it may be a sibling CQ
        // sharing the channel, which is alive because it holds the channel); ack exactly one event.
        unsafe { sys::ibv_ack_cq_events(event_cq, 1) };
        Ok(())
    }
}
