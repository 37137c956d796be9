//! How much memory this process may still take: what Linux says is available
//! (`MemAvailable`), or less where a memory cgroup of the process, or one above it, has a
//! limit. An import sizes what it reads whole from this figure (header files held as
//! trees). Reads `/proc` and the cgroup files; writes nothing, decides nothing.
//!
//! The cgroups are found as the kernel shows them, not at a fixed path: `/proc/self/cgroup`
//! names the process's cgroup in each hierarchy, `/proc/self/mountinfo` where each
//! hierarchy is mounted and which of its cgroups is the mount's root (a container sees its
//! own cgroup there). Both versions are read: cgroup v2 (`memory.max`, `memory.current`)
//! and v1's memory controller (`memory.limit_in_bytes`, `memory.usage_in_bytes`, and
//! `hierarchical_memory_limit`), still what many clusters' job schedulers and older
//! container hosts use. What a mount does not show is read only as far as the kernel tells
//! it below: v1's limits above a container's cgroup count against the container's own
//! usage (not its siblings'), and v2's above a cgroup namespace's root not at all.

use std::path::{Component, Path, PathBuf};

/// The memory this process may still take, or `None` where Linux says nothing of it
/// (a cgroup's limit counts even where `/proc/meminfo` has no `MemAvailable`, as on
/// kernels before 3.14).
pub(super) fn available() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let available = mem_available(&read("/proc/meminfo"));
    let cgroups = memory_cgroups(&read("/proc/self/mountinfo"), &read("/proc/self/cgroup"));
    least(available, cgroups.iter().filter_map(Cgroup::room).min())
}

/// The lesser of two bounds, either of which may be unknown.
fn least(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A memory cgroup of this process: its folder, and the mount it is under (the highest
/// folder above it that can be read).
#[derive(Debug, PartialEq, Eq)]
struct Cgroup {
    version: Version,
    dir: PathBuf,
    mount: PathBuf,
}

impl Cgroup {
    /// The least room under the limits of this cgroup and of those above it up to the
    /// mount; `None` where none has a limit.
    fn room(&self) -> Option<u64> {
        let mut dir = self.dir.clone();
        let mut smallest = None;
        loop {
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            let room = match self.version {
                Version::V2 => room_v2(
                    &read("memory.max"),
                    &read("memory.current"),
                    &read("memory.stat"),
                ),
                Version::V1 => room_v1(
                    &read("memory.limit_in_bytes"),
                    &read("memory.usage_in_bytes"),
                    &read("memory.stat"),
                ),
            };
            smallest = least(smallest, room);
            if dir == self.mount || !dir.pop() {
                return smallest;
            }
        }
    }
}

/// The memory cgroups of this process, from `/proc/self/mountinfo` and `/proc/self/cgroup`:
/// its cgroup v2 (which holds the memory controller only where the system uses v2 for it)
/// and its cgroup of v1's memory controller, each where a mount shows it.
fn memory_cgroups(mountinfo: &str, cgroup: &str) -> Vec<Cgroup> {
    let mut found = Vec::new();
    for line in cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let version = match (id, controllers) {
            ("0", "") => Version::V2,
            (_, controllers) if controllers.split(',').any(|c| c == "memory") => Version::V1,
            _ => continue,
        };
        // A cgroup the mount does not show (outside a namespace's root, say) is bounded by
        // the mount's root, the cgroup the process is confined to.
        let shown = mounts(mountinfo, version)
            .find_map(|(root, mount)| under_mount(path, &root, &mount).map(|dir| (dir, mount)));
        let cgroup = shown.or_else(|| {
            let (_, mount) = mounts(mountinfo, version).next()?;
            Some((mount.clone(), mount))
        });
        if let Some((dir, mount)) = cgroup {
            found.push(Cgroup {
                version,
                dir,
                mount,
            });
        }
    }
    found
}

/// The mounts of a hierarchy of `version` (v1: its memory controller's), each the cgroup
/// at its root and where it is mounted.
fn mounts(mountinfo: &str, version: Version) -> impl Iterator<Item = (String, PathBuf)> + '_ {
    mountinfo.lines().filter_map(move |line| {
        // `id parent major:minor root mount options [optional...] - type source super`.
        let (mount, filesystem) = line.split_once(" - ")?;
        let mut fields = mount.split(' ');
        let (root, point) = (fields.nth(3)?, fields.next()?);
        let mut filesystem = filesystem.split(' ');
        let kind = filesystem.next()?;
        let options = filesystem.nth(1).unwrap_or("");
        let wanted = match version {
            Version::V2 => kind == "cgroup2",
            Version::V1 => kind == "cgroup" && options.split(',').any(|o| o == "memory"),
        };
        wanted.then(|| (unescape(root), PathBuf::from(unescape(point))))
    })
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes.get(i + 1..i + 4).and_then(|digits| {
            let digits = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(digits, 8).ok()
        });
        match (bytes[i], code) {
            (b'\\', Some(code)) => {
                out.push(code);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The folder of cgroup `path` under a mount at `mount` of the cgroup `root`, if the mount
/// shows it: `None` for a cgroup outside the mounted part, or a path that is not a plain
/// absolute one.
fn under_mount(path: &str, root: &str, mount: &Path) -> Option<PathBuf> {
    let path = Path::new(path);
    let plain = |path: &Path| {
        path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    };
    if !plain(path) || !plain(Path::new(root)) {
        return None;
    }
    let below = path.strip_prefix(root).ok()?;
    Some(mount.join(below))
}

/// The room under a cgroup v2 limit, from its `memory.max`, `memory.current` and
/// `memory.stat`: the limit less what the cgroup holds, its file cache that can be
/// reclaimed (`inactive_file`: an import's own copy, written just before) not counted.
/// `None` without a limit (`max`) or where a file is missing.
fn room_v2(max: &str, current: &str, stat: &str) -> Option<u64> {
    let max = max.trim().parse::<u64>().ok()?;
    let current = current.trim().parse::<u64>().ok()?;
    Some(max.saturating_sub(current.saturating_sub(stat_value(stat, "inactive_file"))))
}

/// v1 writes "no limit" as the largest count of pages it keeps, in bytes: on a 64-bit
/// kernel 9223372036854771712 with 4 KiB pages (a little less with larger pages), so any
/// limit from 2^62 bytes up is none. A 32-bit kernel's "none" (8796093018112) is read as a
/// limit of 8 TiB, which `MemAvailable` is always below.
const V1_UNLIMITED: u64 = 1 << 62;

/// The room under a cgroup v1 memory limit, from its `memory.limit_in_bytes`,
/// `memory.usage_in_bytes` and `memory.stat`: the lesser of its limit and the limit above
/// it (`hierarchical_memory_limit`), less its usage, its inactive file cache (with its
/// children's: `total_inactive_file`, as the usage counts theirs) not counted. `None`
/// without a limit or where a file is missing.
fn room_v1(limit: &str, usage: &str, stat: &str) -> Option<u64> {
    let limit = limit.trim().parse::<u64>().ok()?;
    let usage = usage.trim().parse::<u64>().ok()?;
    let above = stat
        .lines()
        .find_map(|line| line.strip_prefix("hierarchical_memory_limit "))
        .and_then(|bytes| bytes.trim().parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let limit = limit.min(above);
    let reclaimable = match stat_value(stat, "total_inactive_file") {
        0 => stat_value(stat, "inactive_file"),
        total => total,
    };
    (limit < V1_UNLIMITED).then(|| limit.saturating_sub(usage.saturating_sub(reclaimable)))
}

/// The value of `key` in a `memory.stat`, 0 where it is absent.
fn stat_value(stat: &str, key: &str) -> u64 {
    stat.lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|bytes| bytes.trim().parse::<u64>().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mountinfo line of a cgroup mount.
    fn mount_line(root: &str, point: &str, kind: &str, options: &str) -> String {
        format!(
            "35 31 0:32 {root} {point} rw,nosuid,nodev,noexec,relatime shared:9 - {kind} cgroup {options}\n"
        )
    }

    fn cgroup(version: Version, dir: &str, mount: &str) -> Cgroup {
        Cgroup {
            version,
            dir: PathBuf::from(dir),
            mount: PathBuf::from(mount),
        }
    }

    #[test]
    fn memory_cgroups_are_found_where_their_hierarchy_is_mounted() {
        // A cgroup v2 host: the process's cgroup under the mount of the whole tree.
        let v2 = mount_line("/", "/sys/fs/cgroup", "cgroup2", "rw,nsdelegate");
        assert_eq!(
            memory_cgroups(&v2, "0::/user.slice/user-1000.slice/session-2.scope\n"),
            [cgroup(
                Version::V2,
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope",
                "/sys/fs/cgroup"
            )]
        );
        // A container with its own cgroup namespace sees its cgroup as `/`: the mount
        // itself, whose memory.max is the container's limit.
        assert_eq!(
            memory_cgroups(&v2, "0::/\n"),
            [cgroup(Version::V2, "/sys/fs/cgroup", "/sys/fs/cgroup")]
        );
        // A hybrid system (this project's CI machine): the memory controller on v1, an
        // empty v2 tree beside it; a job scheduler's cgroup several levels down.
        let hybrid = [
            mount_line("/", "/sys/fs/cgroup/cpu", "cgroup", "rw,cpu"),
            mount_line("/", "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
            mount_line("/", "/sys/fs/cgroup/unified", "cgroup2", "rw"),
        ]
        .concat();
        let cgroups = "9:name=systemd:/\n4:memory:/slurm/uid_1000/job_42/step_0\n1:cpu:/\n0::/\n";
        assert_eq!(
            memory_cgroups(&hybrid, cgroups),
            [
                cgroup(
                    Version::V1,
                    "/sys/fs/cgroup/memory/slurm/uid_1000/job_42/step_0",
                    "/sys/fs/cgroup/memory"
                ),
                cgroup(
                    Version::V2,
                    "/sys/fs/cgroup/unified",
                    "/sys/fs/cgroup/unified"
                ),
            ]
        );
        // A v1 container without a namespace: its own cgroup is mounted as the root, and
        // the kernel names it by its whole path; a controller mounted with others.
        let docker = mount_line(
            "/docker/4f3a",
            "/sys/fs/cgroup/memory",
            "cgroup",
            "rw,cpuacct,memory",
        );
        assert_eq!(
            memory_cgroups(&docker, "6:cpuacct,memory:/docker/4f3a\n"),
            [cgroup(
                Version::V1,
                "/sys/fs/cgroup/memory",
                "/sys/fs/cgroup/memory"
            )]
        );
        // A cgroup outside what is mounted, or a path that would climb out of the mount,
        // is bounded by the mount's root, and nothing above it is read.
        assert_eq!(
            memory_cgroups(&docker, "6:memory:/other\n"),
            [cgroup(
                Version::V1,
                "/sys/fs/cgroup/memory",
                "/sys/fs/cgroup/memory"
            )]
        );
        for outside in ["0::/a/../../etc\n", "0::/../sibling\n", "0::relative\n"] {
            assert_eq!(
                memory_cgroups(&v2, outside),
                [cgroup(Version::V2, "/sys/fs/cgroup", "/sys/fs/cgroup")],
                "{outside}"
            );
        }
        // A name ending in a space is a name: /proc/self/cgroup escapes nothing.
        assert_eq!(
            memory_cgroups(&v2, "0::/job \n"),
            [cgroup(Version::V2, "/sys/fs/cgroup/job ", "/sys/fs/cgroup")]
        );
        // No memory controller anywhere: nothing.
        assert_eq!(memory_cgroups(&hybrid, "1:cpu:/\n"), []);
        assert_eq!(memory_cgroups("", "0::/\n"), []);
        // A mount point with a space is escaped in mountinfo.
        let spaced = mount_line("/", "/mnt/cgroup\\040v2", "cgroup2", "rw");
        assert_eq!(
            memory_cgroups(&spaced, "0::/a\n"),
            [cgroup(Version::V2, "/mnt/cgroup v2/a", "/mnt/cgroup v2")]
        );
    }

    #[test]
    fn the_room_under_a_limit_counts_reclaimable_file_cache_as_room() {
        // v2: the limit less what the cgroup holds, its inactive file cache not counted.
        let stat = "anon 4096\nfile 900\nactive_file 100\ninactive_file 800\n";
        assert_eq!(room_v2("max\n", "2000\n", stat), None);
        assert_eq!(room_v2("10000\n", "2000\n", stat), Some(8800));
        assert_eq!(room_v2("10000\n", "2000\n", ""), Some(8000));
        assert_eq!(room_v2("1000\n", "5000\n", stat), Some(0));
        assert_eq!(room_v2("", "", ""), None);
        // v1 (memory.stat as this project's CI machine writes it): no limit is the largest
        // page count; a limit above the cgroup counts; the file cache of the cgroup and
        // its children is room.
        let unlimited = "9223372036854771712\n";
        let stat = "cache 900\ninactive_file 300\nhierarchical_memory_limit 9223372036854771712\n\
                    total_cache 1900\ntotal_inactive_file 800\n";
        assert_eq!(room_v1(unlimited, "2000\n", stat), None);
        assert_eq!(room_v1("10000\n", "2000\n", stat), Some(8800));
        let above = stat.replace("limit 9223372036854771712", "limit 6000");
        assert_eq!(room_v1(unlimited, "2000\n", &above), Some(4800));
        assert_eq!(room_v1("5000\n", "2000\n", &above), Some(3800));
        let own_only = "inactive_file 300\n";
        assert_eq!(room_v1("10000\n", "2000\n", own_only), Some(8300));
        assert_eq!(room_v1("1000\n", "5000\n", stat), Some(0));
        assert_eq!(room_v1("", "", ""), None);
        // The key is matched whole: `total_inactive_file` is not `inactive_file`.
        assert_eq!(stat_value("total_inactive_file 800\n", "inactive_file"), 0);
        assert_eq!(
            mem_available("MemTotal: 24000000 kB\nMemAvailable:   16000000 kB\n"),
            Some(16_000_000 * 1024)
        );
    }

    #[test]
    fn a_cgroup_and_those_above_it_up_to_the_mount_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("memory");
        let job = mount.join("slurm/job_42");
        let step = job.join("step_0");
        std::fs::create_dir_all(&step).unwrap();
        let limit = |dir: &Path, limit: &str, usage: &str| {
            std::fs::write(dir.join("memory.limit_in_bytes"), limit).unwrap();
            std::fs::write(dir.join("memory.usage_in_bytes"), usage).unwrap();
        };
        // The step has no limit of its own; the job's is what bounds it; the mount's root
        // (the whole machine) has none. Above the mount is never read.
        limit(&step, "9223372036854771712\n", "100\n");
        limit(&job, "4000\n", "1000\n");
        limit(&mount, "9223372036854771712\n", "99999\n");
        limit(dir.path(), "10\n", "0\n");
        let cgroup = Cgroup {
            version: Version::V1,
            dir: step.clone(),
            mount: mount.clone(),
        };
        assert_eq!(cgroup.room(), Some(3000));
        // Without any limit up to the mount: none.
        limit(&job, "9223372036854771712\n", "1000\n");
        assert_eq!(cgroup.room(), None);
        // The mount's root is read too: a container's own cgroup, and its limit.
        limit(&mount, "2500\n", "1000\n");
        assert_eq!(cgroup.room(), Some(1500));
        // A cgroup's limit stands where Linux gives no MemAvailable, and the other way
        // round.
        assert_eq!(least(None, Some(1500)), Some(1500));
        assert_eq!(least(Some(900), None), Some(900));
        assert_eq!(least(Some(900), Some(1500)), Some(900));
        assert_eq!(least(None, None), None);
    }

    #[test]
    fn this_machine_s_memory_cgroups_are_found_and_read() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let read = |path: &str| std::fs::read_to_string(path).unwrap();
        let mountinfo = read("/proc/self/mountinfo");
        let cgroups = memory_cgroups(&mountinfo, &read("/proc/self/cgroup"));
        // Where a memory hierarchy is mounted whole, this process has a cgroup in it.
        let mounted = |version| mounts(&mountinfo, version).any(|(root, _)| root == "/");
        if mounted(Version::V1) || mounted(Version::V2) {
            assert!(!cgroups.is_empty(), "no memory cgroup found in {mountinfo}");
        }
        // Each folder found is a cgroup of this process: it lists this process.
        for cgroup in &cgroups {
            let procs = std::fs::read_to_string(cgroup.dir.join("cgroup.procs")).unwrap();
            let pid = std::process::id().to_string();
            assert!(
                procs.lines().any(|line| line == pid),
                "{} does not list this process",
                cgroup.dir.display()
            );
        }
        assert!(available().is_some(), "/proc/meminfo gives MemAvailable");
    }
}
