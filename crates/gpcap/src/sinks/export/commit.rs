//! One capture's export committed at once. Every table of the capture (its inner layers'
//! too) is written in a hidden staging directory beside the capture's partition,
//! `.capture=NAME.staging`, and the whole directory is swapped in with one rename: a
//! reader, or a process killed at any instant, sees the capture's previous export or
//! this one, never a mix of the two (docs/export.md, "Interrupted").
//!
//! Files are synced before they are renamed, directories after, so a power cut cannot
//! leave a committed name pointing at an empty file. The staging name carries the
//! process id (`.capture=NAME.staging-PID`): two exports of one capture at once each
//! commit their own whole tree, the later one winning, and only what a process no
//! longer running left is swept.

use super::ExportError;
use std::path::{Path, PathBuf};

/// A complete table file under its temporary name inside the staging directory,
/// renamed to its final name there before the swap.
pub(super) struct Staged {
    pub tmp: PathBuf,
    pub path: PathBuf,
}

/// Removes staged files that will not be committed.
pub(super) fn discard(staged: &[Staged]) {
    for s in staged {
        let _ = std::fs::remove_file(&s.tmp);
    }
}

/// A partition being written: removed unless committed (an error, an interrupt).
pub(super) struct Staging {
    /// Where the tables are written now (`.NAME.staging`).
    pub dir: PathBuf,
    /// The partition's name once committed (`NAME`).
    target: PathBuf,
    /// The dataset's directory: the directories between it and the partition may be new.
    dataset: PathBuf,
    committed: bool,
}

impl Staging {
    /// Staging for partition `name` (`capture=…`, `diff=…`) in `parent`, a directory in
    /// `dataset`; what an export killed before it left under the staging names is
    /// removed first.
    pub fn new(dataset: &Path, parent: &Path, name: &str) -> Result<Staging, ExportError> {
        let dir = parent.join(format!(".{name}.staging-{}", std::process::id()));
        let fail = |p: &Path, e: std::io::Error| ExportError {
            path: p.display().to_string(),
            reason: e.to_string(),
        };
        for stale in stale(parent, name) {
            std::fs::remove_dir_all(&stale).map_err(|e| fail(&stale, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| fail(&dir, e))?;
        Ok(Staging {
            target: parent.join(name),
            dir,
            dataset: dataset.to_path_buf(),
            committed: false,
        })
    }

    /// Gives the staged files their final names, puts every directory of the staging
    /// tree on the disk, and swaps it in for the partition's previous export.
    pub fn commit(mut self, staged: &[Staged]) -> Result<(), ExportError> {
        self.commit_with(staged, exchange)
    }

    fn commit_with(
        &mut self,
        staged: &[Staged],
        exchange: impl Fn(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<(), ExportError> {
        let fail = |p: &Path, e: std::io::Error| ExportError {
            path: p.display().to_string(),
            reason: e.to_string(),
        };
        for s in staged {
            std::fs::rename(&s.tmp, &s.path).map_err(|e| fail(&s.path, e))?;
        }
        sync_tree(&self.dir).map_err(|e| fail(&self.dir, e))?;
        let old = self.old();
        swap(&self.dir, &self.target, &old, exchange).map_err(|e| fail(&self.target, e))?;
        self.committed = true;
        // The previous export, now under the staging or the old name.
        for gone in [&self.dir, &old] {
            if gone.symlink_metadata().is_ok() {
                let _ = std::fs::remove_dir_all(gone);
            }
        }
        // The rename on the disk, and the directories the export may have made above.
        let parent = self.target.parent().unwrap_or(&self.dataset);
        for up in parent.ancestors().take_while(|a| a.starts_with(&self.dataset)) {
            sync_dir(up).map_err(|e| fail(up, e))?;
        }
        Ok(())
    }

    /// Where the previous export is moved when the swap cannot be one rename.
    fn old(&self) -> PathBuf {
        let name = self.target.file_name().unwrap_or_default().to_string_lossy();
        self.target
            .with_file_name(format!(".{name}.old-{}", std::process::id()))
    }
}

/// Staging and moved-aside trees of partition `name` left by processes no longer
/// running (a kill, a power cut), or by an earlier process of this id.
fn stale(parent: &Path, name: &str) -> Vec<PathBuf> {
    let (staging, old) = (format!(".{name}.staging-"), format!(".{name}.old-"));
    let mut out = Vec::new();
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let file = e.file_name();
        let file = file.to_string_lossy();
        let pid = file.strip_prefix(&staging).or_else(|| file.strip_prefix(&old));
        if let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok())
            && (pid == std::process::id() || !running(pid))
        {
            out.push(e.path());
        }
    }
    out
}

/// Whether process `pid` still runs (anything else is taken as gone).
fn running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Puts `new` at `target`. A first export is one rename; a partition exported before is
/// exchanged with it in one rename where the file system can (Linux `renameat2`), or
/// else moved aside to `old` first: a process killed between those two renames leaves
/// the capture absent (not mixed) until it is exported again.
fn swap(
    new: &Path,
    target: &Path,
    old: &Path,
    exchange: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if target.symlink_metadata().is_err() {
        return std::fs::rename(new, target);
    }
    match exchange(new, target) {
        Ok(()) => Ok(()),
        Err(e) if unsupported(&e) => {
            std::fs::rename(target, old)?;
            std::fs::rename(new, target)
        }
        Err(e) => Err(e),
    }
}

/// Whether the exchange is not available here (the fallback applies).
fn unsupported(e: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP)
        ) || e.kind() == std::io::ErrorKind::Unsupported
    }
    #[cfg(not(target_os = "linux"))]
    {
        e.kind() == std::io::ErrorKind::Unsupported
    }
}

/// Exchanges two paths atomically.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated strings that live across the call; the kernel
    // only reads them.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Syncs every directory of the tree under `dir` (the files were synced as written).
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            sync_tree(&e.path())?;
        }
    }
    sync_dir(dir)
}

/// Puts a directory's entries (files made, renamed or removed in it) on the disk.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = walk(dir)
            .into_iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }

    /// Stages one table file `TABLE/part-0.parquet` holding `text`.
    fn stage(s: &Staging, table: &str, text: &str) -> Staged {
        let d = s.dir.join(table);
        std::fs::create_dir_all(&d).unwrap();
        let (tmp, path) = (d.join(".part-0.parquet.tmp"), d.join("part-0.parquet"));
        std::fs::write(&tmp, text).unwrap();
        Staged { tmp, path }
    }

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("gpcap-commit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Each way of swapping (one exchange, or the fallback of two renames) replaces the
    /// whole partition: a table the new export lacks is gone, none is left staged.
    #[test]
    fn a_commit_replaces_the_whole_partition() {
        let fallback = |_: &Path, _: &Path| Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        for (name, use_fallback) in [("exchange", false), ("fallback", true)] {
            let ds = temp(name);
            let s = Staging::new(&ds, &ds, "capture=a").unwrap();
            let staged = [stage(&s, "packets", "one"), stage(&s, "type_old", "one")];
            s.commit(&staged).unwrap();
            assert_eq!(
                tree(&ds),
                [
                    "capture=a/packets/part-0.parquet",
                    "capture=a/type_old/part-0.parquet"
                ]
            );
            let mut s = Staging::new(&ds, &ds, "capture=a").unwrap();
            let staged = [stage(&s, "packets", "two")];
            if use_fallback {
                s.commit_with(&staged, fallback).unwrap();
            } else {
                s.commit_with(&staged, exchange).unwrap();
            }
            drop(s);
            assert_eq!(tree(&ds), ["capture=a/packets/part-0.parquet"], "{name}");
            let text = std::fs::read_to_string(ds.join("capture=a/packets/part-0.parquet")).unwrap();
            assert_eq!(text, "two");
            let _ = std::fs::remove_dir_all(&ds);
        }
    }

    /// An export that fails or is interrupted leaves the partition as it was and no
    /// staging; what a killed one left staged is removed by the next.
    #[test]
    fn uncommitted_staging_is_removed() {
        let ds = temp("abandon");
        let s = Staging::new(&ds, &ds, "capture=a").unwrap();
        stage(&s, "packets", "one");
        drop(s);
        assert!(tree(&ds).is_empty());
        // A process that no longer runs (no pid is this high), and one that does.
        let gone = ds.join(".capture=a.staging-4294967295/packets");
        std::fs::create_dir_all(&gone).unwrap();
        std::fs::write(gone.join("part-0.parquet"), "stale").unwrap();
        std::fs::create_dir_all(ds.join(".capture=a.old-4294967294/packets")).unwrap();
        let live = ds.join(".capture=a.staging-1/packets");
        std::fs::create_dir_all(&live).unwrap();
        std::fs::write(live.join("part-0.parquet"), "init's").unwrap();
        let s = Staging::new(&ds, &ds, "capture=a").unwrap();
        assert_eq!(tree(&ds), [".capture=a.staging-1/packets/part-0.parquet"]);
        drop(s);
        let _ = std::fs::remove_dir_all(&ds);
    }
}
