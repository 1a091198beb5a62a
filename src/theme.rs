//! Colours and styles. Colours are chosen as RGB and mapped down once, at
//! start, to what the terminal can show (256 or 16 colours, or none for
//! `NO_COLOR`); thresholds also carry a symbol and bold/reverse so they
//! read without colour.

pub(crate) mod ascii;

use ratatui::style::{Color, Modifier, Style};

use crate::config::{ColorDepth, Severity, Theme as ThemeName};

/// What the terminal can show, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    None,
    Ansi16,
    Ansi256,
    TrueColor,
}

/// An explicit depth is taken as it is (it beats `NO_COLOR`, as
/// no-color.org asks). `auto` is resolved from the environment: `NO_COLOR`
/// (any non-empty value) turns colour off; `COLORTERM=truecolor|24bit` means RGB; a `TERM` with
/// `256color` means 256; anything else gets the 16 ANSI colours (SSH often
/// drops COLORTERM, so 256 is not assumed).
pub fn resolve_depth(
    wanted: ColorDepth,
    no_color: Option<&str>,
    colorterm: Option<&str>,
    term: Option<&str>,
) -> Depth {
    match wanted {
        // An explicit depth (flag or config) beats `NO_COLOR` (no-color.org).
        ColorDepth::Ansi16 => Depth::Ansi16,
        ColorDepth::Ansi256 => Depth::Ansi256,
        ColorDepth::TrueColor => Depth::TrueColor,
        ColorDepth::Auto if no_color.is_some_and(|v| !v.is_empty()) => Depth::None,
        ColorDepth::Auto => {
            let ct = colorterm.unwrap_or("").to_ascii_lowercase();
            if ct == "truecolor" || ct == "24bit" {
                Depth::TrueColor
            } else if term.unwrap_or("").contains("256color") {
                Depth::Ansi256
            } else if term == Some("dumb") {
                Depth::None
            } else {
                Depth::Ansi16
            }
        }
    }
}

/// The depth from this process's environment.
pub fn depth_from_env(wanted: ColorDepth) -> Depth {
    let var = |k| std::env::var(k).ok();
    resolve_depth(
        wanted,
        var("NO_COLOR").as_deref(),
        var("COLORTERM").as_deref(),
        var("TERM").as_deref(),
    )
}

const ANSI16: [(Color, (u8, u8, u8)); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 49, 49)),
    (Color::Green, (13, 188, 121)),
    (Color::Yellow, (229, 229, 16)),
    (Color::Blue, (36, 114, 200)),
    (Color::Magenta, (188, 63, 188)),
    (Color::Cyan, (17, 168, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (102, 102, 102)),
    (Color::LightRed, (241, 76, 76)),
    (Color::LightGreen, (35, 209, 139)),
    (Color::LightYellow, (245, 245, 67)),
    (Color::LightBlue, (59, 142, 234)),
    (Color::LightMagenta, (214, 112, 214)),
    (Color::LightCyan, (41, 184, 219)),
    (Color::White, (255, 255, 255)),
];

fn dist(a: (u8, u8, u8), b: (u8, u8, u8)) -> u32 {
    let d = |x: u8, y: u8| (x as i32 - y as i32).pow(2) as u32;
    d(a.0, b.0) * 3 + d(a.1, b.1) * 4 + d(a.2, b.2) * 2
}

/// An RGB colour as the terminal can show it.
pub fn map_rgb(rgb: (u8, u8, u8), depth: Depth) -> Color {
    match depth {
        Depth::None => Color::Reset,
        Depth::TrueColor => Color::Rgb(rgb.0, rgb.1, rgb.2),
        Depth::Ansi256 => {
            // The 6×6×6 cube and the 24 greys; take the nearer.
            let level = |v: u8| -> u8 {
                if v < 48 {
                    0
                } else if v < 115 {
                    1
                } else {
                    (v - 35) / 40
                }
            };
            let steps = [0u8, 95, 135, 175, 215, 255];
            let (r, g, b) = (level(rgb.0), level(rgb.1), level(rgb.2));
            let cube = (steps[r as usize], steps[g as usize], steps[b as usize]);
            let cube_index = 16 + 36 * r + 6 * g + b;
            let avg = (rgb.0 as u32 + rgb.1 as u32 + rgb.2 as u32) / 3;
            let grey_i = if avg > 238 {
                23
            } else {
                (avg.saturating_sub(3)) / 10
            } as u8;
            let grey_v = 8 + 10 * grey_i;
            if dist(rgb, (grey_v, grey_v, grey_v)) < dist(rgb, cube) {
                Color::Indexed(232 + grey_i)
            } else {
                Color::Indexed(cube_index)
            }
        }
        Depth::Ansi16 => ANSI16
            .iter()
            .min_by_key(|(_, c)| dist(rgb, *c))
            .map(|(c, _)| *c)
            .unwrap_or(Color::Reset),
    }
}

/// Every style the UI uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub depth: Depth,
    pub text: Style,
    pub dim: Style,
    pub title: Style,
    pub label: Style,
    pub accent: Style,
    pub ok: Style,
    pub warn: Style,
    pub crit: Style,
    pub selected: Style,
    pub other_user: Style,
    pub exited: Style,
    pub mem_used: Style,
    pub mem_reserved: Style,
    pub mem_free: Style,
    pub peak_mark: Style,
    pub spark_mem: Style,
    pub spark_util: Style,
    pub chart_a: Style,
    pub chart_b: Style,
    pub chart_c: Style,
    pub border: Style,
    pub focus_border: Style,
    pub header: Style,
    pub rec: Style,
    pub paused: Style,
}

impl Theme {
    pub fn new(name: ThemeName, depth: Depth) -> Theme {
        let depth = if name == ThemeName::Mono {
            Depth::None
        } else {
            depth
        };
        let light = name == ThemeName::Light;
        let c = |dark: (u8, u8, u8), lite: (u8, u8, u8)| {
            map_rgb(if light { lite } else { dark }, depth)
        };
        let fg = |dark, lite| Style::new().fg(c(dark, lite));
        let mono = depth == Depth::None;
        let plain = Style::new();
        Theme {
            depth,
            text: plain,
            dim: if mono {
                plain.add_modifier(Modifier::DIM)
            } else {
                fg((120, 120, 120), (140, 140, 140))
            },
            title: plain.add_modifier(Modifier::BOLD),
            label: if mono {
                plain
            } else {
                fg((110, 160, 210), (30, 90, 160))
            },
            accent: if mono {
                plain.add_modifier(Modifier::BOLD)
            } else {
                fg((95, 215, 255), (0, 110, 170))
            },
            ok: if mono {
                plain
            } else {
                fg((80, 200, 120), (20, 140, 60))
            },
            warn: if mono {
                plain.add_modifier(Modifier::BOLD)
            } else {
                fg((240, 200, 60), (170, 120, 0)).add_modifier(Modifier::BOLD)
            },
            crit: if mono {
                plain.add_modifier(Modifier::BOLD | Modifier::REVERSED)
            } else {
                fg((255, 85, 85), (200, 30, 30)).add_modifier(Modifier::BOLD)
            },
            selected: plain.add_modifier(Modifier::REVERSED),
            other_user: if mono {
                plain.add_modifier(Modifier::DIM)
            } else {
                fg((130, 130, 130), (130, 130, 130))
            },
            exited: if mono {
                plain.add_modifier(Modifier::DIM | Modifier::CROSSED_OUT)
            } else {
                fg((100, 100, 100), (160, 160, 160)).add_modifier(Modifier::ITALIC)
            },
            mem_used: if mono {
                plain
            } else {
                fg((80, 200, 120), (20, 140, 60))
            },
            mem_reserved: if mono {
                plain
            } else {
                fg((150, 110, 200), (110, 70, 170))
            },
            mem_free: if mono {
                plain
            } else {
                fg((70, 70, 70), (200, 200, 200))
            },
            peak_mark: if mono {
                plain.add_modifier(Modifier::BOLD)
            } else {
                fg((255, 135, 215), (190, 40, 140)).add_modifier(Modifier::BOLD)
            },
            spark_mem: if mono {
                plain
            } else {
                fg((95, 215, 255), (0, 110, 170))
            },
            spark_util: if mono {
                plain
            } else {
                fg((175, 135, 255), (100, 60, 190))
            },
            chart_a: if mono {
                plain
            } else {
                fg((95, 215, 255), (0, 110, 170))
            },
            chart_b: if mono {
                plain
            } else {
                fg((255, 135, 215), (190, 40, 140))
            },
            chart_c: if mono {
                plain
            } else {
                fg((240, 200, 60), (170, 120, 0))
            },
            border: if mono {
                plain
            } else {
                fg((88, 88, 88), (170, 170, 170))
            },
            focus_border: if mono {
                plain.add_modifier(Modifier::BOLD)
            } else {
                fg((95, 215, 255), (0, 110, 170))
            },
            header: plain.add_modifier(Modifier::BOLD),
            rec: if mono {
                plain.add_modifier(Modifier::BOLD)
            } else {
                fg((255, 85, 85), (200, 30, 30)).add_modifier(Modifier::BOLD)
            },
            paused: if mono {
                plain.add_modifier(Modifier::REVERSED)
            } else {
                fg((240, 200, 60), (170, 120, 0)).add_modifier(Modifier::BOLD)
            },
        }
    }

    /// The style of a value at this severity.
    pub fn level(&self, s: Severity) -> Style {
        match s {
            Severity::Normal => self.text,
            Severity::Warn => self.warn,
            Severity::Critical => self.crit,
        }
    }

    /// The mark that shows a severity without colour.
    pub fn mark(s: Severity) -> &'static str {
        match s {
            Severity::Normal => "",
            Severity::Warn => "▲",
            Severity::Critical => "‼",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_depth_beats_no_color_and_auto_reads_the_environment() {
        use ColorDepth::*;
        assert_eq!(
            resolve_depth(TrueColor, Some("1"), Some("truecolor"), None),
            Depth::TrueColor
        );
        assert_eq!(
            resolve_depth(Auto, Some("1"), Some("truecolor"), None),
            Depth::None
        );
        assert_eq!(
            resolve_depth(Auto, Some(""), Some("truecolor"), None),
            Depth::TrueColor
        );
        assert_eq!(
            resolve_depth(Auto, None, Some("24bit"), Some("xterm")),
            Depth::TrueColor
        );
        assert_eq!(
            resolve_depth(Auto, None, None, Some("xterm-256color")),
            Depth::Ansi256
        );
        assert_eq!(
            resolve_depth(Auto, None, None, Some("xterm")),
            Depth::Ansi16
        );
        assert_eq!(resolve_depth(Auto, None, None, Some("dumb")), Depth::None);
        assert_eq!(
            resolve_depth(Ansi16, None, Some("truecolor"), None),
            Depth::Ansi16
        );
    }

    #[test]
    fn rgb_maps_down() {
        assert_eq!(
            map_rgb((255, 85, 85), Depth::TrueColor),
            Color::Rgb(255, 85, 85)
        );
        assert_eq!(map_rgb((255, 0, 0), Depth::Ansi256), Color::Indexed(196));
        assert_eq!(
            map_rgb((128, 128, 128), Depth::Ansi256),
            Color::Indexed(244)
        );
        assert_eq!(map_rgb((0, 0, 0), Depth::Ansi256), Color::Indexed(16));
        assert_eq!(map_rgb((255, 85, 85), Depth::Ansi16), Color::LightRed);
        assert_eq!(map_rgb((80, 200, 120), Depth::Ansi16), Color::LightGreen);
        assert_eq!(map_rgb((0, 160, 0), Depth::Ansi16), Color::Green);
        assert_eq!(map_rgb((1, 2, 3), Depth::None), Color::Reset);
    }

    #[test]
    fn severities_read_without_colour() {
        let t = Theme::new(ThemeName::Mono, Depth::TrueColor);
        assert_eq!(t.depth, Depth::None);
        assert!(t.crit.add_modifier.contains(Modifier::REVERSED));
        assert!(t.warn.add_modifier.contains(Modifier::BOLD));
        assert_eq!(Theme::mark(Severity::Critical), "‼");
        assert_eq!(Theme::mark(Severity::Normal), "");
    }
}
