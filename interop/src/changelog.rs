//! Debian changelogs of the kernel packages: "is this fixed, in which Debian version, with which CVE?".
//!
//! Where the text is (checked 2026-12 on deb.debian.org): the binary kernel package carries the
//! whole `linux` changelog, trimmed to 2019 onwards. For 6.1 and 6.12 that is
//! `/usr/share/doc/linux-image-<abi>-amd64/changelog.gz` in `linux-image-<abi>-amd64` (built by
//! `linux-signed-amd64`: its top entry is `linux-signed-amd64 (6.1.192+3)` with "Sign kernel
//! from linux 6.1.192-3" followed by that `linux` entry's text, then the `linux` entries); for
//! 7.x the image, `linux-binary-*` and `linux-modules-*` packages only link their doc directory
//! to `linux-base-<abi>`, whose `changelog.Debian.gz` (a 0.5 MB .deb) is the `linux` changelog.
//! `linux-source-<x>` (140-165 MB) carries the same text; `linux_<v>.debian.tar.xz` (2 MB) has
//! `debian/changelog` with the same entries, but the mirror's pool lacks the newest ones
//! (6.1.190-1 and later, 6.12.117-1, 7.2.12-1 and later answered 404).
//!
//! [`Changelog::parse`] reads the text (bounded, typed errors, no panics), [`Changelog::first_version_listing`]
//! answers "since when", and [`compare_debian_versions`] answers "is version X at or after it".
//! [`read_changelog_file`] gets the text out of a `.deb`, a `.debian.tar.xz`, a `.gz` or a plain file.

use std::cmp::Ordering;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Largest changelog accepted. The real ones are 1.0 MB (7.2.13), 3.7 MB (6.1.192-3) and
/// 4.3 MB (6.12.118-1), growing about 2 MB a year; kept below what
/// [`crate::process::output_with_timeout`] captures, so that an oversized one is seen as
/// oversized instead of silently cut.
pub const MAX_CHANGELOG_BYTES: usize = 12 << 20;
const _: () = assert!(MAX_CHANGELOG_BYTES < crate::process::MAX_CAPTURED_OUTPUT);

/// Longest line accepted: the real changelogs stay under 120 bytes; anything far longer is not
/// a changelog.
pub const MAX_LINE_BYTES: usize = 4096;

/// How long a `dpkg-deb`/`tar`/`gzip` run may take: unpacking a 160 MB `linux-source` .deb's
/// data member takes about 5 s on the 2-core host.
const TOOL_TIMEOUT: Duration = Duration::from_secs(180);

/// Why a changelog cannot be read or parsed. Line numbers are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangelogError {
    /// More than [`MAX_CHANGELOG_BYTES`]; `bytes` is what was seen (reading stops past the
    /// limit, so it is a lower bound).
    TooLarge { bytes: usize, limit: usize },
    /// A line longer than [`MAX_LINE_BYTES`].
    LineTooLong { line: usize, bytes: usize },
    /// Not a `package (version) distribution; urgency=...` line where an entry must start.
    BadHeader { line: usize, text: String },
    /// A header whose version has characters no Debian version has.
    BadVersion { line: usize, version: String },
    /// An entry without its ` -- maintainer  date` line before the next entry or the end.
    MissingTrailer { line: usize, version: String },
    /// A ` -- ` line that is not ` -- name <email>  date`.
    BadTrailer { line: usize, text: String },
    /// No entry at all.
    NoEntries,
    /// A file name [`read_changelog_file`] does not know how to open.
    UnsupportedFile { path: PathBuf },
    /// A .deb without `/usr/share/doc/<pkg>/changelog(.Debian).gz`.
    NoChangelogInDeb { path: PathBuf },
    /// A .deb whose `/usr/share/doc/<dir>` is a symlink to another package's (the 7.x
    /// `linux-image-*`, `linux-binary-*`, `linux-modules-*` → `linux-base-*`): read that one.
    ChangelogInOtherPackage {
        path: PathBuf,
        doc_dir: String,
        target: String,
    },
    /// A helper (`dpkg-deb`, `tar`, `gzip`) failed, timed out or could not start.
    Tool { command: String, detail: String },
    /// Reading a plain file failed.
    Io { path: PathBuf, detail: String },
}

impl fmt::Display for ChangelogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChangelogError::TooLarge { bytes, limit } => {
                write!(f, "changelog of at least {bytes} bytes, over the limit of {limit}")
            }
            ChangelogError::LineTooLong { line, bytes } => write!(
                f,
                "line {line}: {bytes} bytes, over the limit of {MAX_LINE_BYTES}"
            ),
            ChangelogError::BadHeader { line, text } => {
                write!(f, "line {line}: not an entry header: {text:?}")
            }
            ChangelogError::BadVersion { line, version } => {
                write!(f, "line {line}: bad version {version:?}")
            }
            ChangelogError::MissingTrailer { line, version } => write!(
                f,
                "line {line}: entry {version} has no ` -- maintainer  date` line"
            ),
            ChangelogError::BadTrailer { line, text } => {
                write!(f, "line {line}: bad trailer {text:?}")
            }
            ChangelogError::NoEntries => f.write_str("no changelog entries"),
            ChangelogError::UnsupportedFile { path } => write!(
                f,
                "{}: not a .deb, .debian.tar.xz, .gz or plain changelog",
                path.display()
            ),
            ChangelogError::NoChangelogInDeb { path } => write!(
                f,
                "{}: no /usr/share/doc/*/changelog(.Debian).gz",
                path.display()
            ),
            ChangelogError::ChangelogInOtherPackage {
                path,
                doc_dir,
                target,
            } => write!(
                f,
                "{}: /usr/share/doc/{doc_dir} links to {target}: the changelog is in package {target}",
                path.display()
            ),
            ChangelogError::Tool { command, detail } => write!(f, "{command}: {detail}"),
            ChangelogError::Io { path, detail } => write!(f, "{}: {detail}", path.display()),
        }
    }
}

impl std::error::Error for ChangelogError {}

/// One entry: header, body, trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Source package, e.g. `linux` or `linux-signed-amd64`.
    pub package: String,
    /// The entry's version as written, e.g. `6.1.192-1`, `6.1.192+3`.
    pub version: String,
    /// The distribution field as written, e.g. `bookworm-security`, `unstable`.
    pub distribution: String,
    pub urgency: Option<String>,
    /// The lines between header and trailer, verbatim, surrounding blank lines dropped.
    pub body: Vec<String>,
    pub maintainer: String,
    /// The trailer's date as written (RFC 2822), e.g. `Sat, 14 Nov 2026 11:29:58 +0100`.
    pub date: String,
    /// The header's line number.
    pub line: usize,
}

impl Entry {
    /// The `linux` version this entry stands for, which is the binary packages' version. The
    /// entry's own, except for a signing wrapper (`linux-signed-<arch>`), whose top entry says
    /// "Sign kernel from linux 6.1.192-3" and then carries linux 6.1.192-3's changes under its
    /// own version 6.1.192+3 (a version no binary has).
    pub fn linux_version(&self) -> &str {
        if self.package.starts_with("linux-signed-") {
            let signed = self.body.iter().find_map(|line| {
                let rest = line
                    .trim_start()
                    .strip_prefix("* Sign kernel from linux ")?;
                let version = rest.trim();
                is_version_syntax(version).then_some(version)
            });
            if let Some(version) = signed {
                return version;
            }
        }
        &self.version
    }
}

/// A change as one entry lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// The `linux` version that first ships it ([`Entry::linux_version`]).
    pub version: String,
    /// The entry's own package and version (`linux-signed-amd64`, `6.1.192+3` for a top entry).
    pub entry_package: String,
    pub entry_version: String,
    pub distribution: String,
    pub date: String,
    /// The list item: its first line and continuation lines joined by single spaces, bullet
    /// kept, e.g. `- svcrdma: Validate Read chunk positions before reconstruction (CVE-2026-89526)`.
    pub line: String,
    /// CVE ids on the item (its line or continuation lines), in order.
    pub cves: Vec<String>,
    /// CVE ids of the items it is nested in: `- [arm64] Mitigate TLBI errata (CVE-2025-10263):`
    /// over `+ errata: ...` lines names the CVE once for all of them.
    pub enclosing_cves: Vec<String>,
    /// The upstream stable release whose shortlog lists it (`6.1.191` from the
    /// `https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.191` line above it); `None`
    /// for Debian's own patches. One Debian entry often covers several upstream releases.
    pub upstream_stable: Option<String>,
    /// The item is a `Revert "..."` of the change.
    pub is_revert: bool,
}

impl Fix {
    /// Whether a kernel package of `version` has it: at or after [`Fix::version`] in Debian
    /// order (a bookworm backport `6.12.118-1~deb12u1` counts as after `6.12.111-1`). Says
    /// nothing about reverts: see [`Changelog::listings`].
    pub fn is_in(&self, version: &str) -> bool {
        compare_debian_versions(version, &self.version) != Ordering::Less
    }
}

/// A parsed changelog, newest entry first as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changelog {
    pub entries: Vec<Entry>,
}

/// One list item of an entry body, with what a query reports about it.
struct Item {
    text: String,
    cves: Vec<String>,
    enclosing_cves: Vec<String>,
    upstream_stable: Option<String>,
}

impl Changelog {
    /// Parse changelog text (deb-changelog(5)). Comment lines (`#` in column 0, which is how a
    /// trimmed changelog ends) and blank lines between entries are skipped; parsing stops at an
    /// `Old Changelog:` or `Local variables:` line, as dpkg does.
    pub fn parse(text: &str) -> Result<Self, ChangelogError> {
        if text.len() > MAX_CHANGELOG_BYTES {
            return Err(ChangelogError::TooLarge {
                bytes: text.len(),
                limit: MAX_CHANGELOG_BYTES,
            });
        }
        let mut entries = Vec::new();
        let mut open: Option<Entry> = None;
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            if raw.len() > MAX_LINE_BYTES {
                return Err(ChangelogError::LineTooLong {
                    line: number,
                    bytes: raw.len(),
                });
            }
            let line = raw.trim_end();
            match open.as_mut() {
                None => {
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    if line.starts_with("Old Changelog:") || line.starts_with("Local variables:") {
                        break;
                    }
                    open = Some(parse_header(line, number)?);
                }
                Some(entry) => {
                    if let Some(trailer) = line.strip_prefix(" -- ") {
                        let (maintainer, date) =
                            parse_trailer(trailer).ok_or_else(|| ChangelogError::BadTrailer {
                                line: number,
                                text: line.to_owned(),
                            })?;
                        entry.maintainer = maintainer.to_owned();
                        entry.date = date.to_owned();
                        while entry.body.last().is_some_and(|l| l.is_empty()) {
                            entry.body.pop();
                        }
                        if let Some(done) = open.take() {
                            entries.push(done);
                        }
                    } else if !line.starts_with([' ', '\t'])
                        && !line.is_empty()
                        && parse_header(line, number).is_ok()
                    {
                        // The next entry began: this one was cut short.
                        return Err(ChangelogError::MissingTrailer {
                            line: entry.line,
                            version: entry.version.clone(),
                        });
                    } else if !(entry.body.is_empty() && line.is_empty()) {
                        entry.body.push(line.to_owned());
                    }
                }
            }
        }
        if let Some(entry) = open {
            return Err(ChangelogError::MissingTrailer {
                line: entry.line,
                version: entry.version,
            });
        }
        if entries.is_empty() {
            return Err(ChangelogError::NoEntries);
        }
        Ok(Changelog { entries })
    }

    /// Every item, in every entry, whose text contains `needle` (case-insensitive: a commit
    /// subject or a CVE id), newest entry first. Empty for an empty needle.
    pub fn listings(&self, needle: &str) -> Vec<Fix> {
        let needle = needle.trim().to_lowercase();
        if needle.is_empty() {
            return Vec::new();
        }
        let mut found = Vec::new();
        for entry in &self.entries {
            for item in items(&entry.body) {
                if item.text.to_lowercase().contains(&needle) {
                    let subject = item.text.get(2..).unwrap_or_default();
                    found.push(Fix {
                        version: entry.linux_version().to_owned(),
                        entry_package: entry.package.clone(),
                        entry_version: entry.version.clone(),
                        distribution: entry.distribution.clone(),
                        date: entry.date.clone(),
                        is_revert: subject.starts_with("Revert \""),
                        line: item.text,
                        cves: item.cves,
                        enclosing_cves: item.enclosing_cves,
                        upstream_stable: item.upstream_stable,
                    });
                }
            }
        }
        found
    }

    /// The oldest entry (changelogs are newest first) listing `needle` other than as a revert:
    /// the first version that has the change. `None` when no entry lists it.
    pub fn first_version_listing(&self, needle: &str) -> Option<Fix> {
        self.listings(needle)
            .into_iter()
            .rev()
            .find(|fix| !fix.is_revert)
    }
}

/// `package (version) distribution(s); key=value, ...`
fn parse_header(line: &str, number: usize) -> Result<Entry, ChangelogError> {
    let bad = || ChangelogError::BadHeader {
        line: number,
        text: line.to_owned(),
    };
    let (package, rest) = line.split_once(" (").ok_or_else(bad)?;
    let package_ok = package.len() >= 2
        && package.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && package
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    if !package_ok {
        return Err(bad());
    }
    let (version, rest) = rest.split_once(')').ok_or_else(bad)?;
    if !is_version_syntax(version) {
        return Err(ChangelogError::BadVersion {
            line: number,
            version: version.to_owned(),
        });
    }
    let (distribution, fields) = rest.split_once(';').ok_or_else(bad)?;
    let distribution = distribution
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if distribution.is_empty() {
        return Err(bad());
    }
    let urgency = fields.split(',').find_map(|field| {
        let (key, value) = field.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("urgency")
            .then(|| value.trim().to_owned())
    });
    Ok(Entry {
        package: package.to_owned(),
        version: version.to_owned(),
        distribution,
        urgency,
        body: Vec::new(),
        maintainer: String::new(),
        date: String::new(),
        line: number,
    })
}

/// `name <email>  date` (after ` -- `) → (maintainer, date).
fn parse_trailer(trailer: &str) -> Option<(&str, &str)> {
    let close = trailer.find('>')?;
    let maintainer = trailer.get(..=close)?;
    let date = trailer.get(close + 1..)?.strip_prefix("  ")?.trim();
    (maintainer.contains('<') && !date.is_empty()).then_some((maintainer.trim(), date))
}

/// Characters a Debian version may have, starting with a digit (policy §5.6.12). Also the
/// first gate against a header that is not one.
fn is_version_syntax(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 128
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+~:-".contains(c))
}

/// The list items of a body: a `*`, `-` or `+` bullet line with the deeper-indented non-bullet
/// lines after it (Debian wraps long subjects and puts `(CVE-...)` on the next line), with the
/// upstream release heading and the CVE ids of the enclosing items.
fn items(body: &[String]) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    // The item the next continuation line extends, and its bullet's column.
    let mut current: Option<(Item, usize)> = None;
    // Enclosing items: (bullet column, CVE ids).
    let mut stack: Vec<(usize, Vec<String>)> = Vec::new();
    let mut upstream: Option<String> = None;
    for line in body {
        let content = line.trim_start();
        let indent = line.len() - content.len();
        let is_bullet = ["* ", "- ", "+ "].iter().any(|b| content.starts_with(b));
        if let Some(version) = stable_changelog_url(content) {
            upstream = Some(version.to_owned());
        }
        let continues = !is_bullet
            && !content.is_empty()
            && !content.starts_with("http")
            && current.as_ref().is_some_and(|(_, column)| indent > *column);
        if continues {
            if let Some((item, _)) = current.as_mut() {
                item.text.push(' ');
                item.text.push_str(content);
            }
            continue;
        }
        if let Some((mut item, column)) = current.take() {
            item.cves = cve_ids(&item.text);
            stack.push((column, item.cves.clone()));
            items.push(item);
        }
        if content.is_empty() || content.starts_with("[ ") {
            // A blank line or a `[ Name ]` block ends every open list.
            stack.clear();
            if content.starts_with("[ ") {
                upstream = None;
            }
            continue;
        }
        if !is_bullet {
            continue;
        }
        if indent <= 2 {
            // A new top-level change: the upstream shortlog (if any) is over.
            upstream = None;
        }
        stack.retain(|(column, _)| *column < indent);
        let mut enclosing_cves: Vec<String> = Vec::new();
        for (_, cves) in &stack {
            for cve in cves {
                if !enclosing_cves.contains(cve) {
                    enclosing_cves.push(cve.clone());
                }
            }
        }
        current = Some((
            Item {
                text: content.to_owned(),
                cves: Vec::new(),
                enclosing_cves,
                upstream_stable: upstream.clone(),
            },
            indent,
        ));
    }
    if let Some((mut item, _)) = current {
        item.cves = cve_ids(&item.text);
        items.push(item);
    }
    items
}

/// `6.1.191` from `https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.191`.
fn stable_changelog_url(content: &str) -> Option<&str> {
    let rest = content.strip_prefix("https://www.kernel.org/pub/linux/kernel/")?;
    let (_, version) = rest.rsplit_once("/ChangeLog-")?;
    is_version_syntax(version).then_some(version)
}

/// `CVE-YYYY-NNNN...` ids in `text`, in order, without repeats.
fn cve_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("CVE-") {
        let tail = rest.get(at + 4..).unwrap_or_default();
        let year_len = tail.bytes().take_while(u8::is_ascii_digit).count();
        let after_year = tail.get(year_len..).unwrap_or_default();
        let number_len = after_year
            .strip_prefix('-')
            .map_or(0, |n| n.bytes().take_while(u8::is_ascii_digit).count());
        if year_len == 4 && number_len >= 4 {
            let id = format!(
                "CVE-{}-{}",
                tail.get(..4).unwrap_or_default(),
                after_year.get(1..=number_len).unwrap_or_default()
            );
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        rest = tail;
    }
    ids
}

/// Debian version order (policy §5.6.12, dpkg's `verrevcmp`): epoch numerically, then upstream
/// version, then revision, each compared as alternating non-digit runs (letters before other
/// characters, `~` before everything, even the end) and digit runs (numerically, of any
/// length). A version without `-` has an empty revision, which equals `0`. Total and
/// panic-free on any input: an epoch that is not all digits is taken as part of the upstream
/// version (dpkg rejects such versions).
pub fn compare_debian_versions(a: &str, b: &str) -> Ordering {
    let (epoch_a, upstream_a, revision_a) = split_version(a);
    let (epoch_b, upstream_b, revision_b) = split_version(b);
    compare_digits(epoch_a.as_bytes(), epoch_b.as_bytes())
        .then_with(|| verrevcmp(upstream_a.as_bytes(), upstream_b.as_bytes()))
        .then_with(|| verrevcmp(revision_a.as_bytes(), revision_b.as_bytes()))
}

/// (epoch, upstream, revision): the epoch before the first `:`, the revision after the last `-`.
fn split_version(version: &str) -> (&str, &str, &str) {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) => {
            (epoch, rest)
        }
        _ => ("0", version),
    };
    let (upstream, revision) = rest.rsplit_once('-').unwrap_or((rest, ""));
    (epoch, upstream, revision)
}

/// Two digit strings as numbers, without parsing (no overflow): leading zeros off, then the
/// longer is larger, then byte order.
fn compare_digits(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |s: &[u8]| -> usize { s.iter().take_while(|&&c| c == b'0').count() };
    let a = a.get(strip(a)..).unwrap_or_default();
    let b = b.get(strip(b)..).unwrap_or_default();
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// dpkg's character weight in a non-digit run: `~` lowest, then the end of the string (and a
/// digit, which ends the run), then letters, then everything else.
fn order(c: Option<&u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(*c),
        Some(c) => i32::from(*c) + 256,
    }
}

/// dpkg's `verrevcmp` on one part (upstream version or revision).
fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while a.get(i).is_some_and(|c| !c.is_ascii_digit())
            || b.get(j).is_some_and(|c| !c.is_ascii_digit())
        {
            let (ac, bc) = (order(a.get(i)), order(b.get(j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        let digits = |s: &[u8], from: usize| -> usize {
            s.get(from..).map_or(0, |rest| {
                rest.iter().take_while(|c| c.is_ascii_digit()).count()
            })
        };
        let (na, nb) = (digits(a, i), digits(b, j));
        let run_a = a.get(i..i + na).unwrap_or_default();
        let run_b = b.get(j..j + nb).unwrap_or_default();
        match compare_digits(run_a, run_b) {
            Ordering::Equal => {}
            other => return other,
        }
        i += na;
        j += nb;
    }
    Ordering::Equal
}

/// The changelog text in the file at `path`, at most [`MAX_CHANGELOG_BYTES`]:
/// - `*.deb`: `/usr/share/doc/<pkg>/changelog.Debian.gz` (or `changelog.gz`, the name in the
///   signed kernel images), through `dpkg-deb`, `tar` and `gzip`; a doc directory that is only a
///   symlink gives [`ChangelogError::ChangelogInOtherPackage`] naming the package to read;
/// - `*.debian.tar.xz`: its `debian/changelog`, through `tar`;
/// - `*.gz`: through `gzip`; anything else is read as text.
///
/// The helpers run in their own process group with a timeout ([`crate::process`]); invalid
/// UTF-8 is replaced, since only the ASCII structure matters here.
pub fn read_changelog_file(path: &Path) -> Result<String, ChangelogError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".deb") {
        read_from_deb(path)
    } else if name.ends_with(".debian.tar.xz") {
        let mut command = Command::new("tar");
        command
            .args(["-xJO", "-f"])
            .arg(path)
            .arg("debian/changelog");
        run_for_text("tar -xJO debian/changelog", command)
    } else if name.ends_with(".gz") {
        let mut command = Command::new("gzip");
        command.arg("-dc").arg("--").arg(path);
        run_for_text("gzip -dc", command)
    } else if name.is_empty() {
        Err(ChangelogError::UnsupportedFile {
            path: path.to_owned(),
        })
    } else {
        read_plain(path)
    }
}

/// [`read_changelog_file`] then [`Changelog::parse`].
pub fn parse_changelog_file(path: &Path) -> Result<Changelog, ChangelogError> {
    Changelog::parse(&read_changelog_file(path)?)
}

fn read_plain(path: &Path) -> Result<String, ChangelogError> {
    let io = |e: std::io::Error| ChangelogError::Io {
        path: path.to_owned(),
        detail: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    // One byte past the limit tells "at the limit" from "over it" without reading the rest.
    file.take(MAX_CHANGELOG_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    checked_text(bytes)
}

fn checked_text(bytes: Vec<u8>) -> Result<String, ChangelogError> {
    if bytes.len() > MAX_CHANGELOG_BYTES {
        return Err(ChangelogError::TooLarge {
            bytes: bytes.len(),
            limit: MAX_CHANGELOG_BYTES,
        });
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Run a helper; its stdout is the changelog.
fn run_for_text(label: &str, command: Command) -> Result<String, ChangelogError> {
    checked_text(run_tool(label, command)?)
}

fn run_tool(label: &str, command: Command) -> Result<Vec<u8>, ChangelogError> {
    let output =
        crate::process::output_with_timeout(label, command, TOOL_TIMEOUT).map_err(|e| {
            ChangelogError::Tool {
                command: label.to_owned(),
                detail: format!("{e:#}"),
            }
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let detail: String = stderr.trim().chars().take(500).collect();
        return Err(ChangelogError::Tool {
            command: label.to_owned(),
            detail: format!("{}: {detail}", output.status),
        });
    }
    Ok(output.stdout)
}

/// What a .deb's file list says about its changelog.
#[derive(Debug, PartialEq, Eq)]
enum DocEntry {
    /// A `changelog.Debian.gz`/`changelog.gz` member, as the archive names it (`./usr/...`).
    Changelog(String),
    /// `/usr/share/doc/<dir>` is a symlink to `target`.
    Link { dir: String, target: String },
}

/// Pick the changelog (or the doc symlink) out of `dpkg-deb -c` output. With several doc
/// directories, the one named after the package (`package`, from `<package>_<version>_...`)
/// wins, and `changelog.Debian.gz` beats `changelog.gz`.
fn doc_entry(listing: &str, package: &str) -> Option<DocEntry> {
    let mut changelogs: Vec<(bool, bool, String)> = Vec::new();
    let mut link = None;
    for line in listing.lines() {
        // `-rw-r--r-- root/root 1303468 2026-11-26 17:12 ./usr/share/doc/x/changelog.gz`
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(mode), Some(name)) = (fields.first(), fields.get(5)) else {
            continue;
        };
        let Some(rest) = name.strip_prefix("./usr/share/doc/") else {
            continue;
        };
        if mode.starts_with('-') {
            if let Some((dir, file)) = rest.split_once('/') {
                if file == "changelog.Debian.gz" || file == "changelog.gz" {
                    changelogs.push((
                        dir == package,
                        file == "changelog.Debian.gz",
                        (*name).to_owned(),
                    ));
                }
            }
        } else if mode.starts_with('l') && fields.get(6) == Some(&"->") && link.is_none() {
            let dir = rest.trim_end_matches('/');
            if let Some(target) = fields.get(7) {
                if !dir.is_empty() && !dir.contains('/') {
                    link = Some(DocEntry::Link {
                        dir: dir.to_owned(),
                        target: (*target).to_owned(),
                    });
                }
            }
        }
    }
    // Stable sort: among equals the first listed stays first.
    changelogs.sort_by_key(|(own, debian, _)| std::cmp::Reverse((*own, *debian)));
    changelogs
        .into_iter()
        .next()
        .map(|(_, _, name)| DocEntry::Changelog(name))
        .or(link)
}

fn read_from_deb(path: &Path) -> Result<String, ChangelogError> {
    let mut list = Command::new("dpkg-deb");
    list.arg("-c").arg("--").arg(path);
    let listing = run_tool("dpkg-deb -c", list)?;
    let package = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let package = package.split('_').next().unwrap_or_default();
    match doc_entry(&String::from_utf8_lossy(&listing), package) {
        None => Err(ChangelogError::NoChangelogInDeb {
            path: path.to_owned(),
        }),
        Some(DocEntry::Link { dir, target }) => Err(ChangelogError::ChangelogInOtherPackage {
            path: path.to_owned(),
            doc_dir: dir,
            target,
        }),
        Some(DocEntry::Changelog(member)) => {
            // A pipeline, so the data member (70-160 MB unpacked for a kernel) is streamed, never
            // stored; bash for pipefail, so a failing dpkg-deb or tar is not hidden behind
            // gzip. The path and member are arguments, not part of the script.
            let mut command = Command::new("bash");
            command
                .arg("-c")
                .arg(r#"set -o pipefail; dpkg-deb --fsys-tarfile "$1" | tar -xO -f - -- "$2" | gzip -dc"#)
                .arg("bash")
                .arg(path)
                .arg(&member);
            run_for_text("dpkg-deb --fsys-tarfile | tar -xO | gzip -dc", command)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINUX_61: &str =
        include_str!("../tests/data/changelog/linux-image-6.1.0-57-amd64_6.1.192-3.changelog");
    const LINUX_612: &str = include_str!(
        "../tests/data/changelog/linux-image-6.12.118+deb13-amd64_6.12.118-1.changelog"
    );
    const LINUX_72: &str =
        include_str!("../tests/data/changelog/linux-base-7.2.13+deb14-amd64_7.2.13-1.changelog");

    fn parsed(text: &str) -> Changelog {
        match Changelog::parse(text) {
            Ok(changelog) => changelog,
            Err(e) => panic!("fixture does not parse: {e}"),
        }
    }

    fn fix(changelog: &Changelog, needle: &str) -> Fix {
        changelog
            .first_version_listing(needle)
            .unwrap_or_else(|| panic!("{needle:?} not listed"))
    }

    #[test]
    fn the_fixtures_parse_into_their_entries() {
        let versions = |c: &Changelog| -> Vec<String> {
            c.entries.iter().map(|e| e.version.clone()).collect()
        };
        let linux_61 = parsed(LINUX_61);
        assert_eq!(
            versions(&linux_61),
            [
                "6.1.192+3",
                "6.1.192-2",
                "6.1.192-1",
                "6.1.190-1",
                "6.1.187-1",
                "6.1.180-1",
                "6.1.177-1",
                "6.1.176-1"
            ]
        );
        let top = &linux_61.entries[0];
        assert_eq!(top.package, "linux-signed-amd64");
        assert_eq!(top.linux_version(), "6.1.192-3");
        assert_eq!(top.distribution, "bookworm-security");
        assert_eq!(top.urgency.as_deref(), Some("high"));
        assert_eq!(top.maintainer, "Salvatore Bonaccorso <carnil@debian.org>");
        assert_eq!(top.date, "Thu, 26 Nov 2026 18:12:56 +0100");
        assert_eq!(
            top.body.first().map(String::as_str),
            Some("  * Sign kernel from linux 6.1.192-3")
        );
        assert_eq!(linux_61.entries[1].linux_version(), "6.1.192-2");

        let linux_612 = parsed(LINUX_612);
        assert_eq!(linux_612.entries.len(), 7);
        assert_eq!(linux_612.entries[0].linux_version(), "6.12.118-1");
        assert_eq!(
            linux_612.entries.last().map(|e| e.version.as_str()),
            Some("6.12.111-1")
        );

        let linux_72 = parsed(LINUX_72);
        assert_eq!(versions(&linux_72), ["7.2.13-1", "7.2.12-1"]);
        assert_eq!(linux_72.entries[0].distribution, "unstable");
        assert_eq!(linux_72.entries[0].urgency.as_deref(), Some("medium"));
    }

    #[test]
    fn the_61_svcrdma_read_chunk_fixes_are_first_in_6_1_192_1_and_6_1_190_1() {
        let changelog = parsed(LINUX_61);
        // The CVE id sits on the continuation line under the subject.
        let positions = fix(&changelog, "svcrdma: validate Read chunk positions");
        assert_eq!(positions.version, "6.1.192-1");
        assert_eq!(positions.entry_package, "linux");
        assert_eq!(positions.distribution, "bookworm-security");
        assert_eq!(positions.date, "Sat, 14 Nov 2026 11:29:58 +0100");
        assert_eq!(
            positions.line,
            "- svcrdma: Validate Read chunk positions before reconstruction (CVE-2026-89526)"
        );
        assert_eq!(positions.cves, ["CVE-2026-89526"]);
        assert!(positions.enclosing_cves.is_empty());
        assert_eq!(positions.upstream_stable.as_deref(), Some("6.1.191"));
        assert!(!positions.is_revert);
        // The same entry, found by its CVE id.
        assert_eq!(fix(&changelog, "cve-2026-89526"), positions);

        let budget = fix(
            &changelog,
            "svcrdma: Reject Read lists that exceed the page budget",
        );
        assert_eq!(budget.version, "6.1.192-1");
        assert_eq!(budget.cves, ["CVE-2026-89528"]);
        assert_eq!(budget.upstream_stable.as_deref(), Some("6.1.191"));

        let offset = fix(&changelog, "Fix offset arithmetic in read_chunk_range");
        assert_eq!(offset.version, "6.1.190-1");
        assert_eq!(offset.date, "Fri, 16 Oct 2026 23:46:12 +0200");
        assert_eq!(offset.cves, ["CVE-2026-89533"]);
        assert_eq!(offset.upstream_stable.as_deref(), Some("6.1.188"));

        // The findings' kernel (6.1.176) has none of them; the current one has all.
        for found in [&positions, &budget, &offset] {
            assert!(!found.is_in("6.1.176-1"), "{found:?}");
            assert!(found.is_in("6.1.192-3"), "{found:?}");
        }
        assert!(!positions.is_in("6.1.190-1"));
        assert!(offset.is_in("6.1.190-1"));
    }

    #[test]
    fn a_change_in_the_signed_top_entry_is_reported_under_the_linux_version() {
        let changelog = parsed(LINUX_61);
        let found = fix(&changelog, "preflight SEQUENCE replies");
        assert_eq!(found.version, "6.1.192-3");
        assert_eq!(found.entry_package, "linux-signed-amd64");
        assert_eq!(found.entry_version, "6.1.192+3");
        assert_eq!(found.cves, ["CVE-2026-99362"]);
        assert_eq!(found.upstream_stable, None);
        assert!(found.is_in("6.1.192-3"));
        assert!(!found.is_in("6.1.192-2"));
    }

    #[test]
    fn the_612_changelog_lists_the_same_fixes_without_their_cve_ids() {
        let changelog = parsed(LINUX_612);
        let positions = fix(&changelog, "svcrdma: Validate Read chunk positions");
        assert_eq!(positions.version, "6.12.111-1");
        assert_eq!(positions.distribution, "trixie-security");
        assert_eq!(positions.date, "Mon, 28 Sep 2026 14:18:50 +0200");
        assert!(positions.cves.is_empty());
        assert_eq!(positions.upstream_stable.as_deref(), Some("6.12.109"));
        assert_eq!(changelog.first_version_listing("CVE-2026-89526"), None);

        let offset = fix(&changelog, "read_chunk_range");
        assert_eq!(offset.version, "6.12.111-1");
        assert!(offset.cves.is_empty());

        let budget = fix(&changelog, "exceed the page budget");
        assert_eq!(budget.version, "6.12.115-1");
        assert_eq!(budget.date, "Sat, 31 Oct 2026 15:51:21 +0100");
        assert_eq!(budget.cves, ["CVE-2026-89528"]);
        assert_eq!(budget.upstream_stable.as_deref(), Some("6.12.114"));
        // The findings' kernel has both; a bookworm backport of 6.12.118 too.
        assert!(positions.is_in("6.12.117-1") && budget.is_in("6.12.117-1"));
        assert!(budget.is_in("6.12.118-1~deb12u1"));
        assert!(!budget.is_in("6.12.113-1"));

        // 6.12.118's own entry lists no svcrdma change.
        let newest = changelog.listings("svcrdma");
        assert!(
            newest.iter().all(|f| f.version != "6.12.118-1"),
            "{newest:?}"
        );
        assert_eq!(
            newest
                .first()
                .map(|f| (f.version.as_str(), f.line.as_str())),
            Some((
                "6.12.117-1",
                "- svcrdma: Grant credits from the clamped sc_max_requests"
            ))
        );
    }

    #[test]
    fn the_72_entries_list_no_svcrdma_change() {
        let changelog = parsed(LINUX_72);
        assert!(changelog.listings("svcrdma").is_empty());
        assert_eq!(changelog.first_version_listing("svcrdma"), None);
        assert_eq!(changelog.first_version_listing("   "), None);
    }

    #[test]
    fn nested_items_and_wrapped_cve_lists_are_read_as_debian_writes_them() {
        // From the 6.1.192-3 changelog (linux 6.1.170-1 and 6.1.145 shortlogs), shortened.
        let text = "linux (6.1.170-1) bookworm-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.170
    - [arm64] Mitigate TLBI errata on various CPU cores (CVE-2025-10263):
      + cputype: Add NVIDIA Olympus definitions
      + errata: Mitigate TLBI errata on various Arm CPUs (CVE-2026-53354)
    - [amd64] Mitigations Transitive Scheduler Attacks (TSA) (CVE-2024-36350,
      CVE-2024-36357)
      + x86/bugs: Add a Transient Scheduler Attacks mitigation
    - Revert \"svcrdma: Reduce the number of rdma_rw contexts per-QP\"

  [ Salvatore Bonaccorso ]
  * svcrdma: Reduce the number of rdma_rw contexts per-QP (CVE-2026-00001)

 -- Salvatore Bonaccorso <carnil@debian.org>  Fri, 19 Jun 2026 10:00:00 +0200
";
        let changelog = parsed(text);
        let errata = fix(&changelog, "Mitigate TLBI errata on various Arm");
        assert_eq!(errata.cves, ["CVE-2026-53354"]);
        assert_eq!(errata.enclosing_cves, ["CVE-2025-10263"]);
        assert_eq!(errata.upstream_stable.as_deref(), Some("6.1.170"));
        let tsa = fix(&changelog, "Add a Transient Scheduler Attacks mitigation");
        assert!(tsa.cves.is_empty());
        assert_eq!(tsa.enclosing_cves, ["CVE-2024-36350", "CVE-2024-36357"]);
        // Debian's own patch under `[ Name ]` is not part of the upstream shortlog; the revert
        // is listed but never counts as the fix.
        let listed = changelog.listings("Reduce the number of rdma_rw contexts");
        assert_eq!(listed.len(), 2);
        assert!(listed[0].is_revert && !listed[1].is_revert);
        let own = fix(&changelog, "Reduce the number of rdma_rw contexts");
        assert_eq!(own.cves, ["CVE-2026-00001"]);
        assert_eq!(own.upstream_stable, None);
    }

    #[test]
    fn malformed_changelogs_are_typed_errors() {
        assert_eq!(Changelog::parse(""), Err(ChangelogError::NoEntries));
        assert_eq!(
            Changelog::parse("\n# only a comment\n"),
            Err(ChangelogError::NoEntries)
        );
        assert_eq!(
            Changelog::parse("hello world\n"),
            Err(ChangelogError::BadHeader {
                line: 1,
                text: "hello world".into()
            })
        );
        assert_eq!(
            Changelog::parse("linux (6.1 192-1) bookworm; urgency=high\n"),
            Err(ChangelogError::BadVersion {
                line: 1,
                version: "6.1 192-1".into()
            })
        );
        // The real text, cut inside the third entry.
        let cut = LINUX_61
            .find("    - svcrdma: Validate Read chunk positions")
            .map_or("", |at| &LINUX_61[..at]);
        assert_eq!(
            Changelog::parse(cut),
            Err(ChangelogError::MissingTrailer {
                line: 15,
                version: "6.1.192-1".into()
            })
        );
        // A trailer lost between two entries.
        let no_trailer = LINUX_61.replacen(
            " -- Salvatore Bonaccorso <carnil@debian.org>  Mon, 16 Nov 2026 11:17:40 +0100\n",
            "",
            1,
        );
        assert_eq!(
            Changelog::parse(&no_trailer),
            Err(ChangelogError::MissingTrailer {
                line: 9,
                version: "6.1.192-2".into()
            })
        );
        let bad_trailer = "linux (1.0-1) unstable; urgency=low\n\n  * x\n\n -- nobody, no date\n";
        assert!(matches!(
            Changelog::parse(bad_trailer),
            Err(ChangelogError::BadTrailer { line: 5, .. })
        ));
        let huge_line = format!(
            "linux (1.0-1) unstable; urgency=low\n\n  * {}\n",
            "x".repeat(1 << 20)
        );
        assert_eq!(
            Changelog::parse(&huge_line),
            Err(ChangelogError::LineTooLong {
                line: 3,
                bytes: (1 << 20) + 4
            })
        );
        let huge_text = "\n".repeat(MAX_CHANGELOG_BYTES + 1);
        assert!(matches!(
            Changelog::parse(&huge_text),
            Err(ChangelogError::TooLarge { .. })
        ));
        let binary: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        assert!(Changelog::parse(&String::from_utf8_lossy(&binary)).is_err());
    }

    #[test]
    fn no_prefix_or_mutation_of_a_real_changelog_panics() {
        // Every prefix of the first entries, at every char boundary.
        let head: String = LINUX_61.lines().take(40).collect::<Vec<_>>().join("\n");
        for (at, _) in head.char_indices() {
            if let Ok(changelog) = Changelog::parse(&head[..at]) {
                let _ = changelog.first_version_listing("svcrdma");
            }
        }
        // Deterministic byte mutations (no rand dependency): overwrite, then parse and query.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let bytes = head.as_bytes();
        for _ in 0..2000 {
            let mut mutated = bytes.to_vec();
            for _ in 0..4 {
                let at = (next() % mutated.len() as u64) as usize;
                let pool = b"( );:-~<>* \n\t0aZ\xff";
                mutated[at] = pool[(next() % pool.len() as u64) as usize];
            }
            if let Ok(changelog) = Changelog::parse(&String::from_utf8_lossy(&mutated)) {
                let _ = changelog.listings("CVE-");
                for entry in &changelog.entries {
                    let _ = compare_debian_versions(entry.linux_version(), "6.1.192-1");
                }
            }
        }
    }

    /// (a, b, a compared to b), checked against dpkg below.
    const VERSION_PAIRS: &[(&str, &str, Ordering)] = &[
        ("6.12.117-1~deb12u1", "6.12.117-1", Ordering::Less),
        ("6.1.192-3", "6.1.192-10", Ordering::Less),
        ("1:1.0", "2.0", Ordering::Greater),
        ("1.0~rc1", "1.0", Ordering::Less),
        ("1.0", "1.0", Ordering::Equal),
        ("1.0", "1.0-0", Ordering::Equal),
        ("0:1.0", "1.0", Ordering::Equal),
        ("00:2.0-1", "2.0-1", Ordering::Equal),
        ("1.001", "1.1", Ordering::Equal),
        ("1.0~~", "1.0~", Ordering::Less),
        ("1.0~", "1.0", Ordering::Less),
        ("1.0", "1.0a", Ordering::Less),
        ("1.0a", "1.0+", Ordering::Less),
        ("1.0+dfsg", "1.0.1", Ordering::Less),
        ("1.0a~", "1.0a", Ordering::Less),
        ("6.1.176-1", "6.1.192-1", Ordering::Less),
        ("6.1.192+3", "6.1.192-3", Ordering::Greater),
        ("6.12.118-1~deb12u1", "6.12.117-1", Ordering::Greater),
        ("7.2.13-1", "6.12.118-1", Ordering::Greater),
        ("6.12.9-1", "6.12.10-1", Ordering::Less),
        ("2:0.1", "1:9.9", Ordering::Greater),
        ("10:1", "9:1", Ordering::Greater),
        ("1.0-1", "1.0-1.1", Ordering::Less),
        ("1.0-1~bpo12+1", "1.0-1", Ordering::Less),
        ("1.0-1+b1", "1.0-1", Ordering::Greater),
        ("1:1.0~rc1-1", "1:1.0-1", Ordering::Less),
        ("1.2.3", "1.2", Ordering::Greater),
        ("1.0-a", "1.0-b", Ordering::Less),
        ("1.0-1-2", "1.0-1", Ordering::Greater),
        (
            "18446744073709551616",
            "18446744073709551615",
            Ordering::Greater,
        ),
        ("6.1.0-57", "6.1.0-50", Ordering::Greater),
    ];

    #[test]
    fn debian_version_order_on_the_table() {
        for (a, b, expected) in VERSION_PAIRS {
            assert_eq!(compare_debian_versions(a, b), *expected, "{a} vs {b}");
            assert_eq!(
                compare_debian_versions(b, a),
                expected.reverse(),
                "{b} vs {a}"
            );
        }
        // Not valid Debian versions: still an answer, no panic.
        for odd in ["", ":", "-", "a:b", "~", "1:", ":1", "1.0-", "\u{e9}"] {
            let _ = compare_debian_versions(odd, "1.0");
            assert_eq!(
                compare_debian_versions(odd, odd),
                Ordering::Equal,
                "{odd:?}"
            );
        }
    }

    /// The table again, against dpkg itself (installed on every Debian host; skipped elsewhere).
    #[test]
    fn debian_version_order_agrees_with_dpkg() {
        if Command::new("dpkg").arg("--version").output().is_err() {
            eprintln!("dpkg not installed: cross-check skipped");
            return;
        }
        let holds = |a: &str, op: &str, b: &str| -> bool {
            let mut command = Command::new("dpkg");
            command.args(["--compare-versions", a, op, b]);
            let output = crate::process::output_with_timeout(
                "dpkg --compare-versions",
                command,
                Duration::from_secs(10),
            )
            .unwrap_or_else(|e| panic!("dpkg {a} {op} {b}: {e:#}"));
            match output.status.code() {
                Some(0) => true,
                Some(1) => false,
                _ => panic!("dpkg --compare-versions {a} {op} {b}: {:?}", output),
            }
        };
        for (a, b, _) in VERSION_PAIRS {
            let dpkg = if holds(a, "lt", b) {
                Ordering::Less
            } else if holds(a, "eq", b) {
                Ordering::Equal
            } else {
                Ordering::Greater
            };
            assert_eq!(compare_debian_versions(a, b), dpkg, "{a} vs {b}");
        }
    }

    fn have(tool: &str) -> bool {
        let found = Command::new(tool).arg("--version").output().is_ok();
        if !found {
            eprintln!("{tool} not installed: test skipped");
        }
        found
    }

    fn run(mut command: Command) {
        let status = command
            .status()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
        assert!(status.success(), "{command:?}: {status}");
    }

    #[test]
    fn plain_and_gzipped_files_are_read_and_capped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let plain = dir.path().join("changelog");
        std::fs::write(&plain, LINUX_72).unwrap_or_else(|e| panic!("write: {e}"));
        assert_eq!(read_changelog_file(&plain).as_deref(), Ok(LINUX_72));
        let big = dir.path().join("big.changelog");
        std::fs::write(&big, vec![b'\n'; MAX_CHANGELOG_BYTES + 10])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read_changelog_file(&big),
            Err(ChangelogError::TooLarge {
                bytes: MAX_CHANGELOG_BYTES + 1,
                limit: MAX_CHANGELOG_BYTES
            })
        );
        assert!(matches!(
            read_changelog_file(&dir.path().join("missing")),
            Err(ChangelogError::Io { .. })
        ));
        if have("gzip") {
            run({
                let mut c = Command::new("gzip");
                c.arg("-k").arg(&plain);
                c
            });
            let parsed = parse_changelog_file(&dir.path().join("changelog.gz"));
            assert_eq!(parsed.map(|c| c.entries.len()), Ok(2));
            std::fs::write(dir.path().join("bad.gz"), b"not gzip")
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(matches!(
                read_changelog_file(&dir.path().join("bad.gz")),
                Err(ChangelogError::Tool { .. })
            ));
        }
    }

    #[test]
    fn a_debian_tar_xz_gives_its_debian_changelog() {
        if !have("tar") || !have("xz") {
            return;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let debian = dir.path().join("debian");
        std::fs::create_dir(&debian).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(debian.join("changelog"), LINUX_612).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(debian.join("control"), "Source: linux\n").unwrap_or_else(|e| panic!("{e}"));
        let tarball = dir.path().join("linux_6.12.118-1.debian.tar.xz");
        run({
            let mut c = Command::new("tar");
            c.arg("-cJf")
                .arg(&tarball)
                .arg("-C")
                .arg(dir.path())
                .arg("debian");
            c
        });
        assert_eq!(read_changelog_file(&tarball).as_deref(), Ok(LINUX_612));
    }

    /// Build a .deb with `dpkg-deb -b` whose doc directory is `doc` (files or a symlink).
    fn build_deb(dir: &Path, package: &str, doc: impl FnOnce(&Path)) -> PathBuf {
        let root = dir.join(package);
        let control = root.join("DEBIAN");
        std::fs::create_dir_all(&control).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            control.join("control"),
            format!(
                "Package: {package}\nVersion: 1.0-1\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: test\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let docs = root.join("usr/share/doc");
        std::fs::create_dir_all(&docs).unwrap_or_else(|e| panic!("{e}"));
        doc(&docs);
        let deb = dir.join(format!("{package}_1.0-1_all.deb"));
        run({
            let mut c = Command::new("dpkg-deb");
            c.args(["--root-owner-group", "-Zxz", "-b"])
                .arg(&root)
                .arg(&deb);
            c.stdout(std::process::Stdio::null());
            c
        });
        deb
    }

    #[test]
    fn a_deb_gives_its_changelog_or_names_the_package_that_has_it() {
        if !have("dpkg-deb") || !have("gzip") || !have("tar") {
            return;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        // As in the signed 6.1/6.12 images: `changelog.gz`.
        let image = build_deb(dir.path(), "linux-image-test-amd64", |docs| {
            let own = docs.join("linux-image-test-amd64");
            std::fs::create_dir(&own).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(own.join("changelog"), LINUX_61).unwrap_or_else(|e| panic!("{e}"));
            run({
                let mut c = Command::new("gzip");
                c.arg("-9n").arg(own.join("changelog"));
                c
            });
        });
        assert_eq!(read_changelog_file(&image).as_deref(), Ok(LINUX_61));
        let changelog = parse_changelog_file(&image).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            changelog
                .first_version_listing("CVE-2026-89528")
                .map(|f| f.version),
            Some("6.1.192-1".to_owned())
        );
        // As in the 7.x image, binary and modules packages: a symlink to linux-base-*.
        let binary = build_deb(dir.path(), "linux-binary-test-amd64", |docs| {
            std::os::unix::fs::symlink(
                "linux-base-test-amd64",
                docs.join("linux-binary-test-amd64"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        });
        assert_eq!(
            read_changelog_file(&binary),
            Err(ChangelogError::ChangelogInOtherPackage {
                path: binary.clone(),
                doc_dir: "linux-binary-test-amd64".into(),
                target: "linux-base-test-amd64".into()
            })
        );
        let empty = build_deb(dir.path(), "nodoc", |_| {});
        assert_eq!(
            read_changelog_file(&empty),
            Err(ChangelogError::NoChangelogInDeb {
                path: empty.clone()
            })
        );
        let not_a_deb = dir.path().join("garbage_1_all.deb");
        std::fs::write(&not_a_deb, b"!<arch>\ngarbage").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            read_changelog_file(&not_a_deb),
            Err(ChangelogError::Tool { .. })
        ));
    }

    #[test]
    fn the_doc_listing_prefers_the_packages_own_changelog_debian() {
        let listing = "\
drwxr-xr-x root/root         0 2026-10-28 15:01 ./usr/share/doc/
lrwxrwxrwx root/root         0 2026-10-28 15:01 ./usr/share/doc/other -> linux-base-x
-rw-r--r-- root/root       656 2026-10-28 15:01 ./usr/share/doc/pkg/NEWS.Debian.gz
-rw-r--r-- root/root        10 2026-10-28 15:01 ./usr/share/doc/pkg/changelog.gz
-rw-r--r-- root/root        10 2026-10-28 15:01 ./usr/share/doc/pkg/changelog.Debian.gz
-rw-r--r-- root/root        10 2026-10-28 15:01 ./usr/share/doc/zzz/changelog.Debian.gz
";
        assert_eq!(
            doc_entry(listing, "pkg"),
            Some(DocEntry::Changelog(
                "./usr/share/doc/pkg/changelog.Debian.gz".into()
            ))
        );
        let only_link = "lrwxrwxrwx root/root 0 2026-10-28 15:01 ./usr/share/doc/linux-image-amd64 -> linux-base-amd64\n";
        assert_eq!(
            doc_entry(only_link, "linux-image-amd64"),
            Some(DocEntry::Link {
                dir: "linux-image-amd64".into(),
                target: "linux-base-amd64".into()
            })
        );
        assert_eq!(doc_entry("", "x"), None);
        assert_eq!(doc_entry("garbage\n-rw\n", "x"), None);
    }
}
