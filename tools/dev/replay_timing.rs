//! Times the replay dashboard over a large recording: open + first frame,
//! and a jump to the end (loads a window). `cargo run --release --example
//! replay_timing -- [SNAPSHOTS]` writes a crowded 8-GPU × 300-process
//! recording of that many seconds to a temp dir first (default 7200).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use vramwatch::app::Event;
use vramwatch::record::{Header, Writer, WriterOptions};
use vramwatch::source::sim::SimWorld;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7200);
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("big.jsonl.zst");
    let t0 = vramwatch::app::fixture::T0_MS;
    let w = SimWorld::new("crowded", 1, t0).expect("sim");
    let mut writer = Writer::create(
        &path,
        Header::new(&w.info(), 1000, t0),
        WriterOptions::default(),
    )
    .expect("create");
    for i in 0..n {
        writer.write(&w.snapshot(i, t0 + i * 1000, "me"));
    }
    let stats = writer.finish().expect("finish");
    println!("{n} snapshots, {} bytes", stats.total_bytes);
    let t = Instant::now();
    let mut app =
        vramwatch::commands::replay::open_app(&path, Default::default(), "me".into(), None)
            .expect("open");
    app.update(Event::Resize(200, 60));
    let mut buf = Buffer::empty(Rect::new(0, 0, 200, 60));
    vramwatch::ui::render(&app, buf.area, &mut buf);
    println!("open + first frame: {:?}", t.elapsed());
    let t = Instant::now();
    app.update(Event::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::End,
        crossterm::event::KeyModifiers::NONE,
    )));
    let mut buf = Buffer::empty(Rect::new(0, 0, 200, 60));
    vramwatch::ui::render(&app, buf.area, &mut buf);
    println!("jump to the end + frame: {:?}", t.elapsed());
    let t = Instant::now();
    app.update(Event::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Left,
        crossterm::event::KeyModifiers::NONE,
    )));
    println!("step back: {:?}", t.elapsed());
    // From the start, 600 steps forward (the analysis keeps a copy of
    // itself every 30), then 60 back.
    let key = |app: &mut vramwatch::app::App, code| {
        app.update(Event::Key(crossterm::event::KeyEvent::new(
            code,
            crossterm::event::KeyModifiers::NONE,
        )));
    };
    key(&mut app, crossterm::event::KeyCode::Home);
    let t = Instant::now();
    for _ in 0..600 {
        key(&mut app, crossterm::event::KeyCode::Right);
    }
    println!("600 steps forward: {:?} each", t.elapsed() / 600);
    let t = Instant::now();
    for _ in 0..60 {
        key(&mut app, crossterm::event::KeyCode::Left);
    }
    println!("60 steps back: {:?} each", t.elapsed() / 60);
}
