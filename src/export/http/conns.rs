//! Who holds the server's connections.
//!
//! At most `max_total` connections are open, and at most `max_per_client`
//! per client: an IPv4 address, or an IPv6 /64 (one machine usually has a
//! whole /64). A newcomer over either bound takes the place of the
//! connection idle longest (no request in flight) of the same client, or,
//! over the total, of the client holding the most; only when every such
//! connection is in the middle of a request is the newcomer closed. So a
//! client that opens connections by the thousand closes its own, never a
//! scraper's, and a newcomer is never turned away while an older
//! connection sits idle. (Neither hyper nor tower has a per-client bound;
//! hyper's header timeout still closes what stays silent.)

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

/// The client a peer address counts against.
pub(super) fn client_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// One open connection.
pub(super) struct Slot {
    id: u64,
    client: IpAddr,
    epoch: Instant,
    /// Requests whose responses are not written yet.
    busy: AtomicU32,
    /// When it last finished a response (or opened), ms since `epoch`.
    idle_since: AtomicU64,
    evicted: Notify,
}

impl Slot {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Resolves once the registry gave this connection's place to a
    /// newcomer: the connection should close.
    pub(super) async fn evicted(&self) {
        self.evicted.notified().await;
    }

    /// A request begins; the connection is busy until the guard drops
    /// (with the response's body, once written).
    pub(super) fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }
}

/// A request in flight on a connection.
pub(super) struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.idle_since.store(self.0.now(), Ordering::Release);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    total: usize,
    clients: HashMap<IpAddr, Vec<Arc<Slot>>>,
    evictions: u64,
}

/// The registry of open connections.
pub(super) struct Conns {
    max_total: usize,
    max_per_client: usize,
    epoch: Instant,
    inner: Mutex<Inner>,
}

/// A connection's place; dropping it frees the place.
pub(super) struct Guard {
    conns: Arc<Conns>,
    slot: Arc<Slot>,
}

impl Guard {
    pub(super) fn slot(&self) -> &Arc<Slot> {
        &self.slot
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut g = self.conns.lock();
        let inner = &mut *g;
        if let Some(list) = inner.clients.get_mut(&self.slot.client)
            && let Some(i) = list.iter().position(|s| s.id == self.slot.id)
        {
            list.swap_remove(i);
            inner.total -= 1;
            if list.is_empty() {
                inner.clients.remove(&self.slot.client);
            }
        }
    }
}

impl Conns {
    pub(super) fn new(max_total: usize, max_per_client: usize) -> Arc<Conns> {
        Arc::new(Conns {
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            epoch: Instant::now(),
            inner: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Plain counts: a panic while holding it leaves them usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a connection from `peer`, making room as the module
    /// says; `None`: close it.
    pub(super) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Guard> {
        let client = client_of(peer);
        let mut g = self.lock();
        let inner = &mut *g;
        let mine = inner.clients.get(&client).map_or(0, Vec::len);
        if mine >= self.max_per_client {
            if !evict_idlest(inner, client) {
                return None;
            }
        } else if inner.total >= self.max_total {
            // The heaviest client that has an idle connection.
            let victim = inner
                .clients
                .iter()
                .filter(|(_, l)| l.iter().any(|s| s.busy.load(Ordering::Acquire) == 0))
                .max_by_key(|(_, l)| l.len())
                .map(|(c, _)| *c);
            if !victim.is_some_and(|c| evict_idlest(inner, c)) {
                return None;
            }
        }
        inner.next_id += 1;
        let slot = Arc::new(Slot {
            id: inner.next_id,
            client,
            epoch: self.epoch,
            busy: AtomicU32::new(0),
            idle_since: AtomicU64::new(self.epoch.elapsed().as_millis() as u64),
            evicted: Notify::new(),
        });
        inner.clients.entry(client).or_default().push(slot.clone());
        inner.total += 1;
        Some(Guard {
            conns: self.clone(),
            slot,
        })
    }

    /// Connections open now, and how many were closed to make room.
    #[cfg(test)]
    pub(super) fn counts(&self) -> (usize, u64) {
        let g = self.lock();
        (g.total, g.evictions)
    }
}

/// Closes `client`'s connection idle longest; false if all are busy.
fn evict_idlest(inner: &mut Inner, client: IpAddr) -> bool {
    let Some(list) = inner.clients.get_mut(&client) else {
        return false;
    };
    let idlest = list
        .iter()
        .enumerate()
        .filter(|(_, s)| s.busy.load(Ordering::Acquire) == 0)
        .min_by_key(|(_, s)| s.idle_since.load(Ordering::Acquire))
        .map(|(i, _)| i);
    let Some(i) = idlest else {
        return false;
    };
    let slot = list.swap_remove(i);
    if list.is_empty() {
        inner.clients.remove(&client);
    }
    inner.total -= 1;
    inner.evictions += 1;
    // Stored as a permit: the connection's task sees it even if it is not
    // waiting yet.
    slot.evicted.notify_one();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn clients_are_addresses_and_ipv6_prefixes() {
        assert_eq!(client_of(ip("10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(client_of(ip("::ffff:10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(client_of(ip("2001:db8:1:2:aa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            client_of(ip("2001:db8:1:2:ffff::9")),
            client_of(ip("2001:db8:1:2::1"))
        );
    }

    #[test]
    fn a_client_over_its_bound_loses_its_own_idlest_connection() {
        let c = Conns::new(100, 3);
        let a: Vec<Guard> = (0..3).map(|_| c.admit(ip("10.0.0.1")).unwrap()).collect();
        // The first is busy: the second, idle longest, makes room.
        let _busy = a[0].slot().begin();
        let b = c.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(c.counts(), (3, 1));
        let still: Vec<u64> = c.lock().clients[&ip("10.0.0.1")]
            .iter()
            .map(|s| s.id)
            .collect();
        assert!(still.contains(&a[0].slot().id) && still.contains(&b.slot().id));
        assert!(!still.contains(&a[1].slot().id));
        // Another client is not affected.
        let _o = c.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(c.counts(), (4, 1));
        // Dropping an evicted guard changes nothing; dropping a live one frees.
        drop(a);
        assert_eq!(c.counts(), (2, 1));
    }

    #[test]
    fn over_the_total_the_heaviest_client_makes_room_and_busy_ones_stay() {
        let c = Conns::new(4, 10);
        let heavy: Vec<Guard> = (0..3).map(|_| c.admit(ip("10.0.0.9")).unwrap()).collect();
        let light = c.admit(ip("10.0.0.1")).unwrap();
        let newcomer = c.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(c.counts(), (4, 1));
        assert_eq!(c.lock().clients[&ip("10.0.0.9")].len(), 2);
        // Everything busy: the newcomer is refused.
        let _b: Vec<Busy> = heavy
            .iter()
            .chain([&light, &newcomer])
            .map(|g| g.slot().begin())
            .collect();
        assert!(c.admit(ip("10.0.0.3")).is_none());
        assert_eq!(c.counts(), (4, 1));
    }

    #[tokio::test]
    async fn an_evicted_connection_hears_of_it() {
        let c = Conns::new(10, 1);
        let first = c.admit(ip("10.0.0.1")).unwrap();
        let _second = c.admit(ip("10.0.0.1")).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(1), first.slot().evicted())
            .await
            .expect("told");
    }
}
