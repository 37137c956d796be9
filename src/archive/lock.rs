//! The single-writer lock: an exclusive OS lock (`flock` through `File::try_lock`) on
//! `.babel/lock`, held for the whole of every write and released by the OS when the process
//! exits, however it exits.
//!
//! The lock file is never deleted (a successor would lock a different inode); the holder
//! writes its PID, command and start time into it so a refused writer can name it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::durable::{PathIoError, io_at};

/// Another process holds the writer lock.
#[derive(Debug, thiserror::Error)]
#[error("the archive is busy: {} is held by {}", path.display(), holder.as_deref().unwrap_or("another process"))]
pub struct LockHeld {
    pub path: PathBuf,
    /// What the holder wrote about itself (PID, command, since), when readable.
    pub holder: Option<String>,
    /// The `--wait` this process was given, if any (it waited that long in vain).
    pub wait_limit: Option<Duration>,
}

/// Failure to take the lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    Held(#[from] LockHeld),
    #[error(transparent)]
    Io(#[from] PathIoError),
}

/// The held writer lock; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
}

impl WriterLock {
    /// Takes the lock at `path`, failing at once when it is held, or polling until `wait`
    /// has passed. `announce` is called once if this process has to wait.
    pub fn acquire(
        path: &Path,
        command: &str,
        wait: Option<Duration>,
        announce: &mut dyn FnMut(&LockHeld),
    ) -> Result<Self, LockError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_at("opening the lock file", path))?;
        let started = Instant::now();
        let mut announced = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let held = LockHeld {
                        path: path.to_owned(),
                        holder: read_holder(&mut file),
                        wait_limit: wait,
                    };
                    match wait {
                        Some(limit) if started.elapsed() < limit => {
                            if !announced {
                                announce(&held);
                                announced = true;
                            }
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        _ => return Err(held.into()),
                    }
                }
                Err(TryLockError::Error(e)) => {
                    return Err(io_at("locking", path)(e).into());
                }
            }
        }
        let note = format!(
            "pid {} running `{}` since {}\n",
            std::process::id(),
            command,
            crate::clock::now_rfc3339()
        );
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(note.as_bytes()))
            .map_err(io_at("writing", path))?;
        Ok(Self { file })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Say nothing stale about a holder that is gone; the OS releases the lock itself.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

fn read_holder(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(4096).read_to_string(&mut text).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first =
            WriterLock::acquire(&path, "babel import r1 a.jsonl", None, &mut |_| {}).unwrap();
        let error = WriterLock::acquire(&path, "babel seal r1", None, &mut |_| {}).unwrap_err();
        let LockError::Held(held) = error else {
            panic!("expected a held lock")
        };
        let holder = held.holder.unwrap();
        assert!(
            holder.contains(&format!("pid {}", std::process::id())),
            "{holder}"
        );
        assert!(holder.contains("babel import r1 a.jsonl"), "{holder}");
        drop(first);
        assert!(WriterLock::acquire(&path, "babel seal r1", None, &mut |_| {}).is_ok());
        assert!(path.exists(), "the lock file is never deleted");
    }

    #[test]
    fn a_waiting_writer_announces_itself_and_gives_up_after_its_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let _first = WriterLock::acquire(&path, "first", None, &mut |_| {}).unwrap();
        let mut announcements = 0;
        let started = Instant::now();
        let result = WriterLock::acquire(
            &path,
            "second",
            Some(Duration::from_millis(300)),
            &mut |_| announcements += 1,
        );
        assert!(result.is_err());
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(announcements, 1);
    }
}
