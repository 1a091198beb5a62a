//! The fleet app without a network: scheduling, backoff, keys, sorting,
//! drill-down.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::fleet::model::{Health, HostDetail, Scrape};

fn settings() -> FleetSettings {
    FleetSettings::for_tests()
}

fn host(name: &str, fullest: f64, health: Health) -> Host {
    Host {
        name: name.into(),
        instances: vec![format!("{name}:9400")],
        gpus: 8,
        fullest_pct: Some(fullest),
        process_data: true,
        scrape: Scrape {
            health,
            age_s: Some(1.0),
        },
        ..Default::default()
    }
}

fn fetched(hosts: Vec<Host>, view: View) -> Box<Fetched> {
    Box::new(Fetched {
        hosts,
        view,
        warnings: Vec::new(),
        queries: 13,
        bytes: 1000,
        took: Duration::from_millis(20),
    })
}

fn key(app: &mut FleetApp, c: KeyCode) -> Option<Action> {
    let m = if matches!(c, KeyCode::Char(ch) if ch.is_ascii_uppercase()) {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    app.update(Event::Key(KeyEvent::new(c, m)))
}

/// An app that has fetched `hosts` once, at t = 1000 s.
fn loaded(hosts: Vec<Host>) -> FleetApp {
    let mut app = FleetApp::new(settings());
    app.update(Event::Resize(120, 40));
    assert_eq!(
        app.update(Event::Tick(1_000_000)),
        Some(Action::Fetch(Want::Hosts))
    );
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 1_000_000,
        result: Ok(fetched(hosts, View::Hosts)),
    });
    app
}

fn names(app: &FleetApp) -> Vec<String> {
    app.host_rows().iter().map(|h| h.name.clone()).collect()
}

#[test]
fn refreshes_follow_the_interval_one_at_a_time() {
    let mut app = FleetApp::new(settings());
    assert_eq!(
        app.update(Event::Tick(1_000)),
        Some(Action::Fetch(Want::Hosts))
    );
    // In flight: no second one.
    assert_eq!(app.update(Event::Tick(20_000)), None);
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 20_000,
        result: Ok(fetched(vec![], View::Hosts)),
    });
    assert_eq!(app.status().next_ms, 25_000);
    assert_eq!(app.update(Event::Tick(24_999)), None);
    assert_eq!(
        app.update(Event::Tick(25_000)),
        Some(Action::Fetch(Want::Hosts))
    );
}

#[test]
fn failures_back_off_and_keep_the_last_good_data() {
    let mut app = loaded(vec![host("a", 50.0, Health::Up)]);
    let mut t = 1_005_000;
    for (n, wait) in [(1, 1_000), (2, 2_000), (3, 4_000)] {
        assert!(matches!(app.update(Event::Tick(t)), Some(Action::Fetch(_))));
        app.update(Event::Fetched {
            want: Want::Hosts,
            at_ms: t,
            result: Err("connection refused".into()),
        });
        assert_eq!(app.status().failures, n);
        assert_eq!(app.status().next_ms, t + wait);
        assert_eq!(app.hosts().len(), 1, "the last good data stays");
        assert_eq!(app.status().last_ok_ms, Some(1_000_000));
        t += wait;
    }
    assert_eq!(backoff(10, Duration::from_secs(5)), Duration::from_secs(30));
    assert_eq!(
        backoff(10, Duration::from_secs(60)),
        Duration::from_secs(60)
    );
}

#[test]
fn sort_and_filter_the_hosts() {
    let mut app = loaded(vec![
        host("b", 90.0, Health::Up),
        host("a", 10.0, Health::Down),
        host("c", 50.0, Health::Stale),
    ]);
    // Fullest first by default.
    assert_eq!(names(&app), ["b", "c", "a"]);
    key(&mut app, KeyCode::Char('I'));
    assert_eq!(names(&app), ["a", "c", "b"]);
    // `s` goes on to the next column shown: UTIL (all equal: by name).
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.host_sort().column, HostCol::Util);
    // ... and back with `<` to FULLEST, then MEMORY, ...; SCRAPE: worst first.
    while app.host_sort().column != HostCol::Scrape {
        key(&mut app, KeyCode::Char('s'));
    }
    assert_eq!(names(&app), ["a", "c", "b"]);
    key(&mut app, KeyCode::Char('/'));
    for c in "b".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(names(&app), ["b"]);
    key(&mut app, KeyCode::Esc);
    assert_eq!(names(&app).len(), 3);
}

#[test]
fn enter_opens_the_selected_host_and_fetches_it() {
    let mut app = loaded(vec![
        host("a", 10.0, Health::Up),
        host("b", 90.0, Health::Up),
    ]);
    key(&mut app, KeyCode::Down);
    let a = key(&mut app, KeyCode::Enter);
    let want = Want::Host {
        name: "a".into(),
        instances: vec!["a:9400".into()],
    };
    assert_eq!(a, Some(Action::Fetch(want.clone())));
    assert_eq!(app.open_host(), Some("a"));
    assert!(app.detail().is_none());
    app.update(Event::Fetched {
        want: want.clone(),
        at_ms: 1_001_000,
        result: Ok(fetched(
            vec![host("a", 10.0, Health::Up)],
            View::Host(HostDetail {
                host: "a".into(),
                ..Default::default()
            }),
        )),
    });
    assert_eq!(app.detail().map(|d| d.host.as_str()), Some("a"));
    assert_eq!(app.want(), want);
    // Esc: back to the hosts, fetched at once.
    assert_eq!(
        key(&mut app, KeyCode::Esc),
        Some(Action::Fetch(Want::Hosts))
    );
    assert_eq!(app.open_host(), None);
}

#[test]
fn a_screen_change_during_a_refresh_is_fetched_after_it() {
    let mut app = loaded(vec![host("a", 10.0, Health::Up)]);
    assert!(matches!(
        app.update(Event::Tick(1_005_000)),
        Some(Action::Fetch(Want::Hosts))
    ));
    // Tab while the hosts are being fetched: nothing yet...
    assert_eq!(key(&mut app, KeyCode::Tab), None);
    assert_eq!(app.tab(), Tab::Procs);
    // ... and the processes as soon as it ends.
    let next = app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 1_005_100,
        result: Ok(fetched(vec![], View::Hosts)),
    });
    assert_eq!(next, Some(Action::Fetch(Want::Procs)));
}

#[test]
fn paused_refreshes_only_on_request() {
    let mut app = loaded(vec![]);
    key(&mut app, KeyCode::Char(' '));
    assert!(app.paused());
    assert_eq!(app.update(Event::Tick(2_000_000)), None);
    assert_eq!(
        key(&mut app, KeyCode::Char('r')),
        Some(Action::Fetch(Want::Hosts))
    );
}

#[test]
fn keys_work_while_prometheus_is_unreachable() {
    let mut app = FleetApp::new(settings());
    app.update(Event::Resize(100, 30));
    assert!(app.update(Event::Tick(1_000)).is_some());
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 3_000,
        result: Err("no answer within 2.0s".into()),
    });
    assert_eq!(app.status().error.as_deref(), Some("no answer within 2.0s"));
    // A new screen does not hurry the next try: the backoff decides.
    assert_eq!(key(&mut app, KeyCode::Char('e')), None);
    assert_eq!(app.tab(), Tab::Events);
    assert_eq!(
        app.update(Event::Tick(4_000)),
        Some(Action::Fetch(Want::Events))
    );
    key(&mut app, KeyCode::Char('?'));
    assert!(app.help());
    key(&mut app, KeyCode::Esc);
    assert!(!app.help());
    assert_eq!(key(&mut app, KeyCode::Char('q')), Some(Action::Quit));
}

#[test]
fn scrape_ages_grow_while_refreshes_fail() {
    let mut app = loaded(vec![host("a", 50.0, Health::Up)]);
    let age = |app: &FleetApp| app.scrape_shown(&app.hosts()[0]).age_s;
    assert_eq!(age(&app), Some(1.0));
    let mut t = 1_005_000;
    for _ in 0..3 {
        app.update(Event::Tick(t));
        app.update(Event::Fetched {
            want: Want::Hosts,
            at_ms: t,
            result: Err("connection refused".into()),
        });
        t += 2_000;
    }
    app.update(Event::Tick(1_012_000));
    // Fetched 1 s old at 1000 s, nothing good since: 13 s old at 1012 s.
    assert_eq!(age(&app), Some(13.0));
    assert_eq!(app.scrape_shown(&app.hosts()[0]).health, Health::Up);
    // A good refresh starts again from Prometheus's own age.
    app.update(Event::Fetched {
        want: Want::Hosts,
        at_ms: 1_012_000,
        result: Ok(fetched(vec![host("a", 50.0, Health::Up)], View::Hosts)),
    });
    assert_eq!(age(&app), Some(1.0));
}
