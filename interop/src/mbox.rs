//! A patch series as a mailbox (what `b4 am` writes, what `git am` applies): split into its
//! messages, the cover letter set aside, each patch kept whole (headers, commit message, diff)
//! in order, and the series named by its cover letter (or first patch): subject, Message-ID and
//! the KCIDB patchset hash — sha256 over the newline-terminated sha256 of each patch, in the
//! order they apply.
//!
//! The mailbox is the developer's file, not a guest's, but it is still bounded: its size, the
//! number of messages and the header lines read are limited, and nothing panics on odd input.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use sha2::{Digest, Sha256};

/// Largest mailbox read (a long series is a few MB).
pub const MAX_MBOX_BYTES: u64 = 64 << 20;
/// Most messages one mailbox may hold.
pub const MAX_MESSAGES: usize = 2000;

/// One message of the mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MboxMessage {
    /// `Subject:`, unfolded.
    pub subject: String,
    /// `Message-ID:` without its angle brackets, if present.
    pub message_id: Option<String>,
    /// The whole message as it stood in the mailbox (without its `From ` separator line).
    pub text: String,
}

impl MboxMessage {
    /// Whether the message carries a diff (a patch) rather than only prose (a cover letter).
    pub fn has_diff(&self) -> bool {
        self.text
            .lines()
            .any(|l| l.starts_with("diff --git ") || l.starts_with("+++ "))
    }

    /// `[PATCH 0/N]`-style subject: the series' cover letter.
    fn is_cover_letter(&self) -> bool {
        let Some(tag) = self
            .subject
            .strip_prefix('[')
            .and_then(|s| s.split(']').next())
        else {
            return false;
        };
        tag.split_whitespace()
            .any(|word| word.starts_with("0/") || word.starts_with("00/"))
            || !self.has_diff()
    }
}

/// A series read from a mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The cover letter's subject, else the first patch's.
    pub subject: String,
    /// The cover letter's Message-ID, else the first patch's.
    pub message_id: Option<String>,
    /// The patches in the order they apply.
    pub patches: Vec<MboxMessage>,
    /// KCIDB's `patchset_hash` of the patches.
    pub patchset_hash: String,
}

impl Series {
    /// What names the series, without its patches.
    pub fn name(&self) -> SeriesName {
        SeriesName {
            subject: self.subject.clone(),
            message_id: self.message_id.clone(),
            patchset_hash: self.patchset_hash.clone(),
        }
    }

    /// [`SeriesName::describe`].
    pub fn describe(&self) -> String {
        self.name().describe()
    }
}

/// How reports and the KCIDB output name a series: subject, Message-ID, patchset hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesName {
    pub subject: String,
    pub message_id: Option<String>,
    pub patchset_hash: String,
}

impl SeriesName {
    /// `series "SUBJECT" <MESSAGE-ID> patchset HASH`.
    pub fn describe(&self) -> String {
        let id = self
            .message_id
            .as_ref()
            .map_or_else(String::new, |id| format!(" <{id}>"));
        format!(
            "series \"{}\"{id} patchset {}",
            self.subject.replace('"', "'"),
            self.patchset_hash
        )
    }
}

/// Whether `path` is a mailbox: its first line is an mbox `From ` separator.
pub fn is_mbox(path: &Path) -> bool {
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut first);
    first.starts_with("From ")
}

/// The messages of a mailbox's text, split at its `From ` separator lines (mboxrd: a body line
/// `>From ` is unescaped to `From `).
pub fn messages(text: &str) -> Result<Vec<MboxMessage>> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.split_inclusive('\n') {
        if line.starts_with("From ") {
            if let Some(message) = current.take() {
                out.push(message);
            }
            ensure!(
                out.len() < MAX_MESSAGES,
                "mailbox: more than {MAX_MESSAGES} messages"
            );
            current = Some(String::new());
            continue;
        }
        let Some(message) = current.as_mut() else {
            bail!("mailbox: text before the first `From ` line");
        };
        let unescaped = match line.strip_prefix('>') {
            Some(rest) if rest.trim_start_matches('>').starts_with("From ") => rest,
            _ => line,
        };
        message.push_str(unescaped);
    }
    out.extend(current);
    Ok(out.into_iter().map(|text| parse_message(&text)).collect())
}

/// A message's Subject and Message-ID from its header (folded lines joined).
fn parse_message(text: &str) -> MboxMessage {
    let mut subject = String::new();
    let mut message_id = None;
    let mut last: Option<&str> = None;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if last == Some("subject") {
                subject.push(' ');
                subject.push_str(line.trim());
            }
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            last = None;
            continue;
        };
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "subject" => subject = value.trim().to_owned(),
            "message-id" => {
                message_id = Some(
                    value
                        .trim()
                        .trim_start_matches('<')
                        .trim_end_matches('>')
                        .to_owned(),
                )
            }
            _ => {}
        }
        last = Some(if name == "subject" { "subject" } else { "" });
    }
    MboxMessage {
        subject,
        message_id,
        text: text.to_owned(),
    }
}

/// KCIDB v5 `patchset_hash`: sha256 over the newline-terminated lowercase hex sha256 of each
/// patch, in the order they apply; empty for no patches.
pub fn patchset_hash(patches: &[&[u8]]) -> String {
    if patches.is_empty() {
        return String::new();
    }
    let mut outer = Sha256::new();
    for patch in patches {
        outer.update(crate::cache::hex(&Sha256::digest(patch)));
        outer.update(b"\n");
    }
    crate::cache::hex(&outer.finalize())
}

/// The series in the mailbox `text`: the cover letter (a `0/N` subject or a message without a
/// diff) names it and is not applied.
pub fn series(text: &str) -> Result<Series> {
    let messages = messages(text)?;
    let (covers, patches): (Vec<MboxMessage>, Vec<MboxMessage>) =
        messages.into_iter().partition(MboxMessage::is_cover_letter);
    ensure!(!patches.is_empty(), "mailbox: no message carries a diff");
    let named = covers.first().unwrap_or(&patches[0]);
    let bodies: Vec<&[u8]> = patches.iter().map(|p| p.text.as_bytes()).collect();
    Ok(Series {
        subject: named.subject.clone(),
        message_id: named.message_id.clone(),
        patchset_hash: patchset_hash(&bodies),
        patches,
    })
}

/// Read the mailbox at `path` and write its patches as `NNNN.patch` files under `dir/<patchset
/// hash>/` (what the kernel build applies, in name order, with `patch -p1`, which skips each
/// message's header and commit text as `git am` would); returns the series and the files.
pub fn load(path: &Path, dir: &Path) -> Result<(Series, Vec<PathBuf>)> {
    let size = fs::metadata(path)
        .with_context(|| format!("{}", path.display()))?
        .len();
    ensure!(
        size <= MAX_MBOX_BYTES,
        "{}: {size} bytes, over the {MAX_MBOX_BYTES}-byte mailbox limit",
        path.display()
    );
    let text = fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let series = series(&text).with_context(|| format!("{}", path.display()))?;
    let out = dir.join(&series.patchset_hash);
    fs::create_dir_all(&out)?;
    let mut files = Vec::new();
    for (index, patch) in series.patches.iter().enumerate() {
        let file = out.join(format!("{:04}.patch", index + 1));
        fs::write(&file, &patch.text)?;
        files.push(file);
    }
    Ok((series, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series as `b4 am` writes it: a cover letter and two patches.
    const MBOX: &str = "From git@z Thu Jan  1 00:00:00 1970\n\
Subject: [PATCH v2 0/2] nfsd: evict acked replies\n\
Message-Id: <cover.1733.git@example.org>\n\
\n\
Two patches.\n\
From git@z Thu Jan  1 00:00:00 1970\n\
Subject: [PATCH v2 1/2] nfsd: a first\n\
\x20change\n\
Message-Id: <p1@example.org>\n\
\n\
Commit text.\n\
>From the mailbox's escaping.\n\
---\n\
diff --git a/fs/nfsd/a.c b/fs/nfsd/a.c\n\
--- a/fs/nfsd/a.c\n\
+++ b/fs/nfsd/a.c\n\
@@ -1 +1 @@\n\
-a\n\
+b\n\
From git@z Thu Jan  1 00:00:00 1970\n\
Subject: [PATCH v2 2/2] nfsd: a second\n\
Message-Id: <p2@example.org>\n\
\n\
diff --git a/fs/nfsd/b.c b/fs/nfsd/b.c\n\
--- a/fs/nfsd/b.c\n\
+++ b/fs/nfsd/b.c\n\
@@ -1 +1 @@\n\
-c\n\
+d\n";

    #[test]
    fn a_series_is_its_patches_in_order_named_by_its_cover_letter() {
        let series = series(MBOX).unwrap();
        assert_eq!(series.subject, "[PATCH v2 0/2] nfsd: evict acked replies");
        assert_eq!(
            series.message_id.as_deref(),
            Some("cover.1733.git@example.org")
        );
        let subjects: Vec<&str> = series.patches.iter().map(|p| p.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "[PATCH v2 1/2] nfsd: a first change",
                "[PATCH v2 2/2] nfsd: a second"
            ]
        );
        assert!(series.patches[0]
            .text
            .contains("\nFrom the mailbox's escaping.\n"));
        // KCIDB's hash: sha256 over each patch's newline-terminated sha256, in order.
        let bodies: Vec<&[u8]> = series.patches.iter().map(|p| p.text.as_bytes()).collect();
        assert_eq!(series.patchset_hash, patchset_hash(&bodies));
        let reversed: Vec<&[u8]> = bodies.iter().rev().copied().collect();
        assert_ne!(series.patchset_hash, patchset_hash(&reversed));
        assert_eq!(series.patchset_hash.len(), 64);
        assert!(series
            .describe()
            .starts_with("series \"[PATCH v2 0/2] nfsd: evict acked replies\" <cover.1733.git@example.org> patchset "));
        assert_eq!(patchset_hash(&[]), "");
    }

    #[test]
    fn a_series_without_a_cover_letter_is_named_by_its_first_patch() {
        let last = MBOX.rsplit("From git@z").next().unwrap();
        let text = format!("From git@z{last}");
        let series = series(&text).unwrap();
        assert_eq!(series.patches.len(), 1);
        assert_eq!(series.subject, "[PATCH v2 2/2] nfsd: a second");
    }

    #[test]
    fn odd_mailboxes_are_refused_with_the_reason() {
        assert!(series("Subject: no separator\n").is_err());
        assert!(series("From x\nSubject: [PATCH 0/1] only a cover\n\ntext\n").is_err());
        let many = "From x\nSubject: s\n\n".repeat(MAX_MESSAGES + 1);
        assert!(messages(&many).is_err());
        assert!(messages("").unwrap().is_empty());
    }

    #[test]
    fn load_writes_the_patches_in_apply_order() {
        let dir = tempfile::tempdir().unwrap();
        let mbox = dir.path().join("series.mbx");
        fs::write(&mbox, MBOX).unwrap();
        assert!(is_mbox(&mbox));
        let (series, files) = load(&mbox, &dir.path().join("out")).unwrap();
        assert_eq!(files.len(), 2);
        assert!(files[0].ends_with(format!("{}/0001.patch", series.patchset_hash)));
        assert_eq!(
            fs::read_to_string(&files[1]).unwrap(),
            series.patches[1].text
        );
        let plain = dir.path().join("one.patch");
        fs::write(&plain, "diff --git a/x b/x\n").unwrap();
        assert!(!is_mbox(&plain));
    }
}
