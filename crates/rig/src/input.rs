//! Every file the CLI reads goes through [`read_bounded`]: at most `limit` bytes, whatever the
//! file claims. A regular file's length is checked before reading and the read itself goes
//! through `take(limit + 1)` (a file may grow while we read it); standard input (`-`), FIFOs and
//! pipes are read the same bounded way, growing the buffer in steps that never pass `limit + 1`
//! and failing with an error (not an abort) when memory runs out; character and block devices
//! (`/dev/zero`, a disk) are refused by name, since they have no end to reach (`/dev/null`
//! excepted: it reads as empty).
//!
//! A regular file may instead be opened by [`open_regular`] and read by the caller as a stream
//! ([`Limited`]: the same limit, as an error once byte `limit + 1` arrives) and by offset
//! ([`ReadBack`]): `rig trace` streams a capture through a small window and reads back only the
//! RDMA data a chunk needs, instead of holding the whole file.

use std::cell::RefCell;
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Bytes read per step while the buffer grows.
const STEP: usize = 64 << 10;

/// Read all of `path` (`-` = standard input), at most `limit` bytes; `what` names the input in
/// errors (e.g. "capture", "case file").
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>> {
    let name = path.display();
    if path.as_os_str() == "-" {
        let stdin = std::io::stdin();
        // A terminal is a character device too, and a fine place to type --hex into.
        if !stdin.is_terminal() {
            let meta = File::open("/proc/self/fd/0")
                .and_then(|f| f.metadata())
                .or_else(|_| std::fs::metadata("/dev/stdin"));
            if let Ok(meta) = meta {
                refuse_devices(&meta, "standard input", what)?;
            }
        }
        return read_limited(&mut stdin.lock(), limit, 0, what)
            .with_context(|| format!("reading {what} from standard input"));
    }
    let file = File::open(path).with_context(|| format!("opening {what} {name}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {name}"))?;
    refuse_devices(&meta, &name.to_string(), what)?;
    if meta.is_file() && meta.len() > limit {
        bail!(
            "{what} {name} is larger than the {limit}-byte limit ({} bytes)",
            meta.len()
        );
    }
    let mut file = file;
    // A regular file's length sizes the buffer once (plus the byte that would say it grew).
    let hint = if meta.is_file() { meta.len() + 1 } else { 0 };
    read_limited(&mut file, limit, hint, what).with_context(|| format!("reading {what} {name}"))
}

/// `path` opened when it is a regular file of at most `limit` bytes (`None` for `-`, FIFOs and
/// anything else [`read_bounded`] reads whole, or refuses); an error when it is larger.
pub fn open_regular(path: &Path, limit: u64, what: &str) -> Result<Option<File>> {
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    let name = path.display();
    let file = File::open(path).with_context(|| format!("opening {what} {name}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("reading {what} {name}"))?;
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > limit {
        bail!(
            "{what} {name} is larger than the {limit}-byte limit ({} bytes)",
            meta.len()
        );
    }
    Ok(Some(file))
}

/// A reader that fails (an error, not a short read) once it would give more than `limit`
/// bytes: a file that grows past the limit while it is read is refused as [`read_bounded`]
/// refuses it.
pub struct Limited<R> {
    inner: R,
    read: u64,
    limit: u64,
    what: &'static str,
}

impl<R: Read> Limited<R> {
    pub fn new(inner: R, limit: u64, what: &'static str) -> Self {
        Limited {
            inner,
            read: 0,
            limit,
            what,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit is asked for, so that reaching it is seen.
        let room = self.limit.saturating_add(1).saturating_sub(self.read);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read = self.read.saturating_add(n as u64);
        if self.read > self.limit {
            return Err(std::io::Error::other(format!(
                "{} larger than the {}-byte limit",
                self.what, self.limit
            )));
        }
        Ok(n)
    }
}

/// Bytes read back per `pread` by [`ReadBack`].
const READ_BACK: usize = 256 << 10;

/// A file read by offset through one reused buffer of [`READ_BACK`] bytes: the pieces of one
/// RDMA READ or WRITE (one per packet, a few dozen bytes of headers apart) cost one `pread`
/// between them, not one each. Reads larger than the buffer go straight to their destination.
pub struct ReadBack<'f> {
    file: &'f File,
    /// The buffer and the file offset of its first byte.
    cache: RefCell<(u64, Vec<u8>)>,
}

impl<'f> ReadBack<'f> {
    pub fn new(file: &'f File) -> Self {
        ReadBack {
            file,
            cache: RefCell::new((0, Vec::new())),
        }
    }
}

impl trace::CaptureBytes for ReadBack<'_> {
    fn read_at(&self, offset: usize, out: &mut [u8]) -> bool {
        let (Ok(offset), Ok(len)) = (u64::try_from(offset), u64::try_from(out.len())) else {
            return false;
        };
        let Some(end) = offset.checked_add(len) else {
            return false;
        };
        if out.len() > READ_BACK {
            return self.file.read_exact_at(out, offset).is_ok();
        }
        let mut cache = self.cache.borrow_mut();
        let (start, bytes) = &mut *cache;
        let held = *start <= offset && end <= *start + bytes.len() as u64;
        if !held {
            bytes.resize(READ_BACK, 0);
            let mut got = 0;
            while got < bytes.len() {
                match self.file.read_at(&mut bytes[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            bytes.truncate(got);
            *start = offset;
            if got < out.len() {
                return false;
            }
        }
        let from = (offset - *start) as usize;
        out.copy_from_slice(&bytes[from..from + out.len()]);
        true
    }
}

/// [`read_bounded`] for text: invalid UTF-8 is an error naming the input.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String> {
    let bytes = read_bounded(path, limit, what)?;
    String::from_utf8(bytes).with_context(|| format!("{what} {} is not UTF-8", path.display()))
}

/// `/dev/null` (character device 1:3) reads as empty: it is what scripts give for "no input".
fn is_dev_null(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == libc_makedev(1, 3)
}

/// Linux's `makedev` for the small major/minor numbers of the memory devices.
fn libc_makedev(major: u64, minor: u64) -> u64 {
    ((major & 0xfff) << 8) | (minor & 0xff) | ((minor & !0xff) << 12) | ((major & !0xfff) << 32)
}

fn refuse_devices(meta: &std::fs::Metadata, name: &str, what: &str) -> Result<()> {
    if is_dev_null(meta) {
        return Ok(());
    }
    let kind = meta.file_type();
    let device = if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a directory"
    } else {
        return Ok(());
    };
    bail!("{what} {name} is {device}: give a regular file, a FIFO or - for standard input")
}

/// Read `reader` to its end, at most `limit` bytes: an error once byte `limit + 1` arrives.
/// `hint` is the expected length (0: unknown), used for the first allocation.
pub fn read_limited(reader: &mut dyn Read, limit: u64, hint: u64, what: &str) -> Result<Vec<u8>> {
    let cap = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let mut buf: Vec<u8> = Vec::new();
    let first = usize::try_from(hint).unwrap_or(usize::MAX).min(cap);
    buf.try_reserve_exact(first)
        .with_context(|| format!("out of memory reading {what} ({first} bytes)"))?;
    let mut taken = reader.take(limit.saturating_add(1));
    if first > 0 {
        // The expected length in one go, straight into the buffer sized for it (`read_to_end`
        // fills spare capacity without zeroing it first): a regular file is read this way
        // whole. The loop below then only finds the end, or more bytes if the file grew.
        (&mut taken)
            .take(first as u64)
            .read_to_end(&mut buf)
            .with_context(|| format!("reading {what}"))?;
    }
    loop {
        if buf.len() == buf.capacity() {
            // Grow geometrically, but never past limit + 1: a stream of zeros cannot make the
            // buffer (or the allocator's doubling) larger than the limit allows.
            let want = buf
                .capacity()
                .max(STEP)
                .min(cap.saturating_sub(buf.len()))
                .max(1);
            buf.try_reserve_exact(want)
                .with_context(|| format!("out of memory reading {what} ({} bytes)", buf.len()))?;
        }
        // Read into at most STEP bytes of the spare capacity (zeroed first: safe code only).
        let start = buf.len();
        let room = (buf.capacity() - start).min(STEP);
        buf.resize(start + room, 0);
        match taken.read(&mut buf[start..]) {
            // The end of the input, or byte limit + 1 read (`take` says 0 from then on).
            Ok(0) => {
                buf.truncate(start);
                break;
            }
            Ok(n) => buf.truncate(start + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(start),
            Err(e) => return Err(e.into()),
        }
    }
    if buf.len() as u64 > limit {
        bail!("{what} larger than the {limit}-byte limit");
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_longer_than_the_limit_is_an_error_after_limit_plus_one_bytes() {
        let mut zeros = std::io::repeat(0);
        let err = read_limited(&mut zeros, 1000, 0, "capture").unwrap_err();
        assert!(
            err.to_string().contains("larger than the 1000-byte limit"),
            "{err}"
        );
        let mut short: &[u8] = b"hello";
        assert_eq!(read_limited(&mut short, 5, 6, "x").unwrap(), b"hello");
        let mut empty: &[u8] = b"";
        assert!(read_limited(&mut empty, 5, 0, "x").unwrap().is_empty());
    }

    #[test]
    fn devices_and_directories_are_refused_by_name() {
        let err = read_bounded(Path::new("/dev/zero"), 1 << 30, "capture").unwrap_err();
        assert!(format!("{err:#}").contains("character device"), "{err:#}");
        let err = read_bounded(Path::new("/"), 1 << 30, "capture").unwrap_err();
        assert!(format!("{err:#}").contains("directory"), "{err:#}");
        assert!(read_bounded(Path::new("/dev/null"), 10, "capture")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_regular_file_over_the_limit_is_refused_before_reading() {
        let dir = std::env::temp_dir().join(format!("rig-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big");
        std::fs::write(&path, [7u8; 100]).unwrap();
        let err = read_bounded(&path, 99, "capture").unwrap_err();
        assert!(format!("{err:#}").contains("larger than the 99-byte limit (100 bytes)"));
        assert_eq!(read_bounded(&path, 100, "capture").unwrap().len(), 100);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_limited_reader_fails_past_its_limit_and_read_back_gives_the_bytes_at_each_offset() {
        let mut ok = Limited::new(&b"hello"[..], 5, "capture");
        let mut all = Vec::new();
        ok.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"hello");
        let mut over = Limited::new(std::io::repeat(0), 1000, "capture");
        let err = over.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "capture larger than the 1000-byte limit");

        use trace::CaptureBytes;
        let dir = std::env::temp_dir().join(format!("rig-readback-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bytes");
        let bytes: Vec<u8> = (0..READ_BACK * 3 + 17)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let back = ReadBack::new(&file);
        // Within the buffer, across its end, from before it, larger than it, at the very end.
        for (offset, len) in [
            (10, 100),
            (200, 5000),
            (READ_BACK - 3, 10),
            (5, 7),
            (READ_BACK * 2, READ_BACK + 1),
            (bytes.len() - 17, 17),
        ] {
            let mut out = vec![0; len];
            assert!(back.read_at(offset, &mut out), "{offset}+{len}");
            assert_eq!(out, bytes[offset..offset + len], "{offset}+{len}");
        }
        // Past the end of the file, or by an offset that overflows: not there, no panic.
        let mut out = [0; 18];
        assert!(!back.read_at(bytes.len() - 17, &mut out));
        assert!(!back.read_at(usize::MAX, &mut out));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
