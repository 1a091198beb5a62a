//! Which cells change from one frame to the next on a sim scenario: a tool
//! for keeping the dashboard's terminal output small.
//! `cargo run --example frame_diff -- training 120 40`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use vramwatch::app::{App, Event, fixture};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = args.get(1).map_or("training", String::as_str);
    let w: u16 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(120);
    let h: u16 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(40);
    let config = vramwatch::config::Config::default();
    let (system, snaps) = fixture::analysed(scenario, 1, 180, "me", &config);
    let mut app = App::live(fixture::settings(config, system));
    app.update(Event::Resize(w, h));
    let mut prev: Option<Buffer> = None;
    let mut per_row = vec![0usize; h as usize];
    for (i, s) in snaps.iter().enumerate() {
        app.update(Event::Snapshot(s.clone()));
        let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
        vramwatch::ui::render(&app, buf.area, &mut buf);
        if let Some(p) = &prev
            && i >= 120
        {
            for (j, (a, b)) in p.content.iter().zip(&buf.content).enumerate() {
                if a != b {
                    per_row[j / w as usize] += 1;
                }
            }
        }
        prev = Some(buf);
    }
    let last = prev.expect("frames");
    for (y, n) in per_row.iter().enumerate() {
        let line: String = (0..w).map(|x| last[(x, y as u16)].symbol()).collect();
        println!("{:>5.1}/s {}", *n as f64 / 59.0, line.trim_end());
    }
}
