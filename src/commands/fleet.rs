//! `vramwatch fleet`: the fleet dashboard's event loop (or one fetch with
//! `--once`). Terminal events, refresh results and a one-second tick go
//! into `FleetApp::update`; the actions it returns are carried out here.
//! Refreshes run as tasks of this loop's runtime, so a slow or unreachable
//! Prometheus never stalls the keyboard or the screen.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::app::Clock;
use crate::cli::{ColorArg, SourceArgs, UiArgs};
use crate::fleet::app::{Action, Event, FleetApp, FleetSettings};
use crate::fleet::client::Client;
use crate::fleet::fetch::{Fetched, Fetcher, Want};
use crate::fleet::model::{Host, Summary};
use crate::fleet::ui;
use crate::model::now_ms;
use crate::model::units::{bytes_short, duration_short, rate_short};
use crate::theme::{Theme, depth_from_env};
use crate::tui::Tui;

pub use crate::fleet::args::{Color, FleetArgs, Options};

/// Runs `vramwatch fleet`. `source` and `ui` are the options given before
/// `fleet` (the config file, the colour depth); the fleet's own win.
pub fn run(args: &FleetArgs, source: &SourceArgs, ui: &UiArgs) -> Result<()> {
    if source.demo.is_some() {
        bail!(
            "fleet reads Prometheus; --demo does not apply (point it at a Prometheus that scrapes `vramwatch serve --demo`)"
        );
    }
    let opts = Options::resolve(args, |k| std::env::var(k).ok()).map_err(anyhow::Error::msg)?;
    let source = SourceArgs {
        config: args.config.clone().or_else(|| source.config.clone()),
        ..SourceArgs::default()
    };
    let ui = UiArgs {
        color: args.color.map(color).or(ui.color),
        ascii: args.ascii || ui.ascii,
        ..UiArgs::default()
    };
    let config = super::dashboard::load_config(&source, &ui)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let fetcher = Arc::new(fetcher(&opts)?);
        if args.once {
            return once(&fetcher, args.json).await;
        }
        let settings = FleetSettings {
            theme: Theme::new(config.display.theme, depth_from_env(config.display.color)),
            clock: Clock::Local,
            prometheus: opts.url.clone(),
            selector: opts.queries.matchers().to_owned(),
            interval: opts.interval,
            top: opts.top,
            config,
        };
        run_loop(FleetApp::new(settings), fetcher).await
    })
}

fn color(c: Color) -> ColorArg {
    match c {
        Color::Auto => ColorArg::Auto,
        Color::Ansi16 => ColorArg::Ansi16,
        Color::Ansi256 => ColorArg::Ansi256,
        Color::Truecolor => ColorArg::Truecolor,
    }
}

/// The client and queries of `opts`.
pub fn fetcher(opts: &Options) -> Result<Fetcher> {
    Ok(Fetcher {
        client: Client::new(&opts.url, &opts.auth, opts.timeout)?,
        queries: opts.queries.clone(),
        top: opts.top,
        history: Duration::from_secs(600),
        scoped: opts.scoped,
    })
}

/// `--once`: the hosts, as JSON or a table.
async fn once(fetcher: &Fetcher, json: bool) -> Result<()> {
    let f = fetcher
        .fetch(&Want::Hosts)
        .await
        .context("reading the fleet from Prometheus")?;
    let mut out = std::io::stdout().lock();
    if json {
        let doc = summary_json(fetcher.client.base(), fetcher.queries.matchers(), &f);
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", table(&f.hosts))?;
        for w in &f.warnings {
            crate::tell!("vramwatch: warning: {w}");
        }
    }
    out.flush()?;
    Ok(())
}

/// What `--once --json` prints: where from, the totals, every host, and
/// what the refresh cost.
pub fn summary_json(prometheus: &str, selector: &str, f: &Fetched) -> serde_json::Value {
    serde_json::json!({
        "prometheus": prometheus,
        "selector": selector,
        "time": now_ms() as f64 / 1000.0,
        "summary": Summary::of(&f.hosts),
        "hosts": f.hosts,
        "warnings": f.warnings,
        "queries": f.queries,
        "bytes": f.bytes,
        "took_ms": f.took.as_millis() as u64,
    })
}

/// The hosts as a plain table.
pub fn table(hosts: &[Host]) -> String {
    let mut s = format!(
        "{:<24} {:>4} {:>7} {:>7} {:>7} {:>8} {:>7} {:>6} {:>5}  {:<10} {}\n",
        "HOST",
        "GPUS",
        "USED",
        "TOTAL",
        "FULLEST",
        "GROWTH",
        "FULL IN",
        "ALERTS",
        "LEAKS",
        "SCRAPE",
        "PROCESSES"
    );
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for h in hosts {
        let scrape = match h.scrape.age_s {
            Some(a) => format!(
                "{} {}",
                h.scrape.health.name(),
                duration_short(a.round() as u64)
            ),
            None => h.scrape.health.name().to_owned(),
        };
        s.push_str(&format!(
            "{:<24} {:>4} {:>7} {:>7} {:>7} {:>8} {:>7} {:>6} {:>5}  {:<10} {}\n",
            h.name,
            h.gpus,
            opt(h.used_bytes.map(bytes_short)),
            opt(h.total_bytes.map(bytes_short)),
            opt(h.fullest_pct.map(|p| format!("{p:.0}%"))),
            opt(h.growth_bps.map(rate_short)),
            opt(h.full_in_s.map(|s| duration_short(s.round() as u64))),
            h.alerts,
            h.leaks,
            scrape,
            if h.process_data {
                "yes"
            } else {
                "no process data"
            },
        ));
    }
    s
}

/// Starts one refresh; its result comes back as an event.
fn spawn_fetch(fetcher: &Arc<Fetcher>, want: Want, tx: &mpsc::UnboundedSender<Event>) {
    let (fetcher, tx) = (fetcher.clone(), tx.clone());
    tokio::spawn(async move {
        let result = fetcher
            .fetch(&want)
            .await
            .map(Box::new)
            .map_err(|e| e.to_string());
        let _ = tx.send(Event::Fetched {
            want,
            at_ms: now_ms(),
            result,
        });
    });
}

/// The dashboard until `q`, SIGINT, SIGTERM or SIGHUP.
pub async fn run_loop(mut app: FleetApp, fetcher: Arc<Fetcher>) -> Result<()> {
    let mut tui = Tui::enter(app.config().display.mouse).context("opening the dashboard")?;
    let size = tui.terminal.size().context("reading the terminal size")?;
    let mut events = EventStream::new();
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut hup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let (tx, mut results) = mpsc::unbounded_channel::<Event>();
    let mut queue = vec![
        Event::Tick(now_ms()),
        Event::Resize(size.width, size.height),
    ];
    'run: loop {
        while let Some(ev) = queue.pop() {
            match app.update(ev) {
                Some(Action::Quit) => break 'run,
                Some(Action::Suspend) => tui.suspend().context("suspending")?,
                Some(Action::Fetch(want)) => spawn_fetch(&fetcher, want, &tx),
                None => {}
            }
        }
        tui.terminal
            .draw(|f| ui::draw(f, &app))
            .context("drawing the dashboard")?;
        // Wake for the next second (ages on screen), or when a refresh is
        // due, whichever comes first.
        let now = now_ms();
        let next_second = 1000 - now % 1000;
        let due = app.status().next_ms.saturating_sub(now).max(1);
        let wait = Duration::from_millis(next_second.min(due).max(5));
        let ev = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(TermEvent::Key(k))) => Event::Key(k),
                Some(Ok(TermEvent::Mouse(m))) => Event::Mouse(m),
                Some(Ok(TermEvent::Resize(w, h))) => Event::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => break,
            },
            Some(r) = results.recv() => r,
            _ = tokio::time::sleep(wait) => Event::Tick(now_ms()),
            _ = term.recv() => break,
            _ = hup.recv() => break,
            _ = int.recv() => break,
        };
        queue.push(Event::Tick(now_ms()));
        queue.push(ev);
    }
    Ok(())
}
