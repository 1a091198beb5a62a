//! The lookup against fake Docker sockets: one that answers with a fixture
//! body, and ones that are missing, hang or answer garbage.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

const ID: &str = "4f1c2a91d0be8e2f6f6d0c7a0e3b9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a";
const OTHER: &str = "c41d9e0f5a27b3a8e2f6f6d0c7a0e3b9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6";

#[derive(Clone, Copy)]
enum Behaviour {
    /// 200 with the fixture for `ID`, 404 otherwise.
    Docker,
    /// Accepts and never answers.
    Hang,
    /// Not HTTP.
    Garbage,
}

/// A fake Docker socket in a temp dir; counts the requests it reads.
fn serve(b: Behaviour) -> (tempfile::TempDir, PathBuf, Arc<AtomicUsize>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("docker.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cgroup/docker-inspect-k8s.json"
    ))
    .unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let head = String::from_utf8_lossy(&req).into_owned();
            match b {
                Behaviour::Hang => held.push(conn),
                Behaviour::Garbage => {
                    let _ = conn.write_all(b"\x1b[31mnot http at all\r\n\r\n");
                }
                Behaviour::Docker if head.starts_with(&format!("GET /containers/{ID}/json ")) => {
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(&body);
                }
                Behaviour::Docker => {
                    let msg = b"{\"message\":\"No such container\"}";
                    let _ = write!(
                        conn,
                        "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n",
                        msg.len()
                    );
                    let _ = conn.write_all(msg);
                }
            }
        }
    });
    (dir, path, count)
}

fn names(path: PathBuf) -> Names {
    // No log links: the socket alone.
    Names::new(
        path,
        PathBuf::from("/nonexistent/vramwatch-test/log-links"),
        Duration::from_millis(300),
        Duration::from_secs(60),
        8,
    )
}

/// Polls until `id` has an answer (a name or a remembered failure), at
/// most `limit`; every `get` must return at once.
fn settle(n: &mut Names, id: &str, limit: Duration) -> Option<Arc<ContainerMeta>> {
    settle_as(n, id, true, limit)
}

/// [`settle`] for a container the Docker Engine may know (`docker`) or not.
fn settle_as(n: &mut Names, id: &str, docker: bool, limit: Duration) -> Option<Arc<ContainerMeta>> {
    let start = Instant::now();
    loop {
        let now = Instant::now();
        n.poll(now);
        let t = Instant::now();
        let got = n.get(id, docker, now);
        assert!(t.elapsed() < Duration::from_millis(50), "get blocked");
        if got.is_some() || matches!(n.cache.get(id), Some(Entry::Failed { .. })) {
            return got;
        }
        assert!(start.elapsed() < limit, "no answer within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn names_arrive_from_the_docker_socket() {
    let (_dir, path, count) = serve(Behaviour::Docker);
    let mut n = names(path);
    assert_eq!(
        n.get(ID, true, Instant::now()),
        None,
        "the first ask never waits"
    );
    let meta = settle(&mut n, ID, Duration::from_secs(5)).unwrap();
    assert_eq!(meta.name.as_deref(), Some("trainer"));
    assert_eq!(meta.pod.as_deref(), Some("resnet-train-7d9f8-x2k4q"));
    assert_eq!(meta.namespace.as_deref(), Some("ml-team"));
    assert_eq!(
        meta.pod_uid.as_deref(),
        Some("0d2a3b4c-5e6f-4a1b-9c8d-7e6f5a4b3c2d")
    );
    // Cached: no second request.
    assert!(n.get(ID, true, Instant::now()).is_some());
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // Unknown to Docker: remembered, not asked again, the socket still up.
    assert_eq!(settle(&mut n, OTHER, Duration::from_secs(5)), None);
    assert_eq!(n.get(OTHER, true, Instant::now()), None);
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert!(n.down_until.is_none());
    // ... until the failure is old.
    let later = Instant::now() + Duration::from_secs(61);
    assert_eq!(n.get(OTHER, true, later), None);
    assert!(matches!(n.cache.get(OTHER), Some(Entry::Pending)));
}

#[test]
fn a_missing_socket_gives_no_names_and_is_not_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = names(dir.path().join("absent.sock"));
    assert_eq!(settle(&mut n, ID, Duration::from_secs(5)), None);
    assert!(n.down_until.is_some());
    // Another container: nothing is sent while the socket is down.
    assert_eq!(n.get(OTHER, true, Instant::now()), None);
    assert!(!n.cache.contains_key(OTHER));
}

#[test]
fn a_hanging_socket_costs_the_timeout_on_its_own_thread_only() {
    let (_dir, path, _count) = serve(Behaviour::Hang);
    let mut n = names(path);
    let start = Instant::now();
    assert_eq!(settle(&mut n, ID, Duration::from_secs(5)), None);
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(n.down_until.is_some());
}

#[test]
fn garbage_gives_no_names() {
    let (_dir, path, _count) = serve(Behaviour::Garbage);
    let mut n = names(path);
    assert_eq!(settle(&mut n, ID, Duration::from_secs(5)), None);
    assert!(n.down_until.is_some());
}

#[test]
fn inspect_answers_are_sanitised_and_optional() {
    let m = parse_inspect(
        br#"{"Name":"/web\u001b[2J","Config":{"Labels":{"io.kubernetes.pod.name":"a\u0007b"}}}"#,
    )
    .unwrap();
    assert_eq!(m.name.as_deref(), Some("web"));
    assert_eq!(m.pod.as_deref(), Some("ab"));
    assert_eq!(m.namespace, None);
    let plain = parse_inspect(br#"{"Name":"/gpu-job","Config":{"Labels":null}}"#).unwrap();
    assert_eq!(plain.name.as_deref(), Some("gpu-job"));
    assert_eq!(plain.pod, None);
    assert_eq!(parse_inspect(b"[1,2]"), None);
    assert_eq!(parse_inspect(b"not json"), None);
    let long = format!(r#"{{"Name":"/{}"}}"#, "x".repeat(1000));
    let m = parse_inspect(long.as_bytes()).unwrap();
    assert_eq!(m.name.unwrap().chars().count(), MAX_NAME);
}

#[test]
fn the_cache_is_bounded() {
    let mut n = Names::new(
        PathBuf::from("/nonexistent"),
        PathBuf::from("/nonexistent"),
        Duration::from_millis(100),
        Duration::from_secs(60),
        4,
    );
    let t0 = Instant::now();
    for i in 0..10u8 {
        let id = format!("{:064x}", i);
        n.cache.insert(
            id,
            Entry::Known {
                meta: Arc::default(),
                used: t0 + Duration::from_secs(u64::from(i)),
            },
        );
        while n.cache.len() > n.cap {
            assert!(n.make_room(t0));
        }
    }
    assert_eq!(n.cache.len(), 4);
    // The most recently used stay.
    assert!(n.cache.contains_key(&format!("{:064x}", 9)));
    assert!(!n.cache.contains_key(&format!("{:064x}", 0)));
    // A new id makes room rather than growing the cache.
    let _ = n.get(&format!("{:064x}", 42), true, t0 + Duration::from_secs(20));
    assert!(n.cache.len() <= 4);
}

#[test]
fn a_kubernetes_node_without_docker_names_pods_from_the_log_links() {
    // containerd's node: no Docker socket, the kubelet's links.
    let dir = tempfile::tempdir().unwrap();
    let links = dir.path().join("containers");
    std::fs::create_dir(&links).unwrap();
    std::fs::write(links.join(format!("trainer-0_ml_pytorch-{ID}.log")), b"").unwrap();
    let mut n = Names::new(
        dir.path().join("absent.sock"),
        links.clone(),
        Duration::from_millis(300),
        Duration::from_secs(60),
        8,
    );
    let m = settle(&mut n, ID, Duration::from_secs(5)).expect("named from the links");
    assert_eq!(
        (m.pod.as_deref(), m.namespace.as_deref(), m.name.as_deref()),
        (Some("trainer-0"), Some("ml"), Some("pytorch"))
    );
    // A container with no link yet: it alone is retried later; lookups of
    // others go on (the node is not "down" for want of a Docker socket).
    assert_eq!(settle(&mut n, OTHER, Duration::from_secs(5)), None);
    assert!(n.down_until.is_none());
    assert!(matches!(n.cache.get(OTHER), Some(Entry::Failed { .. })));
    let third = "ab".repeat(32);
    std::fs::write(links.join(format!("p_ns_c-{third}.log")), b"").unwrap();
    let m = settle(&mut n, &third, Duration::from_secs(5)).expect("a later container");
    assert_eq!(m.name.as_deref(), Some("c"));
}

#[test]
fn a_containerd_container_is_named_from_the_links_and_never_asked_of_docker() {
    // A Docker socket that would answer for ID, and the kubelet's links.
    let (dir, path, count) = serve(Behaviour::Docker);
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    std::fs::write(links.join(format!("trainer-0_ml_pytorch-{OTHER}.log")), b"").unwrap();
    let mut n = Names::new(
        path,
        links,
        Duration::from_millis(300),
        Duration::from_secs(60),
        8,
    );
    // containerd's container: from the links.
    let m = settle_as(&mut n, OTHER, false, Duration::from_secs(5)).expect("named");
    assert_eq!(m.pod.as_deref(), Some("trainer-0"));
    // One the links do not name: not asked of Docker either.
    assert_eq!(settle_as(&mut n, ID, false, Duration::from_secs(5)), None);
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert!(n.down_until.is_none());
}
