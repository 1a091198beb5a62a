//! Which cells change per frame when a real recording is replayed at its
//! own pace, and the bytes a terminal receives: a tool for keeping the
//! dashboard's output small on real data.
//! `cargo run --release --example frame_diff_rec -- FILE [COLS ROWS FROM TO]`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use vramwatch::app::{App, Event};
use vramwatch::commands::replay::open_app;
use vramwatch::theme::{Depth, Theme};

#[path = "../../benches/support/counting_writer.rs"]
mod counting_writer;
use counting_writer::CountingWriter;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let file = a.first().expect("FILE");
    let num = |i: usize, d: usize| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (w, h, from, to) = (
        num(1, 120) as u16,
        num(2, 40) as u16,
        num(3, 60),
        num(4, 180),
    );
    let mut app: App = open_app(
        std::path::Path::new(file),
        Default::default(),
        "root".into(),
        Some(Theme::new(vramwatch::config::Theme::Dark, Depth::Ansi256)),
    )
    .expect("open");
    app.update(Event::Resize(w, h));
    let count = CountingWriter::default();
    let total = count.0.clone();
    let mut term = Terminal::with_options(
        CrosstermBackend::new(vramwatch::tui::FrameWriter::new(count, true)),
        ratatui::TerminalOptions {
            viewport: ratatui::Viewport::Fixed(Rect::new(0, 0, w, h)),
        },
    )
    .expect("terminal");
    let mut per_row = vec![0usize; h as usize];
    let mut prev: Option<Buffer> = None;
    let mut start_bytes = 0;
    for i in 0..to {
        app.update(Event::PlayTick);
        let _ = term.draw(|f| vramwatch::ui::draw(f, &app));
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        vramwatch::ui::render(&app, buf.area, &mut buf);
        if i == from {
            start_bytes = total.get();
        }
        if std::env::var("SHOW_ROW").is_ok() && i > from && i < from + 8 {
            let y: u16 = std::env::var("SHOW_ROW").unwrap().parse().unwrap_or(0);
            let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            println!("{line}");
        }
        if let Some(p) = &prev
            && i > from
        {
            for (j, (x, y)) in p.content.iter().zip(&buf.content).enumerate() {
                if x != y {
                    per_row[j / w as usize] += 1;
                }
            }
        }
        prev = Some(buf);
    }
    let frames = (to - from) as f64;
    let last = prev.expect("frames");
    for (y, n) in per_row.iter().enumerate() {
        let line: String = (0..w).map(|x| last[(x, y as u16)].symbol()).collect();
        println!("{:>5.1}/s {}", *n as f64 / frames, line.trim_end());
    }
    println!(
        "bytes/s: {:.0}",
        (total.get() - start_bytes) as f64 / frames
    );
}
