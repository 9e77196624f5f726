//! Rendering: compact text lines (raw or normalised for snapshots), JSON lines, and a unified
//! diff of two normalised traces.
//!
//! Normalisation (s2n-quic style): xids become `x1, x2…` and handles `h1, h2…` by first
//! appearance, offsets are shown relative to the segment a Call advertised, connections become
//! `c1, c2…`, addresses become roles (C/S), and PSNs, QPNs and times are dropped. The same
//! workload captured twice therefore renders to identical text.
//!
//! Which events are lines is the [`Level`]'s business ([`crate::level`]): at the default
//! [`Level::Exchange`] RC-level transport events are left out of the lines and summarised after
//! them ([`Rendered`]: a `transport: ...` line of counts and a `capture: ...` line), so the same
//! workload captured on a loaded host, with retransmissions, renders to the same lines too.
//!
//! Strings from the capture (file names, undecodable detail) reach a terminal: every text line
//! passes through [`escape_text`] (control characters, DEL, C1 and bidirectional overrides
//! become `\xNN` / `\u{NNNN}`, so an ESC or BEL cannot act and an embedded newline cannot forge
//! a line), and JSON lines through [`escape_json_text`] (what serde_json leaves raw).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::level::{capture_status, CaptureStatus, Level, StatusOfEvents, TransportCounts};
use crate::model::{Event, EventBody, Message, Trace};
use crate::reassembly::TransportEvent;
use wire::rpcrdma::{ChunkLists, Segment};

/// Symbol tables for normalisation.
#[derive(Debug, Default)]
struct Symbols {
    /// (connection, xid) → its number; 32-bit keys and numbers (a capture holds at most
    /// `capture::MAX_FRAMES` frames, so fewer connections and symbols): 12 bytes an entry, not
    /// 24, for a table that holds every xid of the trace.
    xids: HashMap<(u32, u32), u32>,
    handles: HashMap<(u32, u32), u32>,
    conns: HashMap<usize, usize>,
    /// Base offset of the latest segment advertised for a handle (offsets print relative to it).
    bases: HashMap<(usize, u32), u64>,
}

impl Symbols {
    fn next(map: &mut HashMap<(u32, u32), u32>, conn: usize, value: u32) -> u32 {
        let n = u32::try_from(map.len() + 1).unwrap_or(u32::MAX);
        let conn = u32::try_from(conn).unwrap_or(u32::MAX);
        *map.entry((conn, value)).or_insert(n)
    }
    fn xid(&mut self, conn: usize, xid: u32) -> String {
        format!("x{}", Self::next(&mut self.xids, conn, xid))
    }
    fn handle(&mut self, conn: usize, handle: u32) -> String {
        format!("h{}", Self::next(&mut self.handles, conn, handle))
    }
    fn conn(&mut self, conn: Option<usize>) -> String {
        match conn {
            Some(c) => {
                let n = self.conns.len() + 1;
                format!("c{}", *self.conns.entry(c).or_insert(n))
            }
            None => "c?".into(),
        }
    }
}

/// Whether volatile values are kept (raw) or replaced by stable symbols (normalised).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Raw,
    Normalised,
}

/// Start of the summary line with the RC-level transport counts.
pub const TRANSPORT_PREFIX: &str = "transport: ";
/// Start of the summary line with the capture's completeness.
pub const CAPTURE_PREFIX: &str = "capture: ";

/// Render a trace as text, one line per event, every event included ([`Level::Transport`], no
/// summary); [`render`] is the levelled form.
pub fn text(trace: &Trace, style: Style) -> String {
    lines(trace, style, Level::Transport)
}

/// A trace rendered at one level: the event lines (what `rig trace diff` and the interop
/// snapshots compare) and, beside them, what is summarised rather than compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub lines: String,
    pub transport: TransportCounts,
    pub capture: CaptureStatus,
}

impl Rendered {
    /// The event lines in [`canonical_order`]: what `rig trace diff` and the interop snapshots
    /// compare at the exchange level, where concurrent messages interleave by timing.
    #[must_use]
    pub fn in_canonical_order(mut self) -> Self {
        let lines: Vec<&str> = self.lines.lines().collect();
        let ordered: String = canonical_order(&lines)
            .into_iter()
            .map(|l| format!("{l}\n"))
            .collect();
        self.lines = ordered;
        self
    }

    /// The summary: `transport: duplicates=0 naks=0 ...` and `capture: complete` (or
    /// `capture: incomplete (...)`). Event lines always start with a connection tag (`c1 `,
    /// `c? `) or, raw, a frame number, so these two lines cannot be mistaken for events.
    pub fn summary(&self) -> String {
        format!(
            "{TRANSPORT_PREFIX}{}\n{CAPTURE_PREFIX}{}\n",
            self.transport,
            escape_text(&self.capture.to_string())
        )
    }

    /// The lines, then the summary: what `rig trace show --format text` prints.
    pub fn to_text(&self) -> String {
        format!("{}{}", self.lines, self.summary())
    }
}

/// Render `trace` at `level`, with its transport counts and capture status.
pub fn render(trace: &Trace, style: Style, level: Level) -> Rendered {
    Rendered {
        lines: lines(trace, style, level),
        transport: TransportCounts::of(trace),
        capture: capture_status(trace),
    }
}

fn lines(trace: &Trace, style: Style, level: Level) -> String {
    let mut out = String::new();
    let written: Result<(), std::convert::Infallible> = each_line(trace, style, level, |line| {
        out.push_str(line);
        out.push('\n');
        Ok(())
    });
    match written {
        Ok(()) => out,
    }
}

/// Call `f` with each line (escaped, without its newline) of `trace` at `level`; stops at the
/// first error `f` returns.
fn each_line<E>(
    trace: &Trace,
    style: Style,
    level: Level,
    mut f: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut sym = Symbols::default();
    let mut line = String::new();
    for e in &trace.events {
        if text_line(e, style, level, &mut sym, &mut line) {
            f(&line)?;
        }
    }
    if let Some(last) = capture_error_line(trace, level) {
        f(&last)?;
    }
    Ok(())
}

/// `e`'s line at `level` into `line` (cleared first); false when the level does not show it.
fn text_line(e: &Event, style: Style, level: Level, sym: &mut Symbols, line: &mut String) -> bool {
    if !level.shows(&e.body) {
        return false;
    }
    line.clear();
    if style == Style::Raw {
        let _ = write!(line, "{:>6} {:>10.6} ", e.frame, e.time.as_secs_f64());
    }
    line.push_str(&escape_text(&event_line(e, style, sym)));
    true
}

/// The last line at the transport level: why the capture file ended early.
fn capture_error_line(trace: &Trace, level: Level) -> Option<String> {
    let err = trace
        .capture_error
        .as_ref()
        .filter(|_| level == Level::Transport)?;
    Some(format!("! capture: {}", escape_text(err)))
}

/// Write `trace` at `level` as `rig trace show` prints it (the lines, then the summary) without
/// holding the text in memory; returns the capture status.
pub fn write_text(
    trace: &Trace,
    style: Style,
    level: Level,
    out: &mut dyn std::io::Write,
) -> std::io::Result<CaptureStatus> {
    let mut writer = EventWriter::text(style, level, out);
    for e in &trace.events {
        writer.event(e)?;
    }
    writer.finish(trace)
}

/// What [`EventWriter`] writes.
#[derive(Debug, Clone, Copy)]
enum WriterFormat {
    Text { style: Style, level: Level },
    Jsonl,
}

/// Writes a trace's lines as its events arrive (from `crate::stream_capture`, which keeps
/// none of them), then what only the end knows: the same bytes [`write_text`] and
/// [`write_jsonl`] give for the whole trace, with memory bounded by the renaming tables, not by
/// the number of events.
pub struct EventWriter<'w> {
    format: WriterFormat,
    sym: Symbols,
    status: StatusOfEvents,
    line: String,
    out: &'w mut dyn std::io::Write,
}

impl<'w> EventWriter<'w> {
    /// Text lines at `level`, then the transport counts and the capture status.
    pub fn text(style: Style, level: Level, out: &'w mut dyn std::io::Write) -> Self {
        Self::new(WriterFormat::Text { style, level }, out)
    }

    /// One JSON line per RPC-over-RDMA message.
    pub fn jsonl(out: &'w mut dyn std::io::Write) -> Self {
        Self::new(WriterFormat::Jsonl, out)
    }

    fn new(format: WriterFormat, out: &'w mut dyn std::io::Write) -> Self {
        EventWriter {
            format,
            sym: Symbols::default(),
            status: StatusOfEvents::default(),
            line: String::new(),
            out,
        }
    }

    /// Write `e`'s line, if it has one.
    pub fn event(&mut self, e: &Event) -> std::io::Result<()> {
        self.status.add(e);
        match self.format {
            WriterFormat::Text { style, level } => {
                if text_line(e, style, level, &mut self.sym, &mut self.line) {
                    self.out.write_all(self.line.as_bytes())?;
                    self.out.write_all(b"\n")?;
                }
            }
            WriterFormat::Jsonl => {
                if let EventBody::Message(m) = &e.body {
                    self.out.write_all(json_line(e, m).as_bytes())?;
                    self.out.write_all(b"\n")?;
                }
            }
        }
        Ok(())
    }

    /// Write what follows the events (text: the capture error line at the transport level,
    /// then the summary) given the rest of the trace; returns the capture status.
    pub fn finish(self, rest: &Trace) -> std::io::Result<CaptureStatus> {
        let (transport, capture) = self.status.finish(rest);
        if let WriterFormat::Text { level, .. } = self.format {
            if let Some(last) = capture_error_line(rest, level) {
                writeln!(self.out, "{last}")?;
            }
            let summary = Rendered {
                lines: String::new(),
                transport,
                capture,
            };
            self.out.write_all(summary.summary().as_bytes())?;
            return Ok(summary.capture);
        }
        Ok(capture)
    }
}

/// Whether `c` must not reach a terminal raw: C0 controls (newline and tab included), DEL, C1
/// controls (U+0080..U+009F: CSI is U+009B) and the bidirectional marks and overrides that
/// reorder what a terminal shows.
fn unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every character that could act on a terminal (see the module docs) written as
/// `\xNN` (below U+0100) or `\u{NNNN}`, and `\` as `\\` so the escaping is unambiguous. Borrowed
/// when there is nothing to escape (the common case).
pub fn escape_text(s: &str) -> Cow<'_, str> {
    // Printable ASCII but `\` needs nothing: checked by byte first, since decoding every char
    // and looking it up in the Unicode control tables was most of the cost of escaping.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\')
        || !s.chars().any(|c| c == '\\' || unsafe_for_terminal(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if unsafe_for_terminal(c) {
            let n = u32::from(c);
            if n < 0x100 {
                let _ = write!(out, "\\x{n:02x}");
            } else {
                let _ = write!(out, "\\u{{{n:04x}}}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text with the characters serde_json leaves raw but a terminal may act on (DEL, C1
/// controls, bidirectional overrides) written as `\uNNNN`. They can only occur inside JSON
/// strings, where `\uNNNN` means the same character, so the JSON value is unchanged. C0
/// controls are left alone: serde_json escapes them inside strings, and outside strings they
/// are the layout of pretty-printed JSON.
pub fn escape_json_text(s: &str) -> Cow<'_, str> {
    let raw_in_json = |c: char| u32::from(c) >= 0x20 && unsafe_for_terminal(c);
    // Below DEL nothing is: checked by byte first (see `escape_text`).
    if s.bytes().all(|b| b < 0x7f) || !s.chars().any(raw_in_json) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if raw_in_json(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn event_line(e: &Event, style: Style, sym: &mut Symbols) -> String {
    let raw = style == Style::Raw;
    let conn_tag = if raw {
        match e.conn {
            Some(c) => format!("c{c}"),
            None => "c?".into(),
        }
    } else {
        sym.conn(e.conn)
    };
    let dir = e.dir.map_or("?", |d| d.tag());
    let conn = e.conn.unwrap_or(usize::MAX);
    let body = match &e.body {
        EventBody::Message(m) => message_text(m, conn, style, sym),
        EventBody::Send { length } => format!("SEND len={length}"),
        EventBody::RdmaWrite {
            handle,
            offset,
            length,
        } => format!(
            "RDMA_WRITE {} len={length}",
            location(conn, *handle, *offset, style, sym)
        ),
        EventBody::RdmaRead {
            handle,
            offset,
            length,
        } => format!(
            "RDMA_READ {} len={length}",
            location(conn, *handle, *offset, style, sym)
        ),
        EventBody::Cm { name, detail } => {
            if detail.is_empty() {
                name.clone()
            } else {
                format!("{name} {detail}")
            }
        }
        EventBody::Transport(t) => format!("! {}", transport_text(t, raw)),
    };
    let line = format!("{conn_tag} {dir} {body}");
    if raw {
        line
    } else {
        mask_run_prefixes(&line)
    }
}

/// Our client names what it creates `rig<pid>x<8 hex>-<scenario>-...` so runs never collide
/// (crates/rig/src/scenarios.rs); the names show in traces (LOOKUP name=...). `rig<run>` in the
/// normalised style, so two runs of one scenario render (and `rig trace diff`) the same; the
/// interop snapshots mask verdict values with it too.
pub fn mask_run_prefixes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(found) = text[at..].find("rig") {
        let start = at + found;
        let mut i = start + 3;
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += digits;
        let is_prefix = digits > 0
            && bytes.get(i) == Some(&b'x')
            && bytes.len() >= i + 9
            && bytes[i + 1..i + 9].iter().all(u8::is_ascii_hexdigit)
            && !bytes.get(i + 9).is_some_and(u8::is_ascii_hexdigit);
        if is_prefix {
            out.push_str(&text[copied..start]);
            out.push_str("rig<run>");
            copied = i + 9;
            at = copied;
        } else {
            at = start + 3;
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn location(conn: usize, handle: u32, offset: u64, style: Style, sym: &mut Symbols) -> String {
    match style {
        Style::Raw => format!("{handle:#010x}@{offset:#x}"),
        Style::Normalised => {
            let base = *sym.bases.entry((conn, handle)).or_insert(offset);
            let h = sym.handle(conn, handle);
            match offset.checked_sub(base) {
                Some(rel) => format!("{h}+{rel}"),
                None => format!("{h}-{}", base - offset),
            }
        }
    }
}

fn segment_text(conn: usize, s: &Segment, style: Style, sym: &mut Symbols) -> String {
    match style {
        Style::Raw => format!("{:#010x}@{:#x}:{}", s.handle, s.offset, s.length),
        Style::Normalised => {
            // A segment advertised here is the base its RDMA operations are relative to.
            sym.bases.insert((conn, s.handle), s.offset);
            format!("{}:{}", sym.handle(conn, s.handle), s.length)
        }
    }
}

fn chunks_text(conn: usize, c: &ChunkLists, style: Style, sym: &mut Symbols) -> String {
    let mut out = String::new();
    if !c.reads.is_empty() {
        let reads: Vec<String> = c
            .reads
            .iter()
            .map(|r| {
                format!(
                    "@{} {}",
                    r.position,
                    segment_text(conn, &r.target, style, sym)
                )
            })
            .collect();
        let _ = write!(out, " read=[{}]", reads.join(", "));
    }
    if !c.writes.is_empty() {
        let writes: Vec<String> = c
            .writes
            .iter()
            .map(|w| {
                let segs: Vec<String> = w
                    .iter()
                    .map(|s| segment_text(conn, s, style, sym))
                    .collect();
                format!("[{}]", segs.join(", "))
            })
            .collect();
        let _ = write!(out, " write=[{}]", writes.join(", "));
    }
    if let Some(reply) = &c.reply {
        let segs: Vec<String> = reply
            .iter()
            .map(|s| segment_text(conn, s, style, sym))
            .collect();
        let _ = write!(out, " reply=[{}]", segs.join(", "));
    }
    out
}

fn message_text(m: &Message, conn: usize, style: Style, sym: &mut Symbols) -> String {
    let mut out = String::new();
    out.push_str(m.proc_.unwrap_or("RDMA_?"));
    match (m.xid, style) {
        (Some(x), Style::Raw) => {
            let _ = write!(out, " xid={x:#010x}");
        }
        (Some(x), Style::Normalised) => {
            let _ = write!(out, " {}", sym.xid(conn, x));
        }
        (None, _) => {}
    }
    if let Some(v) = m.vers {
        if v != wire::rpcrdma::RPCRDMA_VERSION {
            let _ = write!(out, " vers={v}");
        }
    }
    if let Some(c) = m.credits {
        let _ = write!(out, " cr={c}");
    }
    if let Some(h) = &m.header {
        if let Some(c) = h.chunks() {
            out.push_str(&chunks_text(conn, c, style, sym));
        }
        match &h.body {
            wire::rpcrdma::Body::Error(wire::rpcrdma::ErrorBody::Vers { low, high }) => {
                let _ = write!(out, " ERR_VERS({low}..{high})");
            }
            wire::rpcrdma::Body::Error(wire::rpcrdma::ErrorBody::Chunk) => {
                out.push_str(" ERR_CHUNK");
            }
            _ => {}
        }
    }
    match (&m.nfs, &m.rpc) {
        (Some(nfs), Some(rpc)) => {
            let _ = write!(out, " {} {} {}", nfs.program, nfs.proc_, rpc.kind);
            if let Some(d) = &nfs.detail {
                let _ = write!(out, " {d}");
            }
            if let Some(s) = &nfs.status {
                let _ = write!(out, " {s}");
            }
            if let Some(s) = &rpc.status {
                if s != "SUCCESS" {
                    let _ = write!(out, " rpc={s}");
                }
            }
        }
        (None, Some(rpc)) => {
            let _ = write!(out, " RPC {}", rpc.kind);
            if let (Some(p), Some(v), Some(n)) = (rpc.prog, rpc.vers, rpc.proc_) {
                let _ = write!(out, " {p}/{v}/{n}");
            }
            if let Some(s) = &rpc.status {
                let _ = write!(out, " {s}");
            }
        }
        _ => {}
    }
    if m.chunk_bytes > 0 {
        let _ = write!(out, " chunk_bytes={}", m.chunk_bytes);
    }
    if let Some(frame) = m.repeat_of {
        let what = match m.rpc.as_ref().map(|r| r.kind) {
            Some("reply") => "DUP_REPLY",
            _ => "RETRANSMIT",
        };
        match style {
            Style::Raw => {
                let _ = write!(out, " {what}(of frame {frame})");
            }
            Style::Normalised => {
                let _ = write!(out, " {what}");
            }
        }
    }
    if let Some(note) = &m.note {
        let _ = write!(out, " NOTE({note})");
    }
    if style == Style::Raw {
        if let (Some(f), Some(l)) = (m.call_frame, m.latency) {
            let _ = write!(out, " call={f} latency={}us", l.as_micros());
        }
    }
    if let Some(e) = &m.error {
        let _ = write!(out, " ERROR({e})");
    }
    out
}

/// A relay mark without what differs between two runs of the same forced case: hex numbers
/// (PSNs, QP numbers and XIDs are random per connection) become `<n>`, durations (`held 4 ms`,
/// `30 s`) `<t>`; the rule, the action and the frame's kind stay.
fn normalise_rig_text(text: &str) -> String {
    /// Punctuation a number or unit may carry after it in a mark: `30 s;`, `0x1a)`.
    const RIG_WORD_TAIL: [char; 4] = [')', ';', ',', ':'];
    let mut out = String::with_capacity(text.len());
    let mut words = text.split(' ').peekable();
    let mut first = true;
    while let Some(word) = words.next() {
        if !first {
            out.push(' ');
        }
        first = false;
        let core = word.trim_end_matches(RIG_WORD_TAIL);
        let tail = &word[core.len()..];
        if core.starts_with("0x") && core.len() > 2 {
            out.push_str("<n>");
            out.push_str(tail);
        } else if !core.is_empty() && core.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            match words.peek().map(|w| w.trim_end_matches(RIG_WORD_TAIL)) {
                Some(unit @ ("ms" | "s" | "us" | "µs")) => {
                    let unit_word = words.next().unwrap_or_default();
                    out.push_str("<t>");
                    out.push_str(&unit_word[unit.len()..]);
                }
                _ => out.push_str(word),
            }
        } else {
            out.push_str(word);
        }
    }
    out
}

fn transport_text(t: &TransportEvent, raw: bool) -> String {
    match t {
        TransportEvent::Duplicate { psn, opcode } if raw => format!("DUPLICATE {opcode} psn={psn}"),
        TransportEvent::Duplicate { opcode, .. } => format!("DUPLICATE {opcode}"),
        TransportEvent::Gap { expected, got } if raw => {
            format!("GAP expected_psn={expected} got={got}")
        }
        TransportEvent::Gap { expected, got } => {
            format!("GAP missing={}", crate::ib::psn_distance(*got, *expected))
        }
        TransportEvent::Nak { syndrome, psn } if raw => {
            format!("{} psn={psn}", syndrome.describe())
        }
        TransportEvent::Nak { syndrome, .. } => syndrome.describe(),
        TransportEvent::OutOfSequence {
            expected,
            psn,
            opcode,
        } if raw => format!("OUT_OF_SEQUENCE {opcode} psn={psn} expected_psn={expected}"),
        TransportEvent::OutOfSequence { opcode, .. } => format!("OUT_OF_SEQUENCE {opcode}"),
        TransportEvent::Unfilled { ranges, psns } => {
            format!("UNFILLED ranges={ranges} psns={psns}")
        }
        TransportEvent::LateFill { psn, opcode } if raw => format!("LATE_FILL {opcode} psn={psn}"),
        TransportEvent::LateFill { opcode, .. } => format!("LATE_FILL {opcode}"),
        TransportEvent::Incomplete { what, .. } => format!("INCOMPLETE {what}"),
        TransportEvent::UnmatchedResponse { opcode, .. } => format!("UNMATCHED {opcode}"),
        TransportEvent::Orphan { opcode, .. } => format!("ORPHAN {opcode}"),
        TransportEvent::Overlong { what, declared } => {
            format!("OVERLONG {what} declared={declared}")
        }
        TransportEvent::BadIcrc { .. } => "BAD_ICRC".into(),
        TransportEvent::Undecodable { error } => format!("UNDECODABLE {error}"),
        TransportEvent::LimitReached { what } => format!("LIMIT {what}"),
        TransportEvent::RigFault { text } if raw => format!("RIG {text}"),
        TransportEvent::RigFault { text } => format!("RIG {}", normalise_rig_text(text)),
        TransportEvent::TcpRetransmission { seq, len } if raw => {
            format!("TCP_RETRANSMISSION seq={seq} len={len}")
        }
        TransportEvent::TcpRetransmission { len, .. } => format!("TCP_RETRANSMISSION len={len}"),
        TransportEvent::TcpOutOfOrder { expected, seq } if raw => {
            format!("TCP_OUT_OF_ORDER expected={expected} seq={seq}")
        }
        TransportEvent::TcpOutOfOrder { .. } => "TCP_OUT_OF_ORDER".into(),
        TransportEvent::TcpOutOfWindow { expected, seq } if raw => {
            format!("TCP_OUT_OF_WINDOW expected={expected} seq={seq}")
        }
        TransportEvent::TcpOutOfWindow { .. } => "TCP_OUT_OF_WINDOW".into(),
        TransportEvent::TcpLost { expected, got } if raw => {
            format!("TCP_LOST expected={expected} got={got}")
        }
        TransportEvent::TcpLost { expected, got } => {
            format!("TCP_LOST bytes={}", got.wrapping_sub(*expected))
        }
        TransportEvent::BadMpaCrc { ulpdu_len } => format!("BAD_MPA_CRC len={ulpdu_len}"),
        TransportEvent::Terminate {
            layer,
            error_type,
            error_code,
        } => format!("TERMINATE layer={layer} type={error_type} code={error_code:#04x}"),
    }
}

/// One JSON object per RPC-over-RDMA message (raw values; xid as "0x%08x").
pub fn jsonl(trace: &Trace) -> String {
    let mut out = String::new();
    let written: Result<(), std::convert::Infallible> = each_json_line(trace, |line| {
        out.push_str(line);
        out.push('\n');
        Ok(())
    });
    match written {
        Ok(()) => out,
    }
}

/// [`jsonl`] written to `out` line by line, without holding the text in memory.
pub fn write_jsonl(trace: &Trace, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut writer = EventWriter::jsonl(out);
    for e in &trace.events {
        writer.event(e)?;
    }
    writer.finish(trace).map(|_| ())
}

/// Call `f` with each JSON line (escaped, without its newline); stops at the first error.
fn each_json_line<E>(trace: &Trace, mut f: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
    for (e, m) in trace.messages() {
        f(&json_line(e, m))?;
    }
    Ok(())
}

/// The JSON line of message `m` of event `e` (escaped, without its newline).
fn json_line(e: &Event, m: &Message) -> String {
    {
        let chunks = m.header.as_ref().and_then(|h| h.chunks());
        let line = JsonLine {
            call_frame: m.call_frame,
            chunk_bytes: m.chunk_bytes,
            conn: e.conn,
            credits: m.credits,
            dir: e.dir,
            error: &m.error,
            first_frame: e.first_frame,
            frame: e.frame,
            latency_us: m.latency.map(|l| l.as_micros() as u64),
            nfs: m.nfs.as_ref().map(|n| JsonNfs {
                detail: &n.detail,
                proc_: &n.proc_,
                program: n.program,
                status: &n.status,
            }),
            note: &m.note,
            proc_: m.proc_,
            reads: chunks
                .map(|c| {
                    c.reads
                        .iter()
                        .map(|r| JsonRead {
                            handle: r.target.handle,
                            length: r.target.length,
                            offset: r.target.offset,
                            position: r.position,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            repeat_of: m.repeat_of,
            reply: chunks
                .and_then(|c| c.reply.as_ref())
                .map(|r| r.iter().map(JsonSegment::of).collect()),
            rpc: m.rpc.as_ref().map(|r| JsonRpc {
                proc_: r.proc_,
                prog: r.prog,
                status: &r.status,
                kind: r.kind,
                vers: r.vers,
            }),
            vers: m.vers,
            writes: chunks
                .map(|c| {
                    c.writes
                        .iter()
                        .map(|w| w.iter().map(JsonSegment::of).collect())
                        .collect()
                })
                .unwrap_or_default(),
            xid: m.xid.map(|x| format!("0x{x:08x}")),
        };
        let text = serde_json::to_string(&line).unwrap_or_default();
        escape_json_text(&text).into_owned()
    }
}

/// One message as a JSON line, serialised directly (no `serde_json::Value` tree built per
/// line: on a large capture that was most of the time spent writing JSON). The fields are in
/// alphabetical order, the order a `Value` object (a sorted map) printed them in, so each line
/// is byte for byte what it was.
#[derive(serde::Serialize)]
struct JsonLine<'a> {
    call_frame: Option<u32>,
    chunk_bytes: u64,
    conn: Option<usize>,
    credits: Option<u32>,
    dir: Option<crate::model::Role>,
    error: &'a Option<String>,
    first_frame: u32,
    frame: u32,
    latency_us: Option<u64>,
    nfs: Option<JsonNfs<'a>>,
    note: &'a Option<String>,
    #[serde(rename = "proc")]
    proc_: Option<&'static str>,
    reads: Vec<JsonRead>,
    repeat_of: Option<u32>,
    reply: Option<Vec<JsonSegment>>,
    rpc: Option<JsonRpc<'a>>,
    vers: Option<u32>,
    writes: Vec<Vec<JsonSegment>>,
    xid: Option<String>,
}

#[derive(serde::Serialize)]
struct JsonNfs<'a> {
    detail: &'a Option<String>,
    #[serde(rename = "proc")]
    proc_: &'a str,
    program: &'static str,
    status: &'a Option<String>,
}

#[derive(serde::Serialize)]
struct JsonRpc<'a> {
    #[serde(rename = "proc")]
    proc_: Option<u32>,
    prog: Option<u32>,
    status: &'a Option<String>,
    #[serde(rename = "type")]
    kind: &'static str,
    vers: Option<u32>,
}

#[derive(serde::Serialize)]
struct JsonRead {
    handle: u32,
    length: u32,
    offset: u64,
    position: u32,
}

#[derive(serde::Serialize)]
struct JsonSegment {
    handle: u32,
    length: u32,
    offset: u64,
}

impl JsonSegment {
    fn of(s: &Segment) -> Self {
        JsonSegment {
            handle: s.handle,
            length: s.length,
            offset: s.offset,
        }
    }
}

/// Replace the number of every `xN` / `hN` symbol by `#`, so that one extra or missing Call
/// does not renumber (and so mark as changed) every later line.
fn mask_symbols(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if boundary && (c == b'x' || c == b'h') {
            let digits = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let end = i + 1 + digits;
            let ends_word = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
            if digits > 0 && ends_word {
                out.push(c as char);
                out.push('#');
                i = end;
                continue;
            }
        }
        out.push(c as char);
        i += 1;
    }
    out
}

/// Distinct credit values per role (`C`/`S`) in a normalised trace, for the diff summary.
fn credits_by_role(text: &str) -> [std::collections::BTreeSet<u32>; 2] {
    let mut out = [
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    ];
    for line in text.lines() {
        let mut words = line.split(' ');
        let role = match words.nth(1) {
            Some("C") => 0,
            Some("S") => 1,
            _ => continue,
        };
        for w in words {
            if let Some(v) = w.strip_prefix("cr=").and_then(|v| v.parse().ok()) {
                out[role].insert(v);
            }
        }
    }
    out
}

/// Unified diff of two normalised traces; `None` when they are identical. Lines are matched with
/// xid and handle numbers masked, so the hunks show real differences (a missing Call, a changed
/// credit grant, a reordered Reply) rather than renumbering; a summary of credit grants leads.
pub fn diff(a_name: &str, a: &str, b_name: &str, b: &str) -> Option<String> {
    diff_until(a_name, a, b_name, b, None)
}

/// Sort key of a trace line inside a stretch between connection-management lines: messages by
/// XID (`x<N>`), then data movements by handle (`h<N>+off`), client before server, then as seen.
fn order_key(line: &str) -> (u8, u64, u8) {
    let words: Vec<&str> = line.split(' ').take(4).collect();
    let direction = u8::from(words.get(1) == Some(&"S"));
    let number = |word: Option<&&str>, prefix: char| {
        word.and_then(|w| w.strip_prefix(prefix))
            .map(|w| w.split('+').next().unwrap_or(""))
            .and_then(|n| n.parse::<u64>().ok())
    };
    if words.get(2) == Some(&"CM_RTU") {
        // The RTU's MAD can reach the capture after the first call it enabled.
        (0, 0, 0)
    } else if let Some(xid) = number(words.get(3), 'x') {
        (0, xid, direction)
    } else if let Some(handle) = number(words.get(3), 'h') {
        (1, handle, direction)
    } else {
        (2, 0, direction)
    }
}

/// The trace lines in an order that does not depend on timing: concurrent calls and replies
/// (over-credit's 65 MKDIRs, burst's duplicates, two Read-chunk pulls) interleave differently
/// from run to run while the exchange is the same. Connection-management lines (`CM_*`, except
/// the RTU, which leads its stretch) stay in place; the lines between two of them are ordered by
/// [`order_key`] (stable). Every line is
/// kept, so a missing reply, an extra execution's status or a lost `DUP_REPLY` still shows —
/// except a CM line repeating the one just before it (a CM retry, kept once).
pub fn canonical_order<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let is_cm = |l: &str| {
        l.split(' ')
            .nth(2)
            .is_some_and(|w| w.starts_with("CM_") && w != "CM_RTU")
    };
    let mut out = Vec::with_capacity(lines.len());
    let mut stretch: Vec<&str> = Vec::new();
    for line in lines {
        if is_cm(line) {
            // The same CM message again, right after itself, is the CM retrying a MAD whose
            // answer was lost or late (its own transport recovery, as an RC retransmission is
            // the RC's): which side's retry timer fires first is timing (after a lost REP, our
            // REQ's or the server's REP's, both about 4 s), so the normal form keeps one.
            if stretch.is_empty() && out.last() == Some(line) {
                continue;
            }
            stretch.sort_by_key(|l| order_key(l));
            out.append(&mut stretch);
            out.push(*line);
        } else {
            stretch.push(line);
        }
    }
    stretch.sort_by_key(|l| order_key(l));
    out.append(&mut stretch);
    out
}

/// First line of the note a diff carries when its deadline passed.
pub const DEADLINE_NOTE: &str = "# diff deadline reached";

/// Time the line matching of a diff is allowed per line of the two traces, beyond a floor: the
/// deadline grows with the input, so the whole diff stays linear in it.
pub const DIFF_TIME_PER_LINE: Duration = Duration::from_micros(20);

/// The time to allow the line matching of a diff of `lines` lines in all: `floor` plus
/// [`DIFF_TIME_PER_LINE`] per line.
pub fn diff_time_allowed(lines: usize, floor: Duration) -> Duration {
    floor
        .saturating_add(DIFF_TIME_PER_LINE.saturating_mul(u32::try_from(lines).unwrap_or(u32::MAX)))
}

/// [`diff`] with a deadline for the line matching (Myers' algorithm is O((N+M)·D): two long
/// traces that differ everywhere take minutes). Past the deadline the matching stops refining and
/// what is left shows as whole removed and added blocks, and the diff says so ([`DEADLINE_NOTE`]).
/// The library reads no clock unless a deadline is given.
pub fn diff_until(
    a_name: &str,
    a: &str,
    b_name: &str,
    b: &str,
    deadline: Option<Instant>,
) -> Option<String> {
    if a == b {
        return None;
    }
    let a_lines: Vec<&str> = a.lines().collect();
    let b_lines: Vec<&str> = b.lines().collect();
    let mut out = format!("--- {a_name}\n+++ {b_name}\n");
    let (ca, cb) = (credits_by_role(a), credits_by_role(b));
    let mut masked_roles = Vec::new();
    for (i, role) in ["C", "S"].iter().enumerate() {
        if ca[i] != cb[i] {
            // Summarised once here; masked below so it does not mark every line as changed.
            let _ = writeln!(
                out,
                "# {role} credits: {:?} -> {:?} (not repeated per line; context lines show the first file)",
                ca[i], cb[i]
            );
            masked_roles.push(*role);
        }
    }
    let mask = |l: &&str| {
        let masked = mask_symbols(l);
        if masked_roles.iter().any(|r| l.split(' ').nth(1) == Some(r)) {
            masked
                .split(' ')
                .map(|w| if w.starts_with("cr=") { "cr=#" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            masked
        }
    };
    let a_masked: Vec<String> = a_lines.iter().map(mask).collect();
    let b_masked: Vec<String> = b_lines.iter().map(mask).collect();
    if a_masked == b_masked {
        out.push_str("# same messages; only xid/handle numbering differs\n");
        return Some(out);
    }
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &a_masked,
        &b_masked,
        deadline,
    );
    if deadline.is_some_and(|d| Instant::now() >= d) {
        let _ = writeln!(
            out,
            "{DEADLINE_NOTE}: the lines not matched by then are shown as whole removed and \
             added blocks (a coarser diff; the traces differ either way)"
        );
    }
    for group in similar::group_diff_ops(ops, 2) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            out,
            "@@ -{},{} +{},{} @@",
            old.start + 1,
            old.len(),
            new.start + 1,
            new.len()
        );
        for op in &group {
            let (tag, old, new) = op.as_tag_tuple();
            match tag {
                similar::DiffTag::Equal => {
                    for l in &a_lines[old] {
                        let _ = writeln!(out, " {l}");
                    }
                }
                similar::DiffTag::Delete | similar::DiffTag::Insert | similar::DiffTag::Replace => {
                    for l in &a_lines[old] {
                        let _ = writeln!(out, "-{l}");
                    }
                    for l in &b_lines[new] {
                        let _ = writeln!(out, "+{l}");
                    }
                }
            }
        }
    }
    Some(out)
}

/// [`diff`] of two traces' lines at one level; when they differ, what was not compared (the
/// transport counts, an incomplete capture) follows as `# not compared:` lines for context.
pub fn diff_rendered(a_name: &str, a: &Rendered, b_name: &str, b: &Rendered) -> Option<String> {
    diff_rendered_until(a_name, a, b_name, b, None)
}

/// [`diff_rendered`] with a deadline for the line matching (see [`diff_until`]).
pub fn diff_rendered_until(
    a_name: &str,
    a: &Rendered,
    b_name: &str,
    b: &Rendered,
    deadline: Option<Instant>,
) -> Option<String> {
    let mut out = diff_until(a_name, &a.lines, b_name, &b.lines, deadline)?;
    if a.transport != b.transport {
        let _ = writeln!(
            out,
            "# not compared: {a_name}: {TRANSPORT_PREFIX}{}",
            a.transport
        );
        let _ = writeln!(
            out,
            "# not compared: {b_name}: {TRANSPORT_PREFIX}{}",
            b.transport
        );
    }
    for (name, r) in [(a_name, a), (b_name, b)] {
        if !r.capture.is_complete() {
            let _ = writeln!(out, "# not compared: {name}: {CAPTURE_PREFIX}{}", r.capture);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn run_prefixes_are_masked_and_nothing_else() {
        assert_eq!(
            mask_run_prefixes("LOOKUP call name=rig1025x0aa058af-changed-args-same-xid-b"),
            "LOOKUP call name=rig<run>-changed-args-same-xid-b"
        );
        assert_eq!(
            mask_run_prefixes("rig serve rig12 rigx rig1x123"),
            "rig serve rig12 rigx rig1x123"
        );
        assert_eq!(mask_run_prefixes("rig7x0123456789"), "rig7x0123456789");
    }

    use super::*;

    #[test]
    fn masks_only_whole_symbols() {
        assert_eq!(
            mask_symbols("c2 S RDMA_MSG x12 cr=64 write=[[h3:18]] h4+0 xid=0x1 hello"),
            "c2 S RDMA_MSG x# cr=64 write=[[h#:18]] h#+0 xid=0x1 hello"
        );
    }

    #[test]
    fn diff_reports_real_change_not_renumbering() {
        let a = "c1 C RDMA_MSG x1 cr=128 NFS3 LOOKUP call\nc1 C RDMA_MSG x2 cr=128 NFS3 GETATTR call\nc1 S RDMA_MSG x2 cr=64 NFS3 GETATTR reply NFS3_OK\n";
        let b = "c1 C RDMA_MSG x1 cr=128 NFS3 GETATTR call\nc1 S RDMA_MSG x1 cr=64 NFS3 GETATTR reply NFS3_OK\n";
        let d = diff("a", a, "b", b).unwrap();
        let changed: Vec<&str> = d
            .lines()
            .filter(|l| l.starts_with('-') || l.starts_with('+'))
            .filter(|l| !l.starts_with("---") && !l.starts_with("+++"))
            .collect();
        assert_eq!(changed, ["-c1 C RDMA_MSG x1 cr=128 NFS3 LOOKUP call"]);
        assert_eq!(diff("a", a, "b", a), None);
    }

    #[test]
    fn diff_summarises_credit_changes() {
        let a = "c1 S RDMA_MSG x1 cr=64 NFS3 NULL reply\n";
        let b = "c1 S RDMA_MSG x1 cr=128 NFS3 NULL reply\n";
        let d = diff("a", a, "b", b).unwrap();
        assert!(d.contains("# S credits: {64} -> {128}"), "{d}");
        assert!(!d.contains("@@"), "credit-only change has no hunks: {d}");
    }
}

#[cfg(test)]
mod rig_text_tests {
    #[test]
    fn a_cm_retry_is_kept_once_and_the_stretches_are_ordered() {
        let lines = [
            "c1 C CM_DREQ",
            "c1 C CM_DREQ",
            "c1 S CM_DREP",
            "c2 C CM_REQ port=20049",
            "c2 C CM_REQ port=20049",
            "c2 S CM_REP",
            "c2 C RDMA_MSG x5 cr=8 NFS3 REMOVE call",
            "c2 C CM_RTU",
            "c2 S RDMA_MSG x5 cr=64 NFS3 REMOVE reply NFS3_OK",
            "c2 C CM_DREQ",
        ];
        assert_eq!(
            super::canonical_order(&lines),
            [
                "c1 C CM_DREQ",
                "c1 S CM_DREP",
                "c2 C CM_REQ port=20049",
                "c2 S CM_REP",
                "c2 C CM_RTU",
                "c2 C RDMA_MSG x5 cr=8 NFS3 REMOVE call",
                "c2 S RDMA_MSG x5 cr=64 NFS3 REMOVE reply NFS3_OK",
                "c2 C CM_DREQ",
            ]
        );
        // Not back to back (calls between them): both kept.
        let apart = [
            "c1 C CM_DREQ",
            "c1 C RDMA_MSG x1 cr=8 NFS3 NULL call",
            "c1 C CM_DREQ",
        ];
        assert_eq!(super::canonical_order(&apart).len(), 3);
    }

    use super::normalise_rig_text;

    #[test]
    fn a_relay_mark_loses_its_per_run_numbers_and_keeps_its_meaning() {
        assert_eq!(
            normalise_rig_text(
                "held 4 ms by the rig (rule ack-hold): RC ACK PSN 0x00001a QP 0x000022"
            ),
            "held <t> by the rig (rule ack-hold): RC ACK PSN <n> QP <n>"
        );
        assert_eq!(
            normalise_rig_text(
                "released by the relay's limit (held 30 s; rule r2): SEND Only PSN 0x1 QP 0x2 (reply xid 0x5a000003)"
            ),
            "released by the relay's limit (held <t>; rule r2): SEND Only PSN <n> QP <n> (reply xid <n>)"
        );
        assert_eq!(
            normalise_rig_text("duplicated by the rig (rule 7): DREQ"),
            "duplicated by the rig (rule 7): DREQ"
        );
    }
}
