//! What `/proc/<pid>/cgroup` says about a process's container: its id, the
//! runtime whose layout named it, and the Kubernetes pod's UID. cgroup v1
//! (a line per hierarchy) and v2 (`0::/path`), the systemd driver
//! (`kubepods-burstable-pod<uid with _>.slice/docker-<id>.scope`) and the
//! cgroupfs driver (`/kubepods/burstable/pod<uid>/<id>`) alike; fixtures of
//! each shape are in tests/fixtures/cgroup/.

use crate::sanitize;

/// Whose cgroup layout named the container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// `docker-<id>.scope` or `/docker/<id>`.
    Docker,
    /// `cri-containerd-<id>.scope`.
    Containerd,
    /// `crio-<id>.scope`.
    Crio,
    /// `libpod-<id>.scope` (Podman).
    Podman,
    /// A bare id (the cgroupfs driver under `/kubepods/...`): Docker
    /// (dockershim, cri-dockerd) or a CRI runtime.
    Unnamed,
    /// `/lxc.payload.<name>` or `/lxc/<name>`.
    Lxc,
}

impl Runtime {
    /// Whether the Docker Engine may know the container.
    pub(crate) fn maybe_docker(self) -> bool {
        matches!(self, Runtime::Docker | Runtime::Unnamed)
    }
}

/// The container facts of one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupFacts {
    /// A short (12-character) id, or the LXC name.
    pub container: Option<String>,
    /// The whole 64-character id, to ask the runtime about.
    pub full_id: Option<String>,
    pub(crate) runtime: Option<Runtime>,
    /// The Kubernetes pod's UID (with `-`), lower case.
    pub pod_uid: Option<String>,
}

const PREFIXES: [(&str, Runtime); 5] = [
    ("docker-", Runtime::Docker),
    ("cri-containerd-", Runtime::Containerd),
    ("crio-", Runtime::Crio),
    ("libpod-", Runtime::Podman),
    ("", Runtime::Unnamed),
];

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The container id a path names, innermost first.
fn container_of(path: &str) -> Option<(String, Runtime)> {
    let mut segs = path.split('/').rev().peekable();
    while let Some(seg) = segs.next() {
        let seg = seg.strip_suffix(".scope").unwrap_or(seg);
        for (prefix, runtime) in PREFIXES {
            if let Some(id) = seg.strip_prefix(prefix)
                && id.len() == 64
                && is_hex(id)
            {
                let parent = segs.peek().copied().unwrap_or("");
                let runtime = if runtime == Runtime::Unnamed && parent == "docker" {
                    Runtime::Docker
                } else {
                    runtime
                };
                return Some((id.to_ascii_lowercase(), runtime));
            }
        }
    }
    None
}

/// The pod UID a kubepods path segment names: `pod<uid>` (cgroupfs) or
/// `kubepods[-<qos>]-pod<uid with _>.slice` (systemd). A UID is a UUID, or
/// 32 hex digits for a static pod (a hash of its manifest).
fn pod_uid_of(seg: &str) -> Option<String> {
    let seg = seg.strip_suffix(".slice").unwrap_or(seg);
    let rest = match seg.strip_prefix("pod") {
        Some(r) => r,
        None => seg.rsplit_once("-pod")?.1,
    };
    let uid = rest.replace('_', "-").to_ascii_lowercase();
    let uuid = uid.len() == 36
        && uid.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    (uuid || (uid.len() == 32 && is_hex(&uid))).then_some(uid)
}

/// The container facts in the text of `/proc/<pid>/cgroup`.
pub fn cgroup_facts(text: &str) -> CgroupFacts {
    let mut facts = CgroupFacts::default();
    for line in text.lines() {
        // "hierarchy-ID:controllers:path"
        let path = line.splitn(3, ':').nth(2).unwrap_or("");
        if facts.pod_uid.is_none() && path.contains("kubepods") {
            facts.pod_uid = path.split('/').rev().find_map(pod_uid_of);
        }
        if facts.container.is_some() {
            continue;
        }
        if let Some((id, runtime)) = container_of(path) {
            facts.container = Some(id[..12].to_owned());
            facts.full_id = Some(id);
            facts.runtime = Some(runtime);
        } else if let Some(rest) = path
            .strip_prefix("/lxc.payload.")
            .or(path.strip_prefix("/lxc/"))
        {
            let name = rest.split('/').next().unwrap_or("");
            if !name.is_empty() {
                facts.container = Some(sanitize::clean_capped(name, 32));
                facts.runtime = Some(Runtime::Lxc);
            }
        }
    }
    facts
}

/// The container a process runs in, from the text of `/proc/<pid>/cgroup`:
/// Docker, containerd/CRI (Kubernetes), CRI-O, Podman/libpod and LXC
/// layouts. Returns a short (12-character) id or the LXC name.
pub fn container_from_cgroup(text: &str) -> Option<String> {
    cgroup_facts(text).container
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1c2a91d0be8e2f6f6d0c7a0e3b9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a";
    const UID: &str = "0d2a3b4c-5e6f-4a1b-9c8d-7e6f5a4b3c2d";

    /// (fixture, runtime, pod UID): real cgroup path shapes, one file each
    /// (tests/fixtures/cgroup/README.md says which runtime and driver).
    const FIXTURES: [(&str, Option<Runtime>, Option<&str>); 11] = [
        ("docker-v1-cgroupfs", Some(Runtime::Docker), None),
        ("docker-v2-systemd", Some(Runtime::Docker), None),
        (
            "k8s-v1-cgroupfs-burstable-dockershim",
            Some(Runtime::Unnamed),
            Some(UID),
        ),
        (
            "k8s-v1-systemd-besteffort-docker",
            Some(Runtime::Docker),
            Some(UID),
        ),
        (
            "k8s-v2-systemd-burstable-containerd",
            Some(Runtime::Containerd),
            Some(UID),
        ),
        (
            "k8s-v2-systemd-guaranteed-crio",
            Some(Runtime::Crio),
            Some(UID),
        ),
        (
            "k8s-v2-cgroupfs-guaranteed-containerd",
            Some(Runtime::Unnamed),
            Some(UID),
        ),
        (
            "k8s-v2-cgroupfs-besteffort-cri-dockerd",
            Some(Runtime::Unnamed),
            Some(UID),
        ),
        (
            "k8s-v2-systemd-static-pod",
            Some(Runtime::Containerd),
            Some("3f1e9a2b7c6d5e4f3a2b1c0d9e8f7a6b"),
        ),
        ("k8s-v2-systemd-kind", Some(Runtime::Containerd), Some(UID)),
        ("host-v2-session", None, None),
    ];

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/cgroup/{name}.cgroup",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn fixtures_of_every_runtime_and_driver() {
        for (name, runtime, uid) in FIXTURES {
            let f = cgroup_facts(&fixture(name));
            assert_eq!(f.runtime, runtime, "{name}");
            assert_eq!(f.pod_uid.as_deref(), uid, "{name}");
            if runtime.is_some() {
                assert_eq!(f.container.as_deref(), Some(&ID[..12]), "{name}");
                assert_eq!(f.full_id.as_deref(), Some(ID), "{name}");
            } else {
                assert_eq!(f, CgroupFacts::default(), "{name}");
            }
        }
    }

    #[test]
    fn pod_uids_need_the_right_shape() {
        assert_eq!(
            pod_uid_of(&format!(
                "kubepods-burstable-pod{}.slice",
                UID.replace('-', "_")
            )),
            Some(UID.into())
        );
        assert_eq!(pod_uid_of(&format!("pod{UID}")), Some(UID.into()));
        assert_eq!(pod_uid_of("kubepods"), None);
        assert_eq!(pod_uid_of("kubepods-burstable.slice"), None);
        assert_eq!(pod_uid_of("pod1234"), None);
        assert_eq!(pod_uid_of(&format!("pod{}", UID.replace('-', "x"))), None);
        // A pod UID outside a kubepods path is not one.
        let f = cgroup_facts(&format!("0::/system.slice/pod{UID}/docker-{ID}.scope"));
        assert_eq!(f.pod_uid, None);
    }
}
