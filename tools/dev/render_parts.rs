//! Times the parts of a crowded frame (a tool for keeping frames fast).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)] // a test or a tool: panicking is its way to fail, printing its output
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use vramwatch::app::fixture;

fn main() {
    let app = fixture::app("crowded", 1, 120, (200, 60));
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(app.rows());
    }
    println!("rows(): {:?}", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n {
        let mut buf = Buffer::empty(Rect::new(0, 0, 200, 40));
        (&vramwatch::ui::process_table::ProcessTable(&app)).render(buf.area, &mut buf);
    }
    println!("table: {:?}", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n {
        let mut buf = Buffer::empty(Rect::new(0, 0, 200, 1));
        for i in 0..8 {
            (&vramwatch::ui::gpu_card::GpuLine {
                app: &app,
                index: i,
                selected: false,
            })
                .render(buf.area, &mut buf);
        }
    }
    println!("8 gpu lines: {:?}", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n {
        let mut buf = Buffer::empty(Rect::new(0, 0, 200, 60));
        vramwatch::ui::render(&app, buf.area, &mut buf);
    }
    println!("frame: {:?}", t.elapsed() / n);
}
