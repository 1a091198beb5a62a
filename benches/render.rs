//! Drawing: one full frame at 200×60 with 8 GPUs and 300 processes, one at
//! 120×40 on the default demo, and the steady-state bytes written to the
//! terminal per second at 120×40 on the default demo (what SSH carries),
//! printed before the timings.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use vramwatch::app::{App, Event, fixture};
use vramwatch::theme::{Depth, Theme};

#[path = "support/counting_writer.rs"]
mod counting_writer;
use counting_writer::CountingWriter;

/// Bytes per second over `measure` seconds after `warm` seconds, one frame
/// per sample, as the dashboard draws (ratatui diffs frames).
fn bytes_per_second(
    scenario: &str,
    size: (u16, u16),
    depth: Depth,
    warm: u64,
    measure: u64,
) -> f64 {
    let config = vramwatch::config::Config::default();
    let (system, snaps) = fixture::analysed(scenario, 1, warm + measure, "me", &config);
    let mut settings = fixture::settings(config, system);
    settings.theme = Theme::new(vramwatch::config::Theme::Dark, depth);
    let mut app = App::live(settings);
    app.update(Event::Resize(size.0, size.1));
    let count = CountingWriter::default();
    let total = count.0.clone();
    // As the dashboard writes: through its FrameWriter.
    let backend = CrosstermBackend::new(vramwatch::tui::FrameWriter::new(count, true));
    let mut term = match Terminal::with_options(
        backend,
        ratatui::TerminalOptions {
            viewport: ratatui::Viewport::Fixed(Rect::new(0, 0, size.0, size.1)),
        },
    ) {
        Ok(t) => t,
        Err(_) => return f64::NAN,
    };
    let mut at_start = 0;
    for (i, s) in snaps.iter().enumerate() {
        app.update(Event::Snapshot(s.clone()));
        let _ = term.draw(|f| vramwatch::ui::draw(f, &app));
        if i as u64 + 1 == warm {
            at_start = total.get();
        }
    }
    (total.get() - at_start) as f64 / measure as f64
}

fn frames(c: &mut Criterion) {
    let big = fixture::app("crowded", 1, 120, (200, 60));
    c.bench_function("render/frame 200x60, 8 GPUs x 300 procs", |b| {
        b.iter(|| {
            let mut buf = Buffer::empty(Rect::new(0, 0, 200, 60));
            vramwatch::ui::render(black_box(&big), buf.area, &mut buf);
            buf
        })
    });
    let demo = fixture::app("demo", 1, 120, (120, 40));
    c.bench_function("render/frame 120x40, default demo", |b| {
        b.iter(|| {
            let mut buf = Buffer::empty(Rect::new(0, 0, 120, 40));
            vramwatch::ui::render(black_box(&demo), buf.area, &mut buf);
            buf
        })
    });
}

criterion_group!(benches, frames);

fn main() {
    for (scenario, size) in [
        ("demo", (120, 40)),
        ("training", (120, 40)),
        ("training", (200, 60)),
        ("crowded", (200, 60)),
    ] {
        for depth in [Depth::Ansi256, Depth::TrueColor] {
            let bps = bytes_per_second(scenario, size, depth, 60, 120);
            println!(
                "terminal output, {scenario} at {}x{}, {depth:?}: {bps:.0} bytes/s (steady state, 1 s interval)",
                size.0, size.1
            );
        }
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
