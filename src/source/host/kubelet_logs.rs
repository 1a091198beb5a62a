//! Kubernetes names from the kubelet's log links. On every Kubernetes node
//! the kubelet keeps, for each container it runs, a link
//! `/var/log/containers/<pod>_<namespace>_<container>-<container id>.log`
//! (whatever the runtime: containerd, CRI-O, cri-dockerd; log shippers
//! such as Fluent Bit read the same names). A process whose cgroup names
//! its container id gets its pod, namespace and container name from there
//! without speaking CRI's gRPC or asking the kubelet's API.
//!
//! Pod and namespace names are DNS names and container names DNS labels:
//! none holds `_`, so a link's name splits into exactly three parts.

use std::path::Path;

use crate::source::host::containers::{ContainerMeta, clean};

/// Where the kubelet keeps the links.
pub(crate) const KUBELET_LOG_LINKS: &str = "/var/log/containers";

/// Most directory entries read in one lookup (a node runs at most a few
/// hundred pods; a larger folder is not the kubelet's).
const MAX_ENTRIES: usize = 20_000;

/// The names the links in `dir` give container `id` (its full id):
/// `Ok(None)` when no link names it, `Err` when the folder cannot be read
/// (not a Kubernetes node).
pub(crate) fn lookup(dir: &Path, id: &str) -> std::io::Result<Option<ContainerMeta>> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let tail = format!("-{id}.log");
    for entry in std::fs::read_dir(dir)?.take(MAX_ENTRIES) {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(meta) = name.strip_suffix(&tail).and_then(parse) {
            return Ok(Some(meta));
        }
    }
    Ok(None)
}

/// `<pod>_<namespace>_<container>` → the names, sanitised.
fn parse(stem: &str) -> Option<ContainerMeta> {
    let mut parts = stem.split('_');
    let (pod, namespace, container) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    Some(ContainerMeta {
        name: Some(clean(container)?),
        pod: Some(clean(pod)?),
        namespace: Some(clean(namespace)?),
        pod_uid: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1c2a91d0be8e2f6f6d0c7a0e3b9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a";
    const OTHER: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn dir_with(names: &[String]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for n in names {
            std::fs::write(d.path().join(n), b"").unwrap();
        }
        d
    }

    #[test]
    fn a_link_gives_pod_namespace_and_container() {
        let d = dir_with(&[
            format!("coredns-5d78c9869d-x2x9q_kube-system_coredns-{OTHER}.log"),
            format!("trainer-7f9c-0_ml-team_pytorch-{ID}.log"),
        ]);
        let m = lookup(d.path(), ID).unwrap().expect("found");
        assert_eq!(m.pod.as_deref(), Some("trainer-7f9c-0"));
        assert_eq!(m.namespace.as_deref(), Some("ml-team"));
        assert_eq!(m.name.as_deref(), Some("pytorch"));
        assert_eq!(m.pod_uid, None);
        // A container name with dashes: the id is the last part.
        let d = dir_with(&[format!("p_ns_side-car-{ID}.log")]);
        let m = lookup(d.path(), ID).unwrap().unwrap();
        assert_eq!(m.name.as_deref(), Some("side-car"));
    }

    #[test]
    fn no_link_no_folder_and_odd_names() {
        let d = dir_with(&[format!("a_b_c-{OTHER}.log")]);
        assert!(lookup(d.path(), ID).unwrap().is_none());
        assert!(lookup(&d.path().join("absent"), ID).is_err());
        // Not three parts, an empty part, or an id that is not hex.
        let d = dir_with(&[
            format!("a_b_c_d-{ID}.log"),
            format!("a__c-{ID}.log"),
            format!("ab-{ID}.log"),
        ]);
        assert!(lookup(d.path(), ID).unwrap().is_none());
        assert!(lookup(d.path(), "../etc").unwrap().is_none());
        assert!(lookup(d.path(), "").unwrap().is_none());
    }

    #[test]
    fn names_are_sanitised() {
        let d = dir_with(&[format!("pod\u{1b}[2J_ns_c\u{7}x-{ID}.log")]);
        let m = lookup(d.path(), ID).unwrap().unwrap();
        assert!(!m.pod.as_deref().unwrap().contains('\u{1b}'), "{m:?}");
        assert!(!m.name.as_deref().unwrap().contains('\u{7}'), "{m:?}");
    }
}
