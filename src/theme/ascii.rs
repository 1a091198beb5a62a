//! `--ascii` (`[display] ascii = true`): the drawn screen with ASCII only,
//! for terminals and fonts without box drawing, blocks or braille. Applied
//! to the finished buffer, so every widget, dialog and chart gets it:
//! lines and corners become `-`, `|`, `+`; a bar's blocks `#` and `.`; a
//! sparkline's eighths a ramp `_ . : - = + * #`; a braille chart's cell
//! `'`, `.` or `:` by which half holds dots; arrows and marks their ASCII
//! look-alikes; anything else (other programs' names in other scripts) `?`,
//! one cell for one, so the columns stay where they were.

use ratatui::buffer::Buffer;

/// Replaces every cell's symbol with its ASCII stand-in.
pub(crate) fn asciify(buf: &mut Buffer) {
    for cell in buf.content.iter_mut() {
        let sym = cell.symbol();
        if sym.is_ascii() {
            continue;
        }
        let mut chars = sym.chars();
        let c = match (chars.next(), chars.next()) {
            (Some(c), None) => stand_in(c),
            _ => '?',
        };
        cell.set_char(c);
    }
}

/// The ASCII stand-in of one character drawn by the dashboard.
fn stand_in(c: char) -> char {
    match c {
        // Braille: which half of the cell holds dots.
        '\u{2800}'..='\u{28ff}' => {
            let bits = c as u32 - 0x2800;
            let top = bits & 0b0001_1011 != 0;
            let bottom = bits & 0b1110_0100 != 0;
            match (top, bottom) {
                (false, false) => ' ',
                (true, false) => '\'',
                (false, true) => '.',
                (true, true) => ':',
            }
        }
        '─' | '━' | '═' | '╌' | '┄' | '╴' | '╶' | '–' | '—' | '−' => '-',
        '│' | '┃' | '║' | '╎' | '┆' | '▏' | '▕' => '|',
        '┌' | '┐' | '└' | '┘' | '╭' | '╮' | '╰' | '╯' | '┏' | '┓' | '┗' | '┛' | '├' | '┤' | '┬'
        | '┴' | '┼' | '╔' | '╗' | '╚' | '╝' => '+',
        '░' => '.',
        '▒' => ':',
        '▓' | '█' | '▉' | '▊' | '▋' | '▌' | '▐' => '#',
        '▍' | '▎' => '|',
        '▁' => '_',
        '▂' => '.',
        '▃' => ':',
        '▄' => '-',
        '▅' => '=',
        '▆' => '+',
        '▇' => '*',
        '▲' | '▴' | '↑' | '⬆' => '^',
        '▼' | '▾' | '↓' | '⬇' => 'v',
        '▶' | '▸' | '►' | '→' | '›' | '»' => '>',
        '◀' | '◂' | '◄' | '←' | '‹' | '«' => '<',
        '↔' | '↕' => '=',
        '∿' | '≈' | '∞' => '~',
        '‼' | '⚠' => '!',
        '●' | '•' | '◆' | '■' | '★' | '✱' => '*',
        '○' | '◇' | '□' | '°' => 'o',
        '·' | '…' => '.',
        '×' | '✗' | '✕' => 'x',
        '✓' | '✔' => 'v',
        '≥' => '>',
        '≤' => '<',
        'µ' | 'μ' => 'u',
        '⏸' => '=',
        _ => '?',
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;

    use super::*;

    #[test]
    fn stand_ins_are_ascii_and_keep_the_shape() {
        assert_eq!(stand_in('┌'), '+');
        assert_eq!(stand_in('━'), '-');
        assert_eq!(stand_in('█'), '#');
        assert_eq!(stand_in('░'), '.');
        // The sparkline's ramp rises.
        let ramp: String = "▁▂▃▄▅▆▇█".chars().map(stand_in).collect();
        assert_eq!(ramp, "_.:-=+*#");
        // Braille by halves: dot 1 (top left), dot 7 (bottom left), both.
        assert_eq!(stand_in('\u{2801}'), '\'');
        assert_eq!(stand_in('\u{2840}'), '.');
        assert_eq!(stand_in('\u{2841}'), ':');
        assert_eq!(stand_in('\u{2800}'), ' ');
        assert_eq!(stand_in('▲'), '^');
        assert_eq!(stand_in('你'), '?');
        for c in ['\u{2800}', '\u{28ff}', '─', '⚠', '∿', '…', 'é'] {
            assert!(stand_in(c).is_ascii(), "{c}");
        }
    }

    #[test]
    fn a_wide_character_becomes_one_question_mark_and_a_space() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 1));
        buf.set_string(0, 0, "a你b│", ratatui::style::Style::default());
        asciify(&mut buf);
        let line: String = (0..6).map(|x| buf[(x, 0)].symbol().to_string()).collect();
        assert_eq!(line, "a? b| ");
    }
}
