//! Host facts about GPU processes: user, command line, CPU %, RSS, start
//! time (sysinfo), and the container they run in with their PID inside it
//! (`/proc/<pid>/cgroup`, `NSpid` in `/proc/<pid>/status`), its Kubernetes
//! pod's UID (`cgroup`), and the container's and pod's names where the
//! Docker Engine's socket says them (`containers`: cached, looked up on a
//! thread of its own so a slow socket never delays a round). Every string
//! is sanitised: it comes from another user's process.

mod cgroup;
mod containers;
mod kubelet_logs;

pub use cgroup::{CgroupFacts, cgroup_facts, container_from_cgroup};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind, Users};

use crate::model::alloc::AllocStats;
use crate::model::{Millis, ProcSample, ProcessKey};
use crate::sanitize;
use crate::source::HostFacts;
use crate::source::torch::TorchAllocReader;

use containers::Names;

/// This machine's host name, sanitised; "localhost" when unknown.
pub fn hostname() -> String {
    System::host_name()
        .ok()
        .map(|h| sanitize::clean_capped(&h, 64))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The user running vramwatch.
pub fn current_user() -> String {
    let uid = nix::unistd::Uid::effective();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| uid.to_string())
}

/// A process's start time (unix seconds) as sysinfo reports it, to check a
/// PID still names the same process.
pub fn start_time_of(pid: u32) -> Option<u64> {
    let mut s = System::new().ok()?;
    let p = Pid::from_u32(pid);
    s.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[p]),
        true,
        ProcessRefreshKind::nothing().without_tasks(),
    );
    s.process(p).map(|p| p.start_time())
}

/// The PID in the innermost namespace, from `/proc/<pid>/status`'s `NSpid`
/// line, when it differs from the host PID (the process is in a container).
pub fn ns_pid_from_status(text: &str) -> Option<u32> {
    let line = text.lines().find(|l| l.starts_with("NSpid:"))?;
    let pids: Vec<u32> = line["NSpid:".len()..]
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    match pids.as_slice() {
        [first, .., last] if first != last => Some(*last),
        _ => None,
    }
}

/// Static facts of one process, kept while its start time stays the same.
#[derive(Clone, Debug)]
struct Known {
    start_time: u64,
    user: Option<Arc<str>>,
    name: Arc<str>,
    command: Arc<str>,
    container: Option<Arc<str>>,
    /// The full container id, for the name lookup.
    lookup: Option<Arc<str>>,
    /// Whether the Docker Engine may know the container (else only the
    /// kubelet's log links are asked).
    docker: bool,
    pod_uid: Option<Arc<str>>,
    ns_pid: Option<u32>,
}

/// A process's CPU time at a read, for the CPU % of the next one.
#[derive(Clone, Copy, Debug)]
struct CpuRead {
    start_time: u64,
    /// Accumulated CPU time, ms.
    cpu_ms: u64,
    at: Instant,
    /// CPU % since the read before (`None` for a first read).
    pct: Option<f32>,
}

/// Host facts from /proc through sysinfo, with per-process caching, and
/// the PyTorch allocator figures of processes that publish them.
pub struct ProcHost {
    system: Option<System>,
    users: Option<Users>,
    known: HashMap<u32, Known>,
    /// Each process's CPU time at its last read. CPU % is the difference
    /// over the wall time between two reads of that process, computed
    /// here: sysinfo's own divides by the time since its last refresh of
    /// anything, which between fresh reads is not this process's.
    cpu_reads: HashMap<u32, CpuRead>,
    torch: TorchAllocReader,
    /// GPU index → UUID, to match a PyTorch device to NVML's.
    uuids: Vec<String>,
    /// (pid, gpu) → the per-GPU figures made from the file's `Arc`, reused
    /// while the file has not changed.
    torch_cache: HashMap<(u32, u32), (Arc<AllocStats>, Arc<AllocStats>)>,
    /// Container and pod names by container id, from the Docker socket.
    names: Names,
}

impl Default for ProcHost {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl ProcHost {
    /// `uuids`: the GPUs' UUIDs by index.
    pub fn new(uuids: Vec<String>) -> ProcHost {
        ProcHost {
            system: System::new().ok(),
            users: Users::new_with_refreshed_list().ok(),
            known: HashMap::new(),
            cpu_reads: HashMap::new(),
            torch: TorchAllocReader::new(),
            uuids,
            torch_cache: HashMap::new(),
            names: Names::docker(),
        }
    }

    /// Attaches each process's allocator figures for its GPU.
    fn attach_torch(&mut self, procs: &mut [ProcSample]) {
        let keys: Vec<ProcessKey> = procs
            .iter()
            .filter(|p| p.start_time > 0)
            .map(|p| p.key())
            .collect();
        self.torch.update(&keys);
        let mut fresh = HashMap::new();
        for p in procs.iter_mut() {
            let Some(stats) = self.torch.get(p.key()) else {
                continue;
            };
            let Some(uuid) = self.uuids.get(p.gpu as usize) else {
                continue;
            };
            let cached = self
                .torch_cache
                .get(&(p.pid, p.gpu))
                .filter(|(src, _)| Arc::ptr_eq(src, stats))
                .map(|(_, one)| one.clone());
            let one = match cached {
                Some(one) => one,
                None => {
                    let Some(dev) = stats.device_for(uuid) else {
                        continue;
                    };
                    Arc::new(AllocStats {
                        devices: vec![dev.clone()],
                        ..(**stats).clone()
                    })
                }
            };
            fresh.insert((p.pid, p.gpu), (stats.clone(), one.clone()));
            p.torch = Some(one);
        }
        self.torch_cache = fresh;
    }

    fn user_name(&mut self, uid: &sysinfo::Uid) -> Option<Arc<str>> {
        let find = |users: &Users| users.get_user_by_id(uid).map(|u| u.name().to_owned());
        let mut name = self.users.as_ref().and_then(find);
        if name.is_none() {
            // A user created since start: refresh once.
            if let Ok(u) = Users::new_with_refreshed_list() {
                name = find(&u);
                self.users = Some(u);
            }
        }
        Some(sanitize::clean_capped(&name.unwrap_or_else(|| uid.to_string()), 32).into())
    }

    /// Notes the CPU time of each of these just-read processes and its
    /// CPU % since its read before (`None` for a first read).
    fn cpu_percent(&mut self, read: &[Pid]) {
        let Some(system) = self.system.as_ref() else {
            return;
        };
        let now = Instant::now();
        for pid in read {
            let Some(sp) = system.process(*pid) else {
                continue;
            };
            let (start_time, cpu_ms) = (sp.start_time(), sp.accumulated_cpu_time());
            let pct = self
                .cpu_reads
                .get(&pid.as_u32())
                .filter(|before| before.start_time == start_time)
                .and_then(|before| {
                    let wall_ms = now.duration_since(before.at).as_secs_f64() * 1000.0;
                    let cpu_ms = cpu_ms.saturating_sub(before.cpu_ms) as f64;
                    (wall_ms >= 1.0).then(|| (cpu_ms / wall_ms * 100.0) as f32)
                });
            let this = CpuRead {
                start_time,
                cpu_ms,
                at: now,
                pct,
            };
            self.cpu_reads.insert(pid.as_u32(), this);
        }
    }

    /// Refreshes CPU, memory (and once, command and user) of these PIDs;
    /// returns them sorted and deduplicated.
    fn refresh(&mut self, pids: &[u32]) -> Vec<Pid> {
        let mut pids: Vec<Pid> = pids.iter().map(|p| Pid::from_u32(*p)).collect();
        pids.sort_unstable();
        pids.dedup();
        if pids.is_empty() {
            return pids;
        }
        if let Some(system) = self.system.as_mut() {
            system.refresh_processes_specifics(
                ProcessesToUpdate::Some(&pids),
                true,
                // Not the threads: a PyTorch process has dozens, and
                // reading each one's /proc entry cost more than all of NVML.
                ProcessRefreshKind::nothing()
                    .without_tasks()
                    .with_cpu()
                    .with_memory()
                    .with_cmd(UpdateKind::OnlyIfNotSet)
                    .with_user(UpdateKind::OnlyIfNotSet),
            );
        }
        pids
    }
}

impl HostFacts for ProcHost {
    fn prime(&mut self, pids: &[u32]) -> bool {
        let read = self.refresh(pids);
        self.cpu_percent(&read);
        self.system.is_some()
    }

    fn enrich(&mut self, _t_ms: Millis, procs: &mut [ProcSample], fresh: bool) {
        // Container names: answers that arrived since the last round. The
        // socket is asked on its own thread (`containers`); this round only
        // reads the cache and never waits for it.
        let now = Instant::now();
        self.names.poll(now);
        let mut pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        // Forget processes no GPU lists any more.
        self.known.retain(|pid, _| pids.binary_search(pid).is_ok());
        self.cpu_reads
            .retain(|pid, _| pids.binary_search(pid).is_ok());
        // Between fresh reads only processes not seen yet are read; the
        // others keep their last CPU % and RSS. (A PID reused by a new
        // process between fresh reads keeps the old one's facts until the
        // next: NVML would have to drop and list it again within seconds.)
        if !fresh {
            pids.retain(|pid| !self.known.contains_key(pid));
        }
        let read = self.refresh(&pids);
        self.cpu_percent(&read);
        for p in procs.iter_mut() {
            let Some(sp) = self
                .system
                .as_ref()
                .and_then(|s| s.process(Pid::from_u32(p.pid)))
            else {
                continue;
            };
            let start_time = sp.start_time();
            let uid = sp.user_id().cloned();
            let stale = self
                .known
                .get(&p.pid)
                .is_none_or(|k| k.start_time != start_time);
            // CPU % and RSS as of this process's last read: sysinfo's
            // figures change only when it is refreshed, which between fresh
            // reads only processes not seen before are.
            let cpu = self
                .cpu_reads
                .get(&p.pid)
                .filter(|c| c.start_time == start_time)
                .and_then(|c| c.pct);
            let rss = sp.memory();
            if stale {
                let name = sanitize::clean_capped(&sp.name().to_string_lossy(), 64);
                let command = sanitize::command_line(sp.cmd().iter().map(|a| a.to_string_lossy()));
                let user = match uid {
                    Some(u) => self.user_name(&u),
                    None => None,
                };
                let read = |f: &str| std::fs::read_to_string(format!("/proc/{}/{f}", p.pid)).ok();
                let cg = read("cgroup")
                    .as_deref()
                    .map(cgroup_facts)
                    .unwrap_or_default();
                let docker = cg.runtime.is_some_and(|r| r.maybe_docker());
                let known = Known {
                    start_time,
                    user,
                    name: name.clone().into(),
                    command: if command.is_empty() { name } else { command }.into(),
                    container: cg.container.map(Into::into),
                    lookup: cg.full_id.map(Into::into),
                    docker,
                    pod_uid: cg.pod_uid.map(Into::into),
                    ns_pid: read("status").as_deref().and_then(ns_pid_from_status),
                };
                self.known.insert(p.pid, known);
            }
            if let Some(k) = self.known.get(&p.pid) {
                p.start_time = k.start_time;
                p.user = k.user.clone();
                p.name = Some(k.name.clone());
                p.command = Some(k.command.clone());
                p.container = k.container.clone();
                p.ns_pid = k.ns_pid;
                p.cpu_pct = cpu;
                p.rss = Some(rss);
                let meta = k
                    .lookup
                    .as_deref()
                    .and_then(|id| self.names.get(id, k.docker, now));
                let meta = meta.as_deref();
                p.container_name = meta.and_then(|m| m.name.clone());
                p.pod = meta.and_then(|m| m.pod.clone());
                p.namespace = meta.and_then(|m| m.namespace.clone());
                p.pod_uid = k
                    .pod_uid
                    .clone()
                    .or_else(|| meta.and_then(|m| m.pod_uid.clone()));
            }
        }
        self.attach_torch(procs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const ID: &str = "4f1c2a91d0be8e2f6f6d0c7a0e3b9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a";

    #[test]
    fn docker_cgroup_v1_and_v2() {
        assert_eq!(
            container_from_cgroup(&format!("12:memory:/docker/{ID}\n")),
            Some("4f1c2a91d0be".into())
        );
        assert_eq!(
            container_from_cgroup(&format!("0::/system.slice/docker-{ID}.scope\n")),
            Some("4f1c2a91d0be".into())
        );
    }

    #[test]
    fn kubernetes_containerd_and_podman() {
        let k8s = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-{ID}.scope"
        );
        assert_eq!(container_from_cgroup(&k8s), Some("4f1c2a91d0be".into()));
        let podman =
            format!("0::/user.slice/user-1000.slice/user@1000.service/libpod-{ID}.scope/container");
        assert_eq!(container_from_cgroup(&podman), Some("4f1c2a91d0be".into()));
    }

    #[test]
    fn lxc_names_and_plain_hosts() {
        assert_eq!(
            container_from_cgroup("0::/lxc.payload.web01/init.scope"),
            Some("web01".into())
        );
        assert_eq!(
            container_from_cgroup("0::/user.slice/user-1000.slice/session-3.scope"),
            None
        );
        assert_eq!(container_from_cgroup(""), None);
        // Looks like an id but is not hex.
        assert_eq!(
            container_from_cgroup(&format!("0::/docker/{}", "z".repeat(64))),
            None
        );
    }

    #[test]
    fn nspid_maps_to_the_inner_pid() {
        let status = "Name:\tpython\nNSpid:\t81234\t17\nPPid:\t1\n";
        assert_eq!(ns_pid_from_status(status), Some(17));
        assert_eq!(ns_pid_from_status("NSpid:\t4242\n"), None);
        assert_eq!(ns_pid_from_status("Name:\tx\n"), None);
        assert_eq!(ns_pid_from_status("NSpid:\t100\t50\t7\n"), Some(7));
    }

    #[test]
    fn our_own_process_gets_host_facts() {
        let mut host = ProcHost::new(Vec::new());
        let me = std::process::id();
        let mut procs = [ProcSample {
            pid: me,
            ..Default::default()
        }];
        host.enrich(0, &mut procs, true);
        let p = &procs[0];
        assert!(p.start_time > 0);
        assert!(p.rss.unwrap_or(0) > 0);
        assert!(
            p.command.as_deref().unwrap_or("").contains("vramwatch"),
            "{:?}",
            p.command
        );
        assert_eq!(p.user.as_deref(), Some(current_user().as_str()));
    }

    #[test]
    fn between_fresh_reads_cpu_and_rss_keep_their_last_reading() {
        let mut host = ProcHost::new(Vec::new());
        let me = std::process::id();
        let one = || ProcSample {
            pid: me,
            ..Default::default()
        };
        let mut first = [one()];
        host.enrich(0, &mut first, true);
        // Make RSS move: 64 MiB touched.
        let ballast = vec![1u8; 64 << 20];
        std::hint::black_box(&ballast);
        let mut held = [one()];
        host.enrich(1000, &mut held, false);
        assert_eq!(held[0].rss, first[0].rss, "held between fresh reads");
        assert_eq!(held[0].cpu_pct, first[0].cpu_pct);
        assert!(held[0].command.is_some(), "the rest is filled as ever");
        let mut fresh = [one()];
        host.enrich(2000, &mut fresh, true);
        assert!(
            fresh[0].rss.unwrap_or(0) > first[0].rss.unwrap_or(0),
            "read afresh: {:?} then {:?}",
            first[0].rss,
            fresh[0].rss
        );
        drop(ballast);
    }

    #[test]
    fn cpu_is_averaged_over_the_time_between_fresh_reads() {
        // A thread spins for the whole window: ~100 % of a core (less if
        // the machine is busy, never much more). Between the fresh reads,
        // other processes are read (a process first seen): that must not
        // shorten the time this process's CPU time is divided by.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spin = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
        };
        let mut host = ProcHost::new(Vec::new());
        let one = || ProcSample {
            pid: std::process::id(),
            ..Default::default()
        };
        // This process's own CPU time (ms: utime + stime, in the kernel's
        // 100 Hz ticks), to check against whatever share of a core the
        // spinning thread got on a busy machine.
        let own_cpu_ms = || -> f64 {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
            let f: Vec<&str> = after_comm.split(' ').collect();
            (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) * 10.0
        };
        let mut first = [one()];
        host.enrich(0, &mut first, true);
        let (cpu0, wall0) = (own_cpu_ms(), Instant::now());
        assert_eq!(first[0].cpu_pct, None, "one read gives no difference");
        for i in 1..=4 {
            std::thread::sleep(Duration::from_millis(100));
            host.prime(&[1]);
            host.enrich(i * 100, &mut [one()], false);
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut fresh = [one()];
        host.enrich(500, &mut fresh, true);
        let expected = (own_cpu_ms() - cpu0) / wall0.elapsed().as_secs_f64() / 10.0;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = spin.join();
        // Divided by the 100 ms since the last read instead, it would be
        // about five times this.
        let cpu = f64::from(fresh[0].cpu_pct.unwrap_or(-1.0));
        assert!(
            (cpu - expected).abs() <= 0.3 * expected + 5.0,
            "{cpu:.1} % over 500 ms; the process used {expected:.1} %"
        );
    }

    #[test]
    fn a_process_first_seen_between_fresh_reads_is_read_at_once() {
        let mut host = ProcHost::new(Vec::new());
        let mut procs = [ProcSample {
            pid: std::process::id(),
            ..Default::default()
        }];
        host.enrich(0, &mut procs, false);
        assert!(procs[0].rss.unwrap_or(0) > 0);
        assert!(procs[0].user.is_some());
    }

    #[test]
    fn a_vanished_pid_is_left_alone() {
        let mut host = ProcHost::new(Vec::new());
        let mut procs = [ProcSample {
            pid: u32::MAX - 7,
            ..Default::default()
        }];
        host.enrich(0, &mut procs, true);
        assert_eq!(procs[0].user, None);
    }
}
